#pragma once
// What the first record of a run says about each host: enough to tell later why two runs differ.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "rocebench/common/host_fs.hpp"
#include "rocebench/common/record.hpp"

namespace rocebench {

// A host: hostname, kernel, CPU, memory, RDMA devices and netdevs as its /proc and /sys say (read
// through `host`, so a fixture tree stands for a host in tests), and this process's GPUs with driver
// and CUDA / NCCL / cuDNN versions when built with CUDA.
json collect_host_info(const std::string& hostname, const HostFs& host = HostFs());

// The GPU part alone: {"devices": [...], "driver"?, "cuda_runtime"?, "nccl"?, "cudnn"?, "reason"?}.
json collect_gpu_info();

// Merges per-rank host infos into one entry per hostname, with the ranks on it.
json merge_hosts(const std::vector<json>& per_rank);

// Microseconds in which some task of the machine waited for a CPU since boot (/proc/pressure/cpu,
// "some ... total="); nullopt where the kernel keeps no pressure stall information.
std::optional<std::uint64_t> cpu_pressure_total_us(const HostFs& host = HostFs());

// rocebench version and the git revision it was built from.
json build_info();

}  // namespace rocebench

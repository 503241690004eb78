#pragma once
// What the first record of a run says about each host: enough to tell later why two runs differ.
#include <string>
#include <vector>

#include "rocebench/common/record.hpp"

namespace rocebench {

// This host: hostname, kernel, CPU, memory, RDMA devices (ibv_get_device_list), netdevs, GPUs with
// driver and CUDA / NCCL / cuDNN versions when built with CUDA. `root` prefixes /proc and /sys.
json collect_host_info(const std::string& hostname, const std::string& root = "/");

// The RDMA part alone: {"rdma_core": …, "devices": [...], "reason"?}.
json collect_rdma_info();
// The GPU part alone: {"devices": [...], "driver"?, "cuda_runtime"?, "nccl"?, "cudnn"?, "reason"?}.
json collect_gpu_info();

// Merges per-rank host infos into one entry per hostname, with the ranks on it.
json merge_hosts(const std::vector<json>& per_rank);

// rocebench version and the git revision it was built from.
json build_info();

}  // namespace rocebench

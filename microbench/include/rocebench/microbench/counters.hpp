#pragma once
// NIC counters around a probe, in the shared vocabulary of common/nic_counters.hpp: the port's sysfs
// counters/ and hw_counters/ (read under a root prefix) and `ethtool -S` of its netdev, each mapped
// from the driver's own names to the shared ones, the source name kept beside it.
#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "rocebench/common/nic_counters.hpp"

namespace rocebench::microbench {

struct CounterSnapshot {
  RdmaDriver driver;
  RawCounters raw;  // by source name: "hw_counters/packet_seq_err", "ethtool/rx_prio3_pause"
};

// The port's counters under `root`, with `ethtool -S` of its netdev: run live when root is "/", read
// from <ethtool_capture>/ethtool-S-<netdev>.txt (the netcheck capture layout) when that folder is given.
CounterSnapshot read_counters(const std::string& root, const std::string& device, int port,
                              const std::string& ethtool_capture = "");

// What a probe records of two snapshots, to merge into its result:
//   "nic_<shared name>": after - before (a metric), for every shared counter read both times from one source;
//   "nic_<raw name>": the same for sysfs counters outside the vocabulary (unless a shared name took it);
//   "samples": what goes beside the record's samples: "nic_driver" {name, found_by}, "counter_sources"
//   {shared name: source name}, "counters_reset" [source names that went back: a driver reload or a
//   wrap, either way no delta], "counters_unavailable" {shared name: the verdict it is evidence for}.
nlohmann::json counter_deltas(const CounterSnapshot& before, const CounterSnapshot& after);

}  // namespace rocebench::microbench

#pragma once
// NIC counters around a probe: the port's sysfs counters/ and hw_counters/ (read under a root
// prefix), and the per-priority pause frames of its netdev from `ethtool -S` where readable.
#include <cstdint>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

namespace rocebench::microbench {

using CounterSnapshot = std::map<std::string, std::uint64_t>;

// counters/<name> and hw_counters/<name> of /sys/class/infiniband/<device>/ports/<port>; with
// root "/" also ethtool's rx_prio<N>_pause / tx_prio<N>_pause of the port's netdev.
CounterSnapshot read_counters(const std::string& root, const std::string& device, int port);
// rx_prio<N>_pause / tx_prio<N>_pause lines of `ethtool -S` output.
CounterSnapshot parse_ethtool_pause(const std::string& text);
// {"nic_<name>": after - before} for every counter in both (a counter that went back is left out).
nlohmann::json counter_deltas(const CounterSnapshot& before, const CounterSnapshot& after);

}  // namespace rocebench::microbench

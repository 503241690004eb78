#pragma once
// NIC counters around a probe, in the shared vocabulary of common/nic_counters.hpp: the port's sysfs
// counters/ and hw_counters/ (read under a root prefix) and `ethtool -S` of its netdev, each mapped
// from the driver's own names to the shared ones, the source name kept beside it.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "rocebench/common/nic_counters.hpp"

namespace rocebench {
class HostFs;
}

namespace rocebench::microbench {

struct CounterSnapshot {
  RdmaDriver driver;
  RawCounters raw;     // by source name: "hw_counters/packet_seq_err", "ethtool/rx_prio3_pause"
  std::string netdev;  // the port's netdev (its GID's), where found: what ethtool and mlnx_qos are given
};

// The port's counters under `root`, with `ethtool -S` of its netdev: run live when root is "/", read
// from <ethtool_capture>/ethtool-S-<netdev>.txt (the netcheck capture layout) when that folder is given.
CounterSnapshot read_counters(const std::string& root, const std::string& device, int port,
                              const std::string& ethtool_capture = "");

// What a probe records of two snapshots, to merge into its result:
//   "nic_<shared name>": after - before (a metric), for every shared counter read both times from one source;
//   "nic_<raw name>": the same for sysfs counters outside the vocabulary (unless a shared name took it);
//   "samples": what goes beside the record's samples: "nic_driver" {name, found_by, netdev}, "counter_sources"
//   {shared name: source name}, "counters_reset" [source names that went back: a driver reload or a
//   wrap, either way no delta], "counters_unavailable" {shared name: the verdict it is evidence for}.
nlohmann::json counter_deltas(const CounterSnapshot& before, const CounterSnapshot& after);

// The kernel's TCP counters, the TCP twin of the NIC ones: /proc/net/snmp (Tcp) and /proc/net/netstat
// (TcpExt, IpExt), read under a root prefix. In a network namespace these are the namespace's own.
// Recorded under the kernel's names, prefixed by their table: "tcp_RetransSegs", "tcpext_TCPTimeouts",
// "ipext_InCEPkts".
struct TcpCounterSnapshot {
  std::map<std::string, std::uint64_t> values;  // by recorded name, every counter of the three tables
};

// The counters an incast records (declared in shape.json; a test keeps the two in step): retransmissions,
// losses, timeouts and the ECN marks (CE-marked packets in, CE-marked segments delivered).
const std::vector<std::string>& tcp_counter_names();

// Parses the "Table: names" / "Table: values" line pairs of /proc/net/snmp or /proc/net/netstat into
// `into` (tables Tcp, TcpExt and IpExt only). Junk throws InputError naming file:line.
void parse_proc_net_counters(const std::string& file, const std::string& text, TcpCounterSnapshot& into);
// Both files under the host's root; a file that is missing leaves its counters out.
TcpCounterSnapshot read_tcp_counters(const HostFs& host);

// The deltas of tcp_counter_names() between two snapshots as metrics, with "samples": "counters_reset"
// [names that went back] and "counters_unavailable" [names this kernel does not count].
nlohmann::json tcp_counter_deltas(const TcpCounterSnapshot& before, const TcpCounterSnapshot& after);

}  // namespace rocebench::microbench

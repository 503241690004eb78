#pragma once
// One vocabulary of RDMA NIC counters for every driver (issue #41): each shared name says what it
// counts, in which unit, whether it is kept per priority, and where each driver keeps it. A source
// name is "<where>/<name>": "counters/…" and "hw_counters/…" of the port in sysfs, "ethtool/…" for a
// line of `ethtool -S` of the port's netdev. Per-priority names hold "{N}" (0-7) in both the shared
// and the source name. Reading goes through the root-prefixed host reader, so fixture trees work.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "rocebench/common/host_fs.hpp"

namespace rocebench {

struct CounterSource {
  std::string_view driver;             // "mlx5", "bnxt_re", "rxe"
  std::vector<std::string_view> names; // the first present wins (kernels renamed some)
};

struct SharedCounter {
  std::string_view name;     // "seq_naks_rx"; per priority "rx_pause_prio{N}"
  std::string_view meaning;
  std::string_view unit;     // packets, bytes, events, us
  bool per_priority = false;
  std::string_view evidence_for;  // the fabric verdict it is evidence for: "LOSSY", "CONGESTED" or "" (context)
  std::vector<CounterSource> sources;
};

// What an RDMA driver is, declared once: its counters' documentation, the kernel modules it needs
// (netcheck's kernel.module_loaded), and whether the NIC QoS of a lossless fabric (PFC, DSCP trust,
// ECN, CNP marking) applies to it at all (netcheck skips those checks with `no_nic_qos` otherwise).
struct KnownDriver {
  std::string_view name;           // as in CounterSource::driver
  std::vector<std::string_view> kernel_drivers;  // names of device/driver that mean it
  std::string_view documented_in;  // where its counter names come from
  std::vector<std::string_view> modules;  // kernel modules that must be loaded for its devices
  std::string_view no_nic_qos;     // empty when NIC QoS applies; else why it does not
};

const std::vector<SharedCounter>& nic_counter_vocabulary();
const std::vector<KnownDriver>& nic_counter_drivers();
// The KnownDriver of that name, or nullptr.
const KnownDriver* known_driver(std::string_view name);
// Why NIC QoS does not apply to the driver of that name (its KnownDriver::no_nic_qos), or "" when it
// does or the driver is not known (its QoS is then read and judged).
std::string_view no_nic_qos(std::string_view driver);

// The driver of an RDMA device: the basename of /sys/class/infiniband/DEV/device/driver (mlx5_core,
// bnxt_en), else, for a device without a PCI parent (soft RoCE), the prefix of its name ("rxe0").
// `name` is a KnownDriver's name, or the kernel driver's own name when none matches ("" when not even
// that can be read); `found_by` says how it was decided.
struct RdmaDriver {
  std::string name;
  std::string found_by;
  bool known = false;
};
RdmaDriver rdma_driver(const HostFs& host, const std::string& device);

using RawCounters = std::map<std::string, std::uint64_t>;
// Every non-negative integer file of a sysfs counter folder, by file name (netcheck reads hw_counters
// through it too).
RawCounters read_counter_folder(const HostFs& host, const std::string& folder);
// "counters/<name>" and "hw_counters/<name>" of /sys/class/infiniband/DEV/ports/PORT.
RawCounters read_port_counters(const HostFs& host, const std::string& device, int port);
// "ethtool/<name>" for every "name: integer" line of `ethtool -S` output.
RawCounters parse_ethtool_counters(const std::string& text);

struct SharedValue {
  std::string source;  // "hw_counters/packet_seq_err"
  std::uint64_t value = 0;
};
struct MappedCounters {
  std::map<std::string, SharedValue> shared;  // by shared name, priorities expanded ("rx_pause_prio3")
  RawCounters unmapped;                       // sysfs counters outside the vocabulary, by source name
  // Shared names (per-priority ones as the template) nothing was read for, with the verdict each is
  // evidence for: what this host's records cannot show.
  std::map<std::string, std::string> unavailable;
};
// Raw counters of a device with the given driver name, in the shared vocabulary. `ethtool/` counters
// outside the vocabulary are dropped (a ConnectX prints hundreds); sysfs ones are kept as unmapped.
MappedCounters map_counters(const std::string& driver, const RawCounters& raw);

}  // namespace rocebench

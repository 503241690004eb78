#pragma once
// Everything netcheck reads about one host, before any judgement: RDMA devices and their ports,
// netdevs, QoS / ECN / CNP settings, rdma_cm defaults, PCI topology and ACS, modules, IOMMU.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "rocebench/common/host_fs.hpp"
#include "rocebench/common/nic_counters.hpp"
#include "rocebench/netcheck/nccl_env.hpp"
#include "rocebench/netcheck/parsers.hpp"
#include "rocebench/netcheck/tools.hpp"

namespace rocebench::netcheck {

// A setting and where it was read, or why it could not be.
template <typename T>
struct Sourced {
  std::optional<T> value;
  std::string source;   // file or command it came from
  std::string missing;  // why value is empty

  void set(T v, std::string from) {
    value = std::move(v);
    source = std::move(from);
  }
  // Adds a reason for the value being missing (when every source has been tried).
  void note(const std::string& why) {
    if (!value) missing += (missing.empty() ? "" : "; ") + why;
  }
};

struct Gid {
  int index = 0;
  std::string gid, type, ndev;
};

struct Port {
  int number = 0;
  std::string state, phys_state, link_layer, rate;  // sysfs text without "4: " prefixes
  std::vector<Gid> gids;                            // populated (non-zero) entries only
  RawCounters counters;  // "counters/…" and "hw_counters/…" of the port (common's read_port_counters)
  Sourced<std::string> roce_mode;  // rdma_cm configfs default_roce_mode
  Sourced<int> roce_tos;           // rdma_cm configfs default_roce_tos
};

// The lossless-Ethernet settings of a netdev.
struct Qos {
  bool ofed = false;  // MLNX_OFED interfaces (qos/ sysfs or mlnx_qos) rather than upstream dcb
  Sourced<std::string> trust;
  Sourced<std::vector<int>> pfc;
  Sourced<DscpMap> dscp2prio;
  Sourced<std::vector<int>> ecn_np, ecn_rp;  // priorities with ECN on
  Sourced<int> cnp_dscp, cnp_prio;
  // Where ECN / CNP fixes are written: "/sys/class/net/IF/ecn/roce_np" or debugfs cc_params.
  std::string cnp_dir;
  bool cnp_debugfs = false;
  Sourced<std::map<std::string, long long>> ethtool_stats;
};

struct NetDev {
  std::string name;
  std::optional<long long> mtu, speed_mbps;
  std::string operstate, address;
  Qos qos;
};

struct RdmaDevice {
  std::string name, fw_ver, node_guid, hca_type, board_id;
  RdmaDriver driver;  // mlx5, bnxt_re, rxe … and how it was found (common's nic_counters)
  std::string pci_address;           // "0000:18:00.0"
  std::vector<std::string> pci_path; // functions from the root complex down to the NIC
  std::optional<NetDev> netdev;
  std::vector<Port> ports;
};

struct HostState {
  std::string hostname;
  std::string kernel;         // /proc/sys/kernel/osrelease, else the release in /proc/version
  std::string driver_version; // /sys/module/mlx5_core/version (MLNX_OFED) or "inbox <kernel>"
  std::string cmdline;
  std::string iommu;         // pt | off | translated | default (not known: the kernel's build default)
  std::string iommu_source;  // where that was seen
  // Of those netcheck asks about (the profile's, and the modules of each device's driver), the loaded ones.
  std::set<std::string> modules;
  std::vector<RdmaDevice> devices;
  std::string no_devices_reason;  // when devices is empty
  // NVIDIA GPUs by PCI address, with their path from the root complex.
  std::map<std::string, std::vector<std::string>> gpus;
  AcsMap acs;               // SrcValid per PCI function, for the functions on NIC <-> GPU paths
  std::string acs_source;   // where ACS states came from
  std::vector<std::string> interfaces;  // every netdev in /sys/class/net
  NcclEnv nccl;             // what a NCCL job here would run with
};

// The host a tree belongs to: /proc/sys/kernel/hostname, else /etc/hostname; empty when neither.
std::string tree_hostname(const HostFs& fs);

// Reads a host. `modules` are the kernel modules to look for in /sys/module.
HostState read_host(const HostFs& fs, const ToolSource& tools, const std::string& hostname,
                    const std::vector<std::string>& modules, const NcclSources& nccl = {});

// "/sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0" -> {"0000:15:01.0", "0000:16:00.0"}: the
// PCI functions on the way from the root complex down to (and including) the last one.
std::vector<std::string> pci_chain(const std::string& device_path);

// The PCI functions a peer-to-peer transfer between two devices crosses, given each one's chain
// from the root complex, both ends excluded: up from each device to the lowest common bridge
// (included), or every bridge up to the root complex when they share none.
std::vector<std::string> path_between(const std::vector<std::string>& a, const std::vector<std::string>& b);

// RoCE active MTU for a netdev MTU, as the kernel computes it (iboe_get_mtu: the largest IB MTU
// that fits after GRH, UDP, BTH, extended headers and ICRC).
int roce_active_mtu(long long netdev_mtu);

}  // namespace rocebench::netcheck

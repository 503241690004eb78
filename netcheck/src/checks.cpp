#include "rocebench/netcheck/checks.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

#include "rocebench/common/nic_counters.hpp"

namespace rocebench::netcheck {

const std::vector<std::string> kCheckIds{
    // host
    "rdma.device_present", "kernel.module_loaded", "host.kernel", "host.driver", "host.iommu",
    "gpudirect.peermem_loaded",
    // device
    "nic.firmware", "gpudirect.acs_disabled",
    // port
    "rdma.link_layer", "link.state", "link.rate", "link.mtu", "link.active_mtu", "roce.gid.v2_present",
    "roce.mode.default", "roce.tos.default", "roce.trust.dscp", "roce.pfc.enabled_priorities",
    "roce.dscp.priority_map", "roce.ecn.np_enabled", "roce.ecn.rp_enabled", "roce.cnp.dscp", "roce.cnp.prio",
    "counters.rx_discards_phy", "counters.roce_retransmits",
    // NCCL's own settings
    "nccl.env", "nccl.ib_gid_index", "nccl.ib_tc", "nccl.ib_sl", "nccl.ib_hca", "nccl.socket_ifname", "nccl.pinned_tuning"};

namespace {

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

// Collects the records of one host.
class Emitter {
 public:
  Emitter(std::string host, std::vector<CheckRecord>& out) : host_(std::move(host)), out_(out) {}

  void add(std::string check, std::string subject, json expected, json observed, Status status, std::string hint = {},
           std::string reason = {}) {
    CheckRecord r;
    r.check = std::move(check);
    r.host = host_;
    r.subject = std::move(subject);
    r.expected = std::move(expected);
    r.observed = std::move(observed);
    r.status = status;
    if (status != Status::ok) {
      r.hint = std::move(hint);
      r.reason = std::move(reason);
    }
    out_.push_back(std::move(r));
  }

  // The common shape: a setting read from somewhere, passed or failed by `pass`. One that could
  // not be read is unverified (on an RDMA host, where every caller of judge runs), with `verify`:
  // what to install or run to read it.
  template <typename T>
  void judge(const std::string& check, const std::string& subject, const json& expected, const Sourced<T>& setting,
             const std::function<json(const T&)>& observe, const std::function<bool(const json&)>& pass,
             const std::string& hint, const std::string& verify) {
    if (!setting.value) {
      add(check, subject, expected, nullptr, Status::unverified, verify, "not readable: " + setting.missing);
      return;
    }
    const json observed = observe(*setting.value);
    const bool ok = pass(observed);
    add(check, subject, expected, observed, ok ? Status::ok : Status::fail, hint, "read from " + setting.source);
  }

  template <typename T>
  void judge_equal(const std::string& check, const std::string& subject, const json& expected, const Sourced<T>& setting,
                   const std::string& hint, const std::string& verify) {
    judge<T>(
        check, subject, expected, setting, [](const T& v) { return json(v); },
        [&](const json& observed) { return observed == expected; }, hint, verify);
  }

 private:
  std::string host_;
  std::vector<CheckRecord>& out_;
};

bool contains_all(const json& have, const json& want) {
  for (const auto& w : want) {
    if (std::find(have.begin(), have.end(), w) == have.end()) return false;
  }
  return true;
}

// The kernel modules a host must have loaded, each with who needs it: the modules of each RDMA
// device's own driver (common's KnownDriver table), and the profile's, less those that belong to a
// known driver none of the host's devices uses (the profile's mlx5 modules on a soft-RoCE host).
std::vector<std::pair<std::string, std::string>> expected_modules(const HostState& h, const Profile& p) {
  std::vector<std::pair<std::string, std::string>> out;
  std::set<std::string> host_drivers;
  const auto add = [&](const std::string& module, const std::string& why) {
    if (std::none_of(out.begin(), out.end(), [&](const auto& m) { return m.first == module; })) out.emplace_back(module, why);
  };
  for (const auto& d : h.devices) {
    const KnownDriver* known = known_driver(d.driver.name);
    if (!known) continue;
    host_drivers.insert(d.driver.name);
    for (const auto& m : known->modules) add(std::string(m), ": " + d.name + "'s driver is " + d.driver.name + " (" + d.driver.found_by + ")");
  }
  for (const auto& m : p.at("/rdma/modules")) {
    const std::string name = m.get<std::string>();
    const auto owner = std::find_if(nic_counter_drivers().begin(), nic_counter_drivers().end(), [&](const KnownDriver& d) {
      return std::find(d.modules.begin(), d.modules.end(), name) != d.modules.end();
    });
    const bool other_drivers = owner != nic_counter_drivers().end() && !host_drivers.empty() && !host_drivers.count(std::string(owner->name));
    if (!other_drivers) add(name, " (the profile's rdma.modules)");
  }
  return out;
}

void host_checks(Emitter& e, const HostState& h, const Profile& p) {
  const bool required = p.at("/rdma/required").get<bool>();
  // A host that need not have RDMA (the local plan on a laptop) skips what only RDMA hosts need.
  const bool rdma_optional_and_absent = h.devices.empty() && !required;
  if (h.devices.empty()) {
    e.add("rdma.device_present", "host", json{{"min_devices", 1}}, json{{"devices", 0}},
          required ? Status::fail : Status::skip, "modprobe mlx5_ib", h.no_devices_reason);
  } else {
    json names = json::array();
    for (const auto& d : h.devices) names.push_back(d.name);
    e.add("rdma.device_present", "host", json{{"min_devices", 1}}, json{{"devices", names.size()}, {"names", names}},
          Status::ok);
  }
  for (const auto& [name, why] : expected_modules(h, p)) {
    const bool loaded = h.modules.count(name) > 0;
    const Status status = loaded ? Status::ok : rdma_optional_and_absent ? Status::skip : Status::fail;
    e.add("kernel.module_loaded", "host/" + name, true, loaded, status, "modprobe " + name, "no /sys/module/" + name + why);
  }
  e.add("host.kernel", "host", nullptr, h.kernel, Status::ok);
  const json& driver = p.at("/rdma/driver");
  const bool driver_ok = driver.is_null() || driver == h.driver_version;
  const json driver_seen = h.driver_version.empty() ? json(nullptr) : json(h.driver_version);
  e.add("host.driver", "host", driver, driver_seen, driver_ok ? Status::ok : Status::fail,
        "install the expected MLNX_OFED / DOCA-OFED driver", "mlx5_core version differs from the profile");

  const json& iommu = p.at("/host/iommu");
  const bool iommu_ok = std::find(iommu.begin(), iommu.end(), h.iommu) != iommu.end();
  // "default": no iommu option and no iommu groups to ask; the kernel's build default applies.
  const Status iommu_status = iommu_ok ? Status::ok : h.iommu == "default" ? Status::warn : Status::fail;
  e.add("host.iommu", "host", iommu, h.iommu, iommu_status,
        "add iommu=pt to GRUB_CMDLINE_LINUX in /etc/default/grub, run update-grub and reboot", "from " + h.iommu_source);

  if (h.gpus.empty()) {
    e.add("gpudirect.peermem_loaded", "host", p.at("/gpudirect/peermem_modules"), nullptr, Status::skip, "",
          "no NVIDIA GPU on this host");
    return;
  }
  json loaded = json::array();
  for (const auto& m : p.at("/gpudirect/peermem_modules")) {
    if (h.modules.count(m.get<std::string>())) loaded.push_back(m);
  }
  const json& wanted = p.at("/gpudirect/peermem_modules");
  e.add("gpudirect.peermem_loaded", "host", json{{"any_of", wanted}}, loaded,
        loaded.empty() && !wanted.empty() ? Status::fail : Status::ok,
        wanted.empty() ? "" : "modprobe " + wanted.front().get<std::string>(),
        "GPUDirect RDMA needs a peer-memory module; none of them is loaded");
}

void device_checks(Emitter& e, const HostState& h, const RdmaDevice& d, const Profile& p) {
  const json& firmware = p.at("/rdma/firmware");
  const bool fw_ok = firmware.is_null() || firmware == d.fw_ver;
  // NICs of one model on one host should run one firmware, whatever the profile pins.
  std::vector<std::string> others;
  for (const auto& other : h.devices) {
    if (other.name != d.name && !d.hca_type.empty() && other.hca_type == d.hca_type && other.fw_ver != d.fw_ver) {
      others.push_back(other.name + " has " + other.fw_ver);
    }
  }
  const Status fw_status = !fw_ok ? Status::fail : others.empty() ? Status::ok : Status::warn;
  e.add("nic.firmware", d.name, firmware, d.fw_ver, fw_status, "mlxfwmanager -u -d " + d.pci_address,
        others.empty() ? d.hca_type + " " + d.board_id
                       : d.name + " has " + d.fw_ver + ", " + join(others, ", ") + " (same model " + d.hca_type + ")");

  const json none = json::array();
  if (!p.at("/gpudirect/acs_disabled").get<bool>()) {
    e.add("gpudirect.acs_disabled", d.name, none, nullptr, Status::skip, "", "the profile does not ask for it");
    return;
  }
  if (h.gpus.empty()) {
    e.add("gpudirect.acs_disabled", d.name, none, nullptr, Status::skip, "", "no NVIDIA GPU on this host");
    return;
  }
  json enabled = json::array();
  std::vector<std::string> unknown, fixes;
  std::set<std::string> seen;
  for (const auto& [gpu, chain] : h.gpus) {
    for (const auto& function : path_between(d.pci_path, chain)) {
      if (!seen.insert(function).second) continue;
      const auto it = h.acs.find(function);
      if (it == h.acs.end() || !it->second) unknown.push_back(function);
      else if (*it->second) {
        enabled.push_back(function);
        fixes.push_back("setpci -s " + function + " ECAP_ACS+0x6.w=0000");
      }
    }
  }
  if (!enabled.empty()) {
    e.add("gpudirect.acs_disabled", d.name, none, json{{"acs_enabled_on", enabled}}, Status::fail, join(fixes, "; "),
          "ACS redirects NIC <-> GPU peer-to-peer traffic through the root complex; from " + h.acs_source);
  } else if (!unknown.empty()) {
    e.add("gpudirect.acs_disabled", d.name, none, nullptr, Status::unverified,
          "run as root (PCI config space), or capture 'lspci -D -vvv' run as root",
          "ACS state unknown for " + join(unknown, ", ") + " (" + h.acs_source + ")");
  } else {
    e.add("gpudirect.acs_disabled", d.name, none, json{{"acs_enabled_on", enabled}}, Status::ok);
  }
}

// Fix commands, in the dialect of the host's driver: MLNX_OFED (mlnx_qos, sysfs) or upstream (dcb).
struct Fixes {
  const std::string& ifname;
  const Qos& q;

  std::string pfc(const json& prios) const {
    if (q.ofed) {
      std::string list;
      for (int prio = 0; prio < 8; ++prio) list += std::string(prio ? "," : "") + (contains_all(prios, json{prio}) ? "1" : "0");
      return "mlnx_qos -i " + ifname + " --pfc " + list;
    }
    std::string on;
    for (const auto& prio : prios) on += " " + std::to_string(prio.get<int>()) + ":on";
    return "dcb pfc set dev " + ifname + " prio-pfc all:off" + on;
  }
  std::string dscp_map(const json& map) const {
    std::string out = q.ofed ? "mlnx_qos -i " + ifname : "dcb app replace dev " + ifname + " dscp-prio";
    for (const auto& [dscp, prio] : map.items()) {
      out += q.ofed ? " --dscp2prio set," + dscp + "," + std::to_string(prio.get<int>())
                    : " " + dscp + ":" + std::to_string(prio.get<int>());
    }
    return out;
  }
  std::string trust(const std::string& want, const json& map) const {
    if (q.ofed) return "mlnx_qos -i " + ifname + " --trust " + want;
    // Upstream mlx5 trusts DSCP once the APP table has DSCP entries, PCP once it has none.
    return want == "dscp" ? dscp_map(map) : "dcb app flush dev " + ifname + " dscp-prio";
  }
  std::string ecn(const std::string& point, const json& prios) const {
    std::vector<std::string> cmds;
    for (const auto& prio : prios) {
      cmds.push_back("echo 1 > /sys/class/net/" + ifname + "/ecn/" + point + "/enable/" + std::to_string(prio.get<int>()));
    }
    return join(cmds, "; ");
  }
  std::string cnp(const std::string& ofed_file, const std::string& debugfs_file, const json& value) const {
    const std::string dir = q.cnp_dir.empty() ? "/sys/class/net/" + ifname + "/ecn/roce_np" : q.cnp_dir;
    return "echo " + value.dump() + " > " + dir + "/" + (q.cnp_debugfs ? debugfs_file : ofed_file);
  }
};

json priority_of(const DscpMap& map, const json& wanted) {
  json out = json::object();
  for (const auto& [dscp, _] : wanted.items()) {
    const auto it = map.find(std::stoi(dscp));
    if (it == map.end()) out[dscp] = nullptr;
    else if (it->second.size() == 1) out[dscp] = it->second.front();
    else out[dscp] = it->second;
  }
  return out;
}

// What to install or run so that an unreadable setting can be read.
struct Verify {
  std::string qos_tools, pfc, ecn, cnp;
  Verify(const std::string& ifname, const std::string& pci) {
    const std::string tools =
        "install mlnx-tools for mlnx_qos, or iproute2 >= 5.11 for dcb; or capture 'mlnx_qos -i " + ifname + "'";
    qos_tools = tools + " or 'dcb -N app show dev " + ifname + " dscp-prio'";
    pfc = tools + " or 'dcb pfc show dev " + ifname + "'";
    ecn = "install MLNX_OFED / DOCA-OFED: its mlx5 shows /sys/class/net/" + ifname +
          "/ecn/roce_{np,rp}/enable, the inbox driver does not";
    cnp = "run as root for /sys/kernel/debug/mlx5/" + pci + "/cc_params, or install MLNX_OFED / DOCA-OFED for /sys/class/net/" +
          ifname + "/ecn/roce_np";
  }
};

void qos_checks(Emitter& e, const std::string& subject, const NetDev& n, const std::string& pci, const Profile& p) {
  const Qos& q = n.qos;
  const Fixes fix{n.name, q};
  const Verify verify(n.name, pci);
  const json& map = p.at("/roce/dscp_to_priority");
  const auto identity_list = [](const std::vector<int>& v) { return json(v); };

  e.judge_equal("roce.trust.dscp", subject, p.at("/roce/trust"), q.trust, fix.trust(p.at("/roce/trust"), map), verify.qos_tools);
  e.judge_equal("roce.pfc.enabled_priorities", subject, p.at("/roce/pfc_priorities"), q.pfc, fix.pfc(p.at("/roce/pfc_priorities")),
                verify.pfc);
  if (q.trust.value && *q.trust.value != "dscp") {
    e.add("roce.dscp.priority_map", subject, map, nullptr, Status::skip, "",
          "trust is " + *q.trust.value + ": the NIC ignores DSCP when choosing a priority");
  } else {
    e.judge<DscpMap>(
        "roce.dscp.priority_map", subject, map, q.dscp2prio, [&](const DscpMap& m) { return priority_of(m, map); },
        [&](const json& observed) { return observed == map; }, fix.dscp_map(map), verify.qos_tools);
  }
  for (const auto& [check, point, key, setting] :
       {std::tuple{"roce.ecn.np_enabled", "roce_np", "/roce/ecn_np_priorities", &q.ecn_np},
        std::tuple{"roce.ecn.rp_enabled", "roce_rp", "/roce/ecn_rp_priorities", &q.ecn_rp}}) {
    const json& want = p.at(key);
    e.judge<std::vector<int>>(
        check, subject, json{{"includes", want}}, *setting, identity_list,
        [&](const json& observed) { return contains_all(observed, want); }, fix.ecn(point, want), verify.ecn);
  }
  e.judge_equal("roce.cnp.dscp", subject, p.at("/roce/cnp_dscp"), q.cnp_dscp,
                fix.cnp("cnp_dscp", "np_cnp_dscp", p.at("/roce/cnp_dscp")), verify.cnp);
  e.judge_equal("roce.cnp.prio", subject, p.at("/roce/cnp_priority"), q.cnp_prio,
                fix.cnp("cnp_802p_prio", "np_cnp_prio", p.at("/roce/cnp_priority")), verify.cnp);
}

void counter_checks(Emitter& e, const std::string& subject, const Port& port, const RdmaDriver& driver,
                    const std::optional<NetDev>& n, const Profile& p) {
  const json max_discards = p.at("/counters/max_rx_discards_phy");
  if (!n || !n->qos.ethtool_stats.value || !n->qos.ethtool_stats.value->count("rx_discards_phy")) {
    const std::string why = !n ? "no netdev" : !n->qos.ethtool_stats.value ? n->qos.ethtool_stats.missing : "ethtool -S has no rx_discards_phy";
    e.add("counters.rx_discards_phy", subject, json{{"max", max_discards}}, nullptr, Status::skip, "", why);
  } else {
    const long long discards = n->qos.ethtool_stats.value->at("rx_discards_phy");
    e.add("counters.rx_discards_phy", subject, json{{"max", max_discards}}, discards,
          discards <= max_discards.get<long long>() ? Status::ok : Status::warn,
          "ethtool -S " + n->name + " | grep -E 'discard|pause'",
          "packets dropped for lack of receive buffer: PFC is not holding the sender back");
  }

  // In the shared vocabulary (common's nic_counters), so every driver's are judged under one name.
  const json max_events = p.at("/counters/max_roce_retransmit_events");
  const MappedCounters mapped = map_counters(driver.name, port.counters);
  json observed = json::object();
  std::vector<std::string> sources;
  std::uint64_t total = 0;
  for (const char* name : {"seq_errors_rx", "seq_naks_rx", "ack_timeouts"}) {
    if (auto it = mapped.shared.find(name); it != mapped.shared.end()) {
      observed[name] = it->second.value;
      sources.push_back(std::string(name) + " = " + it->second.source);
      total += it->second.value;
    }
  }
  if (observed.empty()) {
    e.add("counters.roce_retransmits", subject, json{{"max", max_events}}, nullptr, Status::skip, "",
          port.counters.empty() ? "no counters or hw_counters for this port"
                                : "none of seq_errors_rx, seq_naks_rx, ack_timeouts among this port's counters (driver '" +
                                      driver.name + "')");
  } else {
    e.add("counters.roce_retransmits", subject, json{{"max", max_events}}, observed,
          total <= max_events.get<std::uint64_t>() ? Status::ok : Status::warn, "",
          "RoCE retransmissions since the driver loaded (" + join(sources, ", ") +
              "): packets were lost on a fabric meant to be lossless");
  }
}

void port_checks(Emitter& e, const RdmaDevice& d, const Port& port, double host_rate, const Profile& p) {
  const std::string subject = d.name + "/" + std::to_string(port.number);
  const std::optional<NetDev>& n = d.netdev;
  const std::string ifname = n ? n->name : "<netdev>";
  const std::string cfg = "/sys/kernel/config/rdma_cm/" + d.name;
  const std::string cfg_port = cfg + "/ports/" + std::to_string(port.number);

  const json& link_layer = p.at("/rdma/link_layer");
  e.add("rdma.link_layer", subject, link_layer, port.link_layer, port.link_layer == link_layer ? Status::ok : Status::fail,
        "mlxconfig -d " + d.pci_address + " set LINK_TYPE_P" + std::to_string(port.number) + "=" +
            (link_layer == "Ethernet" ? "2" : "1"),
        "the port runs the wrong link layer");

  // "ACTIVE/LinkUp/up": the IB port state, its physical state, and the netdev's operstate.
  const std::string want_state = p.at("/link/state").get<std::string>() + "/" + p.at("/link/phys_state").get<std::string>() +
                                 "/" + p.at("/link/operstate").get<std::string>();
  const std::string state = port.state + "/" + port.phys_state + "/" + (n ? n->operstate : "no netdev");
  const bool admin_up = n && n->operstate != "down";
  e.add("link.state", subject, want_state, state, state == want_state ? Status::ok : Status::fail,
        admin_up ? "check cable, transceiver and switch port: ethtool " + ifname : "ip link set dev " + ifname + " up",
        "port " + std::to_string(port.number) + " of " + d.name + " is not up");

  const bool active = port.state == "ACTIVE";
  const json& pinned = p.at("/link/rate_gbps");
  const json want_rate = pinned.is_null() ? json(host_rate) : pinned;
  const auto rate = parse_rate_gbps(port.rate);
  if (!active || !rate) {
    e.add("link.rate", subject, want_rate, port.rate.empty() ? json(nullptr) : json(port.rate), Status::skip, "",
          active ? "unreadable rate '" + port.rate + "'" : "the port is not ACTIVE");
  } else {
    e.add("link.rate", subject, want_rate, *rate, *rate >= want_rate.get<double>() ? Status::ok : Status::fail,
          "ethtool " + ifname + "  # compare Speed with Supported link modes; reseat or replace the cable",
          pinned.is_null() ? "slower than the fastest port on this host" : "slower than the profile's rate_gbps");
  }

  const json& min_mtu = p.at("/link/min_mtu");
  const json& active_mtu = p.at("/link/active_mtu");
  const std::string mtu_fix = "ip link set dev " + ifname + " mtu " + min_mtu.dump();
  if (!n || !n->mtu) {
    for (const char* check : {"link.mtu", "link.active_mtu"}) {
      e.add(check, subject, check == std::string("link.mtu") ? json{{"min", min_mtu}} : active_mtu, nullptr, Status::skip,
            "", n ? "cannot read /sys/class/net/" + n->name + "/mtu" : "no netdev for " + d.name);
    }
  } else {
    e.add("link.mtu", subject, json{{"min", min_mtu}}, *n->mtu, *n->mtu >= min_mtu.get<long long>() ? Status::ok : Status::fail,
          mtu_fix, "jumbo frames are needed for a 4096-byte RoCE MTU");
    const int derived = roce_active_mtu(*n->mtu);
    e.add("link.active_mtu", subject, active_mtu, derived, derived == active_mtu.get<int>() ? Status::ok : Status::fail,
          mtu_fix, "derived from the netdev MTU " + std::to_string(*n->mtu) + " as the kernel does (iboe_get_mtu)");
  }

  if (port.link_layer != "Ethernet") return;  // the rest is RoCE

  const json& gid_type = p.at("/roce/gid_type");
  json gids = json::object();
  for (const auto& g : port.gids) gids[g.type.empty() ? "unknown" : g.type].push_back(g.index);
  e.add("roce.gid.v2_present", subject, json{{"type", gid_type}}, gids, gids.contains(gid_type) ? Status::ok : Status::fail,
        "ip addr add <address>/<prefix> dev " + ifname + "  # RoCE GIDs follow the netdev's IP addresses",
        "no " + gid_type.get<std::string>() + " GID on this port");

  const json& mode = p.at("/roce/default_mode");
  const std::string mode_fix = "mkdir -p " + cfg + " && echo '" + mode.get<std::string>() + "' > " + cfg_port + "/default_roce_mode";
  if (!port.roce_mode.value) {
    // No configfs entry: rdma_cm runs on a kernel default netcheck cannot see, which may be v1.
    e.add("roce.mode.default", subject, mode, nullptr, Status::warn, mode_fix, port.roce_mode.missing);
  } else {
    e.judge_equal("roce.mode.default", subject, mode, port.roce_mode, mode_fix, "");
  }
  const int dscp = p.at("/roce/traffic_dscp").get<int>();
  const json tos{dscp << 2, (dscp << 2) | 2};  // ECN bits 00 or ECT(0)
  const std::string tos_fix = "mkdir -p " + cfg + " && echo " + tos[1].dump() + " > " + cfg_port + "/default_roce_tos";
  if (!port.roce_tos.value) {
    e.add("roce.tos.default", subject, tos, nullptr, Status::warn, tos_fix, port.roce_tos.missing);
  } else {
    e.judge<int>(
        "roce.tos.default", subject, tos, port.roce_tos, [](const int& v) { return json(v); },
        [&](const json& observed) { return contains_all(tos, json{observed}); }, tos_fix, "");
  }

  // What the driver's table says of NIC QoS, declared once there (common's nic_counters).
  const std::string_view without_qos = no_nic_qos(d.driver.name);
  const std::string no_qos = !without_qos.empty()
                                 ? std::string(without_qos) + " (" + d.name + "'s driver " + d.driver.name + ": " +
                                       d.driver.found_by + ")"
                             : !n ? "no netdev for " + d.name
                                  : "";
  if (!no_qos.empty()) {
    for (const char* check : {"roce.trust.dscp", "roce.pfc.enabled_priorities", "roce.dscp.priority_map",
                              "roce.ecn.np_enabled", "roce.ecn.rp_enabled", "roce.cnp.dscp", "roce.cnp.prio"}) {
      e.add(check, subject, nullptr, nullptr, Status::skip, "", no_qos);
    }
  } else {
    qos_checks(e, subject, *n, d.pci_address, p);
  }
  counter_checks(e, subject, port, d.driver, n, p);
}

// Where to change an NCCL setting, in the words of where it was read.
std::string nccl_fix(const NcclSetting* s, const std::string& name, const std::string& value) {
  const std::string where = !s ? "/etc/nccl.conf" : s->source == "environment" ? "the job's environment" : s->source;
  return value.empty() ? "remove " + name + " from " + where : name + "=" + value + " in " + where;
}

std::optional<long long> nccl_number(const NcclSetting& s) {
  try {
    std::size_t used = 0;
    const long long v = std::stoll(s.value, &used);
    if (used == s.value.size()) return v;
  } catch (const std::exception&) {
  }
  return std::nullopt;
}

// An IPv4 address as a RoCE v2 GID (::ffff:a.b.c.d): the GID NCCL must use on a routed fabric.
bool roce_v2_ipv4(const Gid& g) { return g.type == "RoCE v2" && g.gid.rfind("0000:0000:0000:0000:0000:ffff:", 0) == 0; }

// NCCL opens its queue pairs with verbs: rdma_cm's default ToS and GID choice do not apply to it,
// its own settings must put its traffic on the lossless priority and on a RoCE v2 GID.
void nccl_checks(Emitter& e, const HostState& h, const Profile& p) {
  if (h.devices.empty()) return;  // no RDMA: NCCL uses sockets, nothing of the fabric to judge
  const NcclEnv& env = h.nccl;
  if (env.settings.empty()) {
    e.add("nccl.env", "host", nullptr, nullptr, Status::skip, "pass the job's environment with --nccl-env FILE",
          "no NCCL_* setting in " + join(env.read, ", ") + ": NCCL's defaults apply");
    return;
  }
  json seen = json::object();  // values only: where each was read differs from host to host by design
  for (const auto& [name, s] : env.settings) seen[name] = s.value;
  e.add("nccl.env", "host", nullptr, seen, Status::ok);

  const int dscp = p.at("/roce/traffic_dscp").get<int>();
  const json& map = p.at("/roce/dscp_to_priority");
  const json lossless = map.contains(std::to_string(dscp)) ? map.at(std::to_string(dscp)) : p.at("/roce/pfc_priorities").at(0);
  const std::string tc_wanted = std::to_string((dscp << 2) | 2);  // DSCP and ECT(0), as NCCL's docs set it
  if (const NcclSetting* gid = env.find("NCCL_IB_GID_INDEX")) {
    const auto index = nccl_number(*gid);
    for (const auto& d : h.devices) {
      for (const auto& port : d.ports) {
        if (port.link_layer != "Ethernet") continue;
        json wanted = json::array();
        const Gid* at = nullptr;
        for (const auto& g : port.gids) {
          if (roce_v2_ipv4(g)) wanted.push_back(g.index);
          if (index && g.index == *index) at = &g;
        }
        const json observed = at ? json{{"index", at->index}, {"type", at->type}, {"gid", at->gid}} : json{{"index", gid->value}};
        const bool ok = at && roce_v2_ipv4(*at);
        e.add("nccl.ib_gid_index", d.name + "/" + std::to_string(port.number), json{{"roce_v2_ipv4", wanted}}, observed,
              ok ? Status::ok : Status::fail,
              wanted.empty() ? "ip addr add <address>/<prefix> dev <netdev>  # no RoCE v2 IPv4 GID to point NCCL at"
                             : nccl_fix(gid, "NCCL_IB_GID_INDEX", wanted[0].dump()) + ", or remove it so NCCL picks the RoCE v2 GID",
              "NCCL_IB_GID_INDEX=" + gid->value + " from " + gid->source +
                  (at ? " is a " + at->type + " GID (" + at->gid + "), not RoCE v2 over IPv4" : " is no GID of this port"));
      }
    }
  }
  const NcclSetting* tc = env.find("NCCL_IB_TC");
  const json tc_ok{dscp << 2, (dscp << 2) | 2};
  if (!tc) {
    e.add("nccl.ib_tc", "host", tc_ok, nullptr, Status::warn, nccl_fix(nullptr, "NCCL_IB_TC", tc_wanted),
          "unset: NCCL marks its RoCE traffic DSCP 0, not the profile's DSCP " + std::to_string(dscp) + " of priority " + lossless.dump());
  } else {
    const auto v = nccl_number(*tc);
    const bool ok = v && contains_all(tc_ok, json{*v});
    e.add("nccl.ib_tc", "host", tc_ok, v ? json(*v) : json(tc->value), ok ? Status::ok : Status::fail, nccl_fix(tc, "NCCL_IB_TC", tc_wanted),
          "NCCL_IB_TC=" + tc->value + " from " + tc->source +
              (v ? " is DSCP " + std::to_string(*v >> 2) + "; the profile puts DSCP " + std::to_string(dscp) + " on priority " + lossless.dump()
                 : " is not a number"));
  }
  if (const NcclSetting* sl = env.find("NCCL_IB_SL")) {
    const auto v = nccl_number(*sl);
    const bool ok = v && json(*v) == lossless;
    e.add("nccl.ib_sl", "host", lossless, v ? json(*v) : json(sl->value), ok ? Status::ok : Status::fail,
          nccl_fix(sl, "NCCL_IB_SL", lossless.dump()),
          "NCCL_IB_SL=" + sl->value + " from " + sl->source + ": the lossless priority is " + lossless.dump());
  }
  if (const NcclSetting* hca = env.find("NCCL_IB_HCA")) {
    const NcclNameList list = parse_nccl_name_list(hca->value, true);
    std::vector<std::string> usable, unmatched;  // active device ports the list lets NCCL use; entries that name none
    auto active = [](const RdmaDevice& d, int port) {
      return std::any_of(d.ports.begin(), d.ports.end(), [&](const Port& q) { return (port == 0 || q.number == port) && q.state == "ACTIVE"; });
    };
    for (const auto& entry : list.entries) {
      const bool any = std::any_of(h.devices.begin(), h.devices.end(), [&](const RdmaDevice& d) { return entry.matches(d.name) && active(d, entry.port); });
      if (!any && !list.exclude) unmatched.push_back((entry.exact ? "=" : "") + entry.name + (entry.port ? ":" + std::to_string(entry.port) : ""));
    }
    for (const auto& d : h.devices) {
      const bool listed = std::any_of(list.entries.begin(), list.entries.end(), [&](const auto& entry) { return entry.matches(d.name); });
      if (listed != list.exclude && active(d, 0)) usable.push_back(d.name);
    }
    const bool ok = unmatched.empty() && !usable.empty();
    e.add("nccl.ib_hca", "host", json{{"names_active_devices", true}}, json{{"value", hca->value}, {"usable", usable}},
          ok ? Status::ok : Status::fail, nccl_fix(hca, "NCCL_IB_HCA", ""),
          "NCCL_IB_HCA=" + hca->value + " from " + hca->source +
              (unmatched.empty() ? ": leaves NCCL no active RDMA device" : ": no active RDMA device (port) for " + join(unmatched, ", ")));
  }
  if (const NcclSetting* ifname = env.find("NCCL_SOCKET_IFNAME")) {
    const NcclNameList list = parse_nccl_name_list(ifname->value, false);
    std::vector<std::string> usable;
    for (const auto& i : h.interfaces) {
      const bool listed = std::any_of(list.entries.begin(), list.entries.end(), [&](const auto& entry) { return entry.matches(i); });
      if (listed != list.exclude && i != "lo") usable.push_back(i);
    }
    e.add("nccl.socket_ifname", "host", json{{"names_interfaces", true}}, json{{"value", ifname->value}, {"usable", usable}},
          usable.empty() ? Status::fail : Status::ok, nccl_fix(ifname, "NCCL_SOCKET_IFNAME", ""),
          "NCCL_SOCKET_IFNAME=" + ifname->value + " from " + ifname->source + " names no interface of this host (" + join(h.interfaces, ", ") + ")");
  }
  std::vector<std::string> pinned, fixes;
  for (const char* name : {"NCCL_ALGO", "NCCL_PROTO", "NCCL_MIN_NCHANNELS", "NCCL_MAX_NCHANNELS", "NCCL_MIN_NRINGS", "NCCL_MAX_NRINGS"}) {
    if (const NcclSetting* s = env.find(name)) {
      pinned.push_back(std::string(name) + "=" + s->value + " from " + s->source);
      fixes.push_back(nccl_fix(s, name, ""));
    }
  }
  e.add("nccl.pinned_tuning", "host", json::array(), pinned, pinned.empty() ? Status::ok : Status::warn, join(fixes, "; "),
        join(pinned, "; ") + ": pins what NCCL's tuner chooses per message size and topology (a debugging setting, slower where it does not fit)");
}

}  // namespace

std::vector<CheckRecord> run_checks(const HostState& host, const Profile& profile) {
  std::vector<CheckRecord> out;
  Emitter e(host.hostname, out);
  host_checks(e, host, profile);
  // An unpinned rate is judged against the fastest active port: a degraded link stands out.
  double host_rate = 0;
  for (const auto& d : host.devices) {
    for (const auto& port : d.ports) {
      if (port.state == "ACTIVE") host_rate = std::max(host_rate, parse_rate_gbps(port.rate).value_or(0));
    }
  }
  for (const auto& d : host.devices) {
    device_checks(e, host, d, profile);
    for (const auto& port : d.ports) port_checks(e, d, port, host_rate, profile);
  }
  nccl_checks(e, host, profile);
  return out;
}

}  // namespace rocebench::netcheck

#include "rocebench/netcheck/host_state.hpp"

#include <algorithm>
#include <filesystem>
#include <functional>
#include <regex>
#include <sstream>

#include "rocebench/common/nic_counters.hpp"

namespace rocebench::netcheck {

namespace {

bool is_zero_gid(const std::string& gid) { return gid.find_first_not_of("0:") == std::string::npos; }

// Tool outputs are fetched at most once per host, and only when sysfs lacked the setting.
class LazyTool {
 public:
  LazyTool(const ToolSource& tools, ToolQuery query) : tools_(tools), query_(std::move(query)) {}
  const ToolText& get() {
    if (!text_) text_ = tools_.get(query_);
    return *text_;
  }

 private:
  const ToolSource& tools_;
  ToolQuery query_;
  std::optional<ToolText> text_;
};

// "where: why" for Sourced::note, from a tool that gave nothing usable.
std::string tool_gap(const ToolText& t, const std::string& what) {
  return t.text ? t.source + ": no " + what + " in its output" : t.missing;
}

Port read_port(const HostFs& fs, const std::string& device, const std::string& number) {
  const std::string base = "/sys/class/infiniband/" + device + "/ports/" + number;
  Port p;
  p.number = std::stoi(number);
  p.state = after_colon(fs.read(base + "/state").value_or(""));
  p.phys_state = after_colon(fs.read(base + "/phys_state").value_or(""));
  p.link_layer = fs.read(base + "/link_layer").value_or("");
  p.rate = fs.read(base + "/rate").value_or("");
  for (const auto& index : fs.list(base + "/gids")) {
    const auto gid = fs.read(base + "/gids/" + index);
    if (!gid || is_zero_gid(*gid)) continue;
    p.gids.push_back({std::stoi(index), *gid, fs.read(base + "/gid_attrs/types/" + index).value_or(""),
                      fs.read(base + "/gid_attrs/ndevs/" + index).value_or("")});
  }
  std::sort(p.gids.begin(), p.gids.end(), [](const Gid& a, const Gid& b) { return a.index < b.index; });
  p.counters = read_port_counters(fs, device, p.number);

  const std::string configfs = "/sys/kernel/config";
  const std::string cm = configfs + "/rdma_cm";
  const std::string cfg = cm + "/" + device + "/ports/" + number;
  if (auto mode = fs.read(cfg + "/default_roce_mode")) p.roce_mode.set(*mode, cfg + "/default_roce_mode");
  if (auto tos = fs.read_int(cfg + "/default_roce_tos")) p.roce_tos.set(static_cast<int>(*tos), cfg + "/default_roce_tos");
  // An empty (or absent) /sys/kernel/config is configfs not mounted: rdma_cm's defaults are then unreadable.
  const std::string why = fs.list(configfs).empty()
                              ? "configfs is not mounted at " + configfs + " (mount -t configfs none " + configfs +
                                    "): rdma_cm's defaults cannot be read"
                          : !fs.exists(cm) ? "no " + cm + ": rdma_cm is not loaded (modprobe rdma_cm)"
                          : !fs.exists(cm + "/" + device)
                              ? "no " + cm + "/" + device + ": rdma_cm uses the kernel's default until that folder is created"
                              : "cannot read " + cfg;
  p.roce_mode.note(why);
  p.roce_tos.note(why);
  return p;
}

// ECN enable flags per priority: /sys/class/net/IF/ecn/roce_np/enable/<0-7> hold 0 or 1.
void read_ecn(const HostFs& fs, const std::string& dir, Sourced<std::vector<int>>& out) {
  if (!fs.exists(dir)) {
    out.note("no " + dir + " (MLNX_OFED sysfs; the upstream driver does not expose ECN enables)");
    return;
  }
  std::vector<int> enabled;
  for (int prio = 0; prio < 8; ++prio) {
    const auto v = fs.read_int(dir + "/" + std::to_string(prio));
    if (!v) {
      out.note("cannot read " + dir + "/" + std::to_string(prio));
      return;
    }
    if (*v == 1) enabled.push_back(prio);
  }
  out.set(enabled, dir);
}

// CNP marking: MLNX_OFED sysfs first, then the upstream driver's debugfs cc_params (root only).
void read_cnp(const HostFs& fs, const std::string& netdev_dir, const std::string& pci, Qos& q) {
  const std::string np = netdev_dir + "/ecn/roce_np";
  const std::string cc = "/sys/kernel/debug/mlx5/" + pci + "/cc_params";
  if (fs.exists(np)) {
    q.cnp_dir = np;
    if (auto v = fs.read_int(np + "/cnp_dscp")) q.cnp_dscp.set(static_cast<int>(*v), np + "/cnp_dscp");
    if (auto v = fs.read_int(np + "/cnp_802p_prio")) q.cnp_prio.set(static_cast<int>(*v), np + "/cnp_802p_prio");
  } else if (fs.exists(cc)) {
    q.cnp_dir = cc;
    q.cnp_debugfs = true;
    if (auto v = fs.read_int(cc + "/np_cnp_dscp")) q.cnp_dscp.set(static_cast<int>(*v), cc + "/np_cnp_dscp");
    if (auto v = fs.read_int(cc + "/np_cnp_prio")) q.cnp_prio.set(static_cast<int>(*v), cc + "/np_cnp_prio");
  }
  const std::string why = q.cnp_dir.empty() ? "neither " + np + " nor " + cc + " (debugfs needs root)"
                                            : "cannot read the CNP files in " + q.cnp_dir;
  q.cnp_dscp.note(why);
  q.cnp_prio.note(why);
}

// Only for a driver with NIC QoS (common's no_nic_qos): the others' tools are not asked.
Qos read_qos(const HostFs& fs, const ToolSource& tools, const std::string& netdev, const std::string& pci) {
  const std::string dir = "/sys/class/net/" + netdev;
  Qos q;
  LazyTool mlnx_qos(tools, mlnx_qos_query(netdev)), dcb_pfc(tools, dcb_pfc_query(netdev)),
      dcb_app(tools, dcb_app_query(netdev));

  if (auto trust = fs.read(dir + "/qos/trust")) q.trust.set(*trust, dir + "/qos/trust");
  if (auto text = fs.read(dir + "/qos/dscp2prio")) {
    if (auto map = parse_sysfs_dscp2prio(*text)) q.dscp2prio.set(*map, dir + "/qos/dscp2prio");
  }
  read_ecn(fs, dir + "/ecn/roce_np/enable", q.ecn_np);
  read_ecn(fs, dir + "/ecn/roce_rp/enable", q.ecn_rp);
  read_cnp(fs, dir, pci, q);

  // PFC has no sysfs file (mlnx_qos itself asks DCB netlink): dcb first, then mlnx_qos.
  if (const auto& t = dcb_pfc.get(); t.text) {
    if (auto pfc = parse_dcb_pfc(*t.text)) q.pfc.set(*pfc, t.source);
  }
  q.pfc.note(tool_gap(dcb_pfc.get(), "prio-pfc"));
  const auto need_mlnx = [&] { return !q.pfc.value || !q.trust.value || !q.dscp2prio.value; };
  MlnxQos parsed;
  if (need_mlnx() && mlnx_qos.get().text) parsed = parse_mlnx_qos(*mlnx_qos.get().text);
  const std::string mlnx_source = mlnx_qos.get().source;
  if (!q.pfc.value && parsed.pfc) q.pfc.set(*parsed.pfc, mlnx_source);
  if (!q.trust.value && parsed.trust) q.trust.set(*parsed.trust, mlnx_source);
  if (!q.dscp2prio.value && parsed.dscp2prio) q.dscp2prio.set(*parsed.dscp2prio, mlnx_source);
  if (need_mlnx()) {
    // Upstream mlx5 trusts DSCP exactly when the DCB APP table holds DSCP entries.
    if (const auto& t = dcb_app.get(); t.text) {
      if (auto map = parse_dcb_app_dscp(*t.text)) {
        if (!q.trust.value) q.trust.set(map->empty() ? "pcp" : "dscp", t.source);
        if (!q.dscp2prio.value && !map->empty()) q.dscp2prio.set(*map, t.source);
      }
    }
    q.pfc.note(tool_gap(mlnx_qos.get(), "PFC configuration"));
    q.dscp2prio.note(tool_gap(mlnx_qos.get(), "dscp2prio mapping"));
    q.trust.note(tool_gap(mlnx_qos.get(), "trust state"));
    q.trust.note(tool_gap(dcb_app.get(), "dscp-prio"));
    q.dscp2prio.note(tool_gap(dcb_app.get(), "dscp-prio entries"));
  }
  q.ofed = fs.exists(dir + "/qos/trust") || fs.exists(dir + "/ecn") || mlnx_qos.get().text.has_value();
  return q;
}

NetDev read_netdev(const HostFs& fs, const ToolSource& tools, const std::string& name, const std::string& pci,
                   const RdmaDriver& driver) {
  const std::string dir = "/sys/class/net/" + name;
  NetDev n;
  n.name = name;
  n.mtu = fs.read_int(dir + "/mtu");
  n.speed_mbps = fs.read_int(dir + "/speed");
  n.operstate = fs.read(dir + "/operstate").value_or("");
  n.address = fs.read(dir + "/address").value_or("");
  if (no_nic_qos(driver.name).empty()) n.qos = read_qos(fs, tools, name, pci);
  const ToolText ethtool = tools.get(ethtool_stats_query(name));
  if (ethtool.text) n.qos.ethtool_stats.set(parse_ethtool_stats(*ethtool.text), ethtool.source);
  n.qos.ethtool_stats.note(ethtool.missing);
  return n;
}

RdmaDevice read_device(const HostFs& fs, const ToolSource& tools, const std::string& name) {
  const std::string base = "/sys/class/infiniband/" + name;
  RdmaDevice d;
  d.name = name;
  d.fw_ver = fs.read(base + "/fw_ver").value_or("");
  d.node_guid = fs.read(base + "/node_guid").value_or("");
  d.hca_type = fs.read(base + "/hca_type").value_or("");
  d.board_id = fs.read(base + "/board_id").value_or("");
  d.driver = rdma_driver(fs, name);
  if (auto pci = fs.resolve(base + "/device")) {
    d.pci_path = pci_chain(*pci);
    if (!d.pci_path.empty()) d.pci_address = d.pci_path.back();
  }
  // A PF has one netdev; without device/net (a VF in a VM, IB link layer) take the GID table's.
  std::vector<std::string> netdevs = fs.list(base + "/device/net");
  for (const auto& port : fs.list(base + "/ports")) {
    d.ports.push_back(read_port(fs, name, port));
    for (const auto& g : d.ports.back().gids) {
      if (netdevs.empty() && !g.ndev.empty()) netdevs.push_back(g.ndev);
    }
  }
  if (!netdevs.empty() && fs.exists("/sys/class/net/" + netdevs.front())) {
    d.netdev = read_netdev(fs, tools, netdevs.front(), d.pci_address, d.driver);
  }
  return d;
}

std::string driver_version(const HostFs& fs, const std::string& kernel) {
  if (auto v = fs.read("/sys/module/mlx5_core/version")) return *v;
  return fs.exists("/sys/module/mlx5_core") ? "inbox " + kernel : "";
}

void read_acs(const HostFs& fs, const ToolSource& tools, HostState& h) {
  std::vector<std::string> functions;
  for (const auto& d : h.devices) {
    for (const auto& [gpu, chain] : h.gpus) {
      for (const auto& f : path_between(d.pci_path, chain)) {
        if (std::find(functions.begin(), functions.end(), f) == functions.end()) functions.push_back(f);
      }
    }
  }
  LazyTool lspci(tools, lspci_query());
  std::vector<std::string> sources;
  auto add_source = [&](const std::string& s) {
    if (std::find(sources.begin(), sources.end(), s) == sources.end()) sources.push_back(s);
  };
  for (const auto& f : functions) {
    if (auto from_config = acs_from_config(fs.read_bytes("/sys/bus/pci/devices/" + f + "/config"))) {
      h.acs[f] = from_config;
      add_source("/sys/bus/pci/devices/*/config");
      continue;
    }
    const auto& t = lspci.get();
    const AcsMap listed = t.text ? parse_lspci_acs(*t.text) : AcsMap{};
    const auto it = listed.find(f);
    h.acs[f] = it == listed.end() ? std::nullopt : it->second;
    add_source(t.text ? t.source : t.missing);
  }
  for (const auto& s : sources) h.acs_source += (h.acs_source.empty() ? "" : ", ") + s;
}

// The DMA mode of the IOMMU: what the iommu groups say (the kernel's own view), else what the
// command line asks for.
void read_iommu(const HostFs& fs, HostState& h) {
  const std::string groups_dir = "/sys/kernel/iommu_groups";
  const auto groups = fs.list(groups_dir);
  if (!groups.empty()) {
    const std::string file = groups_dir + "/" + groups.front() + "/type";
    const std::string type = fs.read(file).value_or("");
    if (type == "identity" || type.rfind("DMA", 0) == 0) {
      h.iommu = type == "identity" ? "pt" : "translated";
      h.iommu_source = file + ": " + type;
      return;
    }
  }
  std::set<std::string> args;
  std::istringstream in(h.cmdline);
  for (std::string a; in >> a;) args.insert(a);
  const auto has = [&](const char* a) { return args.count(a) > 0; };
  h.iommu_source = "/proc/cmdline: " + h.cmdline;
  if (has("iommu=pt") || has("iommu.passthrough=1")) h.iommu = "pt";
  else if (has("iommu=off") || has("intel_iommu=off") || has("amd_iommu=off")) h.iommu = "off";
  else if (has("intel_iommu=on") || has("iommu=nopt") || has("iommu.passthrough=0")) h.iommu = "translated";
  else if (fs.exists(groups_dir) && groups.empty()) {
    h.iommu = "off";
    h.iommu_source = groups_dir + " is empty";
  } else {
    h.iommu = "default";
  }
}

}  // namespace

std::vector<std::string> path_between(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  std::size_t common = 0;
  while (common < a.size() && common < b.size() && a[common] == b[common]) ++common;
  std::vector<std::string> out;
  const std::size_t from = common == 0 ? 0 : common - 1;
  for (const auto* chain : {&a, &b}) {
    for (std::size_t i = from; i + 1 < chain->size(); ++i) {
      if (std::find(out.begin(), out.end(), (*chain)[i]) == out.end()) out.push_back((*chain)[i]);
    }
  }
  return out;
}

std::vector<std::string> pci_chain(const std::string& device_path) {
  static const std::regex bdf(R"(^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$)");
  std::vector<std::string> chain;
  for (const auto& part : std::filesystem::path(device_path)) {
    if (std::regex_match(part.string(), bdf)) chain.push_back(part.string());
  }
  return chain;
}


int roce_active_mtu(long long netdev_mtu) {
  // GRH 40 + UDP 8 + BTH 12 + XRC ext 4 + AtomicETH 28 + ICRC 4 (include/rdma/ib_addr.h).
  const long long payload = netdev_mtu - 96;
  for (int mtu : {4096, 2048, 1024, 512}) {
    if (payload >= mtu) return mtu;
  }
  return 256;
}

std::string tree_hostname(const HostFs& fs) {
  for (const char* file : {"/proc/sys/kernel/hostname", "/etc/hostname"}) {
    const std::string name = fs.read(file).value_or("");
    // /etc/hostname may hold comments; the name is its first word.
    std::istringstream in(name);
    std::string word;
    if (in >> word && word[0] != '#') return word;
  }
  return {};
}

HostState read_host(const HostFs& fs, const ToolSource& tools, const std::string& hostname,
                    const std::vector<std::string>& modules, const NcclSources& nccl) {
  HostState h;
  h.hostname = hostname;
  h.kernel = fs.read("/proc/sys/kernel/osrelease").value_or("");
  if (h.kernel.empty()) {
    // "Linux version 5.15.0-119-generic (buildd@...) ...": the release is the third word.
    std::istringstream version(fs.read("/proc/version").value_or(""));
    std::string linux_word, version_word;
    if (version >> linux_word >> version_word >> h.kernel && version_word != "version") h.kernel.clear();
  }
  h.cmdline = fs.read("/proc/cmdline").value_or("");
  h.driver_version = driver_version(fs, h.kernel);
  read_iommu(fs, h);
  for (const auto& m : modules) {
    if (fs.exists("/sys/module/" + m)) h.modules.insert(m);
  }
  for (const auto& name : fs.list("/sys/class/infiniband")) {
    h.devices.push_back(read_device(fs, tools, name));
    // The device's own driver's modules are asked about too, whatever the profile lists.
    if (const KnownDriver* known = known_driver(h.devices.back().driver.name)) {
      for (const auto& m : known->modules) {
        if (fs.exists("/sys/module/" + std::string(m))) h.modules.insert(std::string(m));
      }
    }
  }
  if (h.devices.empty()) {
    h.no_devices_reason = !fs.exists("/sys/class/infiniband")
                              ? "no RDMA device: " + fs.at("/sys/class/infiniband").string() +
                                    " does not exist (no RDMA NIC, or its driver, e.g. mlx5_ib, is not loaded)"
                              : "no RDMA device: " + fs.at("/sys/class/infiniband").string() + " is empty";
  }
  for (const auto& bdf : fs.list("/sys/bus/pci/devices")) {
    const std::string dev = "/sys/bus/pci/devices/" + bdf;
    const std::string pci_class = fs.read(dev + "/class").value_or("");
    const bool display = pci_class.rfind("0x0300", 0) == 0 || pci_class.rfind("0x0302", 0) == 0;
    if (fs.read(dev + "/vendor").value_or("") == "0x10de" && display) {
      h.gpus[bdf] = pci_chain(fs.resolve(dev).value_or(""));
    }
  }
  read_acs(fs, tools, h);
  h.interfaces = fs.list("/sys/class/net");
  h.nccl = read_nccl_env(fs, nccl);
  return h;
}

}  // namespace rocebench::netcheck

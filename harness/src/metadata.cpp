#include "metadata.hpp"

#include <algorithm>
#include <charconv>
#include <map>
#include <sstream>

#include <fmt/format.h>

#include "build_info.hpp"
#include "rocebench/common/host_fs.hpp"

namespace rocebench {

namespace {

// CPUs in a sysfs CPU list ("0-3,8,10-11"); 0 when it cannot be read.
long count_cpus(const std::string& list) {
  long count = 0;
  std::istringstream ranges(list);
  for (std::string range; std::getline(ranges, range, ',');) {
    const auto dash = range.find('-');
    try {
      count += dash == std::string::npos ? 1 : std::stol(range.substr(dash + 1)) - std::stol(range.substr(0, dash)) + 1;
    } catch (const std::exception&) {
      return 0;
    }
  }
  return count;
}

// sysfs port state "4: ACTIVE" -> "ACTIVE".
std::string without_number(const std::string& state) {
  const auto colon = state.find(": ");
  return colon == std::string::npos ? state : state.substr(colon + 2);
}

// "Linux 6.1.0-18-amd64", as uname's sysname and release; "" when the tree has neither.
std::string kernel(const HostFs& host) {
  const std::string name = host.read("/proc/sys/kernel/ostype").value_or("");
  const std::string release = host.read("/proc/sys/kernel/osrelease").value_or("");
  return name.empty() || release.empty() ? name + release : name + " " + release;
}

json netdevs(const HostFs& host) {
  json out = json::array();
  for (const auto& name : host.list("/sys/class/net")) {
    const std::string dir = "/sys/class/net/" + name;
    json dev{{"name", name}};
    if (auto mtu = host.read_int(dir + "/mtu")) dev["mtu"] = *mtu;
    if (auto state = host.read(dir + "/operstate"); state && !state->empty()) dev["operstate"] = *state;
    if (auto mac = host.read(dir + "/address"); mac && !mac->empty()) dev["address"] = *mac;
    // speed reads EINVAL (or -1) on virtual links: leave it out rather than guess.
    if (auto speed = host.read_int(dir + "/speed"); speed && *speed >= 0) dev["speed_mbps"] = *speed;
    out.push_back(dev);
  }
  return out;
}

// The RDMA part, from /sys/class/infiniband: {"rdma_core": …, "devices": [...], "reason"?}.
json collect_rdma_info(const HostFs& host) {
  json out{{"rdma_core", fmt::format("libibverbs {} (built against)", kIbverbsVersion)}, {"devices", json::array()}};
  const std::string class_dir = "/sys/class/infiniband";
  for (const auto& name : host.list(class_dir)) {
    const std::string base = class_dir + "/" + name;
    json dev{{"name", name}, {"ports", json::array()}};
    // The NIC: firmware, GUID, and model (hca_type "MT4123", board_id "MT_0000000223"; rxe has neither).
    for (const char* field : {"fw_ver", "node_guid", "hca_type", "board_id"}) dev[field] = host.read(base + "/" + field).value_or("");
    for (const auto& port : host.list(base + "/ports")) {
      const std::string dir = base + "/ports/" + port;
      json p{{"port", std::stoi(port)},
             {"state", without_number(host.read(dir + "/state").value_or(""))},
             {"link_layer", host.read(dir + "/link_layer").value_or("")},
             {"gid_table_len", host.list(dir + "/gids").size()}};
      // RoCE: the netdev under the port (its MTU bounds the active MTU; see netdevs).
      if (auto netdev = host.read(dir + "/gid_attrs/ndevs/0"); netdev && !netdev->empty()) p["netdev"] = *netdev;
      dev["ports"].push_back(p);
    }
    out["devices"].push_back(dev);
  }
  if (out["devices"].empty()) out["reason"] = fmt::format("no RDMA device: {} lists none", host.at(class_dir).string());
  return out;
}

}  // namespace

json build_info() { return {{"version", kRocebenchVersion}, {"git_revision", kRocebenchGitRevision}}; }

std::optional<std::uint64_t> cpu_pressure_total_us(const HostFs& host) {
  const auto text = host.read("/proc/pressure/cpu");
  if (!text || text->rfind("some ", 0) != 0) return std::nullopt;
  const auto at = text->find(" total=");
  if (at == std::string::npos) return std::nullopt;
  const char* first = text->data() + at + 7;
  const char* last = text->data() + std::min(text->find('\n'), text->size());
  std::uint64_t total = 0;
  const auto [end, error] = std::from_chars(first, last, total);
  if (error != std::errc() || end == first) return std::nullopt;
  return total;
}

json collect_host_info(const std::string& hostname, const HostFs& host) {
  const auto kib = host.read_field("/proc/meminfo", "MemTotal");
  const long cores = count_cpus(host.read("/sys/devices/system/cpu/online").value_or(""));
  return {{"hostname", hostname},
          {"ranks", json::array()},
          {"kernel", kernel(host)},
          {"cpu", {{"model", host.read_field("/proc/cpuinfo", "model name").value_or("")}, {"cores", cores > 0 ? cores : 1}}},
          {"memory_bytes", kib ? std::stoll(*kib) * 1024 : 0},
          {"rdma", collect_rdma_info(host)},
          {"netdevs", netdevs(host)},
          {"gpu", collect_gpu_info()}};
}

json merge_hosts(const std::vector<json>& per_rank) {
  std::map<std::string, json> by_host;
  std::vector<std::string> order;
  std::map<std::string, std::vector<int>> shared;  // per host: pinned ranks that found their CPU taken
  std::map<std::string, int> allowed;              // and how many CPUs they could choose from
  for (std::size_t rank = 0; rank < per_rank.size(); ++rank) {
    json info = per_rank[rank];
    const json pinned = info.contains("pinned") ? info["pinned"] : json();
    info.erase("pinned");
    const std::string name = info.at("hostname");
    if (!by_host.count(name)) {
      by_host[name] = info;
      order.push_back(name);
    }
    by_host[name]["ranks"].push_back(rank);
    if (pinned.is_object()) {
      by_host[name]["pinned_cpus"].push_back({{"rank", rank}, {"cpu", pinned.at("cpu")}});
      if (pinned.at("shared").get<bool>()) shared[name].push_back(static_cast<int>(rank));
      allowed[name] = pinned.at("allowed");
    }
  }
  json out = json::array();
  for (const auto& name : order) {
    json& host = by_host[name];
    // Fewer CPUs than ranks is recorded, not refused: the numbers of such a run are noisier.
    if (shared.count(name)) {
      host["pinning"] = fmt::format("more ranks than the {} CPU(s) this run may use: rank(s) {} share a CPU with another rank",
                                    allowed[name], fmt::join(shared[name], ", "));
    }
    out.push_back(host);
  }
  return out;
}

}  // namespace rocebench

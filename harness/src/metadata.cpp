#include "metadata.hpp"

#include <fcntl.h>
#include <infiniband/verbs.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "build_info.hpp"

namespace rocebench {

namespace fs = std::filesystem;

namespace {

// sysfs files may fail to read (speed of a virtual link reads EINVAL): that is "", not an error.
std::string read_trimmed(const fs::path& file) {
  std::string s;
  const int fd = ::open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return s;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<std::size_t>(n));
  ::close(fd);
  if (n < 0) return "";
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

// "key<TAB>: value" lines of /proc/cpuinfo and "Key:   value kB" lines of /proc/meminfo.
std::string proc_field(const fs::path& file, const std::string& key) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(key, 0) != 0) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    return value;
  }
  return "";
}

const char* port_state_name(ibv_port_state s) {
  switch (s) {
    case IBV_PORT_DOWN: return "DOWN";
    case IBV_PORT_INIT: return "INIT";
    case IBV_PORT_ARMED: return "ARMED";
    case IBV_PORT_ACTIVE: return "ACTIVE";
    case IBV_PORT_ACTIVE_DEFER: return "ACTIVE_DEFER";
    default: return "NOP";
  }
}

int mtu_bytes(ibv_mtu m) { return 128 << static_cast<int>(m); }

std::string guid_string(__be64 guid) {
  const std::uint64_t g = be64toh(guid);
  return fmt::format("{:04x}:{:04x}:{:04x}:{:04x}", (g >> 48) & 0xffff, (g >> 32) & 0xffff, (g >> 16) & 0xffff, g & 0xffff);
}

json netdevs(const fs::path& root) {
  json out = json::array();
  std::error_code ec;
  std::vector<fs::path> names;
  for (const auto& entry : fs::directory_iterator(root / "sys/class/net", ec)) names.push_back(entry.path());
  std::sort(names.begin(), names.end());
  for (const auto& dir : names) {
    json dev{{"name", dir.filename().string()}};
    if (auto mtu = read_trimmed(dir / "mtu"); !mtu.empty()) dev["mtu"] = std::stoi(mtu);
    if (auto state = read_trimmed(dir / "operstate"); !state.empty()) dev["operstate"] = state;
    if (auto mac = read_trimmed(dir / "address"); !mac.empty()) dev["address"] = mac;
    // speed reads EINVAL on virtual links: leave it out rather than guess.
    if (auto speed = read_trimmed(dir / "speed"); !speed.empty() && speed[0] != '-') dev["speed_mbps"] = std::stoi(speed);
    out.push_back(dev);
  }
  return out;
}

}  // namespace

json build_info() { return {{"version", kRocebenchVersion}, {"git_revision", kRocebenchGitRevision}}; }

json collect_rdma_info() {
  json out{{"rdma_core", fmt::format("libibverbs {} (built against)", kIbverbsVersion)}, {"devices", json::array()}};
  int count = 0;
  ibv_device** list = ibv_get_device_list(&count);
  if (!list || count == 0) {
    out["reason"] = "no RDMA device: ibv_get_device_list found none";
    if (list) ibv_free_device_list(list);
    return out;
  }
  for (int i = 0; i < count; ++i) {
    json dev{{"name", ibv_get_device_name(list[i])}, {"node_guid", guid_string(ibv_get_device_guid(list[i]))},
             {"fw_ver", ""}, {"ports", json::array()}};
    if (ibv_context* ctx = ibv_open_device(list[i])) {
      ibv_device_attr attr{};
      if (ibv_query_device(ctx, &attr) == 0) {
        dev["fw_ver"] = attr.fw_ver;
        for (int p = 1; p <= attr.phys_port_cnt; ++p) {
          ibv_port_attr port{};
          if (ibv_query_port(ctx, static_cast<std::uint8_t>(p), &port) != 0) continue;
          dev["ports"].push_back({{"port", p},
                                  {"state", port_state_name(port.state)},
                                  {"active_mtu", mtu_bytes(port.active_mtu)},
                                  {"link_layer", port.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand"},
                                  {"gid_table_len", port.gid_tbl_len}});
        }
      }
      ibv_close_device(ctx);
    } else {
      dev["reason"] = "ibv_open_device failed";
    }
    out["devices"].push_back(dev);
  }
  ibv_free_device_list(list);
  return out;
}

json collect_host_info(const std::string& hostname, const std::string& root) {
  const fs::path r(root);
  utsname u{};
  ::uname(&u);
  const std::string mem_kb = proc_field(r / "proc/meminfo", "MemTotal");
  const long cores = ::sysconf(_SC_NPROCESSORS_ONLN);
  return {{"hostname", hostname},
          {"ranks", json::array()},
          {"kernel", fmt::format("{} {}", u.sysname, u.release)},
          {"cpu", {{"model", proc_field(r / "proc/cpuinfo", "model name")}, {"cores", cores > 0 ? cores : 1}}},
          {"memory_bytes", mem_kb.empty() ? 0 : std::stoll(mem_kb) * 1024},
          {"rdma", collect_rdma_info()},
          {"netdevs", netdevs(r)},
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

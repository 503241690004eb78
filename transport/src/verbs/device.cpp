#include "rocebench/transport/verbs/device.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <cstring>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/common/host_fs.hpp"

namespace rocebench::verbs {

namespace {

constexpr const char* kClassDir = "/sys/class/infiniband";

// Numeric entry names of a sysfs folder (ports, GID slots), in order.
std::vector<int> numbered(const HostFs& host, const std::string& dir) {
  std::vector<int> out;
  for (const auto& name : host.list(dir)) {
    try {
      out.push_back(std::stoi(name));
    } catch (const std::exception&) {
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

bool all_zero(const std::string& gid) {
  return std::all_of(gid.begin(), gid.end(), [](char c) { return c == '0' || c == ':'; });
}

std::string describe(const std::vector<GidEntry>& gids) {
  std::vector<std::string> parts;
  for (const auto& g : gids) parts.push_back(fmt::format("{} ({} {}{})", g.index, g.type, g.gid, g.netdev.empty() ? "" : " on " + g.netdev));
  return parts.empty() ? "none" : fmt::format("{}", fmt::join(parts, ", "));
}

}  // namespace

std::vector<std::string> list_devices(const std::string& root) { return HostFs(root).list(kClassDir); }

std::vector<int> list_ports(const std::string& root, const std::string& device) {
  return numbered(HostFs(root), fmt::format("{}/{}/ports", kClassDir, device));
}

std::vector<GidEntry> read_gids(const std::string& root, const std::string& device, int port) {
  const HostFs host(root);
  const std::string dir = fmt::format("{}/{}/ports/{}", kClassDir, device, port);
  std::vector<GidEntry> out;
  // Unused GID attributes read EINVAL: they come back empty.
  for (const int index : numbered(host, dir + "/gids")) {
    GidEntry g;
    g.index = index;
    g.gid = host.read(fmt::format("{}/gids/{}", dir, index)).value_or("");
    g.type = host.read(fmt::format("{}/gid_attrs/types/{}", dir, index)).value_or("");
    g.netdev = host.read(fmt::format("{}/gid_attrs/ndevs/{}", dir, index)).value_or("");
    if (!g.gid.empty() && !all_zero(g.gid) && !g.type.empty()) out.push_back(g);
  }
  return out;
}

std::string gid_of_ip(const std::string& ip) {
  unsigned char raw[16] = {};
  in_addr v4{};
  if (::inet_pton(AF_INET, ip.c_str(), &v4) == 1) {
    raw[10] = raw[11] = 0xff;
    std::memcpy(raw + 12, &v4, 4);
  } else if (::inet_pton(AF_INET6, ip.c_str(), raw) != 1) {
    return {};
  }
  std::string out;
  for (int i = 0; i < 16; i += 2) out += fmt::format("{}{:02x}{:02x}", i ? ":" : "", raw[i], raw[i + 1]);
  return out;
}

int choose_gid(const std::vector<GidEntry>& gids, int requested, const std::string& ip) {
  if (requested >= 0) {
    for (const auto& g : gids) {
      if (g.index == requested) return requested;
    }
    throw InputError(fmt::format("GID index {} is not in use; the port has: {}", requested, describe(gids)));
  }
  const std::string wanted = ip.empty() ? std::string() : gid_of_ip(ip);
  if (!ip.empty() && wanted.empty()) throw InputError(fmt::format("'{}' is not an IP address", ip));
  for (const auto& g : gids) {
    if (g.type == "RoCE v2" && (wanted.empty() || g.gid == wanted)) return g.index;
  }
  throw InputError(ip.empty() ? fmt::format("the port has no RoCE v2 GID; it has: {}", describe(gids))
                              : fmt::format("no RoCE v2 GID carries {}; the port has: {}", ip, describe(gids)));
}

void check_device_port(const std::string& root, const std::string& device, int port) {
  const auto devices = list_devices(root);
  if (std::find(devices.begin(), devices.end(), device) == devices.end()) {
    throw InputError(fmt::format("unknown RDMA device '{}'; this host has: {}", device,
                                 devices.empty() ? "none" : fmt::format("{}", fmt::join(devices, ", "))));
  }
  const auto ports = list_ports(root, device);
  if (std::find(ports.begin(), ports.end(), port) == ports.end()) {
    throw InputError(fmt::format("device {} has no port {}; it has: {}", device, port, fmt::join(ports, ", ")));
  }
}

}  // namespace rocebench::verbs

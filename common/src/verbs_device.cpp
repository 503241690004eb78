#include <arpa/inet.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/common/verbs_device.hpp"

namespace rocebench::verbs {

namespace fs = std::filesystem;

namespace {

fs::path class_dir(const std::string& root) { return fs::path(root) / "sys/class/infiniband"; }

// First line of a sysfs file; empty when unreadable (unused GID attributes fail with EINVAL).
std::string first_line(const fs::path& file) {
  std::ifstream in(file);
  std::string line;
  if (in) std::getline(in, line);
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  return line;
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

std::vector<std::string> list_devices(const std::string& root) {
  std::vector<std::string> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(class_dir(root), ec)) out.push_back(e.path().filename().string());
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<int> list_ports(const std::string& root, const std::string& device) {
  std::vector<int> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(class_dir(root) / device / "ports", ec)) {
    try {
      out.push_back(std::stoi(e.path().filename().string()));
    } catch (const std::exception&) {
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<GidEntry> read_gids(const std::string& root, const std::string& device, int port) {
  const fs::path dir = class_dir(root) / device / "ports" / std::to_string(port);
  std::vector<GidEntry> out;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir / "gids", ec)) {
    GidEntry g;
    try {
      g.index = std::stoi(e.path().filename().string());
    } catch (const std::exception&) {
      continue;
    }
    g.gid = first_line(e.path());
    g.type = first_line(dir / "gid_attrs/types" / e.path().filename());
    g.netdev = first_line(dir / "gid_attrs/ndevs" / e.path().filename());
    if (!g.gid.empty() && !all_zero(g.gid) && !g.type.empty()) out.push_back(g);
  }
  std::sort(out.begin(), out.end(), [](const GidEntry& a, const GidEntry& b) { return a.index < b.index; });
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

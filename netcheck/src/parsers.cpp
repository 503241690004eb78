#include "rocebench/netcheck/parsers.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <sstream>

namespace rocebench::netcheck {

namespace {

std::optional<long long> to_int(std::string_view text, int base = 10) {
  long long value = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, value, base);
  if (ec != std::errc() || ptr != end || text.empty()) return std::nullopt;
  return value;
}

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(line);
  return out;
}

bool starts_with(const std::string& s, std::string_view prefix) { return s.rfind(prefix, 0) == 0; }

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return {};
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

void add_mapping(DscpMap& map, int dscp, int prio) {
  auto& prios = map[dscp];
  if (std::find(prios.begin(), prios.end(), prio) == prios.end()) prios.push_back(prio);
}

bool valid_prio(long long p) { return p >= 0 && p <= 7; }
bool valid_dscp(long long d) { return d >= 0 && d <= 63; }

}  // namespace

std::optional<std::vector<int>> parse_dcb_pfc(const std::string& text) {
  for (const auto& line : lines(text)) {
    const auto w = words(line);
    if (w.empty() || w[0] != "prio-pfc") continue;
    std::vector<int> enabled;
    for (std::size_t i = 1; i < w.size(); ++i) {
      const auto colon = w[i].find(':');
      if (colon == std::string::npos) return std::nullopt;
      const auto prio = to_int(std::string_view(w[i]).substr(0, colon));
      const std::string state = w[i].substr(colon + 1);
      if (!prio || !valid_prio(*prio) || (state != "on" && state != "off")) return std::nullopt;
      if (state == "on") enabled.push_back(static_cast<int>(*prio));
    }
    return enabled;
  }
  return std::nullopt;
}

std::optional<int> parse_dscp_name(const std::string& token) {
  if (auto n = to_int(token); n && valid_dscp(*n)) return static_cast<int>(*n);
  std::string t = token;
  std::transform(t.begin(), t.end(), t.begin(), [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  // Names from RFC 2474 / 2597 / 3246, as iproute2 prints them.
  if (t == "DEFAULT" || t == "BE") return 0;
  if (t == "EF") return 46;
  if (t.size() == 3 && starts_with(t, "CS") && t[2] >= '0' && t[2] <= '7') return (t[2] - '0') * 8;
  if (t.size() == 4 && starts_with(t, "AF") && t[2] >= '1' && t[2] <= '4' && t[3] >= '1' && t[3] <= '3') {
    return (t[2] - '0') * 8 + (t[3] - '0') * 2;
  }
  if (starts_with(t, "0X")) {
    // rt_dsfield hex values are the whole DS field: DSCP is its upper six bits.
    if (auto n = to_int(std::string_view(t).substr(2), 16); n && *n <= 0xff) return static_cast<int>(*n >> 2);
  }
  return std::nullopt;
}

std::optional<DscpMap> parse_dcb_app_dscp(const std::string& text) {
  DscpMap map;
  bool seen = false;
  for (const auto& line : lines(text)) {
    const auto w = words(line);
    if (w.empty() || w[0] != "dscp-prio") continue;
    seen = true;
    for (std::size_t i = 1; i < w.size(); ++i) {
      const auto colon = w[i].rfind(':');
      if (colon == std::string::npos) return std::nullopt;
      const auto dscp = parse_dscp_name(w[i].substr(0, colon));
      const auto prio = to_int(std::string_view(w[i]).substr(colon + 1));
      if (!dscp || !prio || !valid_prio(*prio)) return std::nullopt;
      add_mapping(map, *dscp, static_cast<int>(*prio));
    }
  }
  // dcb prints nothing at all for an empty table.
  if (!seen && !trim(text).empty()) return std::nullopt;
  return map;
}

MlnxQos parse_mlnx_qos(const std::string& text) {
  MlnxQos q;
  bool in_pfc = false;
  for (const auto& raw : lines(text)) {
    const std::string line = trim(raw);
    if (starts_with(line, "Priority trust state:")) {
      q.trust = trim(line.substr(std::string_view("Priority trust state:").size()));
    } else if (starts_with(line, "PFC configuration:")) {
      in_pfc = true;
    } else if (in_pfc && starts_with(line, "enabled")) {
      const auto w = words(line);
      std::vector<int> enabled;
      if (w.size() != 9) continue;
      for (int prio = 0; prio < 8; ++prio) {
        if (w[static_cast<std::size_t>(prio) + 1] == "1") enabled.push_back(prio);
        else if (w[static_cast<std::size_t>(prio) + 1] != "0") enabled.clear();
      }
      q.pfc = enabled;
      in_pfc = false;
    } else if (starts_with(line, "prio:") && line.find("dscp:") != std::string::npos) {
      // "prio:3 dscp:31,30,29,28,27,26,25,24," — long lists wrap onto more lines with the same prefix.
      const auto w = words(line);
      const auto prio = to_int(std::string_view(w[0]).substr(5));
      const auto dscps = std::find_if(w.begin() + 1, w.end(), [](const std::string& s) { return starts_with(s, "dscp:"); });
      if (!prio || !valid_prio(*prio) || dscps == w.end()) continue;
      if (!q.dscp2prio) q.dscp2prio = DscpMap{};
      std::istringstream list(dscps->substr(5));
      for (std::string item; std::getline(list, item, ',');) {
        if (auto dscp = to_int(item); dscp && valid_dscp(*dscp)) add_mapping(*q.dscp2prio, static_cast<int>(*dscp), static_cast<int>(*prio));
      }
    }
  }
  return q;
}

std::optional<DscpMap> parse_sysfs_dscp2prio(const std::string& text) {
  DscpMap map;
  const auto all = lines(text);
  for (std::size_t i = 1; i < all.size(); ++i) {  // the first line is a header
    std::string line = all[i];
    std::replace(line.begin(), line.end(), ':', ' ');
    const auto w = words(line);
    if (w.empty()) continue;
    if (w.size() < 2) return std::nullopt;
    const auto dscp = to_int(w[0]);
    const auto prio = to_int(w[1]);
    if (!dscp || !prio || !valid_dscp(*dscp) || !valid_prio(*prio)) return std::nullopt;
    add_mapping(map, static_cast<int>(*dscp), static_cast<int>(*prio));
  }
  if (map.empty()) return std::nullopt;
  return map;
}

std::map<std::string, long long> parse_ethtool_stats(const std::string& text) {
  std::map<std::string, long long> stats;
  for (const auto& raw : lines(text)) {
    const auto colon = raw.rfind(':');
    if (colon == std::string::npos) continue;
    const std::string name = trim(raw.substr(0, colon));
    const auto value = to_int(trim(raw.substr(colon + 1)));
    if (!name.empty() && value) stats[name] = *value;
  }
  return stats;
}

AcsMap parse_lspci_acs(const std::string& text) {
  AcsMap acs;
  std::string current;
  for (const auto& raw : lines(text)) {
    if (!raw.empty() && !std::isspace(static_cast<unsigned char>(raw[0]))) {
      // "0000:17:00.0 PCI bridge: ..." or, without -D, "17:00.0 PCI bridge: ...".
      std::string bdf = raw.substr(0, raw.find(' '));
      if (std::count(bdf.begin(), bdf.end(), ':') == 1) bdf = "0000:" + bdf;
      current = bdf;
      acs[current] = false;
      continue;
    }
    if (current.empty()) continue;
    const std::string line = trim(raw);
    if (starts_with(line, "Capabilities: <access denied>")) {
      acs[current] = std::nullopt;
    } else if (starts_with(line, "ACSCtl:")) {
      const auto w = words(line);
      for (const auto& flag : w) {
        if (flag == "SrcValid+") acs[current] = true;
      }
    }
  }
  return acs;
}

std::optional<bool> acs_from_config(const std::string& bytes) {
  constexpr std::size_t kExtendedStart = 0x100;
  constexpr std::uint16_t kAcsCapId = 0x000d;
  if (bytes.size() <= kExtendedStart) return std::nullopt;
  auto u16 = [&](std::size_t at) {
    return static_cast<std::uint16_t>(static_cast<unsigned char>(bytes[at]) | static_cast<unsigned char>(bytes[at + 1]) << 8);
  };
  std::size_t at = kExtendedStart;
  for (int hops = 0; at >= kExtendedStart && at + 8 <= bytes.size() && hops < 64; ++hops) {
    const std::uint16_t id = u16(at);
    const std::size_t next = static_cast<std::size_t>(u16(at + 2) >> 4);
    if (id == kAcsCapId) return (u16(at + 6) & 0x1) != 0;  // ACS Control bit 0: Source Validation
    if (next == 0) break;
    at = next;
  }
  return false;
}

std::string after_colon(const std::string& text) {
  const auto colon = text.find(':');
  return colon == std::string::npos ? trim(text) : trim(text.substr(colon + 1));
}

std::optional<double> parse_rate_gbps(const std::string& text) {
  std::istringstream in(text);
  double value = 0;
  std::string unit;
  if (!(in >> value >> unit) || unit != "Gb/sec") return std::nullopt;
  return value;
}

}  // namespace rocebench::netcheck

#include "rocebench/reports/text.hpp"

#include <cctype>
#include <charconv>
#include <chrono>
#include <cmath>

#include <fmt/format.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/reports/fast_check.hpp"

namespace rocebench::reports {

std::string number(double v) {
  if (!std::isfinite(v)) return fmt::format("{}", v);
  if (v != 0 && (std::abs(v) >= 1e7 || std::abs(v) < 1e-3)) return fmt::format("{:.3e}", v);
  if (std::abs(v) >= 1000) return fmt::format("{:.0f}", v);  // 10012, not 1.001e+04
  return fmt::format("{:.4g}", v);
}

std::string number(const std::optional<double>& v) { return v ? number(*v) : "—"; }

std::string bytes_text(double bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && std::fmod(bytes, 1024) == 0 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  return fmt::format("{:g} {}", bytes, units[u]);
}

std::string escape_xml(std::string_view s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 forbids most control characters even when escaped.
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r') out += '?';
        else out += c;
    }
  }
  return out;
}

std::string escape_markdown_cell(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += "<br>";
    else out += c;
  }
  return out;
}

std::string escape_csv(std::string_view s) {
  if (s.find_first_of(",\"\n") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

std::vector<std::string> split_ws(std::string_view line) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r')) ++i;
    const std::size_t start = i;
    while (i < line.size() && line[i] != ' ' && line[i] != '\t' && line[i] != '\r') ++i;
    if (i > start) out.emplace_back(line.substr(start, i - start));
  }
  return out;
}

std::string series_label(const nlohmann::json& params, int world) {
  std::string p;
  for (const auto& [k, v] : params.items()) p += (p.empty() ? "" : " ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
  const bool unknown = params.is_object() && params.value("ranks", nlohmann::json()) == "unknown";
  return fmt::format("[{}] world={}", p, unknown ? "unknown" : std::to_string(world));
}

std::string trim(std::string_view s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string_view::npos) return "";
  const auto e = s.find_last_not_of(" \t\r\n");
  return std::string(s.substr(b, e - b + 1));
}

long long as_count(double value) {
  if (!(value >= 0 && value < 9.2e18) || value != std::floor(value)) {
    throw InputError(fmt::format("{} is not a count of iterations", value));
  }
  return static_cast<long long>(value);
}

std::optional<double> to_number(std::string_view token) {
  double v = 0;
  const auto [ptr, ec] = std::from_chars(token.data(), token.data() + token.size(), v);
  if (ec != std::errc() || ptr != token.data() + token.size()) return std::nullopt;
  return v;
}

std::optional<double> rfc3339_seconds(std::string_view time) {
  if (!rfc3339(time)) return std::nullopt;
  auto field = [&](std::size_t at, std::size_t n) {
    int v = 0;
    std::from_chars(time.data() + at, time.data() + at + n, v);
    return v;
  };
  using namespace std::chrono;
  const year_month_day date{year{field(0, 4)}, month{static_cast<unsigned>(field(5, 2))}, day{static_cast<unsigned>(field(8, 2))}};
  if (!date.ok()) return std::nullopt;
  double seconds = static_cast<double>(sys_days{date}.time_since_epoch().count()) * 86400 + field(11, 2) * 3600 +
                   field(14, 2) * 60 + field(17, 2);
  std::size_t zone = 19;
  if (time[zone] == '.') {
    const std::size_t start = zone;
    while (++zone < time.size() && time[zone] >= '0' && time[zone] <= '9') {
    }
    seconds += std::stod(std::string(time.substr(start, zone - start)));
  }
  if (time[zone] != 'Z') {
    const double offset = field(zone + 1, 2) * 3600 + field(zone + 4, 2) * 60;
    seconds += time[zone] == '+' ? -offset : offset;
  }
  return seconds;
}

std::string prom_name(const std::string& s) {
  std::string out;
  for (char ch : s) out += std::isalnum(static_cast<unsigned char>(ch)) || ch == '_' ? ch : '_';
  if (out.empty() || std::isdigit(static_cast<unsigned char>(out[0]))) out.insert(0, "_");
  return out;
}

std::string prom_label_value(const std::string& s) {
  std::string out;
  for (char ch : s) {
    if (ch == '\\' || ch == '"') out += '\\';
    if (ch == '\n') {
      out += "\\n";
      continue;
    }
    out += ch;
  }
  return out;
}

}  // namespace rocebench::reports

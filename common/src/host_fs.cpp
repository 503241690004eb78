#include "rocebench/common/host_fs.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <sstream>

#include "rocebench/common/bounded_read.hpp"
#include "rocebench/common/errors.hpp"

namespace rocebench {

namespace fs = std::filesystem;

HostFs::HostFs(fs::path root) : root_(std::move(root)), saved_tree_(fs::path(root_).lexically_normal() != "/") {}

fs::path HostFs::at(const std::string& host_path) const {
  const auto first = host_path.find_first_not_of('/');
  return first == std::string::npos ? root_ : root_ / host_path.substr(first);
}

std::optional<fs::file_status> HostFs::status_of(const fs::path& file) const {
  std::error_code ec;
  const fs::file_status st = fs::status(file, ec);
  if (st.type() == fs::file_type::not_found || ec == std::errc::no_such_file_or_directory ||
      ec == std::errc::not_a_directory) {
    return std::nullopt;
  }
  if (ec) {
    if (!saved_tree_) return std::nullopt;
    throw InputError(file.string() + ": " + (ec == std::errc::too_many_symbolic_link_levels ? "a symlink loop" : ec.message()));
  }
  return st;
}

std::optional<std::string> HostFs::read_all(const std::string& host_path) const {
  // A sysfs or procfs file: /proc/cpuinfo of a 256-core host is ~400 KB, the rest a few bytes.
  static constexpr InputLimits kHostFileLimits{"saved host file", 16 * kMiB};
  const fs::path file = at(host_path);
  const auto st = status_of(file);
  if (!st || fs::is_directory(*st)) return std::nullopt;
  try {
    return read_input(file, kHostFileLimits);  // a FIFO or device would block or never end: refused by kind
  } catch (const InputError&) {
    if (saved_tree_) throw;
    return std::nullopt;  // the live root: debugfs as non-root (EACCES), an empty GID slot (EINVAL)
  }
}

bool HostFs::exists(const std::string& host_path) const {
  note(Access::exists, host_path);
  return status_of(at(host_path)).has_value();
}

std::string HostFs::read_bytes(const std::string& host_path) const {
  note(Access::read, host_path);
  return read_all(host_path).value_or(std::string());
}

std::optional<std::string> HostFs::read(const std::string& host_path) const {
  note(Access::read, host_path);
  auto text = read_all(host_path);
  if (!text) return std::nullopt;
  while (!text->empty() && std::isspace(static_cast<unsigned char>(text->back()))) text->pop_back();
  return text;
}

std::optional<long long> HostFs::read_int(const std::string& host_path) const {
  const auto text = read(host_path);
  if (!text) return std::nullopt;
  long long value = 0;
  const char* end = text->data() + text->size();
  const auto [ptr, ec] = std::from_chars(text->data(), end, value);
  if (ec != std::errc() || ptr != end) return std::nullopt;
  return value;
}

std::optional<std::string> HostFs::read_field(const std::string& host_path, const std::string& key) const {
  const auto text = read(host_path);
  if (!text) return std::nullopt;
  std::istringstream lines(*text);
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind(key, 0) != 0) continue;
    const auto colon = line.find_first_not_of(" \t", key.size());
    if (colon == std::string::npos || line[colon] != ':') continue;
    const auto value = line.find_first_not_of(" \t", colon + 1);
    return value == std::string::npos ? std::string() : line.substr(value);
  }
  return std::nullopt;
}

std::vector<std::string> HostFs::list(const std::string& host_path) const {
  note(Access::list, host_path);
  std::vector<std::string> names;
  const fs::path dir = at(host_path);
  const auto st = status_of(dir);
  if (!st || !fs::is_directory(*st)) return names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  if (ec && saved_tree_) throw InputError(dir.string() + ": cannot be listed: " + ec.message());
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<std::string> HostFs::resolve(const std::string& host_path) const {
  note(Access::resolve, host_path);
  if (!status_of(at(host_path))) return std::nullopt;  // a loop throws there on a saved tree
  std::error_code ec;
  const fs::path target = fs::canonical(at(host_path), ec);
  if (ec) return std::nullopt;
  const fs::path base = fs::canonical(root_, ec);
  if (ec) return std::nullopt;
  const fs::path rel = target.lexically_relative(base);
  if (rel.empty() || *rel.begin() == "..") return std::nullopt;  // a link out of the tree
  return "/" + (rel == "." ? std::string() : rel.generic_string());
}

}  // namespace rocebench

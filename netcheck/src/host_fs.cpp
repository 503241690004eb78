#include "rocebench/netcheck/host_fs.hpp"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <iterator>
#include <regex>

namespace rocebench::netcheck {

namespace fs = std::filesystem;

HostFs::HostFs(fs::path root) : root_(std::move(root)) {}

fs::path HostFs::at(const std::string& host_path) const {
  const auto first = host_path.find_first_not_of('/');
  return first == std::string::npos ? root_ : root_ / host_path.substr(first);
}

bool HostFs::exists(const std::string& host_path) const {
  std::error_code ec;
  return fs::exists(at(host_path), ec);
}

std::string HostFs::read_bytes(const std::string& host_path) const {
  std::ifstream in(at(host_path), std::ios::binary);
  if (!in) return {};
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  return in.bad() ? std::string() : bytes;
}

std::optional<std::string> HostFs::read(const std::string& host_path) const {
  std::error_code ec;
  if (!fs::is_regular_file(at(host_path), ec)) return std::nullopt;
  std::ifstream in(at(host_path), std::ios::binary);
  if (!in) return std::nullopt;
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (in.bad()) return std::nullopt;  // EINVAL / EACCES from the kernel surface here
  while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
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

std::vector<std::string> HostFs::list(const std::string& host_path) const {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(at(host_path), ec), end; !ec && it != end; it.increment(ec)) {
    names.push_back(it->path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

std::optional<std::string> HostFs::resolve(const std::string& host_path) const {
  std::error_code ec;
  const fs::path target = fs::canonical(at(host_path), ec);
  if (ec) return std::nullopt;
  const fs::path base = fs::canonical(root_, ec);
  if (ec) return std::nullopt;
  const fs::path rel = target.lexically_relative(base);
  if (rel.empty() || *rel.begin() == "..") return std::nullopt;  // a link out of the tree
  return "/" + (rel == "." ? std::string() : rel.generic_string());
}

std::vector<std::string> pci_chain(const std::string& device_path) {
  static const std::regex bdf(R"(^[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7]$)");
  std::vector<std::string> chain;
  for (const auto& part : fs::path(device_path)) {
    if (std::regex_match(part.string(), bdf)) chain.push_back(part.string());
  }
  return chain;
}

}  // namespace rocebench::netcheck

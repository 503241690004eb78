#include "rocebench/common/hostname.hpp"

#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/in.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <set>
#include <string>

namespace rocebench {

std::string this_hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

namespace {

// An IPv4 or IPv6 address as its raw bytes (one key for comparing addresses of either family).
std::string address_bytes(const sockaddr* a) {
  if (a->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(a);
    return std::string(reinterpret_cast<const char*>(&in->sin_addr), sizeof in->sin_addr);
  }
  if (a->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(a);
    return std::string(reinterpret_cast<const char*>(&in6->sin6_addr), sizeof in6->sin6_addr);
  }
  return "";
}

bool is_loopback(const sockaddr* a) {
  if (a->sa_family == AF_INET) return (ntohl(reinterpret_cast<const sockaddr_in*>(a)->sin_addr.s_addr) >> 24) == 127;
  return a->sa_family == AF_INET6 && IN6_IS_ADDR_LOOPBACK(&reinterpret_cast<const sockaddr_in6*>(a)->sin6_addr);
}

std::set<std::string> own_addresses() {
  std::set<std::string> out;
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) return out;
  for (const ifaddrs* i = list; i; i = i->ifa_next) {
    if (i->ifa_addr) out.insert(address_bytes(i->ifa_addr));
  }
  ::freeifaddrs(list);
  out.erase("");
  return out;
}

}  // namespace

bool names_this_host(const std::string& name) {
  if (name.empty()) return false;
  if (::strcasecmp(name.c_str(), this_hostname().c_str()) == 0) return true;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  if (::getaddrinfo(name.c_str(), nullptr, &hints, &found) != 0) return false;  // unknown here: another host's name
  const std::set<std::string> own = own_addresses();
  bool here = false;
  for (const addrinfo* a = found; a && !here; a = a->ai_next) here = is_loopback(a->ai_addr) || own.count(address_bytes(a->ai_addr)) > 0;
  ::freeaddrinfo(found);
  return here;
}

}  // namespace rocebench

#include "rocebench/common/hostname.hpp"

#include <unistd.h>

namespace rocebench {

std::string this_hostname() {
  char name[256] = {};
  if (::gethostname(name, sizeof name - 1) != 0 || name[0] == '\0') return "localhost";
  return name;
}

}  // namespace rocebench

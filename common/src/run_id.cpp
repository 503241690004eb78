#include "rocebench/common/run_id.hpp"

#include <chrono>
#include <ctime>
#include <fstream>

#include <fmt/format.h>

#include "rocebench/common/errors.hpp"

namespace rocebench {

std::string random_token() {
  std::ifstream urandom("/dev/urandom", std::ios::binary);
  unsigned char bytes[16];
  if (!urandom.read(reinterpret_cast<char*>(bytes), sizeof bytes)) throw InfraError("cannot read /dev/urandom");
  std::string hex;
  for (unsigned char b : bytes) hex += fmt::format("{:02x}", b);
  return hex;
}

std::string new_run_id(std::string_view kind) {
  const std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{}{}{:04}{:02}{:02}-{:02}{:02}{:02}-{}", kind, kind.empty() ? "" : "-", tm.tm_year + 1900, tm.tm_mon + 1,
                     tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, random_token().substr(0, 6));
}

}  // namespace rocebench

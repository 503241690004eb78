#include "rocebench/common/clock.hpp"

#include <algorithm>
#include <ctime>

#include <fmt/format.h>

namespace rocebench {

int Deadline::remaining_ms() const {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end_ - SteadyClock::now()).count();
  return static_cast<int>(std::clamp<std::int64_t>(left, 0, 1 << 30));
}

std::string utc_now_rfc3339() {
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  std::tm tm{};
  gmtime_r(&ts.tv_sec, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:06}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000);
}

}  // namespace rocebench

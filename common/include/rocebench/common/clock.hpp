#pragma once
// Monotonic clock for measurements, wall clock for records.
#include <chrono>
#include <cstdint>
#include <string>

namespace rocebench {

using SteadyClock = std::chrono::steady_clock;

// Nanoseconds on CLOCK_MONOTONIC: for intervals only.
inline std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(SteadyClock::now().time_since_epoch()).count();
}

// A point in time by which a wait must end.
class Deadline {
 public:
  explicit Deadline(std::chrono::milliseconds budget) : end_(SteadyClock::now() + budget) {}
  static Deadline after_seconds(double s) {
    return Deadline(std::chrono::milliseconds(static_cast<std::int64_t>(s * 1000.0)));
  }
  bool expired() const { return SteadyClock::now() >= end_; }
  // Milliseconds left, clamped at 0, for poll().
  int remaining_ms() const;

 private:
  SteadyClock::time_point end_;
};

// UTC now as RFC 3339 with microseconds, e.g. 2026-11-29T11:45:37.123456Z.
std::string utc_now_rfc3339();

}  // namespace rocebench

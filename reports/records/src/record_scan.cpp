#include "record_scan.hpp"

#include <algorithm>
#include <charconv>
#include <climits>

#include "rocebench/reports/fast_check.hpp"

namespace rocebench::reports {

namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }

// JSON text (RFC 8259) read the way nlohmann's parser reads it, where it matters for agreeing on
// what is valid: strict number grammar, strings without raw control characters and in valid UTF-8.
// Escapes are left to the general path (they are rare in records).
class Scanner {
 public:
  explicit Scanner(std::string_view text) : p_(text.data()), end_(text.data() + text.size()) {}

  void skip_ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\t' || *p_ == '\n' || *p_ == '\r')) ++p_;
  }
  bool eat(char c) {
    skip_ws();
    if (p_ == end_ || *p_ != c) return false;
    ++p_;
    return true;
  }
  bool peek(char c) {
    skip_ws();
    return p_ < end_ && *p_ == c;
  }
  bool at_end() {
    skip_ws();
    return p_ == end_;
  }
  const char* pos() const { return p_; }

  // A string without escapes.
  bool plain_string(std::string_view& out) {
    bool escaped = false;
    return string(out, escaped) && !escaped;
  }

  bool number(double& out, bool& integral) {
    skip_ws();
    const char* start = p_;
    if (p_ < end_ && *p_ == '-') ++p_;
    if (p_ == end_ || !is_digit(*p_)) return false;
    if (*p_ == '0') ++p_;
    else digit_run();
    integral = true;
    if (p_ < end_ && *p_ == '.') {
      ++p_;
      integral = false;
      if (!digit_run()) return false;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      integral = false;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (!digit_run()) return false;
    }
    const auto [ptr, ec] = std::from_chars(start, p_, out);
    return ec == std::errc() && ptr == p_;
  }

  // An integer token in [low, INT_MAX].
  bool count(int& out, int low) {
    double v = 0;
    bool integral = false;
    if (!number(v, integral) || !integral || v < low || v > INT_MAX) return false;
    out = static_cast<int>(v);
    return true;
  }

  bool skip_value(int depth = 0) {
    if (depth > 64) return false;
    skip_ws();
    if (p_ == end_) return false;
    switch (*p_) {
      case '"': {
        std::string_view s;
        bool escaped = false;
        return string(s, escaped);
      }
      case '{':
        return object([&](std::string_view) { return skip_value(depth + 1); });
      case '[':
        return array([&] { return skip_value(depth + 1); });
      case 't': return literal("true");
      case 'f': return literal("false");
      case 'n': return literal("null");
      default: {
        double v = 0;
        bool integral = false;
        return number(v, integral);
      }
    }
  }

  // Calls member(key) with the cursor before each value; member reads the value.
  template <class Member>
  bool object(Member&& member) {
    if (!eat('{')) return false;
    if (eat('}')) return true;
    do {
      std::string_view key;
      if (!plain_string(key) || !eat(':') || !member(key)) return false;
    } while (eat(','));
    return eat('}');
  }

  template <class Element>
  bool array(Element&& element) {
    if (!eat('[')) return false;
    if (eat(']')) return true;
    do {
      if (!element()) return false;
    } while (eat(','));
    return eat(']');
  }

 private:
  bool digit_run() {
    const char* start = p_;
    while (p_ < end_ && is_digit(*p_)) ++p_;
    return p_ > start;
  }

  bool literal(std::string_view word) {
    if (static_cast<std::size_t>(end_ - p_) < word.size() || std::string_view(p_, word.size()) != word) return false;
    p_ += word.size();
    return true;
  }

  bool string(std::string_view& out, bool& escaped) {
    if (!eat('"')) return false;
    const char* start = p_;
    while (p_ < end_) {
      const auto c = static_cast<unsigned char>(*p_);
      if (c == '"') {
        out = std::string_view(start, static_cast<std::size_t>(p_ - start));
        ++p_;
        return true;
      }
      if (c < 0x20) return false;
      if (c == '\\') {
        // \uXXXX may pair surrogates, which only the general parser checks.
        if (end_ - p_ < 2 || std::string_view("\"\\/bfnrt").find(p_[1]) == std::string_view::npos) return false;
        escaped = true;
        p_ += 2;
      } else if (c >= 0x80) {
        if (!utf8_sequence()) return false;
      } else {
        ++p_;
      }
    }
    return false;
  }

  // One multi-byte UTF-8 sequence, as RFC 3629 allows (no overlongs, surrogates or > U+10FFFF).
  bool utf8_sequence() {
    const auto lead = static_cast<unsigned char>(*p_);
    int more = 0;
    unsigned char low = 0x80, high = 0xBF;  // range of the first continuation byte
    if (lead >= 0xC2 && lead <= 0xDF) more = 1;
    else if (lead == 0xE0) more = 2, low = 0xA0;
    else if ((lead >= 0xE1 && lead <= 0xEC) || lead == 0xEE || lead == 0xEF) more = 2;
    else if (lead == 0xED) more = 2, high = 0x9F;
    else if (lead == 0xF0) more = 3, low = 0x90;
    else if (lead >= 0xF1 && lead <= 0xF3) more = 3;
    else if (lead == 0xF4) more = 3, high = 0x8F;
    else return false;
    if (end_ - p_ <= more) return false;
    for (int i = 1; i <= more; ++i) {
      const auto c = static_cast<unsigned char>(p_[i]);
      if (c < (i == 1 ? low : 0x80) || c > (i == 1 ? high : 0xBF)) return false;
    }
    p_ += more + 1;
    return true;
  }

  const char* p_;
  const char* end_;
};

bool read_status(std::string_view text, Status& out) {
  for (Status s : {Status::ok, Status::fail, Status::skip, Status::error, Status::warn, Status::unverified}) {
    if (text == to_string(s)) {
      out = s;
      return true;
    }
  }
  return false;
}

bool read_samples(Scanner& s, ResultView& r) {
  Spread& spread = r.samples;
  unsigned seen = 0;
  auto once = [&](unsigned bit) { return !(seen & bit) && (seen |= bit); };
  const bool ok = s.object([&](std::string_view key) {
    double v = 0;
    bool integral = false;
    if (key == "n") {
      // Beyond 2^53 a double holds no exact count, and beyond 2^64 the conversion is undefined (fuzz_records).
      if (!once(1) || !s.number(v, integral) || !integral || v < 0 || v > 0x1p53) return false;
      spread.n = static_cast<std::size_t>(v);
      return true;
    }
    if (key == "median") {
      if (!once(2) || !s.number(v, integral)) return false;
      spread.median = v;
      return true;
    }
    if (key == "median_ci95") {
      std::vector<double> bounds;
      if (!once(4) || !s.array([&] { return s.number(v, integral) && (bounds.push_back(v), true); }) || bounds.size() != 2) {
        return false;
      }
      spread.ci_low = bounds[0];
      spread.ci_high = bounds[1];
      spread.has_ci = true;
      return true;
    }
    if (key == "values") {
      return once(8) && s.array([&] { return s.number(v, integral) && (spread.values.push_back(v), true); });
    }
    if (key == "metric") return once(16) && s.plain_string(r.sampled);
    return s.skip_value();
  });
  if (spread.n == 0) spread.n = spread.values.size();
  return ok;
}

}  // namespace

bool scan_result(std::string_view line, ResultView& r) {
  Scanner s(line);
  std::string_view schema, kind, time, status;
  enum : unsigned {
    kSchema = 1, kRun = 2, kKind = 4, kTime = 8, kStep = 16, kHost = 32, kRank = 64, kWorld = 128, kParams = 256,
    kMetrics = 512, kSamples = 1024, kStatus = 2048, kReason = 4096, kPressure = 8192
  };
  unsigned seen = 0;
  // A repeated key is left to the general parser, which keeps the last one.
  auto once = [&](unsigned bit) { return !(seen & bit) && (seen |= bit); };
  const bool read = s.object([&](std::string_view key) {
    if (key == "schema") return once(kSchema) && s.plain_string(schema);
    if (key == "run") return once(kRun) && s.plain_string(r.run);
    if (key == "kind") return once(kKind) && s.plain_string(kind) && kind == "result";
    if (key == "time") return once(kTime) && s.plain_string(time);
    if (key == "step") return once(kStep) && s.plain_string(r.step);
    if (key == "host") return once(kHost) && s.plain_string(r.host);
    if (key == "rank") return once(kRank) && s.count(r.rank, 0);
    if (key == "world") return once(kWorld) && s.count(r.world, 1);
    if (key == "status") return once(kStatus) && s.plain_string(status);
    if (key == "reason") return once(kReason) && s.plain_string(r.reason);
    if (key == "params") {
      if (!once(kParams) || !s.peek('{')) return false;
      const char* start = s.pos();
      if (!s.skip_value()) return false;
      r.params = std::string_view(start, static_cast<std::size_t>(s.pos() - start));
      return true;
    }
    if (key == "metrics") {
      return once(kMetrics) && s.object([&](std::string_view name) {
        double v = 0;
        bool integral = false;
        return s.number(v, integral) && (r.metrics.emplace_back(name, v), true);
      });
    }
    if (key == "samples") return once(kSamples) && read_samples(s, r);
    if (key == "cpu_pressure_pct") {
      bool integral = false;
      return once(kPressure) && s.number(r.cpu_pressure_pct, integral) && r.cpu_pressure_pct >= 0 && r.cpu_pressure_pct <= 100;
    }
    return s.skip_value();
  });
  constexpr unsigned kRequired = kSchema | kRun | kKind | kTime | kStep | kHost | kRank | kWorld | kParams | kMetrics |
                                 kSamples | kStatus;
  if (!read || !s.at_end() || (seen & kRequired) != kRequired) return false;
  if (schema != kRecordSchema || r.run.empty() || !rfc3339(time) || !dotted_id(r.step) || r.host.empty() ||
      !read_status(status, r.status)) {
    return false;
  }
  r.has_reason = seen & kReason;
  const bool needs_reason = r.status == Status::fail || r.status == Status::skip || r.status == Status::error;
  if (needs_reason && r.reason.empty()) return false;
  std::sort(r.metrics.begin(), r.metrics.end());
  return std::adjacent_find(r.metrics.begin(), r.metrics.end(),
                            [](const auto& a, const auto& b) { return a.first == b.first; }) == r.metrics.end();
}

}  // namespace rocebench::reports

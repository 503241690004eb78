#include "rocebench/reports/fast_check.hpp"

#include <cctype>
#include <string>
#include <string_view>

namespace rocebench::reports {

namespace {

using nlohmann::json;

bool digits(std::string_view s, std::size_t at, std::size_t count) {
  if (at + count > s.size()) return false;
  for (std::size_t i = at; i < at + count; ++i) {
    if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
  }
  return true;
}

const json* field(const json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

bool nonempty_string(const json* v) { return v && v->is_string() && !v->get_ref<const std::string&>().empty(); }
bool plain_string(const json* v) { return v && v->is_string(); }
bool integer_at_least(const json* v, long long low) {
  if (!v) return false;
  if (v->is_number_unsigned()) return low <= 0 || v->get<unsigned long long>() >= static_cast<unsigned long long>(low);
  return v->is_number_integer() && v->get<long long>() >= low;
}

bool status_value(const json* v, bool& needs_reason) {
  if (!v || !v->is_string()) return false;
  const auto& s = v->get_ref<const std::string&>();
  needs_reason = s == "fail" || s == "skip" || s == "error" || s == "unverified";
  return needs_reason || s == "ok" || s == "warn";
}

bool reason_ok(const json& r, bool needs_reason) {
  const json* reason = field(r, "reason");
  if (needs_reason) return nonempty_string(reason);
  return !reason || reason->is_string();
}

bool result_ok(const json& r) {
  const json* step = field(r, "step");
  if (!step || !step->is_string() || !dotted_id(step->get_ref<const std::string&>())) return false;
  if (!nonempty_string(field(r, "host")) || !integer_at_least(field(r, "rank"), 0) ||
      !integer_at_least(field(r, "world"), 1)) {
    return false;
  }
  const json* params = field(r, "params");
  const json* metrics = field(r, "metrics");
  const json* samples = field(r, "samples");
  if (!params || !params->is_object() || !metrics || !metrics->is_object() || !samples || !samples->is_object()) {
    return false;
  }
  for (const auto& [name, value] : metrics->items()) {
    if (!value.is_number()) return false;
  }
  if (const json* n = field(*samples, "n"); n && !integer_at_least(n, 0)) return false;
  bool needs_reason = false;
  return status_value(field(r, "status"), needs_reason) && reason_ok(r, needs_reason);
}

bool check_ok(const json& r) {
  const json* check = field(r, "check");
  if (!check || !check->is_string() || !dotted_id(check->get_ref<const std::string&>())) return false;
  if (!nonempty_string(field(r, "host")) || !plain_string(field(r, "subject")) || !field(r, "expected") ||
      !field(r, "observed")) {
    return false;
  }
  const json* hint = field(r, "hint");
  const json* reason = field(r, "reason");
  bool needs_reason = false;  // the check schema does not ask for a reason
  return status_value(field(r, "status"), needs_reason) && (!hint || hint->is_string()) &&
         (!reason || reason->is_string());
}

}  // namespace

// ^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(\.[0-9]+)?(Z|[+-][0-9]{2}:[0-9]{2})$
bool rfc3339(std::string_view s) {
  if (!(digits(s, 0, 4) && s.size() > 19 && s[4] == '-' && digits(s, 5, 2) && s[7] == '-' && digits(s, 8, 2) &&
        s[10] == 'T' && digits(s, 11, 2) && s[13] == ':' && digits(s, 14, 2) && s[16] == ':' && digits(s, 17, 2))) {
    return false;
  }
  std::size_t i = 19;
  if (s[i] == '.') {
    const std::size_t start = ++i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) ++i;
    if (i == start) return false;
  }
  const std::string_view zone = s.substr(i);
  if (zone == "Z") return true;
  return zone.size() == 6 && (zone[0] == '+' || zone[0] == '-') && digits(zone, 1, 2) && zone[3] == ':' &&
         digits(zone, 4, 2);
}

bool dotted_id(std::string_view s) {
  int parts = 0;
  std::size_t run = 0;
  for (char c : s) {
    if (c == '.') {
      if (run == 0) return false;
      ++parts;
      run = 0;
    } else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_') {
      ++run;
    } else {
      return false;
    }
  }
  return run > 0 && parts >= 1;
}

bool surely_valid(const json& record) {
  if (!record.is_object()) return false;
  const json* schema = field(record, "schema");
  const json* time = field(record, "time");
  const json* kind = field(record, "kind");
  if (!schema || *schema != "rocebench.result/1" || !nonempty_string(field(record, "run")) || !time ||
      !time->is_string() || !rfc3339(time->get_ref<const std::string&>()) || !kind || !kind->is_string()) {
    return false;
  }
  const auto& k = kind->get_ref<const std::string&>();
  if (k == "result") return result_ok(record);
  if (k == "check") return check_ok(record);
  return false;  // run and event records are few: the general validator judges them
}

}  // namespace rocebench::reports

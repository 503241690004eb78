#include "rocebench/reports/netcheck_verdict.hpp"

#include <algorithm>

#include "rocebench/common/errors.hpp"

namespace rocebench::reports {

namespace {

template <typename T>
void add_unique(std::vector<T>& items, const T& item) {
  if (std::find(items.begin(), items.end(), item) == items.end()) items.push_back(item);
}

bool is_check(const json& r) { return r.value("kind", std::string()) == "check"; }

std::string host_verdict(const std::map<std::string, std::size_t>& counts) {
  const auto has = [&](const char* status) { return counts.count(status) && counts.at(status) > 0; };
  if (has("fail")) return "fail";
  if (has("unverified")) return "unverified";  // a check that could not run is not a pass
  if (has("warn")) return "warn";
  if (has("ok")) return "pass";
  return "skip";
}

}  // namespace

std::vector<SettingDifference> compare_hosts(const std::vector<json>& records) {
  std::vector<std::string> hosts;
  std::vector<std::pair<std::string, std::string>> keys;  // (check, subject) in first-seen order
  std::map<std::pair<std::string, std::string>, std::map<std::string, json>> observed;
  for (const auto& r : records) {
    if (!is_check(r)) continue;
    const std::string check = r.value("check", std::string());
    // Counters differ by nature, and comparisons of comparisons say nothing new.
    if (check.rfind("counters.", 0) == 0 || check.rfind("cluster.", 0) == 0) continue;
    const std::string host = r.value("host", std::string());
    const std::pair key{check, r.value("subject", std::string())};
    add_unique(hosts, host);
    add_unique(keys, key);
    observed[key][host] = r.value("observed", json());  // a later record replaces an earlier one
  }
  std::vector<SettingDifference> diffs;
  for (const auto& key : keys) {
    SettingDifference d{key.first, key.second, {}};
    for (const auto& host : hosts) {
      const auto& by_host = observed[key];
      const json value = by_host.count(host) ? by_host.at(host) : json();
      auto it = std::find_if(d.values.begin(), d.values.end(), [&](const auto& v) { return v.first == value; });
      if (it == d.values.end()) d.values.push_back({value, {host}});
      else it->second.push_back(host);
    }
    if (d.values.size() < 2) continue;
    std::stable_sort(d.values.begin(), d.values.end(), [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
    diffs.push_back(std::move(d));
  }
  return diffs;
}

NetcheckJudgement judge_netcheck_checks(const std::vector<json>& records) {
  NetcheckJudgement j;
  std::vector<std::string> order;
  std::map<std::string, std::map<std::string, std::size_t>> counts;
  for (const auto& r : records) {
    if (!is_check(r)) continue;
    const std::string host = r.value("host", std::string());
    add_unique(order, host);
    ++counts[host][r.value("status", std::string())];
  }
  for (const auto& host : order) j.hosts.push_back({host, counts[host], host_verdict(counts[host])});
  if (j.hosts.size() > 1) j.differences = compare_hosts(records);
  return j;
}

int netcheck_exit_code(const NetcheckJudgement& j, bool allow_unverified) {
  const bool failed = std::any_of(j.hosts.begin(), j.hosts.end(), [&](const NetcheckHost& h) {
    return h.verdict == "fail" || (h.verdict == "unverified" && !allow_unverified);
  });
  return failed ? kExitCheckFailed : differences_exit_code(j.differences);
}

int differences_exit_code(const std::vector<SettingDifference>& differences) {
  return differences.empty() ? kExitOk : kExitCheckFailed;
}

}  // namespace rocebench::reports

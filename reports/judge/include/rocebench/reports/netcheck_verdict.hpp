#pragma once
// netcheck's verdict from its check records: each host's (fail, unverified, warn, pass, or skip when
// no check applied), the settings that differ between hosts, and the exit code. A pure function of
// the records, so `rocebench netcheck` and a re-judge of its saved records say the same.
#include <cstddef>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "rocebench/common/record.hpp"

namespace rocebench::reports {

// One host's checks: how many ended in each status, and the host's verdict: "fail" when a check
// failed, else "unverified" when one could not be read (never a pass), else "warn", else "pass" when
// one passed, else "skip" (every check skipped: nothing here it applies to).
struct NetcheckHost {
  std::string host;
  std::map<std::string, std::size_t> counts;  // status -> checks
  std::string verdict;
};

// One setting that differs between hosts: the value each group of hosts has.
struct SettingDifference {
  std::string check, subject;
  std::vector<std::pair<json, std::vector<std::string>>> values;  // observed -> hosts, most hosts first
};

struct NetcheckJudgement {
  std::vector<NetcheckHost> hosts;               // in the order the records name them
  std::vector<SettingDifference> differences;    // with two hosts or more
};

// Compares the latest record of every (host, check, subject) across hosts. Counters are left out:
// they differ by nature, and so are comparisons of comparisons (cluster.*). A subject one host lacks
// is a difference too (value null).
std::vector<SettingDifference> compare_hosts(const std::vector<json>& records);

// Every host of the check records (other kinds are left out) and their differences.
NetcheckJudgement judge_netcheck_checks(const std::vector<json>& records);

// netcheck's exit code: 1 when a host fails, or is unverified and `allow_unverified` is not given,
// or hosts differ; else 0.
int netcheck_exit_code(const NetcheckJudgement& j, bool allow_unverified);
// --compare's exit code: 1 when hosts differ, whatever their checks say; else 0.
int differences_exit_code(const std::vector<SettingDifference>& differences);

}  // namespace rocebench::reports

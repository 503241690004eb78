#pragma once
// Human output: check records as a table grouped by host and device, and the cross-host report.
#include <ostream>
#include <string>
#include <vector>

#include "rocebench/common/record.hpp"

namespace rocebench::netcheck {

// Records are JSON check records (to_json(CheckRecord) or read back from a results file).
void print_table(std::ostream& out, const std::vector<json>& records);

// One setting that differs between hosts: the value each group of hosts has.
struct Difference {
  std::string check, subject;
  std::vector<std::pair<json, std::vector<std::string>>> values;  // observed -> hosts, most hosts first
};

// Compares the latest record of every (host, check, subject) across hosts. Counters are left out:
// they differ by nature. A subject one host lacks is a difference too (value null).
std::vector<Difference> compare_hosts(const std::vector<json>& records);
void print_differences(std::ostream& out, const std::vector<Difference>& diffs, std::size_t host_count);
// The odd hosts out as check records (check "cluster.same_setting"), for --results.
std::vector<CheckRecord> difference_records(const std::vector<Difference>& diffs);

}  // namespace rocebench::netcheck

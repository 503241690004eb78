#pragma once
// Human output: check records as a table grouped by host and device, and the cross-host report.
#include <ostream>
#include <string>
#include <vector>

#include "rocebench/common/record.hpp"
#include "rocebench/reports/netcheck_verdict.hpp"

namespace rocebench::netcheck {

// Records are JSON check records (to_json(CheckRecord) or read back from a results file).
void print_table(std::ostream& out, const std::vector<json>& records);

// One setting that differs between hosts; which differ is the judge's (reports::compare_hosts).
using Difference = reports::SettingDifference;

void print_differences(std::ostream& out, const std::vector<Difference>& diffs, std::size_t host_count);
// The odd hosts out as check records (check "cluster.same_setting"), for --results.
std::vector<CheckRecord> difference_records(const std::vector<Difference>& diffs);

}  // namespace rocebench::netcheck

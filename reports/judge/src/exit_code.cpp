#include "rocebench/reports/exit_code.hpp"

#include <algorithm>
#include <string_view>

#include "rocebench/common/errors.hpp"

namespace rocebench::reports {

int severity(int exit_code) {
  switch (exit_code) {
    case kExitOk: return 0;
    case kExitCheckFailed: return 1;
    case kExitBadInput: return 2;
    default: return 3;
  }
}

int worse_exit_code(int a, int b) { return severity(b) > severity(a) ? b : a; }

namespace {

// A check that could not run is not a pass.
bool fails_the_run(std::string_view status) { return status == "fail" || status == "unverified"; }

}  // namespace

int records_exit_code(const std::vector<json>& records) {
  const bool failed = std::any_of(records.begin(), records.end(), [](const json& r) { return fails_the_run(r.value("status", "ok")); });
  return failed ? kExitCheckFailed : kExitOk;
}

int records_exit_code(const Dataset& data) {
  const bool failed =
      std::any_of(data.results.begin(), data.results.end(), [](const Observation& o) { return fails_the_run(to_string(o.status)); }) ||
      std::any_of(data.checks.begin(), data.checks.end(), [](const CheckObservation& c) { return fails_the_run(c.record.value("status", "ok")); });
  return failed ? kExitCheckFailed : kExitOk;
}

int verdicts_exit_code(const std::vector<Verdict>& verdicts) {
  const bool failed = std::any_of(verdicts.begin(), verdicts.end(), [](const Verdict& v) { return v.outcome != Outcome::pass; });
  return failed ? kExitCheckFailed : kExitOk;
}

int run_exit_code(const std::vector<json>& records, const std::vector<Verdict>& verdicts) {
  return worse_exit_code(records_exit_code(records), verdicts_exit_code(verdicts));
}

int run_exit_code(const Dataset& data, const std::vector<Verdict>& verdicts) {
  return worse_exit_code(records_exit_code(data), verdicts_exit_code(verdicts));
}

int acceptance_exit_code(const accept::Verdicts& verdicts) { return verdicts.pass() ? kExitOk : kExitCheckFailed; }

}  // namespace rocebench::reports

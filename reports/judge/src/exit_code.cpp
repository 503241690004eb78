#include "rocebench/reports/exit_code.hpp"

#include <algorithm>

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

int records_exit_code(const std::vector<json>& records) {
  const bool failed = std::any_of(records.begin(), records.end(), [](const json& r) {
    const std::string status = r.value("status", "ok");
    return status == "fail" || status == "unverified";
  });
  return failed ? kExitCheckFailed : kExitOk;
}

int verdicts_exit_code(const std::vector<Verdict>& verdicts) {
  const bool failed = std::any_of(verdicts.begin(), verdicts.end(), [](const Verdict& v) { return v.outcome != Outcome::pass; });
  return failed ? kExitCheckFailed : kExitOk;
}

int run_exit_code(const std::vector<json>& records, const std::vector<Verdict>& verdicts) {
  return worse_exit_code(records_exit_code(records), verdicts_exit_code(verdicts));
}

int acceptance_exit_code(const accept::Verdicts& verdicts) { return verdicts.pass() ? kExitOk : kExitCheckFailed; }

}  // namespace rocebench::reports

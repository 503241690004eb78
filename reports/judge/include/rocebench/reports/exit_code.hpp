#pragma once
// The exit code a verdict gives (DESIGN.md: 0 all good, 1 a check or threshold failed, 2 bad usage or
// bad input, 3 infrastructure), decided here once: `run`, `accept`, `netcheck` (netcheck_verdict.hpp)
// and `report` return what these say, and the same records judged again offline say the same.
#include <vector>

#include "rocebench/common/record.hpp"
#include "rocebench/reports/accept_verdicts.hpp"
#include "rocebench/reports/dataset.hpp"
#include "rocebench/reports/verdict.hpp"

namespace rocebench::reports {

// How bad an exit code is: ok 0 < a failed check 1 < bad input 2 < infrastructure 3 (3, or a
// signal, or anything else a process ended with).
int severity(int exit_code);
// The worse of two exit codes; anything of infrastructure's severity stays as given.
int worse_exit_code(int a, int b);

// A run's records: 1 when one of them failed or is unverified (a check that could not run is not a
// pass), else 0. Rank 0 of `rocebench run` returns it when every rank finished.
int records_exit_code(const std::vector<json>& records);
// The same rule over records read for a report (results and checks).
int records_exit_code(const Dataset& data);
// Verdicts (thresholds, a baseline): 1 when one did not pass (failed or missing), else 0.
int verdicts_exit_code(const std::vector<Verdict>& verdicts);
// A finished run judged from its records and its thresholds' verdicts, as `rocebench run` does when
// every rank finished, and `rocebench report` of its results does again: the worse of the two above.
int run_exit_code(const std::vector<json>& records, const std::vector<Verdict>& verdicts);
int run_exit_code(const Dataset& data, const std::vector<Verdict>& verdicts);
// An acceptance: 1 when a node or the cluster fails, else 0.
int acceptance_exit_code(const accept::Verdicts& verdicts);

}  // namespace rocebench::reports

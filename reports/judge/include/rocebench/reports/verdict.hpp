#pragma once
// A judgement the reports make from records: a threshold met or not, a metric that regressed
// against a baseline. Each becomes one JUnit test case.
#include <string>
#include <vector>

namespace rocebench::reports {

enum class Outcome { pass, fail, missing };
const char* to_string(Outcome o);

struct Verdict {
  std::string suite;    // "thresholds", "baseline", "compare", "records"
  std::string name;
  Outcome outcome = Outcome::pass;
  std::string message;  // what was measured against what was expected
};

}  // namespace rocebench::reports

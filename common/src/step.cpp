#include "rocebench/common/step.hpp"

#include <stdexcept>

namespace rocebench {

void StepContext::record(ResultRecord r) const {
  r.step = step;
  r.host = host;
  r.rank = rank;
  r.world = world;
  recorder->emit(to_json(r, run_id));
}

namespace {
StepRunner& step_runner() {
  static StepRunner runner;
  return runner;
}
LauncherCheck& launcher_check() {
  static LauncherCheck check;
  return check;
}
}  // namespace

void set_step_runner(StepRunner runner) { step_runner() = std::move(runner); }
void set_launcher_check(LauncherCheck check) { launcher_check() = std::move(check); }

void check_launcher_args(const std::vector<std::string>& launcher_args, const CommandOrigin& origin) {
  if (!launcher_check()) throw std::logic_error("no launcher check: only the rocebench executable checks launcher flags");
  launcher_check()(launcher_args, origin);
}

int run_step_as_plan(const std::string& step, const json& params, const std::vector<std::string>& launcher_args,
                     const CommandOrigin& origin) {
  if (!step_runner()) throw std::logic_error("no step runner: only the rocebench executable can launch ranks");
  return step_runner()(step, params, launcher_args, origin);
}

}  // namespace rocebench

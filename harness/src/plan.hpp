#pragma once
// Plans: JSON files that say which ranks to start and which steps to run. Validated up front so
// that a typo is an error naming file, line and field, not a failure an hour into a sweep.
#include <filesystem>
#include <string>
#include <vector>

#include "rocebench/common/located_json.hpp"
#include "rocebench/common/step.hpp"

namespace rocebench {

struct LauncherConfig {
  std::string type = "local";  // local | mpirun | srun
  int ranks = 1;               // local
  std::string hostfile;        // mpirun / srun, relative to the plan's folder
  int ranks_per_host = 0;      // 0: the hostfile's slots
  std::vector<std::string> extra_args;
  std::string emulated_link_rate;  // local: run each rank in an emulated host with this link (tc's units); empty: none
  bool pin_cpus = false;  // each rank on one CPU (pin_to_cpu), for steadier numbers
};

struct PlanStep {
  const StepKind* kind = nullptr;
  std::string label;
  json params;
};

struct Plan {
  std::string name;
  std::string file;  // where it came from ("builtin:local" for the embedded default)
  std::string text;  // exactly as read, for hashing and for shipping to the other ranks
  std::string sha256;
  LauncherConfig launcher;
  double deadline_s = kDefaultDeadlineS;
  double run_timeout_s = 3600;
  std::string history;  // history database to add the run to and check; relative to the results root
  int history_reruns = 0;  // reruns of the steps behind UNKNOWN series a run may make of its own night
  std::vector<PlanStep> steps;
  json document;
};

inline constexpr const char* kBuiltinLocalPlan = "builtin:local";
// Tuned for stable numbers night after night (fixed counts, warm-ups, explicit TCP settings): rocebench history.
inline constexpr const char* kBuiltinNightlyPlan = "builtin:nightly";

// Throws InputError "file:line: field 'steps[1].params.rounds': …".
Plan parse_plan(const std::string& text, const std::string& file, const std::vector<StepKind>& kinds);
// A path, builtin:local or builtin:nightly.
Plan load_plan(const std::string& path, const std::vector<StepKind>& kinds);

// The plan with only its steps of these kinds, its text and hash those of that plan (a rerun of a
// night's undecided steps records what it ran). UsageError naming --steps for a kind the plan lacks.
Plan keep_steps(const Plan& plan, const std::vector<std::string>& step_kinds, const std::vector<StepKind>& kinds);

std::string builtin_local_plan_text();
std::string builtin_nightly_plan_text();

// The plan schema's declaration of a plan field ("/deadline_s", "/launcher/ranks"): its type and range,
// which the command-line flag that overrides the field shares.
const json& plan_field_schema(const std::string& field);

}  // namespace rocebench

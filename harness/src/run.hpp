#pragma once
// `rocebench run`'s options and its launcher side, for the commands that run plans of their own
// (accept runs one plan per stage, on the hosts the stage needs).
#include <string>
#include <vector>

#include "plan.hpp"
#include "rocebench/common/cli.hpp"

namespace rocebench {

struct RunOptions {
  std::string plan_path = kBuiltinLocalPlan;
  std::string launcher;  // empty: the plan's
  int ranks = 0;         // 0: the plan's
  std::string hostfile;
  int ranks_per_host = 0;
  std::string results_root = kDefaultResultsRoot;
  std::string results_dir;  // set by the launcher for its ranks
  std::string run_id;
  std::string netns_file;
  bool loopback = false;  // ignore the plan's launcher.emulated_hosts
  std::string mpirun = "mpirun";
  double deadline_s = 0;  // 0: the plan's
  double timeout_s = 0;
  bool dry_run = false;
  bool report = true;  // end with the report and its summary on the console
  std::string history_db;  // add the run to this history and check it (default: the plan's history)
  std::string rerun_of;    // the run of that history this one repeats (an UNKNOWN asked for it)
  int reruns = -1;         // reruns of the night an UNKNOWN may ask for (-1: the plan's history_reruns)
  std::vector<std::string> steps;  // only the plan's steps of these kinds (empty: all)
};

// Throws UsageError when a --run-id is not a plain folder name.
void refuse_bad_run_id(const std::string& program, const std::string& run_id);
// Throws UsageError naming `flag` and what the user typed (`value`) when the results folder `dir`
// exists and holds anything: two runs' records in one file cannot be told apart, and the earlier
// run's plan would be overwritten. Called before any rank starts.
void refuse_used_results_dir(const std::string& program, const std::filesystem::path& dir, const std::string& flag,
                             const std::string& value);

// Starts the plan's ranks, waits for them and returns the run's exit code (README's codes).
int launch_run(RunOptions options);

}  // namespace rocebench

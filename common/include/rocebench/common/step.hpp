#pragma once
// What a module needs from the harness to run a plan step, as small interfaces: modules never see
// the harness, and the harness never sees a module's internals.
#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "rocebench/common/record.hpp"

namespace rocebench {

// Key-value exchange among the ranks of one run (endpoints, QP attributes, NCCL ids). Every call
// has a deadline; a lost rank or a passed deadline throws InfraError naming rank and host.
class Rendezvous {
 public:
  virtual ~Rendezvous() = default;
  virtual int rank() const = 0;
  virtual int world() const = 0;
  virtual void set(const std::string& key, const std::string& value) = 0;
  virtual std::string get(const std::string& key, std::chrono::milliseconds timeout) = 0;
  virtual void barrier(const std::string& name, std::chrono::milliseconds timeout) = 0;
  // The ranks the run has lost so far, each named with its host and why ("rank 3 on host h was lost:
  // …"); none where the rendezvous cannot tell.
  virtual std::vector<std::string> lost_ranks() { return {}; }
};

// Where a rank's records go (rank 0 writes the run's results.jsonl).
class Recorder {
 public:
  virtual ~Recorder() = default;
  virtual void emit(const json& record) = 0;
  virtual void end_step() = 0;  // make the step's records durable
};

// The most ranks a run starts (the plan schema's launcher.ranks, which a harness test holds to it):
// a module command that asks for more ranks names its own flag, not the launcher's --ranks.
inline constexpr int kMaxRanks = 4096;

// How long any single wait may take (a step's, the launcher's) unless the plan's `deadline_s` or
// --deadline says otherwise: declared once, here.
inline constexpr std::chrono::seconds kDefaultDeadline{60};
inline constexpr double kDefaultDeadlineS = std::chrono::duration<double>(kDefaultDeadline).count();

struct StepContext {
  std::string run_id;
  std::string step;  // the step's name in records, e.g. "harness.rendezvous"
  std::string scope;  // unique to this step of the plan ("step3"): prefix every rendezvous key with it
  std::string host;
  int rank = 0;
  int world = 1;
  int local_rank = 0;  // index among the ranks on this host: per-host work runs on local_rank 0
  std::string address;  // this rank's IP address on the run's network (the one it reaches rank 0 from)
  json params = json::object();  // the plan's params for this step, already validated
  std::chrono::milliseconds deadline{kDefaultDeadline};  // for any single wait inside the step
  Rendezvous* rendezvous = nullptr;
  Recorder* recorder = nullptr;
  std::string results_dir;  // rank 0: the run's results folder, for files beside results.jsonl; empty elsewhere

  // Fills step, host, rank and world, then emits.
  void record(ResultRecord r) const;
};

// Runs one step as a whole plan: launches the ranks as `rocebench run` would (launcher_args are
// run's options: --ranks, --netns, --launcher, --hostfile, --results …) and returns the exit code.
// The harness provides it; a module's subcommand (`rocebench allreduce …`) calls it, so modules
// can offer a command line for their steps without knowing the harness.
// Where a module command's params came from: the command and the flag behind each param, so that a
// value the step's schema refuses is reported against what the user typed, before anything starts
// ("rocebench allreduce: --chunk 1: must be >= 64").
struct CommandOrigin {
  std::string program;                         // "rocebench allreduce"
  std::map<std::string, std::string> flag_of;  // param -> flag, e.g. chunk_bytes -> --chunk
};
using StepRunner = std::function<int(const std::string& step, const json& params, const std::vector<std::string>& launcher_args,
                                     const CommandOrigin& origin)>;
void set_step_runner(StepRunner runner);
int run_step_as_plan(const std::string& step, const json& params, const std::vector<std::string>& launcher_args,
                     const CommandOrigin& origin);

// Checks launcher arguments (--deadline …) as `rocebench run` checks them, ranges included, and
// starts nothing: for a command whose sides are started by hand. The harness provides it too.
using LauncherCheck = std::function<void(const std::vector<std::string>& launcher_args, const CommandOrigin& origin)>;
void set_launcher_check(LauncherCheck check);
void check_launcher_args(const std::vector<std::string>& launcher_args, const CommandOrigin& origin);

// A kind of plan step a module offers: its name in plans, the schema of its params and its body.
struct StepKind {
  std::string name;
  std::string summary;
  json params_schema = json::object();
  std::function<void(StepContext&)> run;
};

}  // namespace rocebench

#pragma once
// How ranks come to exist: a rank reads who it is from its environment (whatever started it), and
// the launchers start ranks — forked here, or through Open MPI's mpirun or Slurm's srun.
#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "rendezvous.hpp"

namespace rocebench {

// What a rank learns from its environment.
struct RankEnv {
  int rank = 0;
  int world = 1;
  int local_rank = 0;
  RendezvousAddress rendezvous;
  std::string token;
  std::string source;  // which variables told us: "RANK/WORLD_SIZE", "OMPI_COMM_WORLD_*", …
};

inline constexpr int kDefaultRendezvousPort = 29517;

// Reads RANK/WORLD_SIZE/LOCAL_RANK (torchrun style), OMPI_COMM_WORLD_*, PMI_* or SLURM_* (first
// found wins), MASTER_ADDR / MASTER_PORT (default 127.0.0.1:29517) and ROCEBENCH_TOKEN. Throws
// InputError naming the variable that is missing or malformed.
RankEnv rank_env_from(const std::map<std::string, std::string>& env);
std::map<std::string, std::string> current_environment();

// Where a rank pinned itself (plan launcher.pin_cpus): one CPU of the `allowed` ones this process
// may run on (its affinity mask: a cgroup or taskset may allow fewer than the host has).
struct CpuPin {
  int cpu = -1;  // the CPU the rank runs on once pinned (sched_getcpu)
  int allowed = 0;
};
// Pins every thread of this process to the (local_rank mod allowed)-th allowed CPU, so that local
// ranks take distinct CPUs while there are enough. InfraError when the kernel refuses.
CpuPin pin_to_cpu(int local_rank);

// One line of an Open MPI style hostfile: "host [slots=N]"; '#' starts a comment.
struct HostSlot {
  std::string host;
  int slots = 1;
  int line = 0;  // in its hostfile, for messages
};
// Throws InputError "file:line: field 'slots': …".
std::vector<HostSlot> parse_hostfile(const std::string& text, const std::string& file);
std::vector<HostSlot> load_hostfile(const std::filesystem::path& file);

// Everything a launcher needs to start `ranks_per_host` ranks on each host running `rank_argv`.
struct LaunchSpec {
  std::vector<HostSlot> hosts;
  int ranks_per_host = 1;            // 0: use each host's slots
  std::vector<std::string> rank_argv;  // the rank's command: rocebench run --launcher env …
  std::map<std::string, std::string> env;  // exported to every rank (MASTER_ADDR, ROCEBENCH_TOKEN, …)
  std::string mpirun = "mpirun";
  std::vector<std::string> extra_args;  // passed to mpirun / srun before the command
};
int total_ranks(const LaunchSpec& spec);

// The argv that starts the ranks under Open MPI / Slurm. It names spec.env's variables but holds none
// of their values (the token among them, which `ps` would show every user): mpirun / srun must be
// started with spec.env in their environment, and they hand it on to every rank.
std::vector<std::string> mpirun_argv(const LaunchSpec& spec);
std::vector<std::string> srun_argv(const LaunchSpec& spec);

// An emulated host (ci/testbeds/netns): a network namespace with its address; or, with an agent
// port, a host of its own whose ranks `rocebench agent` there starts (agent.hpp).
struct EmulatedHost {
  std::string netns;
  std::string address;
  std::string hostname;  // what its ranks are called; empty: the namespace's name
  int line = 0;          // in its hosts file, for messages
  int agent_port = 0;    // > 0: reached through the agent at address:agent_port, not a namespace

  const std::string& name() const { return hostname.empty() ? netns : hostname; }
};
// Reads the "NAME ADDRESS [agent=PORT]" lines of a hosts file (the test beds write the first two).
// Throws InputError "file:line: field 'agent': …".
std::vector<EmulatedHost> parse_emulated_hosts(const std::string& text, const std::string& file);
std::vector<EmulatedHost> load_emulated_hosts(const std::filesystem::path& file);
// The line parse_emulated_hosts reads back as `host` (without a newline).
std::string emulated_host_line(const EmulatedHost& host);

// A child process we started.
struct Child {
  pid_t pid = -1;
  int rank = -1;
  std::string host;
};

// Where a child's standard streams go (-1: this process's), and whether it leads a process group
// of its own (so that killpg reaches whatever it starts).
struct SpawnIo {
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  bool own_process_group = false;
};

// Forks and execs argv with extra environment; with an emulated host, the child first joins its
// network namespace and takes its name as hostname (in a UTS namespace of its own). With an
// emulated host that has an agent port, the child is instead a relay (`rocebench agent --run`) that
// has the host's agent start argv with only `env` (not this process's environment) and ends as it
// ends. The child gets SIGTERM when the launcher dies, however it dies: no rank outlives its launcher
// (a relay's end closes its connection, and the agent then stops the remote rank).
// With io.stderr_fd >= 0, the child's stderr is that file descriptor. `carry`: a folder that travels
// with a child started through an agent (run_through_agent in agent.hpp); a local child sees it as it is.
Child spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
            const EmulatedHost* emulated, int rank, const SpawnIo& io = {}, const std::string& carry = "");

// A child's stderr, copied to ours as it comes, with the lines kept for the launcher to read what
// mpirun / srun said about their ranks (at most the last 10,000 lines).
class StderrTee {
 public:
  StderrTee();  // makes the pipe; give write_fd() to spawn, then start()
  ~StderrTee();
  StderrTee(const StderrTee&) = delete;
  StderrTee& operator=(const StderrTee&) = delete;
  int write_fd() const { return write_fd_; }
  void start();  // closes our copy of the write end and starts copying
  // The lines so far, once the pipe has closed (every writer ended) or `grace` has passed.
  std::vector<std::string> finish(std::chrono::milliseconds grace);

 private:
  int read_fd_ = -1;
  int write_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> eof_{false};
  std::deque<std::string> lines_;  // the thread's until it ends
};

// A rank that mpirun or srun says was killed by a signal: "srun: error: node3: task 2: Killed",
// "mpirun noticed that process rank 2 with PID 77 on node node3 exited on signal 9 (Killed)."
// Ranks that exited with a code are left out: they ended on their own and said why.
struct ReportedDeath {
  int rank = -1;
  std::string host;
  std::string ended;  // "killed by SIGKILL", or the launcher's words for it
};
std::vector<ReportedDeath> deaths_reported_by_launcher(const std::vector<std::string>& lines);

// How a child ended, for reports: "exit 3", "killed by SIGKILL".
struct ChildExit {
  Child child;
  int status = 0;  // waitpid status
  std::string describe() const;
  int exit_code() const;  // the exit code, or 128+signal
};

// From now on SIGINT, SIGTERM and SIGHUP no longer end this process at once: wait_all() hands them
// on to the children, and stop_signal() says which one came (0: none).
void catch_stop_signals();
int stop_signal();

// Waits for all children. When the deadline passes, or a stop signal comes, it sends them SIGTERM
// (or that signal), then SIGKILL to those still there 5 s later.
std::vector<ChildExit> wait_all(std::vector<Child> children, const Deadline& deadline);

}  // namespace rocebench

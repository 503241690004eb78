#include "launch.hpp"

#include "agent.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <regex>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include <fmt/format.h>

#include "rocebench/common/bounded_read.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/run_id.hpp"

extern char** environ;

namespace rocebench {

namespace {

int parse_int(const std::string& name, const std::string& text) {
  try {
    std::size_t used = 0;
    const int v = std::stoi(text, &used);
    if (used == text.size()) return v;
  } catch (const std::exception&) {
  }
  throw InputError(fmt::format("environment variable {}='{}' is not an integer", name, text));
}

std::string lookup(const std::map<std::string, std::string>& env, const std::string& name, const std::string& fallback) {
  auto it = env.find(name);
  return it == env.end() || it->second.empty() ? fallback : it->second;
}

}  // namespace

std::map<std::string, std::string> current_environment() {
  std::map<std::string, std::string> env;
  for (char** e = environ; *e; ++e) {
    const std::string entry = *e;
    const auto eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return env;
}

RankEnv rank_env_from(const std::map<std::string, std::string>& env) {
  // Each launcher's names for rank, world size and rank-on-this-host, most specific first.
  struct Convention {
    const char* rank;
    const char* world;
    const char* local;
    const char* source;
  };
  static const Convention conventions[] = {
      {"RANK", "WORLD_SIZE", "LOCAL_RANK", "RANK/WORLD_SIZE"},
      {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_*"},
      {"PMI_RANK", "PMI_SIZE", "MPI_LOCALRANKID", "PMI_*"},
      {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_*"},
  };
  RankEnv out;
  bool found = false;
  for (const auto& c : conventions) {
    if (!env.count(c.rank)) continue;
    if (!env.count(c.world)) throw InputError(fmt::format("{} is set but {} is not", c.rank, c.world));
    out.rank = parse_int(c.rank, env.at(c.rank));
    out.world = parse_int(c.world, env.at(c.world));
    out.local_rank = env.count(c.local) ? parse_int(c.local, env.at(c.local)) : 0;
    out.source = c.source;
    found = true;
    break;
  }
  if (!found) out.source = "none (a single rank)";
  if (out.world < 1 || out.rank < 0 || out.rank >= out.world) {
    throw InputError(fmt::format("rank {} of world {} (from {}) is impossible", out.rank, out.world, out.source));
  }
  out.rendezvous.host = lookup(env, "MASTER_ADDR", "127.0.0.1");
  out.rendezvous.port = parse_int("MASTER_PORT", lookup(env, "MASTER_PORT", std::to_string(kDefaultRendezvousPort)));
  out.token = lookup(env, "ROCEBENCH_TOKEN", "");
  if (out.token.empty()) {
    throw InputError(
        "ROCEBENCH_TOKEN is not set: every rank needs the run's token (rocebench run sets it; by hand: "
        "export ROCEBENCH_TOKEN=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \\n') and pass it on, e.g. mpirun -x "
        "ROCEBENCH_TOKEN)");
  }
  return out;
}

namespace {

// A DNS name (RFC 1123 labels: letters, digits and inner hyphens, joined by dots) or an IP address:
// what mpirun and srun will hand to ssh or Slurm, where anything else is a mistake or an injection.
bool valid_host_name(const std::string& name) {
  in6_addr v6{};
  if (::inet_pton(AF_INET6, name.c_str(), &v6) == 1) return true;
  if (name.empty() || name.size() > 253) return false;
  std::istringstream labels(name);
  std::size_t count = 0;
  for (std::string label; std::getline(labels, label, '.'); ++count) {
    if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-') return false;
    if (label.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-") != std::string::npos) {
      return false;
    }
  }
  return count > 0 && name.back() != '.';
}

// All of `text` as a positive integer, else 0 ("8" -> 8; "8x", "-1", "" -> 0).
int positive_or_zero(const std::string& text) {
  try {
    std::size_t used = 0;
    const int v = std::stoi(text, &used);
    if (used == text.size() && v > 0) return v;
  } catch (const std::exception&) {
  }
  return 0;
}

}  // namespace

CpuPin pin_to_cpu(int local_rank) {
  cpu_set_t mask;
  CPU_ZERO(&mask);
  if (::sched_getaffinity(0, sizeof mask, &mask) != 0) throw InfraError(std::string("sched_getaffinity: ") + std::strerror(errno));
  std::vector<int> allowed;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &mask)) allowed.push_back(c);
  }
  if (allowed.empty()) throw InfraError("sched_getaffinity: no CPU allowed");
  CpuPin pin{allowed[static_cast<std::size_t>(local_rank) % allowed.size()], static_cast<int>(allowed.size())};
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(pin.cpu, &one);
  // Every thread: the rendezvous' threads are already running when the plan says to pin.
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    const pid_t tid = std::stoi(task.path().filename().string());
    if (::sched_setaffinity(tid, sizeof one, &one) != 0 && errno != ESRCH) {
      throw InfraError(fmt::format("sched_setaffinity(CPU {}): {}", pin.cpu, std::strerror(errno)));
    }
  }
  pin.cpu = ::sched_getcpu();  // where this thread now runs, as the record says: the pin, if it took
  return pin;
}

std::vector<HostSlot> parse_hostfile(const std::string& text, const std::string& file) {
  std::vector<HostSlot> hosts;
  std::istringstream in(text);
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    line = line.substr(0, line.find('#'));
    std::istringstream words(line);
    HostSlot h;
    h.line = line_no;
    if (!(words >> h.host)) continue;
    if (!valid_host_name(h.host)) {
      throw InputError(file, line_no, "host",
                       "'" + printable_excerpt(h.host) + "' is not a host name or address (letters, digits, '-' and '.')");
    }
    for (std::string word; words >> word;) {
      const auto eq = word.find('=');
      const std::string key = word.substr(0, eq);
      const std::string value = eq == std::string::npos ? "" : word.substr(eq + 1);
      if (key == "slots" || key == "max_slots" || key == "max-slots") {
        const int slots = positive_or_zero(value);
        if (slots < 1) {
          throw InputError(file, line_no, key, "expected a positive integer, got '" + printable_excerpt(value) + "'");
        }
        if (key == "slots") h.slots = slots;
      } else {
        throw InputError(file, line_no, printable_excerpt(key), "unknown hostfile field (expected 'host slots=N')");
      }
    }
    hosts.push_back(h);
  }
  if (hosts.empty()) throw InputError(file, 0, "", "hostfile names no host");
  return hosts;
}

std::vector<HostSlot> load_hostfile(const std::filesystem::path& file) {
  static constexpr InputLimits kHostfileLimits{"hostfile", 16 * kMiB, 64 * 1024};  // a line per host
  return parse_hostfile(read_input(file, kHostfileLimits), file.string());
}

int total_ranks(const LaunchSpec& spec) {
  int n = 0;
  for (const auto& h : spec.hosts) n += spec.ranks_per_host > 0 ? spec.ranks_per_host : h.slots;
  return n;
}

std::vector<std::string> mpirun_argv(const LaunchSpec& spec) {
  std::vector<std::string> hosts;
  for (const auto& h : spec.hosts) hosts.push_back(fmt::format("{}:{}", h.host, spec.ranks_per_host > 0 ? spec.ranks_per_host : h.slots));
  std::vector<std::string> argv{spec.mpirun, "-np", std::to_string(total_ranks(spec)), "-H", fmt::format("{}", fmt::join(hosts, ",")),
                                "--map-by", "slot"};
  for (const auto& [name, value] : spec.env) {
    argv.push_back("-x");
    argv.push_back(name);
  }
  argv.insert(argv.end(), spec.extra_args.begin(), spec.extra_args.end());
  argv.insert(argv.end(), spec.rank_argv.begin(), spec.rank_argv.end());
  return argv;
}

std::vector<std::string> srun_argv(const LaunchSpec& spec) {
  // Rank i runs on the i-th host of the hostfile's order, each host's ranks together, as under mpirun:
  // rank 0 serves the rendezvous at MASTER_ADDR, the first host. Slurm's own (block) layout follows its
  // node table instead, so a hostfile in any other order put rank 0 elsewhere and no rank could meet.
  // --distribution=arbitrary takes the layout from --nodelist, one entry per task.
  std::vector<std::string> per_task;
  std::set<std::string> distinct;
  for (const auto& h : spec.hosts) {
    distinct.insert(h.host);
    for (int i = 0; i < (spec.ranks_per_host > 0 ? spec.ranks_per_host : h.slots); ++i) per_task.push_back(h.host);
  }
  std::string exports = "ALL";
  for (const auto& [name, value] : spec.env) exports += "," + name;
  std::vector<std::string> argv{"srun", fmt::format("--nodes={}", distinct.size()),
                                fmt::format("--ntasks={}", total_ranks(spec)), "--distribution=arbitrary",
                                fmt::format("--nodelist={}", fmt::join(per_task, ",")), "--export=" + exports,
                                // srun takes one SIGINT as a request for status and stops only on a second
                                // within 1 s; the launcher hands on one, which must stop every rank.
                                "--quit-on-interrupt"};
  argv.insert(argv.end(), spec.extra_args.begin(), spec.extra_args.end());
  argv.insert(argv.end(), spec.rank_argv.begin(), spec.rank_argv.end());
  return argv;
}

std::vector<EmulatedHost> parse_emulated_hosts(const std::string& text, const std::string& file) {
  std::istringstream in(text);
  std::vector<EmulatedHost> hosts;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    std::istringstream words(line.substr(0, line.find('#')));
    EmulatedHost h;
    h.line = line_no;
    if (!(words >> h.netns)) continue;
    if (!(words >> h.address)) throw InputError(file, line_no, "address", "expected 'NAME ADDRESS [agent=PORT]'");
    for (std::string word; words >> word;) {
      const auto eq = word.find('=');
      const std::string key = word.substr(0, eq);
      if (key != "agent") {
        throw InputError(file, line_no, printable_excerpt(key), "unknown field (expected 'NAME ADDRESS [agent=PORT]')");
      }
      const std::string value = eq == std::string::npos ? "" : word.substr(eq + 1);
      h.agent_port = positive_or_zero(value);
      if (h.agent_port < 1 || h.agent_port > 65535) {
        throw InputError(file, line_no, "agent", "expected a TCP port 1..65535, got '" + printable_excerpt(value) + "'");
      }
    }
    hosts.push_back(h);
  }
  if (hosts.empty()) throw InputError(file, 0, "", "no emulated hosts listed");
  return hosts;
}

std::vector<EmulatedHost> load_emulated_hosts(const std::filesystem::path& file) {
  static constexpr InputLimits kEmulatedHostsFile{"netns hosts file", 16 * kMiB, 64 * 1024};
  std::error_code ec;
  if (!std::filesystem::exists(file, ec)) {
    throw InputError(file.string(), 0, "", "cannot open the emulated-hosts file (is the netns test bed up?)");
  }
  return parse_emulated_hosts(read_input(file, kEmulatedHostsFile), file.string());
}

std::string emulated_host_line(const EmulatedHost& host) {
  return host.netns + " " + host.address + (host.agent_port > 0 ? " agent=" + std::to_string(host.agent_port) : "");
}

Child spawn(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env,
            const EmulatedHost* emulated, int rank, const SpawnIo& io, const std::string& carry) {
  // A host reached through its agent: the child here is the relay, which sends only `env` there.
  const bool through_agent = emulated && emulated->agent_port > 0;
  std::vector<std::string> argv_copy = argv;
  if (through_agent) {
    agent_token("");  // the relay needs it: refused here, before any rank starts, when it is missing
    std::vector<std::string> names;
    for (const auto& [k, v] : env) names.push_back(k);
    argv_copy = agent_relay_argv(std::filesystem::read_symlink("/proc/self/exe").string(), *emulated, names, argv, carry);
  }
  // Everything the child needs is prepared before fork: after it, only async-signal-safe calls.
  std::map<std::string, std::string> full = current_environment();
  for (const auto& [k, v] : env) full[k] = v;
  std::vector<std::string> env_strings;
  for (const auto& [k, v] : full) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp, args;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);
  // An emulated host whose namespace is gone is a host that is down: its rank starts and fails
  // (and is reported lost), as a rank on a dead machine would, rather than the launch stopping.
  int netns_fd = -1;
  std::string gone;
  if (emulated && !through_agent) {
    const std::string path = "/run/netns/" + emulated->netns;
    netns_fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (netns_fd < 0) gone = fmt::format("rocebench: cannot open network namespace {}: {}\n", path, std::strerror(errno));
  }
  char hostname[256] = {};
  if (emulated) std::snprintf(hostname, sizeof hostname, "%s", emulated->name().c_str());

  const pid_t launcher = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw InfraError(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    if (io.own_process_group && ::setpgid(0, 0) != 0) ::_exit(kExitInfra);
    if (!gone.empty()) {
      [[maybe_unused]] auto n = ::write(2, gone.data(), gone.size());
      ::_exit(kExitInfra);
    }
    if (netns_fd >= 0) {
      if (::setns(netns_fd, CLONE_NEWNET) != 0 || ::unshare(CLONE_NEWUTS) != 0 ||
          ::sethostname(hostname, std::strlen(hostname)) != 0) {
        const char msg[] = "rocebench: cannot enter the emulated host's namespaces\n";
        [[maybe_unused]] auto n = ::write(2, msg, sizeof msg - 1);
        ::_exit(kExitInfra);
      }
    }
    if (::prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || ::getppid() != launcher) ::_exit(kExitInfra);  // it died already
    if (io.stdin_fd >= 0 && ::dup2(io.stdin_fd, 0) < 0) ::_exit(kExitInfra);
    if (io.stdout_fd >= 0 && ::dup2(io.stdout_fd, 1) < 0) ::_exit(kExitInfra);
    if (io.stderr_fd >= 0) {
      if (::dup2(io.stderr_fd, 2) < 0) ::_exit(kExitInfra);
      // Should the launcher die, mpirun/srun must still stop their ranks, not die of SIGPIPE on the
      // first word they write about it.
      ::signal(SIGPIPE, SIG_IGN);
    }
    ::execve(args[0], args.data(), envp.data());
    ::execvpe(args[0], args.data(), envp.data());
    const char msg[] = "rocebench: exec failed\n";
    [[maybe_unused]] auto n = ::write(2, msg, sizeof msg - 1);
    ::_exit(127);
  }
  // Here too, so that the group exists before anyone signals it (EACCES once the child has exec'd: set then).
  if (io.own_process_group) ::setpgid(pid, pid);
  if (netns_fd >= 0) ::close(netns_fd);
  return {pid, rank, emulated ? emulated->name() : std::string()};
}

StderrTee::StderrTee() {
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) throw InfraError(std::string("cannot make a pipe: ") + std::strerror(errno));
  read_fd_ = fds[0];
  write_fd_ = fds[1];
}

StderrTee::~StderrTee() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  if (read_fd_ >= 0) ::close(read_fd_);
  if (write_fd_ >= 0) ::close(write_fd_);
}

void StderrTee::start() {
  ::close(write_fd_);  // the child's copy is the only writer left: its end is our end of file
  write_fd_ = -1;
  thread_ = std::thread([this] {
    auto keep = [this](std::string line) {
      lines_.push_back(std::move(line));
      if (lines_.size() > 10000) lines_.pop_front();
    };
    std::string partial;
    char buffer[4096];
    while (!stop_) {
      pollfd p{read_fd_, POLLIN, 0};
      const int ready = ::poll(&p, 1, 100);  // 100 ms: finish() is heard even while nothing comes
      if (ready < 0 && errno != EINTR) break;
      if (ready <= 0) continue;
      const ssize_t n = ::read(read_fd_, buffer, sizeof buffer);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      for (ssize_t done = 0; done < n;) {
        const ssize_t w = ::write(2, buffer + done, static_cast<std::size_t>(n - done));
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) break;
        done += w;
      }
      partial.append(buffer, static_cast<std::size_t>(n));
      for (std::size_t nl; (nl = partial.find('\n')) != std::string::npos; partial.erase(0, nl + 1)) keep(partial.substr(0, nl));
      if (partial.size() > 65536) keep(std::exchange(partial, {}));
    }
    if (!partial.empty()) keep(partial);
    eof_ = true;
  });
}

std::vector<std::string> StderrTee::finish(std::chrono::milliseconds grace) {
  // Processes that mpirun or srun left behind may hold the pipe open: wait for them only so long.
  const auto until = std::chrono::steady_clock::now() + grace;
  while (!eof_ && thread_.joinable() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  stop_ = true;
  if (thread_.joinable()) thread_.join();
  return {lines_.begin(), lines_.end()};
}

namespace {

// "0-2,5" (srun's task list) -> 0 1 2 5; nothing when malformed.
std::vector<int> task_list(const std::string& text) {
  std::vector<int> tasks;
  std::istringstream parts(text);
  for (std::string part; std::getline(parts, part, ',');) {
    int first = 0, last = 0;
    char dash = 0;
    std::istringstream in(part);
    if (!(in >> first)) return {};
    last = first;
    if (in >> dash && (dash != '-' || !(in >> last))) return {};
    if (first < 0 || last < first || last - first > 100000) return {};
    for (int t = first; t <= last; ++t) tasks.push_back(t);
  }
  return tasks;
}

// "Killed" -> "killed by SIGKILL": srun prints the signal's description (strsignal).
std::string signal_from_description(const std::string& description) {
  for (int sig = 1; sig < NSIG; ++sig) {
    const char* text = sigdescr_np(sig);
    const char* abbrev = sigabbrev_np(sig);
    if (text && abbrev && description == text) return std::string("killed by SIG") + abbrev;
  }
  return description;
}

}  // namespace

std::vector<ReportedDeath> deaths_reported_by_launcher(const std::vector<std::string>& lines) {
  static const std::regex srun(R"(^srun: error: ([^ :]+): tasks? ([0-9,-]+): (.+)$)");
  static const std::regex mpirun(R"(process rank ([0-9]{1,9}) with PID [0-9]+ on node ([^ ]+) exited on signal ([0-9]{1,3}))");
  std::vector<ReportedDeath> deaths;
  std::set<int> seen;
  for (const auto& line : lines) {
    std::smatch m;
    if (line.size() < 4096 && std::regex_search(line, m, srun)) {
      const std::string how = m[3].str();
      if (how.rfind("Exited with exit code", 0) == 0) continue;  // it ended on its own, and said why
      for (const int rank : task_list(m[2].str())) {
        if (seen.insert(rank).second) deaths.push_back({rank, m[1].str(), signal_from_description(how)});
      }
    } else if (line.size() < 4096 && std::regex_search(line, m, mpirun)) {
      const int rank = std::stoi(m[1].str());
      const int sig = std::stoi(m[3].str());
      const char* abbrev = sig > 0 && sig < NSIG ? sigabbrev_np(sig) : nullptr;
      if (seen.insert(rank).second) {
        deaths.push_back({rank, m[2].str(), abbrev ? std::string("killed by SIG") + abbrev : fmt::format("killed by signal {}", sig)});
      }
    }
  }
  return deaths;
}

std::string ChildExit::describe() const {
  if (WIFEXITED(status)) return fmt::format("exit {}", WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return fmt::format("killed by {}", sigabbrev_np(WTERMSIG(status)) ? std::string("SIG") + sigabbrev_np(WTERMSIG(status)) : std::to_string(WTERMSIG(status)));
  return "ended oddly";
}

int ChildExit::exit_code() const {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

namespace {

volatile std::sig_atomic_t g_stop_signal = 0;

void on_stop_signal(int signal) { g_stop_signal = signal; }

}  // namespace

void catch_stop_signals() {
  struct sigaction action {};
  action.sa_handler = on_stop_signal;
  sigemptyset(&action.sa_mask);
  for (const int signal : {SIGINT, SIGTERM, SIGHUP}) ::sigaction(signal, &action, nullptr);
}

int stop_signal() { return g_stop_signal; }

std::vector<ChildExit> wait_all(std::vector<Child> children, const Deadline& deadline) {
  std::vector<ChildExit> done;
  bool terminated = false;
  std::optional<Deadline> kill_deadline;
  while (!children.empty()) {
    for (auto it = children.begin(); it != children.end();) {
      int status = 0;
      const pid_t r = ::waitpid(it->pid, &status, WNOHANG);
      if (r == it->pid) {
        done.push_back({*it, status});
        it = children.erase(it);
      } else {
        ++it;
      }
    }
    if (children.empty()) break;
    if ((deadline.expired() || stop_signal() != 0) && !terminated) {
      for (const auto& c : children) ::kill(c.pid, stop_signal() != 0 ? stop_signal() : SIGTERM);
      terminated = true;
      kill_deadline.emplace(std::chrono::seconds(5));
    }
    if (kill_deadline && kill_deadline->expired()) {
      for (const auto& c : children) ::kill(c.pid, SIGKILL);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done;
}

}  // namespace rocebench

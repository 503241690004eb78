#include "rocebench/netcheck/tools.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>
#include <sstream>

#include <fmt/format.h>

#include "rocebench/common/bounded_read.hpp"
#include "rocebench/common/clock.hpp"
#include "rocebench/common/errors.hpp"

extern char** environ;

namespace rocebench::netcheck {

namespace {

// Closes what it holds, so every early return leaves no descriptor behind.
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

}  // namespace

CommandResult run_command(const std::vector<std::string>& argv, std::chrono::milliseconds timeout) {
  CommandResult result;
  if (argv.empty()) {
    result.error = "empty command";
    return result;
  }
  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) {
    result.error = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  Fd out_read{out_pipe[0]}, out_write{out_pipe[1]};
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) {
    result.error = std::string("pipe: ") + std::strerror(errno);
    return result;
  }
  Fd err_read{err_pipe[0]}, err_write{err_pipe[1]};

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&actions, out_write.fd, 1);
  posix_spawn_file_actions_adddup2(&actions, err_write.fd, 2);

  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  // Tool output is parsed, so it must not be translated.
  std::vector<std::string> env_text{"LC_ALL=C"};
  for (char** e = environ; e && *e; ++e) {
    if (std::strncmp(*e, "LC_ALL=", 7) != 0) env_text.emplace_back(*e);
  }
  std::vector<char*> env;
  for (auto& e : env_text) env.push_back(e.data());
  env.push_back(nullptr);

  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  out_write.reset();
  err_write.reset();
  if (rc != 0) {
    result.error = argv[0] + ": " + std::strerror(rc);
    return result;
  }
  result.started = true;

  const Deadline deadline(timeout);
  std::array<Fd*, 2> fds{&out_read, &err_read};
  std::array<std::string*, 2> sinks{&result.out, &result.err};
  while (out_read.fd >= 0 || err_read.fd >= 0) {
    if (deadline.expired()) {
      result.timed_out = true;
      ::kill(pid, SIGKILL);
      break;
    }
    std::array<pollfd, 2> polled{};
    for (std::size_t i = 0; i < 2; ++i) polled[i] = {fds[i]->fd, POLLIN, 0};
    const int n = ::poll(polled.data(), polled.size(), deadline.remaining_ms());
    if (n < 0 && errno != EINTR) break;
    for (std::size_t i = 0; i < 2; ++i) {
      if (fds[i]->fd < 0 || !(polled[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buffer[4096];
      const ssize_t got = ::read(fds[i]->fd, buffer, sizeof buffer);
      if (got > 0) sinks[i]->append(buffer, static_cast<std::size_t>(got));
      else if (got == 0 || errno != EINTR) fds[i]->reset();
    }
  }
  // A tool that closes its output and runs on (or hangs in the kernel) is waited for only until the
  // same deadline, then killed: closed pipes are not an exit.
  int status = 0;
  for (;;) {
    const pid_t got = ::waitpid(pid, &status, result.timed_out ? 0 : WNOHANG);
    if (got == pid || (got < 0 && errno != EINTR)) break;
    if (got == 0 && deadline.expired()) {
      result.timed_out = true;
      ::kill(pid, SIGKILL);
    } else if (got == 0) {
      ::poll(nullptr, 0, std::min(deadline.remaining_ms(), 10));
    }
  }
  if (WIFEXITED(status)) result.exit_code = WEXITSTATUS(status);
  return result;
}

std::string join_argv(const std::vector<std::string>& argv) {
  std::string line;
  for (const auto& a : argv) line += (line.empty() ? "" : " ") + a;
  return line;
}

ToolQuery dcb_pfc_query(const std::string& netdev) {
  return {{"dcb", "pfc", "show", "dev", netdev}, "dcb-pfc-" + netdev + ".txt"};
}
ToolQuery dcb_app_query(const std::string& netdev) {
  return {{"dcb", "-N", "app", "show", "dev", netdev, "dscp-prio"}, "dcb-app-" + netdev + ".txt"};
}
ToolQuery mlnx_qos_query(const std::string& netdev) { return {{"mlnx_qos", "-i", netdev}, "mlnx_qos-" + netdev + ".txt"}; }
ToolQuery ethtool_stats_query(const std::string& netdev) {
  return {{"ethtool", "-S", netdev}, "ethtool-S-" + netdev + ".txt"};
}
ToolQuery ethtool_pause_query(const std::string& netdev) {
  return {{"ethtool", "-a", netdev}, "ethtool-a-" + netdev + ".txt"};
}
ToolQuery lspci_query() { return {{"lspci", "-D", "-vvv"}, "lspci-vvv.txt"}; }
ToolQuery ibv_devinfo_query() { return {{"ibv_devinfo", "-v"}, "ibv_devinfo-v.txt"}; }
ToolQuery show_gids_query() { return {{"show_gids"}, "show_gids.txt"}; }

std::vector<ToolQuery> all_queries(const std::vector<std::string>& netdevs) {
  std::vector<ToolQuery> out;
  for (const auto& n : netdevs) {
    for (const auto& q : {dcb_pfc_query(n), dcb_app_query(n), mlnx_qos_query(n), ethtool_stats_query(n), ethtool_pause_query(n)}) {
      out.push_back(q);
    }
  }
  for (const auto& q : {lspci_query(), ibv_devinfo_query(), show_gids_query()}) out.push_back(q);
  return out;
}

std::optional<std::string> command_key(const std::vector<std::string>& argv_in) {
  std::vector<std::string> a = argv_in;
  if (!a.empty() && a.front() == "sudo") a.erase(a.begin());
  if (a.empty()) return std::nullopt;
  const std::string tool = std::filesystem::path(a.front()).filename().string();
  a.erase(a.begin());
  const auto is = [&](std::size_t i, std::initializer_list<const char*> names) {
    return i < a.size() && std::any_of(names.begin(), names.end(), [&](const char* n) { return a[i] == n; });
  };
  if (tool == "dcb") {
    // -s adds statistics lines and -N prints DSCP as numbers; the parsers read both spellings.
    std::size_t i = 0;
    while (is(i, {"-s", "--statistics", "-N", "--Numeric"})) ++i;
    if (!is(i + 1, {"show"}) || !is(i + 2, {"dev"}) || i + 3 >= a.size()) return std::nullopt;
    const std::string& dev = a[i + 3];
    const std::size_t rest = a.size() - (i + 4);
    if (is(i, {"pfc"}) && (rest == 0 || (rest == 1 && is(i + 4, {"prio-pfc"})))) return "dcb pfc show dev " + dev;
    if (is(i, {"app"}) && (rest == 0 || (rest == 1 && is(i + 4, {"dscp-prio"})))) return "dcb app show dev " + dev + " dscp-prio";
    return std::nullopt;
  }
  if (tool == "mlnx_qos" && a.size() == 2 && is(0, {"-i", "--interface"})) return "mlnx_qos -i " + a[1];
  if (tool == "ethtool" && a.size() == 2 && is(0, {"-S", "--statistics"})) return "ethtool -S " + a[1];
  if (tool == "ethtool" && a.size() == 2 && is(0, {"-a", "--show-pause"})) return "ethtool -a " + a[1];
  if (tool == "lspci") {
    // ACS control needs -vv or more; without -D the domain is 0000, which the parser assumes.
    std::size_t verbose = 0;
    for (const auto& flag : a) {
      if (flag.size() < 2 || flag[0] != '-' || flag.find_first_not_of("Dvn", 1) != std::string::npos) return std::nullopt;
      verbose += static_cast<std::size_t>(std::count(flag.begin(), flag.end(), 'v'));
    }
    return verbose >= 2 ? std::optional<std::string>("lspci -D -vvv") : std::nullopt;
  }
  if (tool == "ibv_devinfo" && a.size() == 1 && is(0, {"-v", "--verbose"})) return "ibv_devinfo -v";
  if (tool == "show_gids" && a.empty()) return "show_gids";
  return std::nullopt;
}

namespace {

// How much a spelling of a command prints: dcb's -s adds statistics and -N numeric DSCP values.
int detail_flags(const std::vector<std::string>& argv) {
  return static_cast<int>(std::count_if(argv.begin(), argv.end(), [](const std::string& a) {
    return a == "-s" || a == "--statistics" || a == "-N" || a == "--Numeric";
  }));
}

// A captured tool output: `lspci -vvv` of a large server is ~1 MB, `ethtool -S` a few KB.
constexpr InputLimits kCaptureLimits{"tool capture", 16 * kMiB, 1 * kMiB};
// COMMANDS.tsv: a line per captured command.
constexpr InputLimits kCommandsLimits{"capture list", 1 * kMiB, 64 * 1024};

}  // namespace

ToolSource ToolSource::live(std::chrono::milliseconds timeout) { return ToolSource(Mode::live, timeout, {}, {}); }
ToolSource ToolSource::captured(std::filesystem::path dir) {
  ToolSource source(Mode::captured, std::chrono::milliseconds(0), std::move(dir), {});
  const auto list = source.dir_ / kCommandsFile;
  std::error_code ec;
  if (!std::filesystem::exists(list, ec)) return source;
  LineReader lines(list, kCommandsLimits);
  source.has_commands_ = true;
  for (std::string_view text; lines.next(text);) {
    const int number = lines.number();
    std::string line(text);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos || line[0] == '#') continue;
    const std::string where = list.string() + ":" + std::to_string(number) + ": ";
    const auto tab = line.find('\t');
    if (tab == std::string::npos) throw InputError(where + "expected FILE<TAB>COMMAND, found no tab in '" + line + "'");
    const std::string file = line.substr(0, tab);
    std::istringstream words(line.substr(tab + 1));
    std::vector<std::string> argv;
    for (std::string w; words >> w;) argv.push_back(w);
    const std::filesystem::path rel(file);
    if (file.empty() || rel.is_absolute() || std::find(rel.begin(), rel.end(), "..") != rel.end()) {
      throw InputError(where + "FILE '" + file + "' must name a file in " + source.dir_.string());
    }
    if (argv.empty()) throw InputError(where + "no COMMAND after the tab for '" + file + "'");
    if (!std::filesystem::is_regular_file(source.dir_ / rel, ec)) {
      throw InputError(where + "FILE '" + file + "' is not in " + source.dir_.string());
    }
    const auto key = command_key(argv);
    if (!key) {
      source.ignored_.push_back(file + " (" + join_argv(argv) + ")");
      continue;
    }
    const Saved saved{file, join_argv(argv), number, detail_flags(argv)};
    const auto seen = source.by_key_.find(*key);
    if (seen == source.by_key_.end()) {
      source.by_key_.emplace(*key, saved);
      continue;
    }
    // Operators save a command in two spellings (`dcb pfc show` and `dcb -s pfc show`): the one with
    // more detail is read, the other is named as passed over (stderr). Two of one spelling are ambiguous.
    Saved& kept = seen->second;
    if (saved.detail == kept.detail) {
      throw InputError(where + "'" + *key + "' already has an output, on line " + std::to_string(kept.line) +
                       ", in the same spelling: keep one of them");
    }
    const Saved& poorer = saved.detail < kept.detail ? saved : kept;
    const Saved& richer = saved.detail < kept.detail ? kept : saved;
    source.passed_over_.push_back(fmt::format("{} ({}, line {}): line {} '{}' says more and was read", poorer.file, poorer.command,
                                              poorer.line, richer.line, richer.command));
    const int passed_over = poorer.line;
    kept = Saved(richer);
    kept.passed_over = passed_over;
  }
  return source;
}
ToolSource ToolSource::none(std::string why) { return ToolSource(Mode::none, std::chrono::milliseconds(0), {}, std::move(why)); }

ToolText ToolSource::get(const ToolQuery& query) const {
  ToolText t;
  switch (mode_) {
    case Mode::none:
      t.missing = join_argv(query.argv) + ": not run (" + why_ + ")";
      return t;
    case Mode::captured: {
      std::filesystem::path file = dir_ / query.capture_name;
      std::string which;  // the spelling read, where COMMANDS.tsv saved two
      if (has_commands_) {
        const std::string key = command_key(query.argv).value_or(join_argv(query.argv));
        const auto it = by_key_.find(key);
        if (it == by_key_.end()) {
          t.missing = "no output of '" + key + "' in " + (dir_ / kCommandsFile).string();
          return t;
        }
        file = dir_ / it->second.file;
        if (it->second.passed_over) {
          which = fmt::format(" ('{}', line {}, read rather than line {})", it->second.command, it->second.line, it->second.passed_over);
        }
      }
      t.source = file.string() + which;
      std::error_code ec;
      if (!std::filesystem::exists(file, ec)) {
        t.missing = "no capture " + file.string();
        return t;
      }
      t.text = read_input(file, kCaptureLimits);  // one that is there but not a file, or too large, is bad input
      return t;
    }
    case Mode::live: {
      t.source = join_argv(query.argv);
      const auto r = run_command(query.argv, timeout_);
      if (!r.started) t.missing = r.error;
      else if (r.timed_out) t.missing = t.source + ": no answer within " + std::to_string(timeout_.count()) + " ms";
      else if (r.exit_code != 0) {
        const std::string first_line = r.err.substr(0, r.err.find('\n'));
        t.missing = t.source + ": exit " + std::to_string(r.exit_code) + (first_line.empty() ? "" : " (" + first_line + ")");
      } else {
        t.text = r.out;
      }
      return t;
    }
  }
  return t;
}

}  // namespace rocebench::netcheck

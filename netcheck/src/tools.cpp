#include "rocebench/netcheck/tools.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <iterator>

#include "rocebench/common/clock.hpp"

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
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
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
ToolQuery lspci_query() { return {{"lspci", "-D", "-vvv"}, "lspci-vvv.txt"}; }

ToolSource ToolSource::live(std::chrono::milliseconds timeout) { return ToolSource(Mode::live, timeout, {}, {}); }
ToolSource ToolSource::captured(std::filesystem::path dir) {
  return ToolSource(Mode::captured, std::chrono::milliseconds(0), std::move(dir), {});
}
ToolSource ToolSource::none(std::string why) { return ToolSource(Mode::none, std::chrono::milliseconds(0), {}, std::move(why)); }

ToolText ToolSource::get(const ToolQuery& query) const {
  ToolText t;
  switch (mode_) {
    case Mode::none:
      t.missing = join_argv(query.argv) + ": not run (" + why_ + ")";
      return t;
    case Mode::captured: {
      const auto file = dir_ / query.capture_name;
      t.source = file.string();
      std::ifstream in(file, std::ios::binary);
      if (!in) {
        t.missing = "no capture " + file.string();
        return t;
      }
      t.text = std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
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

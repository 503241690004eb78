#include "rocebench/microbench/counters.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <regex>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "rocebench/common/clock.hpp"
#include "rocebench/common/host_fs.hpp"

extern char** environ;

namespace rocebench::microbench {

namespace {

// stdout of a program run from an argv vector, given up after `budget`; empty on any failure.
std::string capture(const std::vector<std::string>& argv, std::chrono::milliseconds budget) {
  int pipe_fds[2];
  if (::pipe2(pipe_fds, O_CLOEXEC) != 0) return {};
  posix_spawn_file_actions_t actions;
  ::posix_spawn_file_actions_init(&actions);
  ::posix_spawn_file_actions_adddup2(&actions, pipe_fds[1], 1);
  ::posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  std::vector<char*> args;
  std::vector<std::string> copy = argv;
  for (auto& a : copy) args.push_back(a.data());
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  ::posix_spawn_file_actions_destroy(&actions);
  ::close(pipe_fds[1]);
  std::string out;
  if (rc == 0) {
    const Deadline deadline(budget);
    char buf[4096];
    while (true) {
      pollfd p{pipe_fds[0], POLLIN, 0};
      if (::poll(&p, 1, deadline.remaining_ms()) <= 0) {
        ::kill(pid, SIGKILL);
        out.clear();
        break;
      }
      const ssize_t n = ::read(pipe_fds[0], buf, sizeof buf);
      if (n <= 0) break;
      out.append(buf, static_cast<std::size_t>(n));
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
  }
  ::close(pipe_fds[0]);
  return out;
}

void read_dir(const HostFs& host, const std::string& dir, CounterSnapshot& into) {
  for (const auto& name : host.list(dir)) {
    if (const auto value = host.read_int(dir + "/" + name); value && *value >= 0) into[name] = static_cast<std::uint64_t>(*value);
  }
}

}  // namespace

CounterSnapshot parse_ethtool_pause(const std::string& text) {
  static const std::regex line(R"(^\s*((rx|tx)_prio[0-7]_pause):\s*([0-9]+)\s*$)");
  CounterSnapshot out;
  std::istringstream in(text);
  std::string l;
  std::smatch m;
  while (std::getline(in, l)) {
    if (std::regex_match(l, m, line)) out[m[1]] = std::stoull(m[3]);
  }
  return out;
}

CounterSnapshot read_counters(const std::string& root, const std::string& device, int port) {
  CounterSnapshot out;
  if (device.empty()) return out;
  const HostFs host(root);
  const std::string dir = fmt::format("/sys/class/infiniband/{}/ports/{}", device, port);
  read_dir(host, dir + "/counters", out);
  read_dir(host, dir + "/hw_counters", out);
  if (root == "/") {
    if (const auto netdev = host.read(dir + "/gid_attrs/ndevs/0"); netdev && !netdev->empty()) {
      for (const auto& [k, v] : parse_ethtool_pause(capture({"ethtool", "-S", *netdev}, std::chrono::seconds(2)))) out[k] = v;
    }
  }
  return out;
}

nlohmann::json counter_deltas(const CounterSnapshot& before, const CounterSnapshot& after) {
  nlohmann::json out = nlohmann::json::object();
  for (const auto& [name, value] : after) {
    const auto it = before.find(name);
    if (it != before.end() && value >= it->second) out["nic_" + name] = value - it->second;
  }
  return out;
}

}  // namespace rocebench::microbench

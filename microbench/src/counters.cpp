#include "rocebench/microbench/counters.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cctype>
#include <charconv>
#include <sstream>
#include <vector>

#include <fmt/format.h>

#include "rocebench/common/clock.hpp"
#include "rocebench/common/errors.hpp"
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

}  // namespace

CounterSnapshot read_counters(const std::string& root, const std::string& device, int port,
                              const std::string& ethtool_capture) {
  CounterSnapshot out;
  if (device.empty()) return out;
  const HostFs host(root);
  out.driver = rdma_driver(host, device);
  out.raw = read_port_counters(host, device, port);
  const auto netdev = host.read(fmt::format("/sys/class/infiniband/{}/ports/{}/gid_attrs/ndevs/0", device, port));
  if (!netdev || netdev->empty()) return out;
  out.netdev = *netdev;
  std::string text;
  if (!ethtool_capture.empty()) {
    text = HostFs(ethtool_capture).read_all("/ethtool-S-" + *netdev + ".txt").value_or("");
  } else if (root == "/") {
    text = capture({"ethtool", "-S", *netdev}, std::chrono::seconds(2));
  }
  out.raw.merge(parse_ethtool_counters(text));
  return out;
}

nlohmann::json counter_deltas(const CounterSnapshot& before, const CounterSnapshot& after) {
  const MappedCounters was = map_counters(before.driver.name, before.raw);
  const MappedCounters now = map_counters(after.driver.name, after.raw);
  nlohmann::json out = nlohmann::json::object();
  nlohmann::json sources = nlohmann::json::object();
  nlohmann::json reset = nlohmann::json::array();
  // One rule for both kinds: a counter read twice from one source gives its delta, or is named as reset
  // (a driver reload, or a wrap: neither leaves a delta to trust).
  const auto delta = [&](const std::string& metric, const std::string& source, std::uint64_t from, std::uint64_t to) {
    if (to < from) {
      reset.push_back(source);
    } else {
      out["nic_" + metric] = to - from;
    }
  };
  for (const auto& [name, v] : now.shared) {
    const auto it = was.shared.find(name);
    if (it == was.shared.end() || it->second.source != v.source) continue;
    sources[name] = v.source;
    delta(name, v.source, it->second.value, v.value);
  }
  for (const auto& [source, value] : now.unmapped) {
    const auto it = was.unmapped.find(source);
    const std::string name = source.substr(source.find('/') + 1);
    if (it == was.unmapped.end() || now.shared.count(name)) continue;
    delta(name, source, it->second, value);
  }
  // Beside the samples, not in params: params name a series, and these do not (they can also outgrow
  // the 1 KB a params value may hold).
  nlohmann::json& notes = out["samples"];
  notes["nic_driver"] = {{"name", after.driver.name.empty() ? "unknown" : after.driver.name},
                         {"found_by", after.driver.found_by}};
  if (!after.netdev.empty()) notes["nic_driver"]["netdev"] = after.netdev;
  if (!sources.empty()) notes["counter_sources"] = sources;
  if (!reset.empty()) notes["counters_reset"] = reset;
  if (!now.unavailable.empty()) notes["counters_unavailable"] = now.unavailable;
  return out;
}

const std::vector<std::string>& tcp_counter_names() {
  static const std::vector<std::string> names = {
      "tcp_RetransSegs",          "tcp_InErrs",              "tcp_OutRsts",               "tcp_InSegs",
      "tcp_OutSegs",              "tcpext_TCPLostRetransmit", "tcpext_TCPTimeouts",       "tcpext_TCPFastRetrans",
      "tcpext_TCPSlowStartRetrans", "tcpext_TCPLossProbes",   "tcpext_TCPLossProbeRecovery", "tcpext_TCPSpuriousRTOs",
      "tcpext_TCPRetransFail",    "tcpext_TCPSynRetrans",     "tcpext_TCPOFOQueue",       "tcpext_TCPOFODrop",
      "tcpext_TCPBacklogDrop",    "tcpext_TCPRcvQDrop",       "tcpext_ListenOverflows",   "tcpext_ListenDrops",
      "tcpext_TCPDelivered",      "tcpext_TCPDeliveredCE",    "ipext_InNoECTPkts",        "ipext_InECT0Pkts",
      "ipext_InECT1Pkts",         "ipext_InCEPkts"};
  return names;
}

void parse_proc_net_counters(const std::string& file, const std::string& text, TcpCounterSnapshot& into) {
  std::istringstream lines(text);
  std::string line;
  int number = 0;
  std::string table;
  std::vector<std::string> names;
  int names_line = 0;
  auto words_of = [](const std::string& rest) {
    std::vector<std::string> out;
    std::istringstream in(rest);
    for (std::string w; in >> w;) out.push_back(w);
    return out;
  };
  while (std::getline(lines, line)) {
    ++number;
    if (line.empty()) continue;
    const auto colon = line.find(':');
    if (colon == std::string::npos || colon == 0) {
      throw InputError(file, number, "", fmt::format("expected 'Table: ...', got '{}'", printable_excerpt(line)));
    }
    const std::string name = line.substr(0, colon);
    const std::vector<std::string> words = words_of(line.substr(colon + 1));
    if (table != name) {  // the names line of a table; its values line comes next
      if (!table.empty()) throw InputError(file, names_line, table, "names without their values line");
      table = name;
      names = words;
      names_line = number;
      continue;
    }
    if (words.size() != names.size()) {
      throw InputError(file, number, table,
                       fmt::format("{} values for the {} names of line {}", words.size(), names.size(), names_line));
    }
    table.clear();
    if (name != "Tcp" && name != "TcpExt" && name != "IpExt") continue;
    std::string prefix = name;
    for (char& c : prefix) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    for (std::size_t i = 0; i < words.size(); ++i) {
      const char* end = words[i].data() + words[i].size();
      std::uint64_t v = 0;
      std::int64_t setting = 0;
      if (std::from_chars(words[i].data(), end, v).ptr == end) {
        into.values[prefix + "_" + names[i]] = v;
      } else if (std::from_chars(words[i].data(), end, setting).ptr != end || setting >= 0) {
        throw InputError(file, number, names[i], fmt::format("'{}' is not a counter value", printable_excerpt(words[i])));
      }  // else below zero: a setting, not a counter (Tcp's MaxConn is -1, "no limit")
    }
  }
  if (!table.empty()) throw InputError(file, names_line, table, "names without their values line");
}

TcpCounterSnapshot read_tcp_counters(const HostFs& host) {
  TcpCounterSnapshot out;
  for (const char* file : {"/proc/net/snmp", "/proc/net/netstat"}) {
    if (const auto text = host.read_all(file)) parse_proc_net_counters(host.at(file).string(), *text, out);
  }
  return out;
}

nlohmann::json tcp_counter_deltas(const TcpCounterSnapshot& before, const TcpCounterSnapshot& after) {
  nlohmann::json out = nlohmann::json::object();
  nlohmann::json reset = nlohmann::json::array(), unavailable = nlohmann::json::array();
  for (const std::string& name : tcp_counter_names()) {
    const auto was = before.values.find(name), now = after.values.find(name);
    if (was == before.values.end() || now == after.values.end()) {
      unavailable.push_back(name);
    } else if (now->second < was->second) {
      reset.push_back(name);  // a wrap: no delta to trust
    } else {
      out[name] = now->second - was->second;
    }
  }
  nlohmann::json& notes = out["samples"];
  notes = nlohmann::json::object();
  if (!reset.empty()) notes["counters_reset"] = reset;
  if (!unavailable.empty()) notes["counters_unavailable"] = unavailable;
  return out;
}

}  // namespace rocebench::microbench

#include "agent.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <list>
#include <mutex>
#include <optional>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rocebench/common/base64.hpp"
#include "rocebench/common/bounded_read.hpp"
#include "rocebench/common/cli.hpp"
#include "rocebench/common/errors.hpp"
#include "commands.hpp"
#include "rocebench/transport/tcp/socket.hpp"
#include "wire.hpp"

namespace rocebench {

namespace {

using Clock = std::chrono::steady_clock;

constexpr auto kRequestWait = std::chrono::seconds(10);  // from connect to the whole request
constexpr auto kSendWait = std::chrono::seconds(10);     // a peer that reads nothing for this long is lost
constexpr auto kConnectWait = std::chrono::seconds(30);  // agents start beside the launcher, maybe later
constexpr auto kKeepAlive = std::chrono::seconds(1);
constexpr auto kDrainWait = std::chrono::seconds(2);  // the child's last output, once it has ended

// Compares in time that does not depend on where the first difference lies.
bool same_token(const std::string& a, const std::string& b) {
  unsigned char diff = a.size() == b.size() ? 0 : 1;
  for (std::size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
    diff |= static_cast<unsigned char>((i < a.size() ? a[i] : 0) ^ (i < b.size() ? b[i] : 0));
  }
  return diff == 0;
}

bool valid_env_name(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  return name.find_first_not_of("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_") == std::string::npos;
}

// argv and env of a start request, or why it is not one.
std::string read_request(const json& request, std::vector<std::string>& argv, std::map<std::string, std::string>& env) {
  const json& a = request.contains("argv") ? request.at("argv") : json();
  if (!a.is_array() || a.empty()) return "argv is not a non-empty list";
  for (const auto& word : a) {
    if (!word.is_string() || word.get_ref<const std::string&>().find('\0') != std::string::npos) return "argv holds a non-string";
    argv.push_back(word.get<std::string>());
  }
  const json& e = request.contains("env") ? request.at("env") : json::object();
  if (!e.is_object()) return "env is not an object";
  for (const auto& [name, value] : e.items()) {
    if (!valid_env_name(name)) return fmt::format("env name '{}' is not a variable name", printable_excerpt(name));
    if (!value.is_string() || value.get_ref<const std::string&>().find('\0') != std::string::npos) {
      return fmt::format("env {} is not a string", name);
    }
    env[name] = value.get<std::string>();
  }
  return "";
}

// The child has ended (a zombie, not yet reaped: its pid and group cannot be reused meanwhile).
bool has_ended(pid_t pid) {
  siginfo_t info{};
  return ::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid;
}

void write_all(int fd, const std::string& data) {
  for (std::size_t done = 0; done < data.size();) {
    const ssize_t w = ::write(fd, data.data() + done, data.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // nobody reads our output any more: the child's status still matters
    done += static_cast<std::size_t>(w);
  }
}

struct Fd {
  int fd = -1;
  Fd() = default;
  explicit Fd(int f) : fd(f) {}
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  ~Fd() { reset(); }
  void reset() {
    if (fd >= 0) ::close(fd);
    fd = -1;
  }
};

// Ends a connection so that all that was sent arrives. A socket closed with unread input (the relay's
// keep-alives, which go on until the exit status comes) is reset, and a reset drops what was still on
// its way: so the agent says it has finished (FIN), then reads until the relay closes its end.
void finish_sending(int fd, std::chrono::milliseconds wait) {
  ::shutdown(fd, SHUT_WR);
  const Deadline until(wait);
  for (std::string unread; !until.expired(); unread.clear()) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, until.remaining_ms()) <= 0 || !wire::read_available(fd, unread)) return;
  }
}

// ---- the carried folder (the relay's --carry) ------------------------------------------------------
// A folder that travels with a command: its files go out in the start request into a folder of the
// agent's own, and what the command leaves there comes back file by file before the exit status.

namespace fs = std::filesystem;

constexpr std::uintmax_t kCarryOutMax = 16u << 20;  // what a launcher puts there: a plan, a hosts file
constexpr std::size_t kCarryPart = 1u << 20;         // bytes per message on the way back

// A file's path inside the carried folder as the wire gives it: relative and within the folder.
bool inside_folder(const std::string& rel) {
  if (rel.empty() || rel.front() == '/' || rel.find('\0') != std::string::npos) return false;
  for (const auto& part : fs::path(rel)) {
    if (part == ".." || part == "." || part.empty()) return false;
  }
  return true;
}

// Every regular file under `dir` (recursively) by its path relative to it, at most `max_bytes` in all.
std::map<std::string, std::string> read_folder(const fs::path& dir, std::uintmax_t max_bytes) {
  std::map<std::string, std::string> files;
  std::uintmax_t total = 0;
  for (const auto& entry : fs::recursive_directory_iterator(dir)) {
    if (!entry.is_regular_file()) continue;
    total += entry.file_size();
    if (total > max_bytes) {
      throw InputError(dir.string(), 0, "", fmt::format("the folder to carry holds more than {} MiB", max_bytes >> 20));
    }
    std::ifstream in(entry.path(), std::ios::binary);
    files[fs::relative(entry.path(), dir).string()] = std::string(std::istreambuf_iterator<char>(in), {});
    if (!in.good() && !in.eof()) throw InfraError("cannot read " + entry.path().string());
  }
  return files;
}

// A word of argv that names the launcher's folder `there` (or a path under it) names `here` instead.
std::string carried_word(const std::string& word, const std::string& there, const std::string& here) {
  if (word == there) return here;
  if (word.starts_with(there + "/")) return here + word.substr(there.size());
  return word;
}

// The relay's side of a file coming back: part 0 starts it, later parts append.
void receive_carried(const fs::path& folder, const json& m) {
  const std::string rel = m.at("carried").get<std::string>();
  if (!inside_folder(rel)) throw InfraError(fmt::format("a carried file's path '{}' is not inside the folder", printable_excerpt(rel)));
  const auto data = base64_decode(m.at("data").get<std::string>());
  if (!data) throw InfraError(fmt::format("the carried file {} came as something else than base64", rel));
  const fs::path file = folder / rel;
  fs::create_directories(file.parent_path());
  std::ofstream out(file, std::ios::binary | (m.value("part", 0) == 0 ? std::ios::trunc : std::ios::app));
  out << *data;
  if (!out.good()) throw InfraError("cannot write the carried file " + file.string());
}

// The agent's copy of a carried folder.
struct CarriedFolder {
  fs::path here;                             // the agent's folder
  std::map<std::string, std::string> sent;  // what came, so that only what the command changed goes back
};

// Makes the agent's folder from a request's "carry" ({"dir": the launcher's path, "files": {path: base64}})
// and points argv's words that name the launcher's folder at it; "" or why not (nothing left behind).
std::string unpack_carry(const json& carry, std::vector<std::string>& argv, CarriedFolder& out) {
  if (!carry.is_object() || !carry.contains("dir") || !carry.at("dir").is_string() || !carry.contains("files") ||
      !carry.at("files").is_object()) {
    return "carry is not {\"dir\", \"files\"}";
  }
  std::string pattern = (fs::temp_directory_path() / "rocebench-carried-XXXXXX").string();
  if (::mkdtemp(pattern.data()) == nullptr) return std::string("cannot make a folder to carry into: ") + std::strerror(errno);
  out.here = pattern;
  for (const auto& [rel, data] : carry.at("files").items()) {
    const auto bytes = data.is_string() ? base64_decode(data.get<std::string>()) : std::nullopt;
    std::string why = !inside_folder(rel) ? fmt::format("carried file '{}' is not inside the folder", printable_excerpt(rel))
                      : !bytes          ? fmt::format("carried file '{}' is not base64", printable_excerpt(rel))
                                        : "";
    if (why.empty()) {
      fs::create_directories((out.here / rel).parent_path());
      std::ofstream file(out.here / rel, std::ios::binary | std::ios::trunc);
      file << *bytes;
      if (!file.good()) why = "cannot write the carried file " + (out.here / rel).string();
    }
    if (!why.empty()) {
      std::error_code ignored;
      fs::remove_all(out.here, ignored);
      return why;
    }
    out.sent[rel] = *bytes;
  }
  const std::string there = carry.at("dir").get<std::string>();
  for (auto& word : argv) word = carried_word(word, there, out.here.string());
  return "";
}

// Sends back, before the exit status, what the command left in the folder that it changed or made.
void send_back(int fd, const CarriedFolder& c) {
  static constexpr std::uintmax_t kBackMax = 4ull << 30;
  for (const auto& [rel, content] : read_folder(c.here, kBackMax)) {
    if (const auto it = c.sent.find(rel); it != c.sent.end() && it->second == content) continue;
    std::size_t part = 0;
    for (std::size_t off = 0; off == 0 || off < content.size(); off += kCarryPart, ++part) {
      const json m = {{"carried", rel}, {"part", part}, {"data", base64_encode(std::string_view(content).substr(off, kCarryPart))}};
      wire::send(fd, m, Deadline(kSendWait));
    }
  }
}

}  // namespace

std::string agent_token(const std::string& token_file) {
  std::string token;
  if (!token_file.empty()) {
    static constexpr InputLimits kTokenFile{"agent token file", 64 * 1024, 4096};
    token = read_input(token_file, kTokenFile);
    token = token.substr(0, token.find('\n'));
    while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
    if (token.empty()) throw InputError(token_file, 1, "", "the agent token file's first line is empty");
    return token;
  }
  const char* from_env = std::getenv("ROCEBENCH_AGENT_TOKEN");
  if (from_env == nullptr || *from_env == '\0') {
    throw InputError(
        "ROCEBENCH_AGENT_TOKEN is not set: agents and the launcher share one secret (e.g. export "
        "ROCEBENCH_AGENT_TOKEN=$(od -An -tx1 -N16 /dev/urandom | tr -d ' \\n') on every host, or give the agent "
        "--token-file FILE)");
  }
  return from_env;
}

RendezvousAddress parse_agent_address(const std::string& flag, const std::string& text) {
  const auto colon = text.rfind(':');
  RendezvousAddress a;
  if (colon != std::string::npos && colon > 0) {
    a.host = text.substr(0, colon);
    if (a.host.size() > 2 && a.host.front() == '[' && a.host.back() == ']') a.host = a.host.substr(1, a.host.size() - 2);
    try {
      std::size_t used = 0;
      const std::string port = text.substr(colon + 1);
      a.port = std::stoi(port, &used);
      if (used != port.size()) a.port = -1;
    } catch (const std::exception&) {
      a.port = -1;
    }
  }
  if (a.host.empty() || a.port < 0 || a.port > 65535) {
    throw UsageError(fmt::format("{}: '{}' is not ADDRESS:PORT (a port 0..65535)", flag, printable_excerpt(text)));
  }
  return a;
}

std::vector<std::string> agent_relay_argv(const std::string& self, const EmulatedHost& host,
                                          const std::vector<std::string>& env_names, const std::vector<std::string>& argv,
                                          const std::string& carry) {
  const bool v6 = host.address.find(':') != std::string::npos;
  std::vector<std::string> out{self, "agent", "--run",
                               fmt::format("{}{}{}:{}", v6 ? "[" : "", host.address, v6 ? "]" : "", host.agent_port)};
  for (const auto& name : env_names) out.insert(out.end(), {"--env", name});
  if (!carry.empty()) out.insert(out.end(), {"--carry", carry});
  out.push_back("--");
  out.insert(out.end(), argv.begin(), argv.end());
  return out;
}

// ---- the agent ---------------------------------------------------------------------------------

struct Agent::Session {
  int fd = -1;
  std::thread thread;
  std::atomic<bool> done{false};
};

Agent::Agent(const std::string& address, int port, std::string token, Log log)
    : token_(std::move(token)), log_(std::move(log)) {
  listen_fd_ = tcp::listen_on(address, port);
  port_ = tcp::local_port(listen_fd_);
}

Agent::~Agent() {
  if (listen_fd_ >= 0) ::close(listen_fd_);
}

void Agent::serve(const std::function<bool()>& stop) {
  std::list<Session> sessions;
  auto reap = [&sessions](bool all) {
    for (auto it = sessions.begin(); it != sessions.end();) {
      if (all || it->done) {
        it->thread.join();
        it = sessions.erase(it);
      } else {
        ++it;
      }
    }
  };
  while (!stop()) {
    pollfd p{listen_fd_, POLLIN, 0};
    const int ready = ::poll(&p, 1, 100);
    reap(false);
    if (ready <= 0) continue;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    Session& s = sessions.emplace_back();
    s.fd = fd;
    s.thread = std::thread([this, &s] {
      try {
        run_session(s);
      } catch (const std::exception& e) {
        log_(std::string("internal error in a session: ") + e.what());
      }
      s.done = true;
    });
  }
  // Every session stops its child (SIGTERM, then SIGKILL) and ends.
  stopping_ = true;
  reap(true);
}

void Agent::run_session(Session& s) {
  const Fd connection(s.fd);
  const int fd = s.fd;
  const std::string peer = tcp::peer_name(fd);
  auto refuse = [&](const std::string& why) {
    log_(fmt::format("{}: refused: {}; nothing ran", peer, why));
    try {
      wire::send(fd, {{"ok", false}, {"error", why}}, Deadline(kSendWait));
    } catch (const std::exception&) {
    }
  };
  std::vector<std::string> argv;
  std::map<std::string, std::string> env;
  json carry;
  try {
    const json request = wire::receive(fd, Deadline(kRequestWait));
    if (!request.is_object() || request.value("op", "") != "start") return refuse("the first message was not a start request");
    const json& token = request.contains("token") ? request.at("token") : json();
    if (!token.is_string() || !same_token(token.get<std::string>(), token_)) return refuse("wrong or missing agent token");
    if (const std::string why = read_request(request, argv, env); !why.empty()) return refuse(why);
    if (request.contains("carry")) carry = request.at("carry");
  } catch (const json::exception& e) {
    return refuse(std::string("malformed request: ") + e.what());
  } catch (const std::exception& e) {
    log_(fmt::format("{}: no request: {}", peer, e.what()));
    return;
  }

  int out_pipe[2], err_pipe[2];
  if (::pipe2(out_pipe, O_CLOEXEC) != 0) return refuse(std::string("cannot make a pipe: ") + std::strerror(errno));
  Fd out_r(out_pipe[0]), out_w(out_pipe[1]);
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) return refuse(std::string("cannot make a pipe: ") + std::strerror(errno));
  Fd err_r(err_pipe[0]), err_w(err_pipe[1]);
  Fd null_in(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const std::string rank = env.count("RANK") ? " (rank " + env.at("RANK") + ")" : "";
  std::optional<CarriedFolder> carried;
  if (!carry.is_null()) {
    if (const std::string why = unpack_carry(carry, argv, carried.emplace()); !why.empty()) return refuse(why);
  }
  Child child;
  try {
    child = spawn(argv, env, nullptr, -1, {.stdin_fd = null_in.fd, .stdout_fd = out_w.fd, .stderr_fd = err_w.fd, .own_process_group = true});
  } catch (const std::exception& e) {
    if (carried) fs::remove_all(carried->here);
    return refuse(std::string("cannot start: ") + e.what());
  }
  out_w.reset();  // the child's copies are the only writers: their end is our end of file
  err_w.reset();
  null_in.reset();
  log_(fmt::format("{}: started pid {}{}: {}", peer, child.pid, rank, fmt::join(argv, " ")));

  // Sends the child's output as it comes; false once both pipes have closed.
  Fd* streams[2] = {&out_r, &err_r};
  const char* names[2] = {"stdout", "stderr"};
  auto pump = [&](int timeout_ms, bool* heard) {
    // Draining (heard == nullptr), only the pipes: keep-alives still arriving would wake poll at once.
    pollfd p[3] = {{heard ? fd : -1, POLLIN, 0}, {out_r.fd, POLLIN, 0}, {err_r.fd, POLLIN, 0}};
    ::poll(p, 3, timeout_ms);
    for (int i = 0; i < 2; ++i) {
      if (streams[i]->fd < 0 || !(p[i + 1].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      char buffer[65536];
      const ssize_t n = ::read(streams[i]->fd, buffer, sizeof buffer);
      if (n > 0) wire::send(fd, {{names[i], std::string(buffer, static_cast<std::size_t>(n))}}, Deadline(kSendWait));
      else if (n == 0 || errno != EINTR) streams[i]->reset();
    }
    if (heard && (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
      std::string inbox;
      if (!wire::read_available(fd, inbox)) throw InfraError("the launcher's side closed the connection");
      *heard = true;  // keep-alives: nothing else comes after the request
    }
  };

  std::string lost;  // why the connection counts as lost, or empty
  auto last_heard = Clock::now(), last_sent = Clock::now();
  try {
    wire::send(fd, {{"ok", true}, {"pid", child.pid}}, Deadline(kSendWait));
    while (!has_ended(child.pid) && !stopping_) {
      bool heard = false;
      pump(100, &heard);
      const auto now = Clock::now();
      if (heard) last_heard = now;
      if (now - last_heard > kAgentSilence) throw InfraError(fmt::format("the launcher's side said nothing for {} s", kAgentSilence.count()));
      if (now - last_sent > kKeepAlive) {
        wire::send(fd, {{"alive", true}}, Deadline(kSendWait));
        last_sent = now;
      }
    }
  } catch (const std::exception& e) {
    lost = e.what();
  }

  const pid_t pgid = child.pid;  // it leads its group
  const bool stopped = !lost.empty() || (stopping_ && !has_ended(child.pid));
  if (stopped) {
    ::killpg(pgid, SIGTERM);
    const auto give_up = Clock::now() + kAgentKillGrace;
    while (!has_ended(child.pid) && Clock::now() < give_up) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  // Whatever the child started and left behind goes with it (before the reap, while the group's id is
  // still its own).
  ::killpg(pgid, SIGKILL);
  int status = 0;
  while (::waitpid(child.pid, &status, 0) < 0 && errno == EINTR) {
  }
  const std::string ended = ChildExit{.child = child, .status = status}.describe();
  // What the child wrote in a carried folder that could not go back stays here, said where.
  const std::string kept = carried ? fmt::format("; its carried folder is kept at {}", carried->here.string()) : "";
  if (!lost.empty()) {
    log_(fmt::format("{}: connection lost ({}): stopped pid {}{}: {}{}", peer, lost, child.pid, rank, ended, kept));
    return;
  }
  log_(fmt::format("{}: pid {}{} ended: {}{}", peer, child.pid, rank, ended, stopped ? " (the agent is stopping)" : ""));
  try {
    const auto drain_until = Clock::now() + kDrainWait;
    while ((out_r.fd >= 0 || err_r.fd >= 0) && Clock::now() < drain_until) pump(50, nullptr);
    if (carried) {
      send_back(fd, *carried);
      fs::remove_all(carried->here);
      carried.reset();
    }
    json last = {{"exit", ended}};
    if (WIFEXITED(status)) last["exit_code"] = WEXITSTATUS(status);
    else if (WIFSIGNALED(status)) last["signal"] = WTERMSIG(status);
    if (stopped) last["stopped"] = "the agent was stopped";
    wire::send(fd, last, Deadline(kSendWait));
    finish_sending(fd, stopping_ ? kDrainWait : kSendWait);  // a stopping agent waits on nobody for long
  } catch (const std::exception& e) {
    log_(fmt::format("{}: the exit status of pid {} could not be sent: {}{}", peer, child.pid, e.what(),
                     carried ? fmt::format("; its carried folder is kept at {}", carried->here.string()) : ""));
  }
}

// ---- the relay ---------------------------------------------------------------------------------

int run_through_agent(const RendezvousAddress& agent, const std::string& token, const std::vector<std::string>& argv,
                      const std::map<std::string, std::string>& env, int out_fd, int err_fd, const std::string& carry) {
  const std::string where = fmt::format("{}:{}", agent.host, agent.port);
  json request = {{"op", "start"}, {"token", token}, {"argv", argv}, {"env", env}};
  if (!carry.empty()) {
    std::error_code ec;
    if (!fs::is_directory(carry, ec)) throw InputError(carry, 0, "--carry", "not a folder to carry");
    json files = json::object();
    for (const auto& [rel, content] : read_folder(carry, kCarryOutMax)) files[rel] = base64_encode(content);
    request["carry"] = {{"dir", carry}, {"files", files}};
  }
  Fd connection;
  try {
    connection.fd = tcp::connect_to(agent.host, agent.port, Deadline(kConnectWait));
  } catch (const InfraError& e) {
    throw InfraError(fmt::format("cannot reach the agent at {}: {}", where, e.what()));
  }
  const int fd = connection.fd;
  try {
    wire::send(fd, request, Deadline(kSendWait));
    const json reply = wire::receive(fd, Deadline(kAgentSilence));
    if (!reply.value("ok", false)) {
      throw InputError(fmt::format("the agent at {} refused to start {}: {}", where, argv.front(), reply.value("error", "no reason given")));
    }
    std::string inbox;
    auto last_heard = Clock::now(), last_sent = Clock::now();
    while (true) {
      pollfd p{fd, POLLIN, 0};
      ::poll(&p, 1, 200);
      const auto now = Clock::now();
      if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
        const bool open = wire::read_available(fd, inbox);
        for (json m; wire::pop_message(inbox, m);) {
          last_heard = now;
          if (m.contains("stdout")) write_all(out_fd, m.at("stdout").get<std::string>());
          if (m.contains("stderr")) write_all(err_fd, m.at("stderr").get<std::string>());
          if (m.contains("carried")) {
            if (carry.empty()) throw InfraError("the agent sent a carried file, and no folder was carried");
            receive_carried(carry, m);
          }
          if (m.contains("exit")) {
            if (m.contains("stopped")) write_all(err_fd, fmt::format("rocebench agent --run: {} at {}\n", m.at("stopped").get<std::string>(), where));
            if (m.contains("signal")) return W_EXITCODE(0, m.at("signal").get<int>() & 0x7f);
            return W_EXITCODE(m.value("exit_code", static_cast<int>(kExitInfra)) & 0xff, 0);
          }
        }
        if (!open) throw InfraError("the connection closed before the child's exit status came");
      }
      if (now - last_heard > kAgentSilence) throw InfraError(fmt::format("nothing came for {} s", kAgentSilence.count()));
      if (now - last_sent > kKeepAlive) {
        wire::send(fd, {{"alive", true}}, Deadline(kSendWait));
        last_sent = now;
      }
    }
  } catch (const json::exception& e) {
    throw InfraError(fmt::format("the agent at {} sent a malformed message: {}", where, e.what()));
  } catch (const InfraError& e) {
    throw InfraError(fmt::format("lost the agent at {}: {}", where, e.what()));
  }
}

namespace {

// Ends the relay as its remote child ended: with its exit code, or by its signal, so that the
// launcher reads the same status as for a local rank.
int end_as(int status) {
  if (WIFSIGNALED(status)) {
    const rlimit no_core{0, 0};
    ::setrlimit(RLIMIT_CORE, &no_core);  // the child dumped its own core, if any
    ::signal(WTERMSIG(status), SIG_DFL);
    ::raise(WTERMSIG(status));
    return 128 + WTERMSIG(status);
  }
  return WEXITSTATUS(status);
}

}  // namespace

int agent_main(const std::vector<std::string>& args) {
  std::string listen, run, token_file;
  std::string carry;
  std::vector<std::string> env_names, command;
  ArgParser p("rocebench agent",
              "Starts ranks on this host for a launcher on another: each connection carries one request (the\n"
              "agent token, argv, the variables to add); the child runs in a process group of its own, its stdout\n"
              "and stderr and then its exit status go back over the connection, and when the connection drops\n"
              "the group is stopped (SIGTERM, SIGKILL after 5 s). SIGTERM stops the agent and every child.\n"
              "A launcher uses it for the hosts of a --netns hosts file with 'agent=PORT' after the address;\n"
              "its rank 0 carries the results folder (--carry), so that host need not see the launcher's files.\n"
              "The token: ROCEBENCH_AGENT_TOKEN, or --token-file, the same on every host and the launcher.");
  p.option("--listen", &listen, "serve requests on ADDRESS:PORT", "ADDRESS:PORT")
      .option("--token-file", &token_file, "--listen: the agent token is this file's first line (default: $ROCEBENCH_AGENT_TOKEN)", "FILE")
      .option("--run", &run, "the launcher's relay: have the agent at ADDRESS:PORT run the command after --, and end as it ends",
              "ADDRESS:PORT")
      .option("--env", &env_names, "--run: a variable of this environment to set there (repeatable)", "NAME")
      .option("--carry", &carry,
              "--run: DIR travels with the command (out: its files, at most 16 MiB; back: what the command made or changed)",
              "DIR")
      .rest("COMMAND", &command, "--run: the command, after --");
  int relay_status = -1;  // --run: how the remote child ended
  const int rc = run_guarded("rocebench agent", [&]() -> int {
    if (!p.parse(args)) return kExitOk;
    if (!run.empty()) {
      if (!listen.empty() || !token_file.empty()) throw UsageError("rocebench agent: --run takes neither --listen nor --token-file");
      if (command.empty()) throw UsageError("rocebench agent: --run: give the command after --");
      while (carry.size() > 1 && carry.back() == '/') carry.pop_back();
      std::map<std::string, std::string> env;
      for (const auto& name : env_names) {
        if (const char* value = std::getenv(name.c_str())) env[name] = value;
      }
      ::signal(SIGPIPE, SIG_IGN);  // a launcher gone while we copy its rank's output: end as the rank does
      relay_status = run_through_agent(parse_agent_address("--run", run), agent_token(""), command, env, 1, 2, carry);
      return kExitOk;
    }
    if (listen.empty()) throw UsageError("rocebench agent: give --listen ADDRESS:PORT\n\n" + p.usage());
    if (!command.empty() || !env_names.empty() || !carry.empty()) {
      throw UsageError("rocebench agent: --env, --carry and a command are for --run");
    }
    const RendezvousAddress where = parse_agent_address("--listen", listen);
    const std::string token = agent_token(token_file);
    ::unsetenv("ROCEBENCH_AGENT_TOKEN");  // the children it starts need not hold it
    ::signal(SIGPIPE, SIG_IGN);
    catch_stop_signals();
    std::mutex log_mutex;
    auto say = [&log_mutex](const std::string& line) {
      std::lock_guard lock(log_mutex);
      std::cerr << fmt::format("rocebench agent: {} {}\n", utc_now_rfc3339(), line) << std::flush;
    };
    Agent agent(where.host, where.port, token, say);
    say(fmt::format("listening on {}:{}", where.host, agent.port()));
    agent.serve([] { return stop_signal() != 0; });
    say(fmt::format("stopped by SIG{}", sigabbrev_np(stop_signal()) ? sigabbrev_np(stop_signal()) : "?"));
    return kExitOk;
  });
  return relay_status >= 0 ? end_as(relay_status) : rc;
}

}  // namespace rocebench

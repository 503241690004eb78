// `rocebench agent` on 127.0.0.1, in this process: a real socket, real children, the real relay.
#include <gtest/gtest.h>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <fstream>
#include <mutex>
#include <thread>

#include "agent.hpp"
#include "process_util.hpp"
#include "rocebench/common/cli.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/transport/tcp/socket.hpp"
#include "wire.hpp"

using namespace rocebench;

namespace {

// An agent serving on a thread until the test ends.
struct RunningAgent {
  std::mutex mutex;
  std::vector<std::string> lines;
  std::atomic<bool> stop{false};
  Agent agent{"127.0.0.1", 0, "secret", [this](const std::string& line) {
                std::lock_guard lock(mutex);
                lines.push_back(line);
              }};
  std::thread thread{[this] { agent.serve([this] { return stop.load(); }); }};

  ~RunningAgent() {
    stop = true;
    thread.join();
  }
  RendezvousAddress address() const { return {"127.0.0.1", agent.port()}; }
  std::string log() {
    std::lock_guard lock(mutex);
    std::string all;
    for (const auto& l : lines) all += l + "\n";
    return all;
  }
};

// Whether pid is a live process (a zombie left for init to reap counts as gone).
bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  const auto paren = line.rfind(')');
  return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] != 'Z';
}

// Polls `done` every 20 ms until it holds or `limit` passes; its last answer.
template <typename Done>
bool within(std::chrono::seconds limit, Done done) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!done() && std::chrono::steady_clock::now() < until) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  return done();
}

bool gone_within(pid_t pid, std::chrono::seconds limit) { return within(limit, [&] { return !alive(pid); }); }

int open_file(const rbtest::fs::path& file) { return ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644); }

}  // namespace

TEST(Agent, RunsAChildAndRelaysItsOutputAndExitStatus) {
  RunningAgent a;
  const auto dir = rbtest::temp_dir("agent");
  const int out = open_file(dir / "out"), err = open_file(dir / "err");
  const int status = run_through_agent(a.address(), "secret", {"/bin/sh", "-c", "echo out-$RANK; echo err-$RANK-$WORLD_SIZE >&2; exit 7"},
                                       {{"RANK", "3"}, {"WORLD_SIZE", "4"}}, out, err);
  ::close(out);
  ::close(err);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 7);
  EXPECT_EQ(rbtest::slurp(dir / "out"), "out-3\n");
  EXPECT_EQ(rbtest::slurp(dir / "err"), "err-3-4\n");
  EXPECT_NE(a.log().find("(rank 3) ended: exit 7"), std::string::npos) << a.log();

  // A child killed by a signal: the relay learns which.
  const int killed = run_through_agent(a.address(), "secret", {"/bin/sh", "-c", "kill -9 $$"}, {}, -1, -1);
  ASSERT_TRUE(WIFSIGNALED(killed));
  EXPECT_EQ(WTERMSIG(killed), SIGKILL);
}

TEST(Agent, ServesRequestsConcurrently) {
  RunningAgent a;
  // Two children that each wait for the other's file: they finish only if both run at once.
  const auto dir = rbtest::temp_dir("agent-both");
  const std::string wait_for = "for i in $(seq 200); do [ -e {} ] && exit 0; sleep 0.05; done; exit 1";
  auto child = [&](const std::string& mine, const std::string& other) {
    const std::string script = "touch " + (dir / mine).string() + "; " + wait_for;
    return std::string(script).replace(script.find("{}"), 2, (dir / other).string());
  };
  int first = -1, second = -1;
  std::thread t([&] { first = run_through_agent(a.address(), "secret", {"/bin/sh", "-c", child("a", "b")}, {}, -1, -1); });
  second = run_through_agent(a.address(), "secret", {"/bin/sh", "-c", child("b", "a")}, {}, -1, -1);
  t.join();
  EXPECT_TRUE(WIFEXITED(first) && WEXITSTATUS(first) == 0);
  EXPECT_TRUE(WIFEXITED(second) && WEXITSTATUS(second) == 0);
}

TEST(Agent, AWrongTokenRunsNothing) {
  RunningAgent a;
  const auto dir = rbtest::temp_dir("agent-token");
  const auto marker = dir / "ran";
  try {
    run_through_agent(a.address(), "guess", {"/usr/bin/touch", marker.string()}, {}, -1, -1);
    FAIL() << "a wrong token was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("wrong or missing agent token"), std::string::npos) << e.what();
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_FALSE(rbtest::fs::exists(marker));
  EXPECT_NE(a.log().find("refused: wrong or missing agent token; nothing ran"), std::string::npos) << a.log();
}

TEST(Agent, AClosedConnectionStopsTheChildsProcessGroup) {
  RunningAgent a;
  const int fd = tcp::connect_to("127.0.0.1", a.agent.port(), Deadline(std::chrono::seconds(10)));
  // The child starts a grandchild in its group and says its pid.
  wire::send(fd, {{"op", "start"}, {"token", "secret"}, {"argv", {"/bin/sh", "-c", "sleep 60 & echo $!; wait"}}},
             Deadline(std::chrono::seconds(10)));
  const auto started = wire::receive(fd, Deadline(std::chrono::seconds(10)));
  ASSERT_TRUE(started.value("ok", false)) << started.dump();
  const pid_t child = started.at("pid").get<pid_t>();
  pid_t grandchild = -1;
  for (int i = 0; i < 30 && grandchild < 0; ++i) {  // keep-alives come every second meanwhile
    const auto m = wire::receive(fd, Deadline(std::chrono::seconds(10)));
    if (m.contains("stdout")) grandchild = std::stoi(m.at("stdout").get<std::string>());
  }
  ASSERT_GT(grandchild, 0);
  EXPECT_TRUE(alive(child));
  EXPECT_TRUE(alive(grandchild));
  ::close(fd);  // the launcher's relay died
  EXPECT_TRUE(gone_within(child, std::chrono::seconds(10))) << "the child outlived its connection";
  EXPECT_TRUE(gone_within(grandchild, std::chrono::seconds(10))) << "the child's process group outlived the connection";
  // The agent logs it once it has reaped them: the line may come a moment after they are gone.
  within(std::chrono::seconds(10), [&] { return a.log().find("connection lost") != std::string::npos; });
  EXPECT_NE(a.log().find("connection lost"), std::string::npos) << a.log();
}

TEST(Agent, StoppingTheAgentStopsItsChildren) {
  auto a = std::make_unique<RunningAgent>();
  const int fd = tcp::connect_to("127.0.0.1", a->agent.port(), Deadline(std::chrono::seconds(10)));
  wire::send(fd, {{"op", "start"}, {"token", "secret"}, {"argv", {"/bin/sleep", "60"}}}, Deadline(std::chrono::seconds(10)));
  const auto started = wire::receive(fd, Deadline(std::chrono::seconds(10)));
  ASSERT_TRUE(started.value("ok", false)) << started.dump();
  const pid_t child = started.at("pid").get<pid_t>();
  const auto t0 = std::chrono::steady_clock::now();
  a.reset();  // stops it: SIGTERM to the child's group
  EXPECT_LT(std::chrono::steady_clock::now() - t0, kAgentKillGrace + std::chrono::seconds(2));
  EXPECT_FALSE(alive(child));
  ::close(fd);
}

// A carried folder (a rank 0 on another host: its plan out, its results back): the child works in the
// agent's own copy (its argv pointed there), what it made or changed comes back byte for byte, in
// parts when large, what it left alone is not sent again, and the agent's copy is gone afterwards.
TEST(Agent, ACarriedFolderGoesWithTheCommandAndWhatItWroteComesBack) {
  RunningAgent a;
  const auto dir = rbtest::temp_dir("agent-carry");
  std::string every_byte;
  for (int i = 0; i < 256; ++i) every_byte += static_cast<char>(i);
  std::ofstream(dir / "in.bin", std::ios::binary) << every_byte;
  rbtest::fs::create_directories(dir / "sub");
  std::ofstream(dir / "sub" / "kept.txt") << "as it was\n";
  const auto kept_time = rbtest::fs::last_write_time(dir / "sub" / "kept.txt");
  const std::string script =
      "echo \"$1\" > \"$1/where\"; mkdir -p \"$1/deep/er\"; cp \"$1/in.bin\" \"$1/deep/er/copy.bin\"; "
      "head -c 2500000 /dev/zero > \"$1/big\"; [ \"$(cat \"$1/sub/kept.txt\")\" = 'as it was' ]";
  const int status = run_through_agent(a.address(), "secret", {"/bin/sh", "-c", script, "sh", dir.string()}, {}, -1, -1, dir.string());
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the carried files were not there: " << a.log();
  const std::string where = rbtest::slurp(dir / "where");
  EXPECT_NE(where, dir.string() + "\n") << "the child worked in the launcher's folder, not a carried copy";
  EXPECT_NE(where.find("rocebench-carried-"), std::string::npos) << where;
  EXPECT_EQ(rbtest::slurp(dir / "deep" / "er" / "copy.bin"), every_byte);
  EXPECT_EQ(rbtest::slurp(dir / "big"), std::string(2500000, '\0')) << "a file of 3 parts";
  EXPECT_EQ(rbtest::fs::last_write_time(dir / "sub" / "kept.txt"), kept_time) << "an unchanged file came back";
  EXPECT_FALSE(rbtest::fs::exists(where.substr(0, where.size() - 1))) << "the agent's copy outlived the command";

  // A request whose carried file would land outside the folder starts nothing.
  const int fd = tcp::connect_to("127.0.0.1", a.agent.port(), Deadline(std::chrono::seconds(10)));
  wire::send(fd, {{"op", "start"}, {"token", "secret"}, {"argv", {"/usr/bin/touch", (dir / "ran").string()}},
                  {"carry", {{"dir", dir.string()}, {"files", {{"../escaped", "Zg=="}}}}}},
             Deadline(std::chrono::seconds(10)));
  const auto reply = wire::receive(fd, Deadline(std::chrono::seconds(10)));
  ::close(fd);
  EXPECT_FALSE(reply.value("ok", true));
  EXPECT_NE(reply.value("error", "").find("carried file '../escaped' is not inside the folder"), std::string::npos) << reply.dump();
  EXPECT_FALSE(rbtest::fs::exists(dir / "ran"));
}

// The relay's keep-alives go on while a large result comes back after the child has ended: the agent
// must read them before it closes, or its kernel resets the connection and drops what it had not yet
// sent (the exit status last of all). CI lost a rank 0 so, whose child had ended with exit 0.
TEST(Agent, AResultLargerThanAKeepAliveIntervalComesBackWithTheExitStatus) {
  RunningAgent a;
  const auto dir = rbtest::temp_dir("agent-carry-large");
  const std::string script = "yes 0123456789abcde | head -c 48000000 > \"$1/large\"; exit 7";
  std::string want;
  while (want.size() < 48000000) want += "0123456789abcde\n";
  want.resize(48000000);
  for (int run = 0; run < 3; ++run) {
    const int status = run_through_agent(a.address(), "secret", {"/bin/sh", "-c", script, "sh", dir.string()}, {}, -1, -1, dir.string());
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 7) << "run " << run << ": " << a.log();
    EXPECT_TRUE(rbtest::slurp(dir / "large") == want) << "run " << run << ": the 46 parts did not come back as written";
    rbtest::fs::remove(dir / "large");  // out, a carried folder holds at most 16 MiB
  }
}

TEST(Agent, RelayArgvNamesVariablesButHoldsNoValues) {
  EmulatedHost h;
  h.netns = "host1";
  h.address = "10.0.0.2";
  h.agent_port = 7000;
  const auto argv = agent_relay_argv("/bin/rocebench", h, {"RANK", "ROCEBENCH_TOKEN"}, {"/bin/rocebench", "run", "--launcher", "env"});
  const std::vector<std::string> want{"/bin/rocebench", "agent", "--run", "10.0.0.2:7000", "--env", "RANK", "--env",
                                      "ROCEBENCH_TOKEN", "--", "/bin/rocebench", "run", "--launcher", "env"};
  EXPECT_EQ(argv, want);
  const auto carrying = agent_relay_argv("/bin/rocebench", h, {}, {"/bin/rocebench", "run"}, "/results/run1");
  const std::vector<std::string> want_carry{"/bin/rocebench", "agent", "--run", "10.0.0.2:7000", "--carry", "/results/run1",
                                            "--", "/bin/rocebench", "run"};
  EXPECT_EQ(carrying, want_carry);
  EXPECT_EQ(parse_agent_address("--run", "[::1]:7000").host, "::1");
  EXPECT_EQ(parse_agent_address("--run", "[::1]:7000").port, 7000);
  EXPECT_THROW(parse_agent_address("--run", "10.0.0.2"), UsageError);
  EXPECT_THROW(parse_agent_address("--run", "10.0.0.2:x"), UsageError);
  EXPECT_THROW(parse_agent_address("--run", "10.0.0.2:70000"), UsageError);
}

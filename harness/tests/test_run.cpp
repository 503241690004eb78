// The real binary, run as a user would: the default plan, bad input, lost ranks, Open MPI.
#include <gtest/gtest.h>

#include <signal.h>

#include <sstream>

#include "launch.hpp"
#include "metadata.hpp"
#include "rocebench/common/errors.hpp"
#include "process_util.hpp"
#include "../../common/tests/setup_required.hpp"
#include "rocebench/common/record.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/reports/aggregate.hpp"
#include "rocebench/reports/exit_code.hpp"
#include "rocebench/reports/netcheck_verdict.hpp"
#include "rocebench/reports/thresholds.hpp"
#include "rocebench/transport/tcp/socket.hpp"
#include "rocebench/transport/verbs/device.hpp"

using namespace rocebench;
using rbtest::fs::path;

namespace {

const std::string kBinary = ROCEBENCH_BINARY;

// Every record valid, the first one the run record.
RecordFile checked_results(const path& file) {
  RecordFile f = read_records(file, &result_schema());
  for (const auto& issue : f.issues) ADD_FAILURE() << file << ":" << issue.line << ": " << issue.message;
  if (f.records.empty()) {
    ADD_FAILURE() << "no records in " << file;
  } else {
    EXPECT_EQ(f.records.front()["kind"], "run");
  }
  return f;
}

int count_results(const RecordFile& f, const std::string& step, const std::string& status) {
  int n = 0;
  for (const auto& r : f.records) n += r.value("step", "") == step && r.value("status", "") == status;
  return n;
}

void write(const path& file, const std::string& text) { std::ofstream(file) << text; }

bool mpirun_available() { return std::system("command -v mpirun >/dev/null 2>&1") == 0; }

// The event the launcher records about where the ranks of a plan with emulated hosts ran.
const json* where_ranks_ran(const RecordFile& f) {
  for (const auto& r : f.records)
    if (r.value("kind", "") == "event" && r.value("event", "").starts_with("hosts.")) return &r;
  return nullptr;
}

std::string network_namespaces() {
  std::string names;
  FILE* ip = ::popen("ip netns list 2>/dev/null", "r");
  for (char line[256]; ip != nullptr && std::fgets(line, sizeof line, ip) != nullptr;) names += line;
  if (ip != nullptr) ::pclose(ip);
  return names;
}

// For tests of how ranks start: the rendezvous alone (the default plan also trains and sweeps for minutes).
path rendezvous_plan(const path& dir) {
  write(dir / "plan.json", R"({"name": "meet", "steps": [{"step": "harness.rendezvous", "params": {"rounds": 50}}]})");
  return dir / "plan.json";
}

}  // namespace

TEST(RunCommand, DefaultPlanRunsFourRanksAndRecordsEverything) {
  const path dir = rbtest::temp_dir("run");
  ASSERT_EQ(rbtest::run({kBinary, "run", "--results-dir", (dir / "out").string()}, dir, "run", {}, 450), 0)
      << rbtest::slurp(dir / "run.err");
  const RecordFile f = checked_results(dir / "out" / "results.jsonl");
  const json& run = f.records.front();
  EXPECT_EQ(run["world"], 4);
  EXPECT_EQ(run["plan"]["name"], "local");
  // As root every rank runs in an emulated host of its own (100 Mbit/s links); else all on this one.
  const json* where = where_ranks_ran(f);
  ASSERT_NE(where, nullptr) << "the run does not say where its ranks ran";
  if (::geteuid() == 0) {
    EXPECT_EQ((*where)["event"], "hosts.emulated") << (*where)["message"];
    ASSERT_EQ(run["hosts"].size(), 4u);
    for (int r = 0; r < 4; ++r) EXPECT_EQ(run["hosts"][r]["ranks"], json::array({r}));
  } else {
    EXPECT_EQ((*where)["event"], "hosts.loopback");
    ASSERT_EQ(run["hosts"].size(), 1u);
    EXPECT_EQ(run["hosts"][0]["ranks"], json::array({0, 1, 2, 3}));
  }
  EXPECT_TRUE(run["hosts"][0]["rdma"].contains("devices"));
  EXPECT_EQ(count_results(f, "harness.rendezvous", "ok"), 4);
  // resnet20_cifar on the cpu engine on every rank; the gpu step is ok on a GPU host, else skip.
  EXPECT_GE(count_results(f, "models.train", "ok"), 4);
  EXPECT_EQ(count_results(f, "models.train", "ok") + count_results(f, "models.train", "skip"), 8);
  // Data-parallel scaling: the cpu engine at 1 and 2 ranks, the replayed timeline at 1, 2 and 4 (three ways).
  EXPECT_EQ(count_results(f, "models.scaling", "ok"), 2 + 3 * 3);
  for (const auto& r : f.records) {
    if (r.value("step", "") == "harness.rendezvous") {
      EXPECT_EQ(r["samples"]["n"], 50);
    }
  }
  EXPECT_NE(rbtest::slurp(dir / "run.out").find("results: "), std::string::npos);
  EXPECT_TRUE(rbtest::fs::exists(dir / "out" / "plan.json"));
}

TEST(RunCommand, APlansEmulatedHostsCarryItsRanksOverShapedLinksAndAreTakenDownAfter) {
  if (::geteuid() != 0) GTEST_SKIP() << "emulated hosts need root (network namespaces)";
  const path dir = rbtest::temp_dir("emulated");
  write(dir / "plan.json", R"({"name": "emulated", "launcher": {"type": "local", "ranks": 3, "emulated_hosts": {"link_rate": "50mbit"}},
    "steps": [{"step": "harness.rendezvous", "params": {"rounds": 5}},
              {"step": "microbench.probe", "params": {"transport": "tcp", "test": "bw", "bytes": 65536, "warmup": 4, "duration_s": 0.5}}]})");
  ASSERT_EQ(rbtest::run({kBinary, "run", (dir / "plan.json").string(), "--results-dir", (dir / "out").string()}, dir, "run"), 0)
      << rbtest::slurp(dir / "run.err");
  const RecordFile f = checked_results(dir / "out" / "results.jsonl");
  const json* where = where_ranks_ran(f);
  ASSERT_NE(where, nullptr);
  ASSERT_EQ((*where)["event"], "hosts.emulated") << (*where)["message"];
  EXPECT_NE((*where)["message"].get<std::string>().find("3 emulated hosts"), std::string::npos) << (*where)["message"];
  ASSERT_EQ(f.records.front()["hosts"].size(), 3u);
  // The link is shaped: 50 Mbit/s carries at most 0.05 Gb/s (loopback carries tens).
  for (const auto& r : f.records) {
    if (r.value("step", "") == "microbench.probe" && r.value("status", "") == "ok") {
      EXPECT_GT(r["metrics"]["bw_avg_Gbps"].get<double>(), 0.02);
      EXPECT_LT(r["metrics"]["bw_avg_Gbps"].get<double>(), 0.051);
    }
  }
  // Named by place, so that two runs of a plan name their series alike; their namespaces are gone.
  for (int h = 0; h < 3; ++h) EXPECT_EQ(f.records.front()["hosts"][h]["hostname"], "host" + std::to_string(h));
  const std::string message = (*where)["message"];
  const auto from = message.find("network namespaces ") + std::string("network namespaces ").size();
  const std::string first_namespace = message.substr(from, message.find("..", from) - from);
  ASSERT_FALSE(first_namespace.empty()) << message;
  EXPECT_EQ(network_namespaces().find(first_namespace), std::string::npos) << "left behind: " << network_namespaces();

  // --loopback keeps the ranks here, and the run says so.
  ASSERT_EQ(rbtest::run({kBinary, "run", (dir / "plan.json").string(), "--loopback", "--results-dir", (dir / "loop").string()},
                        dir, "loop"),
            0)
      << rbtest::slurp(dir / "loop.err");
  const RecordFile g = checked_results(dir / "loop" / "results.jsonl");
  ASSERT_NE(where_ranks_ran(g), nullptr);
  EXPECT_EQ((*where_ranks_ran(g))["event"], "hosts.loopback");
  EXPECT_EQ(g.records.front()["hosts"].size(), 1u);
}

TEST(RunCommand, EmulatedHostsAreRefusedOutsideTheLocalLauncherAndWithABadRate) {
  const path dir = rbtest::temp_dir("emulated-bad");
  const std::vector<std::pair<std::string, std::string>> cases{
      {R"({"type": "mpirun", "hostfile": "hosts", "emulated_hosts": {"link_rate": "1gbit"}})",
       "field 'launcher.emulated_hosts': emulated hosts are for the local launcher only"},
      {R"({"type": "local", "ranks": 2, "emulated_hosts": {"link_rate": "fast"}})", "field 'launcher.emulated_hosts.link_rate': must match"}};
  for (const auto& [launcher, error] : cases) {
    write(dir / "plan.json", R"({"name": "bad", "launcher": )" + launcher +
                                 R"(, "steps": [{"step": "harness.rendezvous", "params": {"rounds": 5}}]})");
    EXPECT_EQ(rbtest::run({kBinary, "run", (dir / "plan.json").string(), "--dry-run"}, dir, "r"), 2) << launcher;
    EXPECT_NE(rbtest::slurp(dir / "r.err").find(error), std::string::npos) << rbtest::slurp(dir / "r.err");
  }
}

TEST(RunCommand, EightLocalRanks) {
  const path dir = rbtest::temp_dir("run8");
  ASSERT_EQ(rbtest::run({kBinary, "run", rendezvous_plan(dir).string(), "--ranks", "8", "--results-dir",
                         (dir / "out").string()}, dir, "run"), 0)
      << rbtest::slurp(dir / "run.err");
  const RecordFile f = checked_results(dir / "out" / "results.jsonl");
  EXPECT_EQ(f.records.front()["world"], 8);
  EXPECT_EQ(count_results(f, "harness.rendezvous", "ok"), 8);
  // Each result says how busy the machine's CPUs were during its step, where the kernel counts it.
  if (cpu_pressure_total_us()) {
    for (const json& r : f.records) {
      if (r["kind"] != "result") continue;
      ASSERT_TRUE(r.contains("cpu_pressure_pct")) << r.dump();
      EXPECT_GE(r["cpu_pressure_pct"].get<double>(), 0);
      EXPECT_LE(r["cpu_pressure_pct"].get<double>(), 100);
    }
  }
}

TEST(RunCommand, BadUsageExitsTwo) {
  const path dir = rbtest::temp_dir("usage");
  EXPECT_EQ(rbtest::run({kBinary, "frobnicate"}, dir, "a"), 2);
  EXPECT_NE(rbtest::slurp(dir / "a.err").find("unknown command 'frobnicate'"), std::string::npos);
  EXPECT_EQ(rbtest::run({kBinary, "run", "--frob"}, dir, "b"), 2);
  EXPECT_NE(rbtest::slurp(dir / "b.err").find("unknown option --frob"), std::string::npos);
  EXPECT_EQ(rbtest::run({kBinary}, dir, "c"), 2);
  EXPECT_EQ(rbtest::run({kBinary, "--help"}, dir, "d"), 0);
  for (const char* sub : {"run", "probe", "allreduce", "train", "netcheck", "report", "compare", "import"}) {
    EXPECT_NE(rbtest::slurp(dir / "d.out").find(std::string("  ") + sub + " "), std::string::npos) << sub;
  }
  EXPECT_EQ(rbtest::run({kBinary, "run", "--help"}, dir, "e"), 0);
  EXPECT_NE(rbtest::slurp(dir / "e.out").find("usage: rocebench run"), std::string::npos);
}

TEST(RunCommand, AnAgentHostsFileIsCheckedBeforeAnyRankStarts) {
  RBTEST_NEEDS_ROCEBENCH();
  const path dir = rbtest::temp_dir("agent-hosts");
  write(dir / "junk", "h0 127.0.0.1 agent=seven");
  EXPECT_EQ(rbtest::run({kBinary, "run", rendezvous_plan(dir).string(), "--netns", (dir / "junk").string(), "--ranks", "1",
                         "--results-dir", (dir / "a").string()}, dir, "a"), 2);
  EXPECT_NE(rbtest::slurp(dir / "a.err").find((dir / "junk").string() + ":1: field 'agent': expected a TCP port"), std::string::npos)
      << rbtest::slurp(dir / "a.err");
  // A host reached through its agent needs the agent token: refused before any rank starts.
  write(dir / "hosts", "h0 127.0.0.1 agent=7000");
  EXPECT_EQ(rbtest::run({"env", "-u", "ROCEBENCH_AGENT_TOKEN", kBinary, "run", rendezvous_plan(dir).string(), "--netns",
                         (dir / "hosts").string(), "--ranks", "1", "--results-dir", (dir / "b").string()}, dir, "b"), 2);
  EXPECT_NE(rbtest::slurp(dir / "b.err").find("ROCEBENCH_AGENT_TOKEN is not set"), std::string::npos) << rbtest::slurp(dir / "b.err");
}

// Both ranks through one agent on this host: the launcher starts relays, the agent the ranks. Rank 0
// works in a copy of the results folder carried to the agent (as on a host that does not see this
// one's files): the plan goes out, the records come back, under the plan's own name.
TEST(RunCommand, RanksStartedThroughAnAgentMeetAndRankZerosRecordsComeBack) {
  RBTEST_NEEDS_ROCEBENCH();
  const path dir = rbtest::temp_dir("agent-run");
  const std::string port = std::to_string(tcp::pick_free_port("127.0.0.1"));
  const std::map<std::string, std::string> token{{"ROCEBENCH_AGENT_TOKEN", "t0ken"}};
  rbtest::Process agent = rbtest::start({kBinary, "agent", "--listen", "127.0.0.1:" + port}, token, dir, "agent");
  write(dir / "hosts", "one 127.0.0.1 agent=" + port + "\ntwo 127.0.0.1 agent=" + port);
  EXPECT_EQ(rbtest::run({kBinary, "run", rendezvous_plan(dir).string(), "--netns", (dir / "hosts").string(), "--ranks", "2",
                         "--results-dir", (dir / "out").string(), "--deadline", "30"}, dir, "run", token), 0)
      << rbtest::slurp(dir / "run.err") << rbtest::slurp(dir / "agent.err");
  const RecordFile f = checked_results(dir / "out" / "results.jsonl");
  EXPECT_EQ(f.records.front()["world"], 2);
  EXPECT_EQ(count_results(f, "harness.rendezvous", "ok"), 2);
  ::kill(agent.pid, SIGTERM);
  EXPECT_EQ(agent.wait(20), 0);
  const std::string log = rbtest::slurp(dir / "agent.err");
  EXPECT_NE(log.find("(rank 0) ended: exit 0"), std::string::npos) << log;
  EXPECT_NE(log.find("(rank 1) ended: exit 0"), std::string::npos) << log;
  EXPECT_NE(log.find("stopped by SIGTERM"), std::string::npos) << log;
  // Rank 0 read the plan and wrote the records in the carried copy, which is gone.
  const auto started = log.find("(rank 0): ");
  ASSERT_NE(started, std::string::npos) << log;
  std::istringstream words(log.substr(started, log.find('\n', started) - started));
  std::map<std::string, std::string> flags;  // each flag of rank 0's argv as the agent started it, with its value
  for (std::string word, last; words >> word; last = word) flags[last] = word;
  EXPECT_NE(flags["--results-dir"].find("/rocebench-carried-"), std::string::npos) << "rank 0 did not work in a carried copy";
  EXPECT_EQ(flags["--plan"], flags["--results-dir"] + "/plan.json");
  EXPECT_FALSE(rbtest::fs::exists(flags["--results-dir"])) << "the carried copy outlived the run";
  EXPECT_EQ(f.records.front()["plan"]["file"], rendezvous_plan(dir).string()) << "the run record names the carried copy";
}

TEST(RunCommand, NumbersOutOfRangeAreRefusedBeforeAnythingStarts) {
  // Each flag takes the range its plan field declares (plan.schema.json); nothing starts, nothing is written.
  const path dir = rbtest::temp_dir("ranges");
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases{
      {{"--ranks", "0"}, "--ranks: 0 is out of range [1, 4096]"},
      {{"--ranks", "99999"}, "--ranks: 99999 is out of range [1, 4096]"},
      {{"--ranks-per-host", "100000"}, "--ranks-per-host: 100000 is out of range [1, 1024]"},
      {{"--deadline", "-1"}, "--deadline: -1 is out of range (0, 86400]"},
      {{"--deadline", "nan"}, "--deadline: 'nan' is not a valid number"},
      {{"--timeout", "0"}, "--timeout: 0 is out of range (0, 604800]"}};
  for (const auto& [flags, error] : cases) {
    std::vector<std::string> argv{kBinary, "run", "--results", (dir / "out").string()};
    argv.insert(argv.end(), flags.begin(), flags.end());
    EXPECT_EQ(rbtest::run(argv, dir, "r"), 2) << flags[0];
    EXPECT_NE(rbtest::slurp(dir / "r.err").find(error), std::string::npos) << rbtest::slurp(dir / "r.err");
    EXPECT_EQ(rbtest::slurp(dir / "r.err").find("started, pid"), std::string::npos) << rbtest::slurp(dir / "r.err");
    EXPECT_FALSE(std::filesystem::exists(dir / "out")) << flags[0];
  }
}

TEST(RunCommand, ARunIdNamesAFolderUnderTheResultsAndADryRunMakesNone) {
  const path dir = rbtest::temp_dir("runid");
  for (const std::string& id : std::vector<std::string>{"../../escape", "..", "a/b", std::string("x\x1b[31m")}) {
    EXPECT_EQ(rbtest::run({kBinary, "run", "--results", (dir / "out").string(), "--run-id", id}, dir, "r"), 2) << id;
    EXPECT_NE(rbtest::slurp(dir / "r.err").find("--run-id: '" + printable_excerpt(id) + "' is not a folder name"),
              std::string::npos)
        << rbtest::slurp(dir / "r.err");
  }
  EXPECT_FALSE(std::filesystem::exists(dir / "escape"));
  EXPECT_FALSE(std::filesystem::exists(dir / "out"));
  EXPECT_EQ(rbtest::run({kBinary, "run", "--results", (dir / "out").string(), "--run-id", "nightly-2026.12.01_a", "--dry-run"},
                        dir, "d"),
            0);
  EXPECT_NE(rbtest::slurp(dir / "d.out").find((dir / "out" / "nightly-2026.12.01_a").string()), std::string::npos);
  EXPECT_FALSE(std::filesystem::exists(dir / "out")) << "a dry run makes no folder";
}

TEST(RunCommand, MalformedPlanIsRefusedWithFileAndLine) {
  const path dir = rbtest::temp_dir("plan");
  write(dir / "bad.json", "{\n  \"name\": \"bad\",\n  \"steps\": [\n    {\"step\": \"harness.rendezvous\", \"params\": {\"rounds\": \"ten\"}}\n  ]\n}\n");
  EXPECT_EQ(rbtest::run({kBinary, "run", (dir / "bad.json").string(), "--results-dir", (dir / "out").string()}, dir, "r"), 2);
  const std::string err = rbtest::slurp(dir / "r.err");
  EXPECT_NE(err.find("bad.json:4: field 'steps[0].params.rounds': expected integer"), std::string::npos) << err;
  EXPECT_FALSE(rbtest::fs::exists(dir / "out")) << "a bad plan must stop everything before results exist";
}

TEST(RunCommand, AHugeOrBinaryPlanGetsAShortPrintableError) {
  const path dir = rbtest::temp_dir("hugeplan");
  write(dir / "huge.json", "{\"name\": \"" + std::string(10'000'000, 'x'));
  write(dir / "binary.json", std::string("\x7f" "ELF\x02\x01\x01") + std::string(5000, '\x01'));
  for (const char* plan : {"huge.json", "binary.json"}) {
    EXPECT_EQ(rbtest::run({kBinary, "run", (dir / plan).string(), "--dry-run"}, dir, "r"), 2) << plan;
    const std::string err = rbtest::slurp(dir / "r.err");
    EXPECT_LT(err.size(), 400u) << err.substr(0, 400);
    EXPECT_NE(err.find(std::string(plan) + ":1: column "), std::string::npos) << err.substr(0, 400);
    EXPECT_EQ(err.find('\x01'), std::string::npos) << "a raw control byte reached the terminal";
  }
}

TEST(RunCommand, UnwritableResultsFolderIsRefusedBeforeAnyRankStarts) {
  const path dir = rbtest::temp_dir("unwritable");
  write(dir / "a-file", "x");  // a folder cannot be made under a file, even by root
  EXPECT_EQ(rbtest::run({kBinary, "run", "--results-dir", (dir / "a-file" / "out").string()}, dir, "r"), 2);
  const std::string err = rbtest::slurp(dir / "r.err");
  EXPECT_NE(err.find("cannot create the results folder"), std::string::npos) << err;
  EXPECT_EQ(err.find("started"), std::string::npos) << "ranks were started: " << err;
}

TEST(RunCommand, RankKilledDuringRendezvousIsReportedByTheOthers) {
  const path dir = rbtest::temp_dir("killed");
  const path results = dir / "out";
  write(dir / "long.json",
        R"({"name": "long", "steps": [{"step": "harness.rendezvous", "params": {"rounds": 2000, "interval_ms": 10}}]})");
  const int world = 4;
  const std::string port = std::to_string(tcp::pick_free_port("127.0.0.1"));
  std::vector<rbtest::Process> ranks;
  for (int r = 0; r < world; ++r) {
    ranks.push_back(rbtest::start({kBinary, "run", "--launcher", "env", "--plan", (dir / "long.json").string(),
                                   "--results-dir", results.string(), "--deadline", "20"},
                                  {{"RANK", std::to_string(r)}, {"WORLD_SIZE", std::to_string(world)},
                                   {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", port}, {"ROCEBENCH_TOKEN", "tok"}},
                                  dir, "rank" + std::to_string(r)));
  }
  // Once the run record is written every rank has joined; then rank 2 dies.
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (rbtest::slurp(results / "results.jsonl").find("\"kind\":\"run\"") == std::string::npos &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ::kill(ranks[2].pid, SIGKILL);
  const auto t0 = std::chrono::steady_clock::now();
  for (int r : {0, 1, 3}) {
    EXPECT_EQ(ranks[r].wait(25), 3) << "rank " << r << ": " << ranks[r].stderr_text();
    EXPECT_NE(ranks[r].stderr_text().find("rank 2 on host"), std::string::npos) << ranks[r].stderr_text();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(20)) << "survivors exceeded the deadline";
  ranks[2].wait(5);

  const RecordFile f = checked_results(results / "results.jsonl");  // what was written stays intact
  bool lost_event = false;
  for (const auto& rec : f.records) {
    lost_event |= rec.value("event", "") == "rank.lost" && rec["details"]["rank"] == 2;
  }
  EXPECT_TRUE(lost_event);
  EXPECT_GE(count_results(f, "harness.rendezvous", "error"), 1) << "the survivors record the failed step";
}

namespace {

// The pids the launcher reported ("rank R started, pid P"), once all `ranks` have started.
std::vector<pid_t> started_ranks(const rbtest::Process& launcher, int ranks) {
  std::vector<pid_t> pids;
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (static_cast<int>(pids.size()) < ranks && std::chrono::steady_clock::now() < until) {
    pids.clear();
    const std::string err = launcher.stderr_text();
    for (auto at = err.find("started, pid "); at != std::string::npos; at = err.find("started, pid ", at + 1)) {
      pids.push_back(std::stoi(err.substr(at + 13)));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return pids;
}

bool gone(pid_t pid) { return ::kill(pid, 0) != 0 && errno == ESRCH; }

bool all_gone_within(const std::vector<pid_t>& pids, std::chrono::seconds limit) {
  const auto until = std::chrono::steady_clock::now() + limit;
  while (!std::all_of(pids.begin(), pids.end(), gone) && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return std::all_of(pids.begin(), pids.end(), gone);
}

}  // namespace

TEST(RunCommand, SigintOrSigtermStopsEveryRankAndTheRunSaysSo) {
  const path dir = rbtest::temp_dir("stop");
  write(dir / "long.json",
        R"({"name": "long", "steps": [{"step": "harness.rendezvous", "params": {"rounds": 1}},
                                      {"step": "harness.rendezvous", "params": {"rounds": 100000, "interval_ms": 10}}]})");
  for (const auto& [signal, exit_code] : {std::pair{SIGTERM, 143}, std::pair{SIGINT, 130}}) {
    const path out = dir / std::to_string(signal);
    rbtest::Process launcher = rbtest::start({kBinary, "run", (dir / "long.json").string(), "--ranks", "3", "--results-dir",
                                              out.string()}, {}, dir, "run" + std::to_string(signal));
    const auto ranks = started_ranks(launcher, 3);
    ASSERT_EQ(ranks.size(), 3u) << launcher.stderr_text();
    // The first step has recorded once every rank's result of it is in.
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    auto first_step_results = [&] {
      std::istringstream lines(rbtest::slurp(out / "results.jsonl"));
      int n = 0;
      for (std::string line; std::getline(lines, line);) {
        n += line.find("\"step\":\"harness.rendezvous\"") != std::string::npos && line.find("\"status\":\"ok\"") != std::string::npos;
      }
      return n;
    };
    while (first_step_results() < 3 && std::chrono::steady_clock::now() < until) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ::kill(launcher.pid, signal);
    EXPECT_EQ(launcher.wait(20), exit_code) << launcher.stderr_text();
    EXPECT_TRUE(all_gone_within(ranks, std::chrono::seconds(1))) << "a rank outlived its launcher";
    const RecordFile f = checked_results(out / "results.jsonl");
    EXPECT_EQ(count_results(f, "harness.rendezvous", "ok"), 3) << "the first step's results stay";
    const auto interrupted = std::find_if(f.records.begin(), f.records.end(),
                                          [](const json& r) { return r.value("event", "") == "run.interrupted"; });
    ASSERT_NE(interrupted, f.records.end());
    EXPECT_EQ((*interrupted)["details"]["signal"], signal == SIGTERM ? "SIGTERM" : "SIGINT");
    EXPECT_EQ((*interrupted)["details"]["steps_with_results"], json::array({"harness.rendezvous"}));
    EXPECT_EQ((*interrupted)["details"]["ranks"].size(), 3u);
    // Seconds of plotting would delay the prompt (and a CI timeout's SIGKILL follows): no report,
    // the command that renders one instead.
    EXPECT_FALSE(std::filesystem::exists(out / "report")) << "an interrupted run rendered its report";
    EXPECT_NE(launcher.stderr_text().find("`rocebench report " + out.string() + "` renders it"), std::string::npos)
        << launcher.stderr_text();
  }
}

// The run ends with its answer: the report in the run's folder, a summary with the headline figures
// and each skip's reason, and the verdict of the plan's thresholds as the exit code.
TEST(RunCommand, TheRunEndsWithItsReportSummaryAndVerdict) {
  const path dir = rbtest::temp_dir("answer");
  write(dir / "plan.json", R"({"name": "answer", "steps": [
      {"step": "microbench.probe", "params": {"transport": "tcp", "test": "lat", "bytes": 64, "iters": 200}},
      {"step": "microbench.probe", "params": {"transport": "verbs", "test": "write_lat", "bytes": 64}}],
    "thresholds": [{"name": "tcp latency below a nanosecond", "step": "microbench.probe", "where": {"transport": "tcp"},
                    "metric": "lat_us_p50", "op": "<=", "value": 0.001}]})");
  const path out = dir / "out";
  EXPECT_EQ(rbtest::run({kBinary, "run", (dir / "plan.json").string(), "--ranks", "2", "--results-dir", out.string()}, dir,
                        "run"),
            1)
      << "a failed threshold is the run's verdict\n" << rbtest::slurp(dir / "run.err");
  const std::string said = rbtest::slurp(dir / "run.out");
  for (const std::string& text : std::vector<std::string>{"probes:", "tcp latency", "p50 ", "fail: tcp latency below a nanosecond",
                                 "verdicts: 0 of 1 pass", "report: " + (out / "report" / "report.html").string()}) {
    EXPECT_NE(said.find(text), std::string::npos) << text << "\n" << said;
  }
  if (verbs::list_devices("/").empty()) {
    EXPECT_NE(said.find("skipped, by reason:\n  no RDMA device"), std::string::npos) << said;
  }
  for (const char* file : {"report.html", "report.md", "junit.xml", "aggregate.csv"}) {
    EXPECT_TRUE(rbtest::fs::exists(out / "report" / file)) << file;
  }
  // Its records and its plan's thresholds, judged again offline, give the run's exit code.
  reports::Dataset data;
  data.load(out / "results.jsonl");
  const auto verdicts = reports::judge(reports::load_thresholds(dir / "plan.json"), data, reports::aggregate(data));
  EXPECT_EQ(reports::run_exit_code(checked_results(out / "results.jsonl").records, verdicts), 1);
  EXPECT_EQ(reports::run_exit_code(checked_results(out / "results.jsonl").records, {}), 0) << "only the threshold failed";
}

// `rocebench netcheck` checks this host as the one-step plan netcheck.host: the check records land in
// the run's folder after the run record, the table is on the console, and the exit code is theirs.
TEST(NetcheckCli, ChecksThisHostAsAOneStepPlanIntoTheResultsFolder) {
  const path dir = rbtest::temp_dir("netcheck-plan");
  const int rc = rbtest::run({kBinary, "netcheck", "--tool-timeout", "5", "--results", (dir / "res").string()}, dir, "n");
  const path file = rbtest::results_of_only_run(dir / "res");
  ASSERT_FALSE(file.empty()) << "no single run in " << (dir / "res") << "\n" << rbtest::slurp(dir / "n.err");
  const RecordFile f = checked_results(file);
  bool present = false, failed = false;
  for (const auto& r : f.records) {
    if (r.value("kind", "") != "check") continue;
    present = present || r["check"] == "rdma.device_present";
    failed = failed || r["status"] == "fail" || r["status"] == "unverified";
  }
  EXPECT_TRUE(present) << "no rdma.device_present check in " << file;
  EXPECT_EQ(rc, failed ? 1 : 0) << rbtest::slurp(dir / "n.err");
  // The exit code is the judge's, of the records saved: judged again, they say the same.
  EXPECT_EQ(rc, reports::netcheck_exit_code(reports::judge_netcheck_checks(f.records), false)) << rbtest::slurp(dir / "n.out");
  EXPECT_NE(rbtest::slurp(dir / "n.out").find("checks, "), std::string::npos) << rbtest::slurp(dir / "n.out");

  EXPECT_EQ(rbtest::run({kBinary, "netcheck", "--results", (dir / "r.jsonl").string()}, dir, "old"), 2);
  EXPECT_NE(rbtest::slurp(dir / "old.err").find("names a file; --results is now the folder"), std::string::npos)
      << rbtest::slurp(dir / "old.err");
  EXPECT_EQ(rbtest::run({kBinary, "netcheck", "--root", "/", "--ranks", "2"}, dir, "ranks"), 2);
}

// Rank 0 records the others' losses; its own is recorded by the launcher.
TEST(RunCommand, ALostRankZeroIsRecordedByTheLauncher) {
  const path dir = rbtest::temp_dir("rank0");
  write(dir / "long.json",
        R"({"name": "long", "steps": [{"step": "harness.rendezvous", "params": {"rounds": 100000, "interval_ms": 10}}]})");
  rbtest::Process launcher = rbtest::start({kBinary, "run", (dir / "long.json").string(), "--ranks", "2", "--deadline", "10",
                                            "--results-dir", (dir / "out").string()}, {}, dir, "run");
  const auto ranks = started_ranks(launcher, 2);
  ASSERT_EQ(ranks.size(), 2u) << launcher.stderr_text();
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (rbtest::slurp(dir / "out" / "results.jsonl").find("\"kind\":\"run\"") == std::string::npos &&
         std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(ranks[0], SIGKILL);
  EXPECT_EQ(launcher.wait(30), 3) << launcher.stderr_text();
  const RecordFile f = checked_results(dir / "out" / "results.jsonl");
  const auto lost = std::find_if(f.records.begin(), f.records.end(), [](const json& r) {
    return r.value("event", "") == "rank.lost" && r["details"]["rank"] == 0;
  });
  ASSERT_NE(lost, f.records.end()) << "rank 0's death went unrecorded";
  EXPECT_NE((*lost)["message"].get<std::string>().find("rank 0 on host"), std::string::npos) << *lost;
  EXPECT_EQ((*lost)["details"]["ended"], "killed by SIGKILL");
  EXPECT_NE(launcher.stdout_text().find("rank.lost: rank 0 on host"), std::string::npos) << launcher.stdout_text();
}

TEST(RunCommand, RanksDieWithALauncherThatIsKilled) {
  const path dir = rbtest::temp_dir("orphans");
  write(dir / "long.json",
        R"({"name": "long", "steps": [{"step": "harness.rendezvous", "params": {"rounds": 100000, "interval_ms": 10}}]})");
  rbtest::Process launcher =
      rbtest::start({kBinary, "run", (dir / "long.json").string(), "--ranks", "2", "--results-dir", (dir / "out").string()},
                    {}, dir, "run");
  const auto ranks = started_ranks(launcher, 2);
  ASSERT_EQ(ranks.size(), 2u) << launcher.stderr_text();
  ::kill(launcher.pid, SIGKILL);
  launcher.wait(5);
  EXPECT_TRUE(all_gone_within(ranks, std::chrono::seconds(10))) << "a rank outlived its launcher";
}

TEST(RunCommand, AnInterruptedModuleCommandRemovesItsTemporaryPlan) {
  const path dir = rbtest::temp_dir("tmpplan");
  rbtest::Process launcher = rbtest::start({kBinary, "allreduce", "--ranks", "2", "-b", "1K", "-e", "1K", "-n", "200000000",
                                            "--results-dir", (dir / "out").string()}, {}, dir, "allreduce");
  const auto ranks = started_ranks(launcher, 2);
  ASSERT_EQ(ranks.size(), 2u) << launcher.stderr_text();
  // The ranks were started with --plan /tmp/rocebench-plan-XXXXXX.
  std::string cmdline = rbtest::slurp(path("/proc") / std::to_string(ranks[0]) / "cmdline");
  std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
  const auto at = cmdline.find("/tmp/rocebench-plan-");
  ASSERT_NE(at, std::string::npos) << cmdline;
  const path plan = cmdline.substr(at, cmdline.find(' ', at) - at);
  EXPECT_TRUE(std::filesystem::exists(plan));
  ::kill(launcher.pid, SIGTERM);
  EXPECT_EQ(launcher.wait(20), 143) << launcher.stderr_text();
  EXPECT_FALSE(std::filesystem::exists(plan)) << plan;
  EXPECT_TRUE(all_gone_within(ranks, std::chrono::seconds(1)));
}

TEST(RunCommand, OpenMpiStartsRanksThatFindEachOther) {
  if (!mpirun_available()) RB_SKIP_WITHOUT_SETUP("mpirun (openmpi-bin) is not installed");
  const path dir = rbtest::temp_dir("mpi");
  const std::string port = std::to_string(tcp::pick_free_port("127.0.0.1"));
  const int rc = rbtest::run({"mpirun", "--allow-run-as-root", "--oversubscribe", "-np", "4", "-x", "ROCEBENCH_TOKEN",
                              "-x", "MASTER_ADDR", "-x", "MASTER_PORT", kBinary, "run", "--launcher", "env",
                              "--plan", rendezvous_plan(dir).string(), "--results-dir", (dir / "out").string()},
                             dir, "mpi",
                             {{"ROCEBENCH_TOKEN", "tok"}, {"MASTER_ADDR", "127.0.0.1"}, {"MASTER_PORT", port},
                              {"OMPI_MCA_rmaps_base_oversubscribe", "1"}},
                             180);
  ASSERT_EQ(rc, 0) << rbtest::slurp(dir / "mpi.err") << rbtest::slurp(dir / "mpi.out");
  const RecordFile f = checked_results(dir / "out" / "results.jsonl");
  EXPECT_EQ(f.records.front()["world"], 4);
  EXPECT_EQ(f.records.front()["launcher"], "OMPI_COMM_WORLD_*");
  EXPECT_EQ(count_results(f, "harness.rendezvous", "ok"), 4);
}

TEST(RunCommand, MpirunLauncherFromAHostfile) {
  if (!mpirun_available()) RB_SKIP_WITHOUT_SETUP("mpirun (openmpi-bin) is not installed");
  const path dir = rbtest::temp_dir("mpil");
  write(dir / "hosts", "localhost slots=2\n");
  const int rc = rbtest::run({kBinary, "run", rendezvous_plan(dir).string(), "--launcher", "mpirun", "--hostfile",
                              (dir / "hosts").string(), "--results-dir", (dir / "out").string()},
                             dir, "run", {}, 180);
  ASSERT_EQ(rc, 0) << rbtest::slurp(dir / "run.err");
  const RecordFile f = checked_results(dir / "out" / "results.jsonl");
  EXPECT_EQ(f.records.front()["world"], 2);
  EXPECT_EQ(count_results(f, "harness.rendezvous", "ok"), 2);
}

// A stand-in mpirun that does what the real one does across hosts (ci/testbeds/slurm/test_mpirun.sh),
// here on one host: starts 2 ranks, kills rank `victim` once both joined, says so as mpirun does, and
// exits 137. Returns the rank.lost events of the run and its exit code.
namespace {
std::vector<json> run_under_mpirun_killing(int victim, const path& dir, int& rc) {
  write(dir / "hosts", "localhost slots=2\n");
  write(dir / "long.json",
        R"({"name": "long", "steps": [{"step": "harness.rendezvous", "params": {"rounds": 100000, "interval_ms": 10}}]})");
  write(dir / "mpirun", R"(#!/bin/sh
while [ "$#" -gt 0 ] && [ "$1" != "$RB_BINARY" ]; do shift; done
export OMPI_COMM_WORLD_SIZE=2 MASTER_PORT="$RB_PORT"
OMPI_COMM_WORLD_RANK=0 "$@" & r0=$!
OMPI_COMM_WORLD_RANK=1 "$@" & r1=$!
for i in $(seq 300); do grep -q '"kind":"run"' "$RB_RESULTS" 2>/dev/null && break; sleep 0.1; done
if [ "$RB_VICTIM" = 0 ]; then victim=$r0; else victim=$r1; fi
kill -9 $victim
wait
echo "mpirun noticed that process rank $RB_VICTIM with PID $victim on node node-$RB_VICTIM exited on signal 9 (Killed)." >&2
exit 137
)");
  std::filesystem::permissions(dir / "mpirun", std::filesystem::perms::owner_all);
  rc = rbtest::run({kBinary, "run", (dir / "long.json").string(), "--launcher", "mpirun", "--mpirun",
                    (dir / "mpirun").string(), "--hostfile", (dir / "hosts").string(), "--deadline", "10",
                    "--results-dir", (dir / "out").string()},
                   dir, "run",
                   {{"RB_BINARY", std::filesystem::canonical(kBinary).string()},
                    {"RB_PORT", std::to_string(tcp::pick_free_port("127.0.0.1"))},
                    {"RB_RESULTS", (dir / "out" / "results.jsonl").string()},
                    {"RB_VICTIM", std::to_string(victim)}},
                   60);
  const RecordFile f = checked_results(dir / "out" / "results.jsonl");
  std::vector<json> lost;
  for (const auto& r : f.records) {
    if (r.value("event", "") == "rank.lost") lost.push_back(r);
  }
  return lost;
}
}  // namespace

// mpirun (or srun) exits non-zero when a rank is killed; rank 0 has recorded that loss by rank and
// host, and the launcher must not add one of its own for mpirun.
TEST(RunCommand, AnMpirunEndedByItsKilledRankIsNotALossOfItsOwn) {
  const path dir = rbtest::temp_dir("mpiecho");
  int rc = 0;
  const auto lost = run_under_mpirun_killing(1, dir, rc);
  EXPECT_EQ(rc, 3) << rbtest::slurp(dir / "run.err");
  ASSERT_EQ(lost.size(), 1u) << rbtest::slurp(dir / "out" / "results.jsonl");
  EXPECT_EQ(lost[0]["details"]["rank"], 1) << lost[0];
  EXPECT_NE(lost[0]["message"].get<std::string>().find("rank 1 on host"), std::string::npos) << lost[0];
}

// Rank 0, which records the others' losses, is the one killed: mpirun says which rank on which host,
// and the launcher records that (not a loss of mpirun itself).
TEST(RunCommand, ARankZeroKilledUnderMpirunIsRecordedByRankAndHost) {
  const path dir = rbtest::temp_dir("mpirank0");
  int rc = 0;
  const auto lost = run_under_mpirun_killing(0, dir, rc);
  EXPECT_EQ(rc, 3) << rbtest::slurp(dir / "run.err");
  ASSERT_EQ(lost.size(), 1u) << rbtest::slurp(dir / "out" / "results.jsonl");
  EXPECT_EQ(lost[0]["details"]["rank"], 0) << lost[0];
  EXPECT_EQ(lost[0]["details"]["host"], "node-0") << lost[0];
  EXPECT_EQ(lost[0]["details"]["ended"], "killed by SIGKILL") << lost[0];
  // What mpirun said still reaches the operator.
  EXPECT_NE(rbtest::slurp(dir / "run.err").find("mpirun noticed that process rank 0"), std::string::npos);
}

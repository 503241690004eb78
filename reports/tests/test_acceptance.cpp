// Cluster acceptance's pure parts: bisection, the node verdicts built from stage records, profiles.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "rocebench/reports/acceptance.hpp"
#include "rocebench/reports/accept_actions.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/reports/netcheck_verdict.hpp"

using namespace rocebench;
using namespace rocebench::reports::accept;

namespace {

// A group is slow when it holds one of the slow nodes; the groups asked for are kept.
struct Cluster {
  std::set<int> slow_nodes;
  std::vector<std::vector<int>> asked;
  bool operator()(const std::vector<int>& group) {
    asked.push_back(group);
    for (int h : group) {
      if (slow_nodes.count(h)) return true;
    }
    return false;
  }
};

}  // namespace

TEST(AcceptBisection, IsolatesEverySingleSlowNodeWithinLog2NPlusTwoRuns) {
  for (int n : {3, 4, 5, 8, 16, 128}) {
    const int bound = static_cast<int>(std::ceil(std::log2(n))) + 2;
    for (int bad = 0; bad < n; ++bad) {
      Cluster c{{bad}, {}};
      const Bisection b = bisect(n, std::ref(c));
      EXPECT_EQ(b.slow, std::vector<int>{bad}) << "n=" << n << " bad=" << bad;
      EXPECT_LE(b.runs, bound) << "n=" << n << " bad=" << bad;
      EXPECT_EQ(b.runs, static_cast<int>(c.asked.size()));
      for (const auto& g : c.asked) EXPECT_GE(g.size(), 2u) << "a collective needs two nodes";
    }
  }
}

TEST(AcceptBisection, TwoNodesCannotBeToldApart) {
  Cluster c{{1}, {}};
  EXPECT_TRUE(bisect(2, std::ref(c)).slow.empty());
  EXPECT_TRUE(c.asked.empty());
}

TEST(AcceptBisection, NamesNoNodeWhenOnlyTheWholeGroupIsSlow) {
  // Too many nodes for the network: every smaller group is fine, so no node is to blame.
  auto whole_only = [](const std::vector<int>& group) { return group.size() == 8; };
  EXPECT_TRUE(bisect(8, whole_only).slow.empty());
}

TEST(AcceptBisection, NamesNoNodeWhenEveryGroupIsSlow) {
  // A slow network, not a slow node: with no run ever fine there is no fine partner to judge against.
  EXPECT_TRUE(bisect(8, [](const std::vector<int>&) { return true; }).slow.empty());
}

TEST(AcceptBisection, ASlowRunThatDoesNotRepeatNamesNoNode) {
  // Node 5 is slow once (noise): its retest with a fine partner is not, so it is not failed.
  int slow_pairs_with_5 = 0;
  auto flaky = [&](const std::vector<int>& group) {
    const bool has5 = std::find(group.begin(), group.end(), 5) != group.end();
    if (group.size() == 2 && has5) return ++slow_pairs_with_5 == 1;
    return has5 && group.size() > 2;
  };
  EXPECT_TRUE(bisect(8, flaky).slow.empty());
  EXPECT_EQ(slow_pairs_with_5, 2);
}

json check(const std::string& host, const std::string& name, const std::string& status, json observed = 1) {
  return {{"kind", "check"}, {"host", host}, {"check", name}, {"subject", "mlx5_0/1"}, {"status", status},
          {"observed", observed}, {"expected", 2}, {"reason", "install mlnx-tools"}};
}

TEST(AcceptVerdicts, NetcheckFailureIsConfigAndUnverifiedIsItsOwnReason) {
  Verdicts v({"a", "b", "c", "d"});
  judge_netcheck(v, {check("a", "roce.pfc.enabled_priorities", "fail", json::array({4})), check("a", "host.kernel", "ok"),
                     check("b", "roce.trust.dscp", "unverified"), check("c", "roce.trust.dscp", "skip")},
                 {"a", "b", "c", "d"});
  const auto& n = v.nodes();
  ASSERT_EQ(n[0].findings.size(), 1u);
  EXPECT_EQ(n[0].findings[0].code, kConfig);
  EXPECT_NE(n[0].findings[0].evidence.find("roce.pfc.enabled_priorities mlx5_0/1: [4] (expected 2)"), std::string::npos);
  ASSERT_EQ(n[1].findings.size(), 1u);
  EXPECT_EQ(n[1].findings[0].code, kUnverified);
  EXPECT_TRUE(n[2].pass()) << "a host without RDMA keeps its skips";
  EXPECT_EQ(n[2].stages.at("netcheck"), "skip (1 checks: no RDMA device)");
  EXPECT_EQ(n[3].stages.at("netcheck"), "FAIL UNVERIFIED") << "no records: the stage gave no evidence of d";
  EXPECT_FALSE(v.pass());
}

// The acceptance's netcheck stage is netcheck's own verdict of the host: a warning passes and is counted as one.
TEST(AcceptVerdicts, NetcheckStageIsNetchecksVerdictAndCountsWarnings) {
  const std::vector<json> records = {check("a", "host.kernel", "ok"), check("a", "roce.tos", "warn"), check("a", "gpu.acs", "skip")};
  Verdicts v({"a"});
  judge_netcheck(v, records, {"a"});
  EXPECT_EQ(rocebench::reports::judge_netcheck_checks(records).hosts.at(0).verdict, "warn");
  EXPECT_TRUE(v.nodes()[0].pass());
  EXPECT_EQ(v.nodes()[0].stages.at("netcheck"), "ok (1 checks, 1 warned, 1 skipped)");
}

TEST(AcceptVerdicts, ASettingThatDiffersFromTheFleetIsConfig) {
  auto firmware = [](const std::string& host, const std::string& version) {
    return json{{"kind", "check"}, {"host", host}, {"check", "nic.firmware"}, {"subject", "mlx5_0"}, {"status", "ok"},
                {"observed", version}, {"expected", nullptr}};
  };
  Verdicts v({"a", "b", "c", "d"});
  json unread = firmware("a", "");
  unread["check"] = "host.driver";
  unread["observed"] = nullptr;  // one host's driver is known, three others' are not: nothing to compare
  auto on = [](json r, const std::string& host, json observed) {
    r["host"] = host;
    r["observed"] = observed;
    return r;
  };
  judge_netcheck(v, {firmware("a", "28.39.1002"), firmware("b", "28.39.1002"), firmware("c", "28.36.1010"), firmware("d", "28.39.1002"),
                     unread, on(unread, "b", "24.10"), on(unread, "c", nullptr), on(unread, "d", nullptr)},
                 {"a", "b", "c", "d"});
  EXPECT_TRUE(v.nodes()[0].pass());
  ASSERT_EQ(v.nodes()[2].findings.size(), 1u);
  EXPECT_EQ(v.nodes()[2].findings[0].evidence, "nic.firmware mlx5_0: 28.36.1010 differs from the fleet's 28.39.1002 (3 of 4 nodes)");
  Verdicts split({"a", "b"});
  judge_netcheck(split, {firmware("a", "1"), firmware("b", "2")}, {"a", "b"});
  EXPECT_TRUE(split.pass()) << "without a majority there is no fleet value to differ from";
}

json gemm(const std::string& host, double tflops, int gpu = 0) {
  return {{"kind", "result"}, {"step", "microbench.host"}, {"host", host}, {"status", "ok"},
          {"params", {{"benchmark", "gpu_gemm"}, {"type", "bf16"}, {"n", 8192}, {"gpu", gpu}}}, {"metrics", {{"TFLOP_per_s_median", tflops}}}};
}

TEST(AcceptVerdicts, GpuBelowTheFleetOrItsRatingIsGpuAndNoGpuIsASkipUnlessRequired) {
  Profile p = load_profile("auto");
  Verdicts v({"a", "b", "c", "d"});
  judge_gpu(v, {gemm("a", 700), gemm("b", 710), gemm("c", 520)}, {"a", "b", "c", "d"}, {{"d", "no GPU: cudaGetDeviceCount found none"}}, p);
  EXPECT_TRUE(v.nodes()[0].pass());
  EXPECT_EQ(v.nodes()[0].stages.at("gpu"), "ok (700 TFLOP/s)");
  ASSERT_EQ(v.nodes()[2].findings.size(), 1u);
  EXPECT_EQ(v.nodes()[2].findings[0].evidence, "GPU 0: GEMM bf16: 520 TFLOP/s, below 0.9 x the fleet's median 700");
  EXPECT_EQ(v.nodes()[3].stages.at("gpu"), "skip (no GPU)");

  p.gpu_required = true;
  p.gemm_tflops = 989;
  Verdicts rated({"a", "d"});
  judge_gpu(rated, {gemm("a", 700)}, {"a", "d"}, {{"d", "no GPU"}}, p);
  ASSERT_EQ(rated.nodes()[0].findings.size(), 1u);
  EXPECT_EQ(rated.nodes()[0].findings[0].evidence, "GPU 0: GEMM bf16: 700 TFLOP/s, below 0.9 x the rated 989");
  EXPECT_EQ(rated.nodes()[1].findings.at(0).code, kUnverified);
}

TEST(AcceptVerdicts, EveryGpuOfANodeIsJudgedAndTheVerdictNamesTheSlowOrFailedOne) {
  json failed = gemm("c", 0, 1);
  failed["status"] = "error";
  failed["reason"] = "cudaMalloc: out of memory";
  Verdicts v({"a", "b", "c"});
  judge_gpu(v, {gemm("a", 700, 0), gemm("a", 705, 1), gemm("b", 702, 0), gemm("b", 400, 1), gemm("c", 698, 0), failed},
            {"a", "b", "c"}, {}, load_profile("auto"));
  EXPECT_TRUE(v.nodes()[0].pass());
  EXPECT_EQ(v.nodes()[0].stages.at("gpu"), "ok (700–705 TFLOP/s on 2 GPUs)");
  ASSERT_EQ(v.nodes()[1].findings.size(), 1u);
  EXPECT_EQ(v.nodes()[1].findings[0].code, kGpu);
  EXPECT_EQ(v.nodes()[1].findings[0].evidence, "GPU 1: GEMM bf16: 400 TFLOP/s, below 0.9 x the fleet's median 700");
  ASSERT_EQ(v.nodes()[2].findings.size(), 1u);
  EXPECT_EQ(v.nodes()[2].findings[0].code, kGpu);
  EXPECT_EQ(v.nodes()[2].findings[0].evidence, "GPU 1: its benchmarks did not run: cudaMalloc: out of memory");
}

TEST(AcceptVerdicts, AGpuStageThatLeftNoRecordKeepsItsColumnAndPassesNoNode) {
  Verdicts v({"a", "b"});
  v.stage("a", "hosts", "ok");
  v.stage("b", "hosts", "ok");
  judge_gpu(v, {}, {"a", "b"}, {{"b", "no GPU: cudaGetDeviceCount found none"}}, load_profile("auto"));
  EXPECT_EQ(v.stages(), (std::vector<std::string>{"hosts", "gpu"}));
  EXPECT_EQ(v.nodes()[0].stages.at("gpu"), "FAIL UNVERIFIED") << "a has a GPU and no figure of it";
  EXPECT_EQ(v.nodes()[1].stages.at("gpu"), "skip (no GPU)");
  EXPECT_FALSE(v.pass());
}

// models.scaling's record at the full world, with each rank's figures as the step gathers them.
json training(const std::vector<std::pair<std::string, double>>& compute_images_per_s) {
  json per_rank = json::array();
  for (const auto& [host, ips] : compute_images_per_s) {
    per_rank.push_back({{"rank", per_rank.size()}, {"host", host}, {"images_per_s", 60}, {"compute_ms_p50", 16e3 / ips},
                        {"compute_images_per_s", ips}});
  }
  return {{"kind", "result"}, {"step", "models.scaling"}, {"status", "ok"}, {"world", per_rank.size()},
          {"params", {{"model", "resnet20_cifar"}, {"engine", "replay"}}}, {"metrics", {{"images_per_s", 240}}},
          {"samples", {{"per_rank", per_rank}}}};
}

TEST(AcceptVerdicts, TrainingBelowTheFleetsMedianIsTrainAndANodeWithoutAFigureUnverified) {
  const Profile p = load_profile("auto");
  Verdicts v({"a", "b", "c", "d", "e"});
  json smaller = training({{"a", 1}, {"b", 1}});  // a smaller world's record is not the one judged
  smaller["world"] = 2;
  judge_training(v, {smaller, training({{"a", 80}, {"b", 76}, {"c", 60}, {"d", 82}})}, {"a", "b", "c", "d", "e"}, p);
  EXPECT_TRUE(v.nodes()[0].pass());
  EXPECT_EQ(v.nodes()[1].stages.at("train"), "ok (76 images/s)");
  ASSERT_EQ(v.nodes()[2].findings.size(), 1u);
  EXPECT_EQ(v.nodes()[2].findings[0].code, kTrain);
  EXPECT_EQ(v.nodes()[2].findings[0].evidence,
            "resnet20_cifar replay batch 16 on 4 node(s): 60 images/s from its own compute (266.7 ms a step), 60 with the "
            "group's waits, below 0.8 x the fleet's median 78");
  ASSERT_EQ(v.nodes()[4].findings.size(), 1u);
  EXPECT_EQ(v.nodes()[4].findings[0].code, kUnverified);

  Verdicts lost({"a"});
  judge_training(lost, {}, {"a"}, p);
  EXPECT_EQ(lost.nodes()[0].findings.at(0).evidence, "the training run did not complete");
}

TEST(AcceptVerdicts, ASkippedTrainingRunIsASkipUnlessTheProfileRequiresAGpu) {
  json skipped = {{"kind", "result"}, {"step", "models.scaling"}, {"status", "skip"}, {"world", 2},
                  {"reason", "no GPU: cudaGetDeviceCount found none"}};
  Verdicts v({"a", "b"});
  judge_training(v, {skipped}, {"a", "b"}, load_profile("auto"));
  EXPECT_TRUE(v.pass());
  EXPECT_EQ(v.nodes()[1].stages.at("train"), "skip (no GPU)");
  Verdicts required({"a"});
  judge_training(required, {skipped}, {"a"}, load_profile("h100-sxm-400g"));
  EXPECT_EQ(required.nodes()[0].findings.at(0).code, kUnverified);
}

json pair(const std::string& src, const std::string& dst, double gbps, double retest = -1) {
  json r = {{"kind", "result"}, {"step", "microbench.allpairs"}, {"status", retest < 0 ? "ok" : "fail"},
            {"params", {{"src", src}, {"dst", dst}, {"transport", "tcp"}, {"test", "bw"}}}, {"metrics", {{"bw_avg_Gbps", gbps}}}};
  if (retest >= 0) r["metrics"]["retest_bw_avg_Gbps"] = retest;
  return r;
}

TEST(AcceptVerdicts, LinkNamesTheBadHostWithItsPairsAgainstTheBestPair) {
  std::vector<json> records = {pair("a", "b", 0.92), pair("a", "c", 0.90), pair("b", "c", 0.93),
                               pair("a", "x", 0.41, 0.43), pair("b", "x", 0.46, 0.44), pair("c", "x", 0.44, 0.45)};
  records.push_back({{"kind", "result"}, {"step", "microbench.allpairs"}, {"status", "fail"},
                     {"params", {{"summary", true}, {"bad_hosts", {"x"}}}}, {"metrics", {{"best_bw_avg_Gbps", 0.93}}}});
  Verdicts v({"a", "b", "c", "x"});
  judge_links(v, records, {"a", "b", "c", "x"}, load_profile("auto"));
  EXPECT_TRUE(v.nodes()[0].pass());
  ASSERT_EQ(v.nodes()[3].findings.size(), 1u);
  EXPECT_EQ(v.nodes()[3].findings[0].code, kLink);
  EXPECT_EQ(v.nodes()[3].findings[0].evidence, "bw over tcp, pairs with x: 0.41–0.46 Gb/s against the best pair's 0.93 Gb/s (b<->c; a pair below 80% of it is bad); retest 0.44");
  EXPECT_NEAR(median_pair_bandwidth(records), 0.68, 1e-12);
}

// The bad-link rule judges the recorded pairs again under the profile given: a looser fraction of the
// best pair clears x; a stricter one flags pairs the step never retested alone: UNVERIFIED, naming them.
TEST(AcceptVerdicts, LinksAreJudgedAgainUnderTheProfileAndAPairNeverRetestedIsUnverified) {
  std::vector<json> records = {pair("a", "b", 0.92), pair("a", "c", 0.90), pair("b", "c", 0.93),
                               pair("a", "x", 0.41, 0.43), pair("b", "x", 0.46, 0.44), pair("c", "x", 0.44, 0.45)};
  Profile loose = load_profile("auto");
  loose.link_fraction = 0.4;
  Verdicts v({"a", "b", "c", "x"});
  judge_links(v, records, {"a", "b", "c", "x"}, loose);
  EXPECT_TRUE(v.pass()) << verdict_table(v);
  Profile strict = load_profile("auto");
  strict.link_fraction = 0.99;
  Verdicts s({"a", "b", "c", "x"});
  judge_links(s, records, {"a", "b", "c", "x"}, strict);
  EXPECT_EQ(s.nodes()[3].findings.at(0).code, kLink) << verdict_table(s);
  for (std::size_t i = 0; i < 3; ++i) {
    ASSERT_EQ(s.nodes()[i].findings.size(), 1u) << verdict_table(s);
    EXPECT_EQ(s.nodes()[i].findings[0].code, kUnverified);
  }
  EXPECT_NE(s.nodes()[0].findings[0].evidence.find("the pair(s) a<->b, a<->c would be retested alone"), std::string::npos)
      << s.nodes()[0].findings[0].evidence;
}

// A node a stage ran on but whose records never came back (its name differs from the records', its
// records were lost) has no evidence: it fails, saying which stage gave none, and never passes.
TEST(AcceptVerdicts, ANodeWithoutEvidenceFromAStageThatRanOnItNeverPasses) {
  Verdicts v({"a", "d"});
  judge_netcheck(v, {check("a", "host.kernel", "ok")}, {"a", "d"});
  judge_links(v, {pair("a", "x", 0.9)}, {"a", "d"}, load_profile("auto"));
  judge_training(v, {training({{"a", 80}, {"x", 80}})}, {"a", "d"}, load_profile("auto"));
  EXPECT_TRUE(v.nodes()[0].pass());
  const NodeVerdict& d = v.nodes()[1];
  EXPECT_FALSE(d.pass());
  EXPECT_FALSE(v.pass());
  std::map<std::string, std::string> no_evidence;  // stage -> the finding's code
  for (const auto& f : d.findings) no_evidence[f.stage] = f.code;
  EXPECT_EQ(no_evidence, (std::map<std::string, std::string>{{"links", kUnverified}, {"netcheck", kUnverified}, {"train", kUnverified}}));
  EXPECT_EQ(d.stages.at("netcheck"), "FAIL UNVERIFIED") << "the stage's cell shows it, never an empty cell";
  EXPECT_EQ(d.findings.front().evidence, "the netcheck stage gave no evidence of this node: none of its records names it");
  EXPECT_NE(verdict_table(v).find("d     FAIL UNVERIFIED"), std::string::npos) << verdict_table(v);

  Verdicts none({"a", "b"});  // a link matrix that measured no pair at all
  judge_links(none, {}, {"a", "b"}, load_profile("auto"));
  EXPECT_FALSE(none.pass());
  EXPECT_EQ(none.stages(), std::vector<std::string>{"links"}) << "the stage's column stays";
}

TEST(AcceptVerdicts, RenderedOncePerHostAndStage) {
  Verdicts v({"a", "b"});
  v.stage("a", "hosts", "ok");
  v.fail("b", {kUnreachable, "hosts", "lost: exit 3"});
  const std::string table = verdict_table(v);
  EXPECT_NE(table.find("b     FAIL UNREACHABLE  FAIL UNREACHABLE"), std::string::npos) << table;
  EXPECT_NE(table.find("cluster: FAIL, 1 of 2 nodes fail"), std::string::npos) << table;
  const std::string junit = verdict_junit(v);
  EXPECT_NE(junit.find("<testsuite name=\"rocebench.host.a\" tests=\"1\" failures=\"0\""), std::string::npos) << junit;
  EXPECT_NE(junit.find("<testsuite name=\"rocebench.host.b\" tests=\"1\" failures=\"1\""), std::string::npos) << junit;
  EXPECT_EQ(verdict_json(v)["cluster"], "FAIL");
  v.fail_cluster({kSlow, "allreduce", "no single node"});
  const auto sections = verdict_sections(v);
  ASSERT_EQ(sections.size(), 2u);
  EXPECT_EQ(sections[0].tables.at(0).rows.at(1).at(1).mark, reports::Mark::bad);
  EXPECT_EQ(sections[0].tables.at(0).rows.at(0).at(1).text, "PASS");
  EXPECT_EQ(sections[1].notes.at(0), "cluster SLOW (allreduce): no single node");
}

namespace {

// A profile file with `text` is refused with an error that contains `expected`.
void expect_profile_refused(const std::string& file, const std::string& text, const std::string& expected) {
  std::ofstream(file) << text;
  try {
    load_profile(file);
    FAIL() << "accepted: " << text;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

}  // namespace

TEST(AcceptProfile, BuiltinAutoLoadsAndUnknownKeysNameFileAndLine) {
  const Profile p = load_profile("auto");
  EXPECT_EQ(p.file, "builtin:auto");
  EXPECT_DOUBLE_EQ(p.busbw_fraction, 0.7);
  for (const auto& name : builtin_profiles()) EXPECT_NO_THROW(load_profile(name)) << name;
  EXPECT_DOUBLE_EQ(load_profile("h100-sxm-400g").gemm_tflops, 989);
  const std::string file = ::testing::TempDir() + "profile.json";
  expect_profile_refused(file, "{\n  \"name\": \"x\",\n  \"allreduce\": {\"busbw_fraction\": 0.9}\n}\n",
                         file + ":3: field 'allreduce.busbw_fraction'");
}

TEST(AcceptProfile, TheTransportChoosesTheLinkProbeAndAnUnknownOneIsRefusedByField) {
  EXPECT_EQ(link_probe_test(load_profile("auto")), "bw");
  const Profile rdma = load_profile("h100-sxm-400g");
  EXPECT_EQ(rdma.transport, "verbs");
  EXPECT_EQ(link_probe_test(rdma), "write_bw");
  const std::string file = ::testing::TempDir() + "profile-transport.json";
  std::ofstream(file) << "{\"name\": \"x\", \"transport\": \"verbs\", \"link\": {\"test\": \"lat\"}}\n";
  EXPECT_EQ(link_probe_test(load_profile(file)), "write_lat");
  expect_profile_refused(file, "{\"name\": \"x\",\n \"transport\": \"rdma\"}\n", file + ":2: field 'transport'");
}

// ---- what accept saw: accept.jsonl ----------------------------------------------------------

namespace {

// ctest runs each test in its own process, two at once: a file a test writes carries the test's name.
std::string this_test() { return ::testing::UnitTest::GetInstance()->current_test_info()->name(); }

// Writes an acceptance's folder as accept writes it: accept.jsonl and each run's results.jsonl.
std::filesystem::path write_acceptance(const std::vector<Node>& nodes, const Profile& profile, const std::vector<StageRun>& runs,
                                       bool finished = true, bool quick = false) {
  static int count = 0;
  const std::filesystem::path dir = std::filesystem::path(::testing::TempDir()) / (this_test() + "-acceptance-" + std::to_string(++count));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  RecordWriter log(dir / kAcceptRecords);
  log.append(start_record(dir.filename().string(), nodes, profile, quick));
  for (const auto& s : runs) {
    log.append(stage_record(dir.filename().string(), s));
    std::filesystem::create_directories(dir / s.folder);
    RecordWriter results(dir / s.folder / "results.jsonl");
    for (const auto& r : s.records) results.append(r);
  }
  if (finished) log.append(end_record(dir.filename().string(), runs.size(), 1.5));
  return dir;
}

StageRun stage_run(const std::string& stage, const std::string& label, int number, const std::vector<Node>& group, int exit_code,
                   std::vector<json> records = {}, const std::string& lost = "") {
  return {stage, label, fmt::format("stages/{:02}-{}", number, label), group, exit_code, lost, std::move(records)};
}

}  // namespace

TEST(AcceptRecords, EachStageRunIsAnEventRecordOfTheSchemaAndReadsBackWithItsRecords) {
  const std::vector<Node> nodes{{"ns0", "host0"}, {"ns1", "host1"}};
  const Profile profile = load_profile("auto");
  const json lost = event_record("r", "rank.lost", "rank 1 (host1) lost: no heartbeat for 20 s");
  const std::vector<StageRun> runs{stage_run("hosts", "hosts", 1, nodes, 3, {lost}, "rank 1 (host1) lost: no heartbeat for 20 s"),
                                   stage_run("hosts", "hosts-ns0", 2, {nodes[0]}, 0)};
  const auto dir = write_acceptance(nodes, profile, runs);
  const RecordFile f = read_records(dir / kAcceptRecords, &result_schema());
  EXPECT_TRUE(f.issues.empty()) << f.issues.front().message;
  ASSERT_EQ(f.records.size(), 4u);
  EXPECT_EQ(f.records[1]["message"], "hosts on 2 node(s): exit 3; rank 1 (host1) lost: no heartbeat for 20 s");

  const Acceptance a = load_acceptance(dir);
  EXPECT_EQ(a.nodes, nodes);
  EXPECT_TRUE(a.finished);
  EXPECT_EQ(a.profile_file, "builtin:auto");
  EXPECT_DOUBLE_EQ(profile_from_document(a.profile, a.profile_file).busbw_fraction, 0.7);
  ASSERT_EQ(a.runs.size(), 2u);
  EXPECT_EQ(a.runs[0].lost, "rank 1 (host1) lost: no heartbeat for 20 s");
  EXPECT_FALSE(a.runs[0].completed());
  EXPECT_EQ(a.runs[0].records.size(), 1u);
  EXPECT_EQ(a.runs[1].group, std::vector<Node>{nodes[0]});
  EXPECT_TRUE(a.runs[1].completed());
}

TEST(AcceptRecords, AFolderThatIsNotAnAcceptanceOrARecordAcceptDidNotWriteIsRefusedByFileAndLine) {
  const auto empty = std::filesystem::path(::testing::TempDir()) / "not-an-acceptance";
  std::filesystem::create_directories(empty);
  EXPECT_THROW(load_acceptance(empty), InputError);
  const auto dir = write_acceptance({{"a", "a"}}, load_profile("auto"), {});
  std::ofstream(dir / kAcceptRecords, std::ios::app) << event_record("x", "accept.stage", "m", {{"stage", "links"}}).dump() << "\n";
  try {
    load_acceptance(dir);
    FAIL() << "a record after accept.end was read";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(kAcceptRecords + std::string(":3")), std::string::npos) << e.what();
  }
}

// ---- the acceptance judged again from its records ------------------------------------------

namespace {

json allreduce_record(double Gbps) {
  return {{"kind", "result"}, {"step", "collectives.allreduce"}, {"status", "ok"}, {"params", {{"transport", "tcp"}}},
          {"metrics", {{"busbw_GBps", Gbps / 8}}}};
}

// Four nodes, none with a GPU, every pair at 1 Gb/s; an allreduce with d in it runs at 0.5 Gb/s, the
// others at 1. The allreduce runs are the ones the search asked for under `profile`, as accept makes them.
std::vector<StageRun> fleet_with_slow_d(const std::vector<Node>& nodes, const Profile& profile) {
  json run = {{"kind", "run"}, {"hosts", json::array()}};
  std::vector<json> hosts;
  for (const auto& n : nodes) {
    run["hosts"].push_back({{"hostname", n.host}, {"gpu", {{"devices", json::array()}, {"reason", "no GPU: no driver"}}}});
    hosts.push_back(check(n.host, "host.kernel", "ok"));
  }
  hosts.push_back(run);
  std::vector<json> links;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    for (std::size_t j = i + 1; j < nodes.size(); ++j) links.push_back(pair(nodes[i].host, nodes[j].host, 1.0));
  }
  std::vector<StageRun> runs{stage_run("hosts", "hosts", 1, nodes, 0, hosts), stage_run("links", "links", 2, nodes, 0, links)};
  Acceptance so_far{"r", nodes, "", {}, runs, false, ""};
  allreduce_search(nodes, allreduce_threshold(profile, so_far), [&](const std::string& label, const std::vector<Node>& g) {
    const bool with_d = std::find(g.begin(), g.end(), nodes.back()) != g.end();
    runs.push_back(stage_run("allreduce", label, static_cast<int>(runs.size()) + 1, g, 0, {allreduce_record(with_d ? 0.5 : 1.0)}));
    return std::optional<double>(with_d ? 0.5 : 1.0);
  });
  std::vector<std::pair<std::string, double>> per_rank;
  for (const auto& n : nodes) per_rank.emplace_back(n.host, 80);
  runs.push_back(stage_run("train", "train", static_cast<int>(runs.size()) + 1, nodes, 0, {training(per_rank)}));
  return runs;
}

Profile profile_file(const std::string& text) {
  static int count = 0;
  const std::string file = ::testing::TempDir() + this_test() + "-profile-" + std::to_string(++count) + ".json";
  std::ofstream(file) << text;
  return load_profile(file);
}

std::map<std::string, std::string> allreduce_cells(const Verdicts& v) {
  std::map<std::string, std::string> out;
  for (const auto& n : v.nodes()) out[n.host] = n.stages.count("allreduce") ? n.stages.at("allreduce") : "—";
  return out;
}

}  // namespace

TEST(AcceptJudge, TheRecordsJudgedUnderTheirProfileGiveTheVerdictAcceptGave) {
  const std::vector<Node> nodes{{"a", "a"}, {"b", "b"}, {"c", "c"}, {"d", "d"}};
  const Profile profile = load_profile("auto");
  const auto dir = write_acceptance(nodes, profile, fleet_with_slow_d(nodes, profile));
  const Acceptance a = load_acceptance(dir);
  EXPECT_EQ(reachable_nodes(a), nodes);
  EXPECT_EQ(nodes_without_gpu(a).size(), 4u);
  const AllreduceThreshold t = allreduce_threshold(profile, a);
  EXPECT_DOUBLE_EQ(t.Gbps, 0.7);
  EXPECT_TRUE(group_slow(0.5, t));
  const Verdicts v = judge_acceptance(a, profile_from_document(a.profile, a.profile_file));
  EXPECT_EQ(v.stages(), (std::vector<std::string>{"hosts", "netcheck", "links", "allreduce", "gpu", "train"}));
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(v.nodes()[static_cast<std::size_t>(i)].pass()) << verdict_table(v);
  ASSERT_EQ(v.nodes()[3].findings.size(), 1u) << verdict_table(v);
  EXPECT_EQ(v.nodes()[3].findings[0].code, kSlow);
  EXPECT_NE(v.nodes()[3].findings[0].evidence.find("against 0.700 (0.7 x the median pair's 1.000): all 4 0.500 slow; all 4 0.500 slow"),
            std::string::npos) << v.nodes()[3].findings[0].evidence;
  EXPECT_EQ(allreduce_cells(v)["a"], "ok (1.000 Gb/s busbw)");
  // The figures each node was judged by (what --metrics exports): d's busbw is its slow group's.
  EXPECT_DOUBLE_EQ(v.nodes()[0].figures.at(kBusbwGbps), 1.0);
  EXPECT_DOUBLE_EQ(v.nodes()[3].figures.at(kBusbwGbps), 0.5);
  EXPECT_GT(v.nodes()[0].figures.at(kPairGbps), 0);
  EXPECT_EQ(verdict_table(v), verdict_table(judge_acceptance(a, profile))) << "the recorded profile is the one it ran under";
}

TEST(AcceptJudge, AnotherProfileReplaysTheRecordedRunsAndNeverGuessesARunThatWasNotMade) {
  const std::vector<Node> nodes{{"a", "a"}, {"b", "b"}, {"c", "c"}, {"d", "d"}};
  const Acceptance a = load_acceptance(write_acceptance(nodes, load_profile("auto"), fleet_with_slow_d(nodes, load_profile("auto"))));
  // A looser threshold: the whole group's 0.5 Gb/s passes, on the group's first run.
  const Verdicts loose = judge_acceptance(a, profile_file(R"({"allreduce": {"busbw_fraction_of_median_pair": 0.4}})"));
  EXPECT_TRUE(loose.pass()) << verdict_table(loose);
  EXPECT_EQ(allreduce_cells(loose)["d"], "ok (0.500 Gb/s busbw)");
  // A rated link every run falls short of: the bisection asks for a pair accept never ran.
  const Verdicts rated = judge_acceptance(a, profile_file(R"({"allreduce": {"rated_link_Gbps": 10, "busbw_fraction_of_rated": 0.85}})"));
  for (const auto& n : rated.nodes()) {
    ASSERT_EQ(n.findings.size(), 1u) << verdict_table(rated);
    EXPECT_EQ(n.findings[0].code, kUnverified);
    EXPECT_NE(n.findings[0].evidence.find("needs a run this acceptance did not make: bisect-2 on b+c"), std::string::npos)
        << n.findings[0].evidence;
  }
}

TEST(AcceptJudge, AProfileOfAnotherTransportOrLinkProbeFindsNoEvidenceInTheLinksAndAllreduce) {
  const std::vector<Node> nodes{{"a", "a"}, {"b", "b"}, {"c", "c"}, {"d", "d"}};
  const Acceptance a = load_acceptance(write_acceptance(nodes, load_profile("auto"), fleet_with_slow_d(nodes, load_profile("auto"))));
  const Profile verbs = profile_file(R"({"transport": "verbs"})");
  const Verdicts over_verbs = judge_acceptance(a, verbs);
  for (const auto& n : over_verbs.nodes()) {
    ASSERT_EQ(n.findings.size(), 2u) << verdict_table(over_verbs);
    for (const auto& f : n.findings) {
      EXPECT_EQ(f.code, kUnverified);
      EXPECT_NE(f.evidence.find("measured over tcp, and profile " + verbs.file + " accepts over verbs"), std::string::npos) << f.evidence;
    }
    EXPECT_EQ(n.findings[0].stage, "links");
    EXPECT_EQ(n.findings[1].stage, "allreduce");
  }
  const Verdicts by_latency = judge_acceptance(a, profile_file(R"({"link": {"test": "lat"}})"));
  for (const auto& n : by_latency.nodes()) {
    ASSERT_FALSE(n.findings.empty()) << verdict_table(by_latency);
    EXPECT_EQ(n.findings[0].stage, "links");
    EXPECT_NE(n.findings[0].evidence.find("measured with the bw probe"), std::string::npos) << n.findings[0].evidence;
  }
}

TEST(AcceptJudge, UnreachableNodesComeFromTheirRunsAloneAndAnUnfinishedAcceptanceIsNotAPass) {
  const std::vector<Node> nodes{{"a", "a"}, {"b", "b"}};
  const json run = {{"kind", "run"}, {"hosts", {{{"hostname", "a"}, {"gpu", {{"devices", json::array()}, {"reason", "no GPU"}}}}}}};
  const std::vector<StageRun> runs{stage_run("hosts", "hosts", 1, nodes, 3),
                                   stage_run("hosts", "hosts-a", 2, {nodes[0]}, 0, {run, check("a", "host.kernel", "ok")}),
                                   stage_run("hosts", "hosts-b", 3, {nodes[1]}, 3, {}, "rank 0 (b) lost: no heartbeat"),
                                   stage_run("train", "train", 4, {nodes[0]}, 0, {training({{"a", 80}})})};
  const Acceptance a = load_acceptance(write_acceptance(nodes, load_profile("auto"), runs));
  EXPECT_EQ(reachable_nodes(a), std::vector<Node>{nodes[0]});
  const Verdicts v = judge_acceptance(a, load_profile("auto"));
  EXPECT_TRUE(v.nodes()[0].pass()) << verdict_table(v);
  ASSERT_EQ(v.nodes()[1].findings.size(), 1u);
  EXPECT_EQ(v.nodes()[1].findings[0].code, kUnreachable);
  EXPECT_EQ(v.nodes()[1].findings[0].evidence, "failed with the others and alone: rank 0 (b) lost: no heartbeat");

  const Acceptance cut = load_acceptance(write_acceptance(nodes, load_profile("auto"), {runs[0], runs[1]}, false));
  const Verdicts c = judge_acceptance(cut, load_profile("auto"));
  EXPECT_EQ(c.nodes()[1].findings.at(0).code, kUnverified) << "b's run alone was never recorded";
  ASSERT_EQ(c.cluster_findings().size(), 1u);
  EXPECT_EQ(c.cluster_findings()[0].code, kUnverified);
  EXPECT_FALSE(c.pass());
}

// accept --quick (a health check between jobs) runs no allreduce and no training: the judge leaves
// them out instead of calling every node UNVERIFIED, as it must when a full acceptance lacks them.
TEST(AcceptJudge, AQuickAcceptanceLeavesAllreduceAndTrainingOutAndAFullOneCannot) {
  const std::vector<Node> nodes{{"a", "a"}, {"b", "b"}, {"c", "c"}, {"d", "d"}};
  const Profile profile = load_profile("auto");
  std::vector<StageRun> runs = fleet_with_slow_d(nodes, profile);
  runs.resize(2);  // hosts and links only
  runs[1].records = {pair("a", "b", 1.0), pair("b", "c", 1.0), pair("c", "d", 1.0), pair("d", "a", 1.0)};  // ring neighbours
  const Acceptance quick = load_acceptance(write_acceptance(nodes, profile, runs, true, true));
  EXPECT_TRUE(quick.quick);
  EXPECT_DOUBLE_EQ(quick.elapsed_s, 1.5);
  const Verdicts q = judge_acceptance(quick, profile);
  EXPECT_TRUE(q.pass()) << verdict_table(q);
  EXPECT_EQ(q.stages(), (std::vector<std::string>{"hosts", "netcheck", "links", "gpu"}));

  const Acceptance full = load_acceptance(write_acceptance(nodes, profile, runs));
  EXPECT_FALSE(full.quick);
  const Verdicts f = judge_acceptance(full, profile);
  for (const auto& n : f.nodes()) {
    ASSERT_FALSE(n.pass()) << verdict_table(f);
    EXPECT_EQ(n.findings.back().code, kUnverified) << verdict_table(f);
  }
}

namespace {

// The lossless stage's microbench.incast records over tcp, as the step writes them: every node the
// receiver once; a sender resends 40 of its 20,000 segments on a pair with `lossy` in it; the receiver
// `stalled`'s 100 ms goodput p1 is a tenth of its p50.
StageRun incast_stage(const std::vector<Node>& nodes, int number, const std::string& lossy, const std::string& stalled = "") {
  std::vector<json> records;
  const json series = {{"transport", "tcp"}, {"test", "bw"}, {"bytes", 65536}};
  for (const auto& receiver : nodes) {
    json params = series;
    params["receiver"] = receiver.host;
    records.push_back({{"kind", "result"}, {"step", "microbench.incast"}, {"status", "ok"}, {"host", nodes[0].host}, {"params", params},
                       {"metrics", {{"interval_goodput_Gbps_p1", receiver.host == stalled ? 0.05 : 0.45}, {"interval_goodput_Gbps_p50", 0.5}}}});
    for (const auto& n : nodes) {
      params["role"] = n == receiver ? "receiver" : "sender";
      const bool resent = n != receiver && (n.host == lossy || receiver.host == lossy);
      records.push_back({{"kind", "result"}, {"step", "microbench.incast"}, {"status", "ok"}, {"host", n.host}, {"params", params},
                         {"metrics", {{"tcp_RetransSegs", resent ? 40 : 0}, {"tcp_OutSegs", 20000}}}});
    }
  }
  return stage_run("lossless", "lossless", number, nodes, 0, records);
}

}  // namespace

TEST(AcceptJudge, WhereTheProfileAsksLosslessTheNodeWhoseLinkLosesIsLossyAndAStallOnlyWarns) {
  const std::vector<Node> nodes{{"a", "a"}, {"b", "b"}, {"c", "c"}, {"d", "d"}};
  const Profile lossless = profile_file(R"({"lossless": {"duration_s": 1}, "allreduce": {"busbw_fraction_of_median_pair": 0.4}})");
  EXPECT_TRUE(lossless.lossless);
  EXPECT_FALSE(load_profile("auto").lossless);
  EXPECT_TRUE(load_profile("h100-sxm-400g").lossless);
  EXPECT_DOUBLE_EQ(profile_file(R"({"lossless": {"pause_share": 0.2, "off_pfc_share": 0.05}})").lossless_rule.off_pfc_share, 0.05);
  std::vector<StageRun> runs = fleet_with_slow_d(nodes, lossless);
  runs.push_back(incast_stage(nodes, static_cast<int>(runs.size()) + 1, "c", "b"));
  const Acceptance a = load_acceptance(write_acceptance(nodes, lossless, runs));
  const Verdicts v = judge_acceptance(a, lossless);
  EXPECT_EQ(v.stages(), (std::vector<std::string>{"hosts", "netcheck", "links", "lossless", "allreduce", "gpu", "train"}));
  const auto& c = v.nodes()[2];
  ASSERT_EQ(c.findings.size(), 1u) << verdict_table(v);
  EXPECT_EQ(c.findings[0].code, kLossy);
  EXPECT_NE(c.findings[0].evidence.find("c: tcp_RetransSegs rose by 40 of 20000 tcp_OutSegs while c sent to a"), std::string::npos)
      << c.findings[0].evidence;
  // b stalled as a receiver: a warning, and b passes.
  const auto& b = v.nodes()[1];
  EXPECT_TRUE(b.pass()) << verdict_table(v);
  ASSERT_EQ(b.warnings.size(), 1u) << verdict_table(v);
  EXPECT_EQ(b.warnings[0].code, kCongested);
  EXPECT_EQ(b.stages.at("lossless"), "warn CONGESTED");
  EXPECT_NE(verdict_table(v).find("b warn CONGESTED (lossless): b as receiver: 100 ms goodput p1 0.050 Gb/s"), std::string::npos)
      << verdict_table(v);
  EXPECT_EQ(v.nodes()[0].stages.at("lossless"), "ok (no loss)");
  EXPECT_DOUBLE_EQ(c.figures.at(kLossResent), 120);  // 40 to each of 3 receivers
  EXPECT_DOUBLE_EQ(v.nodes()[0].figures.at(kLossResent), 40);  // to c
  const std::string metrics = prometheus_metrics(v, stamp_of(a, 24));
  EXPECT_NE(metrics.find("rocebench_accept_lossless_resent{node=\"c\",run="), std::string::npos) << metrics;
  EXPECT_NE(metrics.find("rocebench_accept_warning{node=\"b\",run=\"" + a.run + "\",code=\"CONGESTED\",stage=\"lossless\""), std::string::npos)
      << metrics;
  // Each node's PFC priorities, as its netcheck read them, for the judge of priorities.
  EXPECT_EQ(reports::pfc_priorities({check("a", "roce.pfc.enabled_priorities", "ok", json::array({3, 4})), check("b", "link.mtu", "ok", 9000)}),
            (reports::PfcPriorities{{"a", {3, 4}}}));
  // Without the stage's records, the profile that asks it finds no evidence; the one that does not, no column.
  runs.pop_back();
  const Acceptance without = load_acceptance(write_acceptance(nodes, lossless, runs));
  const Verdicts unverified = judge_acceptance(without, lossless);
  for (const auto& n : unverified.nodes()) {
    ASSERT_FALSE(n.findings.empty());
    EXPECT_EQ(n.findings[0].code, kUnverified);
    EXPECT_EQ(n.findings[0].stage, "lossless");
  }
  const Verdicts by_auto = judge_acceptance(without, load_profile("auto"));
  EXPECT_EQ(std::count(by_auto.stages().begin(), by_auto.stages().end(), "lossless"), 0);
}

#include <gtest/gtest.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/reports/accept_actions.hpp"

using namespace rocebench;
using namespace rocebench::reports::accept;

namespace {

Verdicts one_pass_one_fail(const std::string& evidence) {
  Verdicts v({"Node-A", "b"});
  v.stage("Node-A", "links", "ok");
  v.stage("b", "links", "FAIL");
  v.fail("b", {kLink, "links", evidence});
  v.fail("b", {kSlow, "allreduce", "isolated"});
  v.fail("b", {kLink, "links", "again"});
  return v;
}

std::size_t count(const std::string& text, const std::string& what) {
  std::size_t n = 0;
  for (auto at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST(AcceptActions, ALabelValueIsShortenedNeverInvalid) {
  EXPECT_EQ(label_value("LINK: 0.43 Gb/s vs median 0.92"), "LINK_0.43_Gb_s_vs_median_0.92");
  EXPECT_EQ(label_value("  (x) "), "x");
  EXPECT_EQ(label_value("—"), "");
  EXPECT_TRUE(valid_label_value(""));
  const std::string long_text = "UNVERIFIED: against 0.850 Gb/s (0.85 x the rated 1 Gb/s link), the search needs a run: allreduce-retry on a+b+c";
  const std::string v = label_value(long_text);
  EXPECT_LE(v.size(), kLabelValueMax);
  EXPECT_TRUE(valid_label_value(v)) << v;
  EXPECT_EQ(v.rfind("UNVERIFIED_against_0.850_Gb_s", 0), 0u) << v;
  EXPECT_TRUE(valid_label_value(label_value(std::string(62, 'a') + "._x"))) << "a cut that ends on a separator drops it";
  EXPECT_FALSE(valid_label_value("-a"));
  EXPECT_FALSE(valid_label_value("a:b"));
  EXPECT_FALSE(valid_label_value(std::string(64, 'a')));
}

TEST(AcceptActions, TheManifestLabelsEveryNodeAndTaintsOnlyTheFailedOne) {
  const Stamp s{"accept-20261203", "2026-12-03T22:47:52.123456Z", 24};
  EXPECT_EQ(s.unix_s(), 1796338072);
  const std::string m = k8s_manifest(one_pass_one_fail("pairs 0.43 Gb/s vs median \"0.92\"\nmore"), s);
  EXPECT_EQ(count(m, "kind: Node"), 2u) << m;
  EXPECT_NE(m.find("  name: \"node-a\"\n"), std::string::npos) << "Kubernetes names nodes in lowercase\n" << m;
  EXPECT_NE(m.find("\"rocebench.io/accept\": \"pass\""), std::string::npos) << m;
  EXPECT_NE(m.find("\"rocebench.io/accept-reasons\": \"LINK.SLOW\""), std::string::npos) << "each code once\n" << m;
  EXPECT_NE(m.find("\"rocebench.io/accept-reason\": \"LINK_pairs_0.43_Gb_s_vs_median_0.92_more\""), std::string::npos) << m;
  EXPECT_NE(m.find("\"rocebench.io/accept-time\": \"20261203T224752Z\""), std::string::npos) << m;
  EXPECT_NE(m.find("\"rocebench.io/accept-valid-until\": \"20261204T224752Z\""), std::string::npos) << m;
  EXPECT_NE(m.find("LINK (links): pairs 0.43 Gb/s vs median \\\"0.92\\\"\\nmore; SLOW"), std::string::npos) << "evidence whole, escaped\n" << m;
  EXPECT_EQ(count(m, "effect: \"NoSchedule\""), 1u) << m;
  EXPECT_GT(m.find("effect"), m.find("name: \"b\"")) << "the taint is b's";

  const std::string c = k8s_commands(one_pass_one_fail("x 'quoted'"), s);
  EXPECT_NE(c.find("kubectl label node --overwrite node-a rocebench.io/accept=pass rocebench.io/accept-reasons=none"), std::string::npos) << c;
  EXPECT_NE(c.find("kubectl taint node node-a rocebench.io/accept:NoSchedule-\n"), std::string::npos) << c;
  EXPECT_NE(c.find("kubectl taint node --overwrite b rocebench.io/accept=fail:NoSchedule\n"), std::string::npos) << c;
  EXPECT_NE(c.find("'rocebench.io/accept-evidence=LINK (links): x '\\''quoted'\\''; "), std::string::npos) << c;
}

TEST(AcceptActions, AStartTimeIsReadAsRfc3339) {
  EXPECT_THROW((Stamp{"r", "yesterday", 24}.unix_s()), InputError);
  EXPECT_THROW((Stamp{"r", "", 24}.unix_s()), InputError);
  EXPECT_EQ((Stamp{"r", "2026-12-03T23:47:52+01:00", 24}.unix_s()), 1796338072);
}

TEST(AcceptActions, PrometheusGetsEachNodesVerdictReasonsAndFigures) {
  Verdicts v = one_pass_one_fail("pairs 0.43 Gb/s vs median \"0.92\"");
  v.figure("Node-A", kPairGbps, 0.92);
  v.figure("b", kPairGbps, 0.43);
  v.figure("b", kImagesPerS, 80.5);
  const std::string m = prometheus_metrics(v, {"r1", "2026-12-03T22:47:52Z", 2});
  EXPECT_NE(m.find("rocebench_accept_pass{node=\"Node-A\",run=\"r1\"} 1\n"), std::string::npos) << m;
  EXPECT_NE(m.find("rocebench_accept_pass{node=\"b\",run=\"r1\"} 0\n"), std::string::npos) << m;
  EXPECT_NE(m.find("rocebench_accept_reason{node=\"b\",run=\"r1\",code=\"LINK\",stage=\"links\",evidence=\"pairs 0.43 Gb/s vs median "
                   "\\\"0.92\\\"\"} 1\n"), std::string::npos) << m;
  EXPECT_EQ(count(m, "rocebench_accept_reason{"), 3u) << "LINK, SLOW, and LINK's other evidence\n" << m;
  EXPECT_NE(m.find("rocebench_accept_pair_Gbps{node=\"b\",run=\"r1\"} 0.42999999999999999\n"), std::string::npos) << m;
  EXPECT_EQ(count(m, "# TYPE rocebench_accept_train_images_per_second gauge"), 1u) << m;
  EXPECT_EQ(count(m, "rocebench_accept_allreduce_busbw_Gbps"), 0u) << "no figure, no family\n" << m;
  EXPECT_NE(m.find("rocebench_accept_valid_until_seconds{node=\"b\",run=\"r1\"} 1796345272\n"), std::string::npos) << m;
  // What a node's NIC counted per priority under incast: one family each, the priority a label.
  v.figure("b", priority_figure(kPriorityBytes, 0), 36000000);
  v.figure("b", priority_figure(kPriorityBytes, 3), 4000);
  v.figure("b", priority_figure(kPriorityPaused, 3), 0.006);
  const std::string p = prometheus_metrics(v, {"r1", "2026-12-03T22:47:52Z", 2});
  EXPECT_NE(p.find("rocebench_accept_lossless_priority_bytes{node=\"b\",run=\"r1\",priority=\"0\"} 36000000\n"), std::string::npos) << p;
  EXPECT_NE(p.find("rocebench_accept_lossless_priority_bytes{node=\"b\",run=\"r1\",priority=\"3\"} 4000\n"), std::string::npos) << p;
  EXPECT_NE(p.find("rocebench_accept_lossless_priority_paused_seconds{node=\"b\",run=\"r1\",priority=\"3\"} 0.0060000000000000001\n"),
            std::string::npos) << p;
  EXPECT_EQ(count(p, "# TYPE rocebench_accept_lossless_priority_bytes gauge"), 1u) << p;
  EXPECT_EQ(count(p, "lossless_priority_bytes/"), 0u) << "the figure's own name is not a metric's\n" << p;
}

TEST(AcceptActions, SlurmDrainsTheFailedResumesItsOwnAndLeavesOthersDrainsAlone) {
  Verdicts v({"a", "b", "c", "d"});
  v.fail("b", {kLink, "links", "pairs with b: 0.43 Gb/s against the best pair's 0.92 Gb/s " + std::string(200, 'x')});
  v.fail("d", {kGpu, "gpu", "GPU 1 slow"});
  // a: drained by rocebench earlier, passes now; c: drained by an admin, passes; d: drained by an admin, fails.
  const std::map<std::string, std::string> drained{{"a", "rocebench LINK: old"}, {"c", "bad fan"}, {"d", "RMA"}};
  const auto actions = slurm_actions(v, true, true, drained);
  ASSERT_EQ(actions.size(), 4u);
  EXPECT_EQ(actions[0].argv, (std::vector<std::string>{"scontrol", "update", "nodename=a", "state=resume"}));
  ASSERT_EQ(actions[1].argv.size(), 5u);
  EXPECT_EQ(actions[1].argv[3], "state=drain");
  const std::string reason = actions[1].argv[4];
  EXPECT_EQ(reason.rfind("reason=rocebench LINK: pairs with b: 0.43 Gb/s against the best pair's 0.92 Gb/s", 0), 0u) << reason;
  EXPECT_EQ(reason.size(), std::string("reason=").size() + kSlurmReasonMax) << reason;
  EXPECT_TRUE(actions[2].argv.empty()) << "c was drained by someone else: not resumed";
  EXPECT_TRUE(actions[3].argv.empty()) << "d's drain reason is someone else's: not overwritten";
  EXPECT_NE(actions[3].why.find("RMA"), std::string::npos);
  EXPECT_EQ(slurm_actions(v, true, false, {}).size(), 2u) << "drain only: b and d";
  EXPECT_TRUE(slurm_actions(v, false, true, {}).empty()) << "resume only, nothing drained: nothing to do";
  Verdicts dash({"e"});
  dash.fail("e", {kLink, "links", std::string(kSlurmReasonMax - 20, 'x') + "–0.43"});  // the dash straddles the cut
  const std::string cut = slurm_reason(dash.nodes()[0]);
  EXPECT_EQ(cut.substr(cut.size() - 4), "x...") << "a UTF-8 character is kept whole or left out";
  EXPECT_EQ(shell_line(actions[1].argv).rfind("scontrol update nodename=b state=drain 'reason=rocebench LINK: ", 0), 0u);
}

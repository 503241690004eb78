// Every exit code a verdict gives, decided in reports/judge: netcheck's hosts and differences, a
// run's records and thresholds, an acceptance, and the order of severity the launcher keeps.
#include <gtest/gtest.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/reports/exit_code.hpp"
#include "rocebench/reports/netcheck_verdict.hpp"

using namespace rocebench;
using namespace rocebench::reports;

namespace {

json check(const std::string& host, const std::string& id, const std::string& status, json observed = 1) {
  return {{"kind", "check"}, {"host", host}, {"check", id}, {"subject", "mlx5_0/1"}, {"status", status}, {"observed", observed}};
}

std::string verdict_of(const std::vector<std::string>& statuses) {
  std::vector<json> records;
  for (const auto& s : statuses) records.push_back(check("a", "c." + s, s));
  const NetcheckJudgement j = judge_netcheck_checks(records);
  return j.hosts.size() == 1 ? j.hosts[0].verdict : "?";
}

}  // namespace

TEST(NetcheckVerdict, AHostsVerdictIsItsWorstCheckAndUnverifiedIsNeverAPass) {
  EXPECT_EQ(verdict_of({"ok", "skip"}), "pass");
  EXPECT_EQ(verdict_of({"skip", "skip"}), "skip");
  EXPECT_EQ(verdict_of({"ok", "warn", "skip"}), "warn");
  EXPECT_EQ(verdict_of({"ok", "warn", "unverified"}), "unverified");
  EXPECT_EQ(verdict_of({"unverified", "fail", "ok"}), "fail");
  const NetcheckJudgement j = judge_netcheck_checks({check("a", "x", "ok"), check("a", "y", "fail"), check("a", "z", "fail")});
  EXPECT_EQ(j.hosts.at(0).counts, (std::map<std::string, std::size_t>{{"ok", 1}, {"fail", 2}}));
}

TEST(NetcheckVerdict, TheExitCodeFailsAFailedOrUnverifiedHostOrHostsThatDiffer) {
  const std::vector<json> good = {check("a", "x", "ok"), check("b", "x", "ok"), check("a", "w", "warn"), check("b", "w", "warn")};
  EXPECT_EQ(netcheck_exit_code(judge_netcheck_checks(good), false), kExitOk);
  auto with = [&](json extra) {
    std::vector<json> r = good;
    r.push_back(std::move(extra));
    return judge_netcheck_checks(r);
  };
  EXPECT_EQ(netcheck_exit_code(with(check("b", "y", "fail")), true), kExitCheckFailed);
  const NetcheckJudgement unverified = with(check("b", "y", "unverified"));
  EXPECT_EQ(netcheck_exit_code(unverified, false), kExitCheckFailed);
  EXPECT_EQ(netcheck_exit_code(unverified, true), kExitCheckFailed) << "a's record of y is missing: the hosts differ";
  const NetcheckJudgement both = judge_netcheck_checks({check("a", "y", "unverified"), check("b", "y", "unverified")});
  EXPECT_TRUE(both.differences.empty());
  EXPECT_EQ(netcheck_exit_code(both, false), kExitCheckFailed);
  EXPECT_EQ(netcheck_exit_code(both, true), kExitOk);
  // Two hosts whose passing checks observed different values differ; one host alone has no differences.
  const NetcheckJudgement mtu = judge_netcheck_checks({check("a", "mtu", "ok", 4200), check("b", "mtu", "ok", 1500)});
  ASSERT_EQ(mtu.differences.size(), 1u);
  EXPECT_EQ(netcheck_exit_code(mtu, true), kExitCheckFailed);
  EXPECT_EQ(differences_exit_code(mtu.differences), kExitCheckFailed);
  EXPECT_TRUE(judge_netcheck_checks({check("a", "mtu", "ok", 4200), check("a", "mtu", "ok", 1500)}).differences.empty());
  // Records of other kinds are not hosts of netcheck.
  EXPECT_TRUE(judge_netcheck_checks({{{"kind", "result"}, {"host", "a"}, {"status", "fail"}}}).hosts.empty());
}

TEST(ExitCode, ARunsRecordsAndThresholdsAndTheOrderOfSeverity) {
  EXPECT_EQ(records_exit_code({{{"kind", "run"}}, {{"kind", "result"}, {"status", "ok"}}, {{"kind", "result"}, {"status", "skip"}}}),
            kExitOk);
  EXPECT_EQ(records_exit_code({{{"kind", "result"}, {"status", "fail"}}}), kExitCheckFailed);
  EXPECT_EQ(records_exit_code({{{"kind", "check"}, {"status", "unverified"}}}), kExitCheckFailed);
  const std::vector<Verdict> passed = {{"thresholds", "t", Outcome::pass, ""}};
  const std::vector<Verdict> missing = {{"thresholds", "t", Outcome::pass, ""}, {"thresholds", "u", Outcome::missing, ""}};
  EXPECT_EQ(verdicts_exit_code(passed), kExitOk);
  EXPECT_EQ(verdicts_exit_code(missing), kExitCheckFailed);
  EXPECT_EQ(run_exit_code({{{"status", "ok"}}}, passed), kExitOk);
  EXPECT_EQ(run_exit_code({{{"status", "ok"}}}, missing), kExitCheckFailed);
  EXPECT_EQ(run_exit_code({{{"status", "error"}}, {{"status", "fail"}}}, passed), kExitCheckFailed);
  EXPECT_EQ(worse_exit_code(kExitCheckFailed, kExitBadInput), kExitBadInput);
  EXPECT_EQ(worse_exit_code(kExitInfra, kExitBadInput), kExitInfra);
  EXPECT_EQ(worse_exit_code(kExitOk, 130), 130) << "a signal is infrastructure's severity";
  EXPECT_EQ(worse_exit_code(130, kExitInfra), 130);
  EXPECT_EQ(severity(137), 3);
}

TEST(ExitCode, AnAcceptanceFailsWhenANodeOrTheClusterDoes) {
  accept::Verdicts v({"a", "b"});
  v.stage("a", "hosts", "ok");
  EXPECT_EQ(acceptance_exit_code(v), kExitOk);
  accept::Verdicts cluster = v;
  cluster.fail_cluster({accept::kUnverified, "accept", "stopped early"});
  EXPECT_EQ(acceptance_exit_code(cluster), kExitCheckFailed);
  v.fail("b", {accept::kLink, "links", "slow"});
  EXPECT_EQ(acceptance_exit_code(v), kExitCheckFailed);
}

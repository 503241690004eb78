// `rocebench netcheck` as the harness runs it (the subcommand's main), and the plan step.
#include <gtest/gtest.h>

#include "fixture_host.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/common/step.hpp"
#include "rocebench/netcheck/module.hpp"

using namespace rocebench;
using namespace rocebench::netcheck;
using fixture::FixtureHost;

namespace {

using fixture::Outcome;
using fixture::run_netcheck;

Args on(const FixtureHost& host, const std::string& name, const std::string& out) {
  return {"--root", host.root().string(), "--capture", host.capture().string(), "--host", name, "--run-id", "run-7", "--results", out};
}

using fixture::records_in;

// The harness's recorder is not ours to use; this one keeps what a step emits.
class KeptRecords : public Recorder {
 public:
  void emit(const json& record) override { records.push_back(record); }
  void end_step() override {}
  std::vector<json> records;
};

}  // namespace

TEST(Cli, GoodHostExitsZeroAndAppendsRecords) {
  FixtureHost host;
  fixture::TempDir dir;
  const auto out = dir.path() / "results";
  const Outcome run = run_netcheck(on(host, "node01", out.string()));
  EXPECT_EQ(run.code, kExitOk) << run.err;
  EXPECT_NE(run.out.find("== node01 =="), std::string::npos);
  const auto records = records_in(out);
  EXPECT_GT(records.size(), 40u);
  for (const auto& r : records) {
    EXPECT_EQ(r["kind"], "check");
    EXPECT_EQ(r["run"], "run-7");
    EXPECT_EQ(r["host"], "node01");
  }
  EXPECT_TRUE(fixture::fs::exists(out / "run-7" / "results.jsonl"));  // the layout of a run's folder
  // The same run id appends: a second run adds as many records and keeps the first ones.
  EXPECT_EQ(run_netcheck(on(host, "node01", out.string())).code, kExitOk);
  EXPECT_EQ(records_in(out).size(), 2 * records.size());
  // The old spelling is refused with the new one.
  const Outcome old = run_netcheck({"--out", out.string()});
  EXPECT_EQ(old.code, kExitBadInput);
  EXPECT_NE(old.err.find("'--out' is now '--results'"), std::string::npos) << old.err;
  // --results once named the file; it is the folder of runs now, and a file there is refused.
  const Outcome file = run_netcheck(on(host, "node01", (dir.path() / "r.jsonl").string()));
  EXPECT_EQ(file.code, kExitBadInput);
  EXPECT_NE(file.err.find("r.jsonl: names a file; --results is now the folder"), std::string::npos) << file.err;
  EXPECT_FALSE(fixture::fs::exists(dir.path() / "r.jsonl"));
}

TEST(Cli, FailedCheckExitsOne) {
  FixtureHost host;
  host.write("/sys/class/net/ens1f1np1/qos/trust", "pcp");
  fixture::TempDir dir;
  const Outcome run = run_netcheck(on(host, "node02", (dir.path() / "r").string()));
  EXPECT_EQ(run.code, kExitCheckFailed);
  EXPECT_NE(run.out.find("fix: mlnx_qos -i ens1f1np1 --trust dscp"), std::string::npos) << run.out;
}

TEST(Cli, BadInputExitsTwo) {
  fixture::TempDir dir;
  fixture::write_file(dir.path() / "p.json", "{\n  \"roce\": {\"trust\": \"dscp\", \"pfc\": [3]}\n}\n");
  const Outcome bad_profile = run_netcheck({"--root", dir.path().string(), "--profile", (dir.path() / "p.json").string()});
  EXPECT_EQ(bad_profile.code, kExitBadInput);
  EXPECT_NE(bad_profile.err.find("p.json:2: field 'roce.pfc': is not a known field"), std::string::npos) << bad_profile.err;
  EXPECT_EQ(run_netcheck({"--bogus"}).code, kExitBadInput);
  EXPECT_EQ(run_netcheck({"--root", (dir.path() / "nowhere").string()}).code, kExitBadInput);
  EXPECT_EQ(run_netcheck({"--capture", (dir.path() / "nowhere").string()}).code, kExitBadInput);
  EXPECT_EQ(run_netcheck({"extra.jsonl"}).code, kExitBadInput);
}

TEST(Cli, HelpListAndProfile) {
  EXPECT_EQ(run_netcheck({"--help"}).code, kExitOk);
  const Outcome list = run_netcheck({"--list-checks"});
  EXPECT_EQ(list.code, kExitOk);
  EXPECT_NE(list.out.find("roce.pfc.enabled_priorities\n"), std::string::npos);
  const Outcome profile = run_netcheck({"--print-profile"});
  EXPECT_EQ(json::parse(profile.out)["roce"]["cnp_dscp"], 48);
}

TEST(Cli, ThisMachineRunsWithoutCrashing) {
  // Whatever this host has (CI machines have no RDMA device), netcheck reads it and says so.
  fixture::TempDir dir;
  const auto out = dir.path() / "r";
  // In this process, without a run: the harness checks this host as a plan (harness's NetcheckCli).
  const Outcome run = run_netcheck({"--root", "/", "--results", out.string(), "--tool-timeout", "5"});
  EXPECT_TRUE(run.code == kExitOk || run.code == kExitCheckFailed) << run.err;
  const auto records = records_in(out);
  const auto present = std::find_if(records.begin(), records.end(), [](const json& r) { return r["check"] == "rdma.device_present"; });
  ASSERT_NE(present, records.end());
  if ((*present)["status"] == "fail") {
    EXPECT_NE(run.out.find("no RDMA device"), std::string::npos) << run.out;
  }
}

TEST(Compare, ReportsWhatDiffersBetweenHosts) {
  fixture::TempDir dir;
  const auto a = dir.path() / "a", b = dir.path() / "b", odd = dir.path() / "odd";
  FixtureHost good, mtu;
  mtu.write("/sys/class/net/ens1f0np0/mtu", "1500");
  mtu.write("/sys/class/infiniband/mlx5_0/fw_ver", "22.39.1002");
  EXPECT_EQ(run_netcheck(on(good, "node01", a.string())).code, kExitOk);
  EXPECT_EQ(run_netcheck(on(good, "node02", a.string())).code, kExitOk);
  EXPECT_EQ(run_netcheck(on(mtu, "node03", b.string())).code, kExitCheckFailed);

  const Outcome same = run_netcheck({"--compare", a.string()});
  EXPECT_EQ(same.code, kExitOk) << same.err;
  EXPECT_NE(same.out.find("all 2 hosts have the same settings"), std::string::npos);
  // A folder of runs, a run's folder and its results file read alike.
  for (const auto& given : {a / "run-7", a / "run-7" / "results.jsonl"}) {
    const Outcome again = run_netcheck({"--compare", given.string()});
    EXPECT_EQ(again.code, kExitOk) << again.err;
    EXPECT_EQ(again.out, same.out);
  }

  const Outcome diff = run_netcheck({"--compare", a.string(), b.string(), "--results", odd.string()});
  EXPECT_EQ(diff.code, kExitCheckFailed) << diff.err;
  EXPECT_NE(diff.out.find("3 settings differ between the 3 hosts"), std::string::npos) << diff.out;
  EXPECT_NE(diff.out.find("nic.firmware  mlx5_0"), std::string::npos) << diff.out;
  EXPECT_NE(diff.out.find("link.mtu  mlx5_0/1"), std::string::npos);
  EXPECT_NE(diff.out.find("link.active_mtu  mlx5_0/1"), std::string::npos);
  EXPECT_NE(diff.out.find("1 host: node03"), std::string::npos);
  const auto records = records_in(odd);
  ASSERT_EQ(records.size(), 3u);
  for (const auto& r : records) {
    EXPECT_EQ(r["check"], "cluster.same_setting");
    EXPECT_EQ(r["host"], "node03");
  }
  EXPECT_EQ(records[0]["expected"], "22.41.1000");
  EXPECT_EQ(records[0]["observed"], "22.39.1002");
}

TEST(Compare, BadInput) {
  fixture::TempDir dir;
  const auto one = dir.path() / "one";
  FixtureHost host;
  run_netcheck(on(host, "node01", one.string()));
  const Outcome single = run_netcheck({"--compare", one.string()});
  EXPECT_EQ(single.code, kExitBadInput);
  EXPECT_NE(single.err.find("at least two hosts; found 1 (node01)"), std::string::npos) << single.err;
  EXPECT_EQ(run_netcheck({"--compare"}).code, kExitBadInput);
  EXPECT_EQ(run_netcheck({"--compare", (dir.path() / "missing.jsonl").string()}).code, kExitBadInput);
}

TEST(Step, ChecksOncePerHost) {
  const auto kinds = steps();
  ASSERT_EQ(kinds.size(), 1u);
  const StepKind& step = kinds.front();
  EXPECT_EQ(step.name, "netcheck.host");
  const JsonSchema params(step.params_schema);
  FixtureHost host;
  const json good_params{{"root", host.root().string()}, {"capture", host.capture().string()}, {"profile", "lossless-roce"}};
  EXPECT_TRUE(params.validate(good_params).empty());
  EXPECT_FALSE(params.validate(json{{"profil", "x"}}).empty());
  EXPECT_FALSE(params.validate(json{{"tools", "yes"}}).empty());

  KeptRecords kept;
  StepContext ctx;
  ctx.run_id = "run-9";
  ctx.step = "netcheck.host";
  ctx.host = "node05";
  ctx.params = good_params;
  ctx.recorder = &kept;
  ctx.local_rank = 1;
  step.run(ctx);
  EXPECT_TRUE(kept.records.empty());  // other ranks on the host do nothing
  ctx.local_rank = 0;
  step.run(ctx);
  ASSERT_GT(kept.records.size(), 40u);
  for (const auto& r : kept.records) {
    EXPECT_TRUE(result_schema().validate(r).empty()) << r.dump();
    EXPECT_EQ(r["host"], "node05");
    EXPECT_EQ(r["run"], "run-9");
    EXPECT_EQ(r["status"], "ok");
  }
}

// NCCL's own settings against the fabric netcheck found: the good fixture host's /etc/nccl.conf
// puts NCCL on the RoCE v2 IPv4 GID (index 3), DSCP 26 (TC 106) and priority 3; each variant
// breaks one setting and fails (or warns on) exactly its check, with the fix where it was read.
#include <gtest/gtest.h>

#include "fixture_host.hpp"
#include "rocebench/common/errors.hpp"

using namespace rocebench;
using namespace rocebench::netcheck;
using fixture::FixtureHost;
using Set = std::set<std::string>;

namespace {

const std::string kConf = "/etc/nccl.conf";

std::vector<CheckRecord> check_with(const FixtureHost& host, const NcclSources& sources) {
  return host.check(load_profile("lossless-roce"), sources);
}

Set not_ok(const std::vector<CheckRecord>& records) {
  Set out;
  for (const auto& r : records) {
    if (r.check.rfind("nccl.", 0) == 0 && r.status != Status::ok) out.insert(r.check + " " + r.subject + " " + to_string(r.status));
  }
  return out;
}

}  // namespace

TEST(Nccl, TheGoodHostsSettingsPass) {
  const auto records = FixtureHost().check();
  EXPECT_EQ(not_ok(records), Set{});
  const auto env = fixture::find_record(records, "nccl.env", "host");
  EXPECT_EQ(env.observed["NCCL_IB_TC"], "106");
  EXPECT_EQ(fixture::find_record(records, "nccl.ib_gid_index", "mlx5_1/1").observed["index"], 3);
}

TEST(Nccl, EachBrokenSettingFailsItsCheckWithTheFixWhereItWasRead) {
  struct Case {
    std::string line;  // replaces the good host's line of the same name
    Set expected;
    std::string hint;
  };
  const std::vector<Case> cases{
      {"NCCL_IB_GID_INDEX=1", {"nccl.ib_gid_index mlx5_0/1 fail", "nccl.ib_gid_index mlx5_1/1 fail"}, "NCCL_IB_GID_INDEX=3 in /etc/nccl.conf:2"},
      {"NCCL_IB_GID_INDEX=7", {"nccl.ib_gid_index mlx5_0/1 fail", "nccl.ib_gid_index mlx5_1/1 fail"}, "NCCL_IB_GID_INDEX=3 in /etc/nccl.conf:2"},
      {"NCCL_IB_TC=0", {"nccl.ib_tc host fail"}, "NCCL_IB_TC=106 in /etc/nccl.conf:3"},
      {"NCCL_IB_TC=", {"nccl.ib_tc host fail"}, "NCCL_IB_TC=106 in /etc/nccl.conf:3"},
      {"NCCL_IB_SL=0", {"nccl.ib_sl host fail"}, "NCCL_IB_SL=3 in /etc/nccl.conf:4"},
      {"NCCL_IB_HCA=mlx4", {"nccl.ib_hca host fail"}, "remove NCCL_IB_HCA from /etc/nccl.conf:5"},
      {"NCCL_IB_HCA=^mlx5", {"nccl.ib_hca host fail"}, "remove NCCL_IB_HCA from /etc/nccl.conf:5"},
      {"NCCL_IB_HCA=mlx5_0:2", {"nccl.ib_hca host fail"}, "remove NCCL_IB_HCA from /etc/nccl.conf:5"},
      {"NCCL_SOCKET_IFNAME==ens1", {"nccl.socket_ifname host fail"}, "remove NCCL_SOCKET_IFNAME from /etc/nccl.conf:6"},
      {"NCCL_ALGO=Ring", {"nccl.pinned_tuning host warn"}, "remove NCCL_ALGO from /etc/nccl.conf:7"},
  };
  const std::vector<std::string> good{"# a comment NCCL skips", "NCCL_IB_GID_INDEX=3", "NCCL_IB_TC=106", "NCCL_IB_SL=3",
                                      "NCCL_IB_HCA==mlx5_0:1,=mlx5_1:1", "NCCL_SOCKET_IFNAME=ens1f0np0"};
  for (const auto& c : cases) {
    FixtureHost host;
    std::string text;
    bool replaced = false;
    for (const auto& line : good) {
      const bool same = line.substr(0, line.find('=')) == c.line.substr(0, c.line.find('='));
      text += (same ? c.line : line) + "\n";
      replaced = replaced || same;
    }
    if (!replaced) text += c.line + "\n";
    host.write(kConf, text);
    const auto records = host.check();
    EXPECT_EQ(not_ok(records), c.expected) << c.line;
    for (const auto& r : records) {
      if (r.check.rfind("nccl.", 0) == 0 && r.status != Status::ok) {
        EXPECT_NE(r.hint.find(c.hint), std::string::npos) << c.line << ": " << r.hint;
        EXPECT_NE(r.reason.find("/etc/nccl.conf"), std::string::npos) << c.line << ": the reason names where it was read: " << r.reason;
      }
    }
  }
}

TEST(Nccl, AnUnsetTrafficClassWarnsThatNcclSendsDscpZero) {
  FixtureHost host;
  host.write(kConf, "NCCL_IB_GID_INDEX=3");
  const auto records = host.check();
  EXPECT_EQ(not_ok(records), Set{"nccl.ib_tc host warn"});
  const auto tc = fixture::find_record(records, "nccl.ib_tc", "host");
  EXPECT_NE(tc.reason.find("DSCP 0"), std::string::npos) << tc.reason;
  EXPECT_EQ(tc.hint, "NCCL_IB_TC=106 in /etc/nccl.conf");
}

TEST(Nccl, NoSettingAnywhereIsASkipThatSaysWhereItLooked) {
  FixtureHost host;
  host.remove(kConf);
  const auto records = host.check();
  EXPECT_EQ(not_ok(records), Set{"nccl.env host skip"});
  const auto env = fixture::find_record(records, "nccl.env", "host");
  EXPECT_NE(env.reason.find("/root/.nccl.conf, /etc/nccl.conf"), std::string::npos) << env.reason;
  EXPECT_NE(env.hint.find("--nccl-env"), std::string::npos);
}

// NCCL's precedence: a job's settings, then the environment, then the user's file, then /etc/nccl.conf.
TEST(Nccl, AJobFileWinsOverTheUsersFileWhichWinsOverTheSystems) {
  FixtureHost host;
  host.write("/home/ann/.nccl.conf", "NCCL_IB_TC=104\nNCCL_IB_SL=3");
  fixture::TempDir dir;
  fixture::write_file(dir.path() / "job.env", "# from the job script\nexport NCCL_IB_TC=\"0\"\n\nNCCL_DEBUG=INFO\nPATH=/usr/bin\n");
  const NcclSources sources{false, "/home/ann", {dir.path() / "job.env"}};
  const NcclEnv env = read_nccl_env(HostFs(host.root()), sources);
  EXPECT_EQ(env.find("NCCL_IB_TC")->value, "0");
  EXPECT_EQ(env.find("NCCL_IB_TC")->source, (dir.path() / "job.env").string() + ":2");
  EXPECT_EQ(env.find("NCCL_IB_SL")->source, "/home/ann/.nccl.conf:2");
  EXPECT_EQ(env.find("NCCL_IB_GID_INDEX")->source, "/etc/nccl.conf:2");
  EXPECT_EQ(env.find("PATH"), nullptr);
  const auto records = check_with(host, sources);
  EXPECT_EQ(fixture::find_record(records, "nccl.env", "host").observed,
            json({{"NCCL_DEBUG", "INFO"}, {"NCCL_IB_GID_INDEX", "3"}, {"NCCL_IB_HCA", "=mlx5_0:1,=mlx5_1:1"}, {"NCCL_IB_SL", "3"},
                  {"NCCL_IB_TC", "0"}, {"NCCL_SOCKET_IFNAME", "ens1f0np0"}}));
  const auto tc = fixture::find_record(records, "nccl.ib_tc", "host");
  EXPECT_EQ(tc.status, Status::fail);
  EXPECT_EQ(tc.hint, "NCCL_IB_TC=106 in " + (dir.path() / "job.env").string() + ":2");
}

TEST(Nccl, ABadLineOfAJobFileIsRefusedAtItsLine) {
  FixtureHost host;
  fixture::TempDir dir;
  fixture::write_file(dir.path() / "job.env", "NCCL_IB_TC=106\nNCCL_IB_SL 3\n");
  try {
    check_with(host, {false, "/root", {dir.path() / "job.env"}});
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("job.env:2"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("expected NAME=VALUE"), std::string::npos) << e.what();
  }
  // Through the command line: exit 2, the file and line named.
  const auto run = fixture::run_netcheck({"--root", host.root().string(), "--capture", host.capture().string(), "--host", "n1",
                                          "--nccl-env", (dir.path() / "job.env").string()});
  EXPECT_EQ(run.code, kExitBadInput);
  EXPECT_NE(run.err.find("job.env:2"), std::string::npos) << run.err;
  const auto missing = fixture::run_netcheck({"--root", host.root().string(), "--host", "n1", "--nccl-env", "/nonexistent/job.env"});
  EXPECT_EQ(missing.code, kExitBadInput);
  EXPECT_NE(missing.err.find("/nonexistent/job.env"), std::string::npos) << missing.err;
}

TEST(Nccl, NameListsReadAsNcclReadsThem) {
  const auto hca = parse_nccl_name_list("^=mlx5_0:1, mlx5_1", true);
  EXPECT_TRUE(hca.exclude);
  ASSERT_EQ(hca.entries.size(), 2u);
  EXPECT_TRUE(hca.entries[0].exact);
  EXPECT_EQ(hca.entries[0].port, 1);
  EXPECT_TRUE(hca.entries[0].matches("mlx5_0"));
  EXPECT_FALSE(hca.entries[0].matches("mlx5_01"));
  EXPECT_TRUE(hca.entries[1].matches("mlx5_10"));  // a prefix
  const auto ifname = parse_nccl_name_list("eth:0", false);
  EXPECT_EQ(ifname.entries[0].name, "eth:0");  // interface names keep their colon
}

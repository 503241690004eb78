// Hosts saved as operators save them (fixtures/fleet): each judged under its own name, from tool
// outputs found through COMMANDS.tsv; what could not be read is unverified, never a pass; a folder
// of them is judged and compared in one call.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "fixture_host.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/reports/netcheck_verdict.hpp"

using namespace rocebench;
using namespace rocebench::netcheck;
using fixture::fs::path;
using fixture::Outcome;
using fixture::records_in;
using fixture::run_netcheck;
using Set = std::set<std::string>;

namespace {

// "check subject" of the records in `records` with `status`.
Set with_status(const std::vector<json>& records, const std::string& status) {
  Set out;
  for (const auto& r : records) {
    if (r["status"] == status) out.insert(r["check"].get<std::string>() + " " + r["subject"].get<std::string>());
  }
  return out;
}

const json& record(const std::vector<json>& records, const std::string& check, const std::string& subject) {
  for (const auto& r : records) {
    if (r["check"] == check && r["subject"] == subject) return r;
  }
  throw std::runtime_error("no record " + check + " " + subject);
}

// What one saved host must be judged: its name, exit code, the host's verdict and the checks of each status.
struct Expected {
  std::string folder, host;
  int code;
  std::string verdict;
  Set fail, unverified, warn;
};

void PrintTo(const Expected& e, std::ostream* os) { *os << e.folder; }

const std::vector<Expected> kFleet{
    {"good", "gpu-a06", kExitOk, "pass", {}, {}, {}},
    {"pfc-wrong", "gpu-a01", kExitCheckFailed, "fail", {"roce.pfc.enabled_priorities mlx5_0/1"}, {}, {}},
    {"trust-pcp", "gpu-a02", kExitCheckFailed, "fail", {"roce.trust.dscp mlx5_0/1"}, {}, {}},
    {"acs-on", "gpu-a03", kExitCheckFailed, "fail", {"gpudirect.acs_disabled mlx5_0", "gpudirect.acs_disabled mlx5_1"}, {}, {}},
    {"no-capture", "gpu-a04", kExitCheckFailed, "unverified", {},
     {"roce.pfc.enabled_priorities mlx5_0/1", "roce.pfc.enabled_priorities mlx5_1/1", "gpudirect.acs_disabled mlx5_0",
      "gpudirect.acs_disabled mlx5_1"},
     {}},
    {"fw-old", "gpu-a05", kExitOk, "warn", {}, {}, {"nic.firmware mlx5_0", "nic.firmware mlx5_1"}},
};

Outcome judge(const path& host, const path& out, Args extra = {}) {
  Args args{"--root", host.string(), "--results", out.string(), "--run-id", "fleet-1"};
  if (fixture::fs::exists(host / "capture")) args.insert(args.end(), {"--capture", (host / "capture").string()});
  args.insert(args.end(), extra.begin(), extra.end());
  return run_netcheck(args);
}

}  // namespace

class SavedHost : public ::testing::TestWithParam<Expected> {};

TEST_P(SavedHost, JudgedUnderItsOwnName) {
  const Expected& e = GetParam();
  fixture::TempDir dir;
  fixture::compose_fleet_host(e.folder, dir.path() / e.folder);
  const Outcome run = judge(dir.path() / e.folder, dir.path() / "r");
  EXPECT_EQ(run.code, e.code) << run.out << run.err;
  const auto records = records_in(dir.path() / "r");
  ASSERT_GT(records.size(), 40u);
  for (const auto& r : records) ASSERT_EQ(r["host"], e.host);
  EXPECT_EQ(with_status(records, "fail"), e.fail);
  EXPECT_EQ(with_status(records, "unverified"), e.unverified);
  EXPECT_EQ(with_status(records, "warn"), e.warn);
  EXPECT_NE(run.out.find("== " + e.host + " =="), std::string::npos);
  // The verdict and the exit code are the judge's: its records, saved and judged again, say the same.
  const reports::NetcheckJudgement judged = reports::judge_netcheck_checks(records);
  ASSERT_EQ(judged.hosts.size(), 1u);
  EXPECT_EQ(judged.hosts[0].host, e.host);
  EXPECT_EQ(judged.hosts[0].verdict, e.verdict);
  EXPECT_EQ(reports::netcheck_exit_code(judged, false), run.code);
  const Outcome allowed = judge(dir.path() / e.folder, dir.path() / "allowed", {"--allow-unverified"});
  EXPECT_EQ(allowed.code, reports::netcheck_exit_code(reports::judge_netcheck_checks(records_in(dir.path() / "allowed")), true));
  EXPECT_EQ(allowed.code, e.verdict == "unverified" ? kExitOk : e.code);
}

INSTANTIATE_TEST_SUITE_P(Fleet, SavedHost, ::testing::ValuesIn(kFleet), [](const auto& p) {
  std::string name = p.param.folder;
  std::replace(name.begin(), name.end(), '-', '_');
  return name;
});

TEST(SavedHostDetail, WhatEachJudgementSays) {
  fixture::TempDir dir;
  for (const auto& e : kFleet) fixture::compose_fleet_host(e.folder, dir.path() / e.folder);

  // The output of a command netcheck does not read is ignored, and listed.
  const Outcome pfc = judge(dir.path() / "pfc-wrong", dir.path() / "pfc");
  EXPECT_NE(pfc.err.find("ignored the output of a command it does not read: ip-link.txt (ip -d link show)"), std::string::npos)
      << pfc.err;
  const auto pfc_records = records_in(dir.path() / "pfc");
  EXPECT_EQ(record(pfc_records, "roce.pfc.enabled_priorities", "mlx5_0/1")["observed"], json::array({4}));
  EXPECT_NE(record(pfc_records, "roce.pfc.enabled_priorities", "mlx5_0/1")["reason"].get<std::string>().find("pfc.ens1f0np0.out"),
            std::string::npos);

  const auto trust = (judge(dir.path() / "trust-pcp", dir.path() / "trust"), records_in(dir.path() / "trust"));
  EXPECT_EQ(record(trust, "roce.trust.dscp", "mlx5_0/1")["observed"], "pcp");
  EXPECT_EQ(record(trust, "roce.dscp.priority_map", "mlx5_0/1")["status"], "skip");  // the NIC ignores DSCP

  const auto acs = (judge(dir.path() / "acs-on", dir.path() / "acs"), records_in(dir.path() / "acs"));
  EXPECT_EQ(record(acs, "gpudirect.acs_disabled", "mlx5_0")["observed"], json({{"acs_enabled_on", {"0000:17:00.0"}}}));

  // Unverified: in the table with what to install, counted, exit 1 unless allowed.
  const Outcome bare = judge(dir.path() / "no-capture", dir.path() / "bare");
  EXPECT_NE(bare.out.find("  UNVER roce.pfc.enabled_priorities"), std::string::npos) << bare.out;
  EXPECT_NE(bare.out.find("to verify: install mlnx-tools for mlnx_qos, or iproute2 >= 5.11 for dcb"), std::string::npos);
  EXPECT_NE(bare.out.find(", 4 unverified\n"), std::string::npos) << bare.out;
  EXPECT_EQ(judge(dir.path() / "no-capture", dir.path() / "bare", {"--allow-unverified"}).code, kExitOk);

  // Two NICs of one model with different firmware: a warning naming both; the tree's own kernel.
  const auto fw = (judge(dir.path() / "fw-old", dir.path() / "fw"), records_in(dir.path() / "fw"));
  EXPECT_EQ(record(fw, "nic.firmware", "mlx5_0")["reason"], "mlx5_0 has 22.39.1002, mlx5_1 has 22.41.1000 (same model MT4125)");
  EXPECT_EQ(record(fw, "host.kernel", "host")["observed"], "5.15.0-125-generic");
}

TEST(SavedHostDetail, TheHostIsTheTreesUnlessNamed) {
  fixture::TempDir dir;
  fixture::compose_fleet_host("good", dir.path() / "good");
  const path tree = dir.path() / "good";
  EXPECT_EQ(judge(tree, dir.path() / "named", {"--host", "node42"}).code, kExitOk);
  EXPECT_EQ(records_in(dir.path() / "named").front()["host"], "node42");
  // /etc/hostname when /proc has none
  fixture::fs::remove(tree / "proc/sys/kernel/hostname");
  fixture::write_file(tree / "etc/hostname", "gpu-b01\n");
  EXPECT_EQ(judge(tree, dir.path() / "etc").code, kExitOk);
  EXPECT_EQ(records_in(dir.path() / "etc").front()["host"], "gpu-b01");
  // Neither: an error, never this machine's name.
  fixture::fs::remove(tree / "etc/hostname");
  const Outcome nameless = judge(tree, dir.path() / "none");
  EXPECT_EQ(nameless.code, kExitBadInput);
  EXPECT_NE(nameless.err.find("no hostname in proc/sys/kernel/hostname or etc/hostname; name the host with --host"),
            std::string::npos)
      << nameless.err;
}

TEST(SavedHostDetail, CompareOfSavedHostsExitsOneOnlyWhenASettingDiffers) {
  fixture::TempDir dir;
  for (const char* h : {"good", "fw-old", "pfc-wrong"}) fixture::compose_fleet_host(h, dir.path() / h);
  const path same = dir.path() / "same", differ = dir.path() / "differ";
  judge(dir.path() / "good", same, {"--host", "gpu-c01"});
  judge(dir.path() / "good", same, {"--host", "gpu-c02"});
  const Outcome alike = run_netcheck({"--compare", same.string()});
  EXPECT_EQ(alike.code, kExitOk) << alike.out << alike.err;
  EXPECT_NE(alike.out.find("all 2 hosts have the same settings"), std::string::npos);

  // Saved hosts appended to one file stay two hosts.
  judge(dir.path() / "good", differ);
  judge(dir.path() / "fw-old", differ);
  const Outcome fw = run_netcheck({"--compare", differ.string()});
  EXPECT_EQ(fw.code, kExitCheckFailed) << fw.out << fw.err;
  EXPECT_NE(fw.out.find("between the 2 hosts"), std::string::npos) << fw.out;
  EXPECT_NE(fw.out.find("nic.firmware  mlx5_0"), std::string::npos) << fw.out;
  EXPECT_NE(fw.out.find("1 host: gpu-a05"), std::string::npos) << fw.out;
}

TEST(RootEach, JudgesAndComparesAFolderOfHosts) {
  fixture::TempDir dir;
  const path fleet = dir.path() / "fleet";
  for (const auto& e : kFleet) fixture::compose_fleet_host(e.folder, fleet / e.folder);
  const Outcome all = run_netcheck({"--root-each", fleet.string(), "--results", (dir.path() / "all").string()});
  EXPECT_EQ(all.code, kExitCheckFailed);
  const auto records = records_in(dir.path() / "all");
  Set hosts;
  for (const auto& r : records) hosts.insert(r["host"].get<std::string>());
  EXPECT_EQ(hosts, (Set{"gpu-a01", "gpu-a02", "gpu-a03", "gpu-a04", "gpu-a05", "gpu-a06"}));
  for (const auto& e : kFleet) {
    Set fail;
    for (const auto& r : records) {
      if (r["host"] == e.host && r["status"] == "fail") fail.insert(r["check"].get<std::string>() + " " + r["subject"].get<std::string>());
    }
    EXPECT_EQ(fail, e.fail) << e.folder;
  }
  EXPECT_NE(all.out.find("settings differ between the 6 hosts"), std::string::npos) << all.out;
  EXPECT_NE(all.out.find("nic.firmware  mlx5_0"), std::string::npos);
  // The saved records judged again: each host's verdict, the same differences, the same exit code.
  const reports::NetcheckJudgement judged = reports::judge_netcheck_checks(records);
  ASSERT_EQ(judged.hosts.size(), kFleet.size());
  for (const auto& h : judged.hosts) {
    const auto e = std::find_if(kFleet.begin(), kFleet.end(), [&](const Expected& x) { return x.host == h.host; });
    ASSERT_NE(e, kFleet.end()) << h.host;
    EXPECT_EQ(h.verdict, e->verdict) << h.host;
  }
  EXPECT_NE(all.out.find(std::to_string(judged.differences.size()) + " settings differ"), std::string::npos) << all.out;
  EXPECT_EQ(reports::netcheck_exit_code(judged, false), all.code);

  // Two hosts alike: exit 0. A tree without a hostname takes its folder's name.
  const path pair = dir.path() / "pair";
  fixture::compose_fleet_host("good", pair / "one");
  fixture::compose_fleet_host("good", pair / "gpu-d02");
  fixture::fs::remove(pair / "gpu-d02/proc/sys/kernel/hostname");
  const Outcome alike = run_netcheck({"--root-each", pair.string()});
  EXPECT_EQ(alike.code, kExitOk) << alike.out << alike.err;
  EXPECT_NE(alike.out.find("== gpu-d02 =="), std::string::npos);
  EXPECT_NE(alike.out.find("all 2 hosts have the same settings"), std::string::npos) << alike.out;

  // Two trees of one host are not merged: bad input.
  fixture::write_file(pair / "gpu-d02/proc/sys/kernel/hostname", "gpu-a06\n");
  const Outcome twice = run_netcheck({"--root-each", pair.string()});
  EXPECT_EQ(twice.code, kExitBadInput);
  EXPECT_NE(twice.err.find("are both host 'gpu-a06'"), std::string::npos) << twice.err;
  EXPECT_EQ(run_netcheck({"--root-each", pair.string(), "--host", "x"}).code, kExitBadInput);
  // One host's tree is not a folder of hosts; a folder that is no tree is left out, and said so.
  const Outcome one = run_netcheck({"--root-each", (pair / "one").string()});
  EXPECT_EQ(one.code, kExitBadInput);
  EXPECT_NE(one.err.find("is one host's tree"), std::string::npos) << one.err;
  fixture::fs::remove_all(pair / "gpu-d02");
  fixture::fs::create_directories(pair / "notes");
  const Outcome stray = run_netcheck({"--root-each", pair.string()});
  EXPECT_EQ(stray.code, kExitOk) << stray.err;
  EXPECT_NE(stray.err.find("left out " + (pair / "notes").string() + ": no sys/ or proc/ in it"), std::string::npos) << stray.err;
}

namespace {

// Records with what depends on where they were read from (reasons name paths) left out.
std::vector<json> comparable(std::vector<json> records) {
  for (auto& r : records) {
    for (const char* key : {"time", "run", "reason"}) r.erase(key);
  }
  return records;
}

}  // namespace

TEST(SaveCapture, ASavedHostSavedAgainIsJudgedTheSame) {
  fixture::TempDir dir;
  const path host = dir.path() / "pfc-wrong", saved = dir.path() / "saved";
  fixture::compose_fleet_host("pfc-wrong", host);
  const Outcome save =
      run_netcheck({"--root", host.string(), "--capture", (host / "capture").string(), "--save-capture", saved.string()});
  ASSERT_EQ(save.code, kExitOk) << save.err;
  const std::string commands = fixture::read_file(saved / "capture/COMMANDS.tsv");
  EXPECT_NE(commands.find("dcb-pfc-ens1f0np0.txt\tdcb pfc show dev ens1f0np0\n"), std::string::npos) << commands;
  EXPECT_NE(commands.find("lspci-vvv.txt\tlspci -D -vvv\n"), std::string::npos);
  EXPECT_TRUE(fixture::fs::is_symlink(saved / "sys/class/infiniband/mlx5_0"));

  judge(host, dir.path() / "before");
  judge(saved, dir.path() / "after");
  const auto before = records_in(dir.path() / "before"), after = records_in(dir.path() / "after");
  ASSERT_GT(before.size(), 40u);
  EXPECT_EQ(comparable(after), comparable(before));

  // Into a folder that holds something: refused.
  EXPECT_EQ(run_netcheck({"--root", host.string(), "--save-capture", host.string()}).code, kExitBadInput);
}

TEST(SaveCapture, ThisMachineRoundTrips) {
  // Whatever this machine has: the saved copy is judged as the machine itself was.
  fixture::TempDir dir;
  const path saved = dir.path() / "here";
  const Outcome save = run_netcheck({"--save-capture", saved.string(), "--tool-timeout", "5"});
  ASSERT_EQ(save.code, kExitOk) << save.err;
  const Outcome live = run_netcheck({"--root", "/", "--results", (dir.path() / "live").string(), "--tool-timeout", "5"});
  const Outcome back = run_netcheck({"--root", saved.string(), "--capture", (saved / "capture").string(), "--results",
                                     (dir.path() / "back").string()});
  EXPECT_EQ(back.code, live.code) << back.out << live.out;
  EXPECT_EQ(comparable(records_in(dir.path() / "back")), comparable(records_in(dir.path() / "live")));
}

TEST(SavedTree, SymlinkLoopIsAnErrorNamingThePath) {
  fixture::FixtureHost host;
  const path link = host.root() / "sys/bus/pci/devices/0000:19:00.0";
  fixture::fs::remove(link);
  fixture::fs::create_symlink("0000:19:00.0", link);
  const Outcome run = run_netcheck({"--root", host.root().string(), "--capture", host.capture().string(), "--host", "n1"});
  EXPECT_EQ(run.code, kExitBadInput);
  EXPECT_NE(run.err.find(link.string()), std::string::npos) << run.err;
  EXPECT_NE(run.err.find("symlink loop"), std::string::npos) << run.err;
}

TEST(SavedTree, UnreadableFileIsAnErrorNamingThePath) {
  // A FIFO where PCI config space belongs would block a plain read forever.
  fixture::FixtureHost host;
  const path config = host.root() / "sys/devices/pci0000:15/0000:15:01.0/0000:16:00.0/0000:17:00.0/config";
  ASSERT_EQ(::mkfifo(config.c_str(), 0600), 0);
  const Args args{"--root", host.root().string(), "--capture", host.capture().string(), "--host", "n1"};
  const Outcome fifo = run_netcheck(args);
  EXPECT_EQ(fifo.code, kExitBadInput);
  EXPECT_NE(fifo.err.find("/sys/bus/pci/devices/0000:17:00.0/config: is a FIFO (named pipe), not a file"), std::string::npos) << fifo.err;

  // A file without read permission (root reads it anyway, so only as another user).
  fixture::fs::remove(config);
  const path trust = host.root() / "sys/class/net/ens1f0np0/qos/trust";
  fixture::fs::permissions(trust, fixture::fs::perms::none);
  const Outcome denied = run_netcheck(args);
  if (::geteuid() != 0) {
    EXPECT_EQ(denied.code, kExitBadInput);
    EXPECT_NE(denied.err.find("trust: cannot open the saved host file"), std::string::npos) << denied.err;
  }
}

// Running tools (argv, deadline) and reading their captured outputs.
#include <gtest/gtest.h>

#include "fixture_host.hpp"
#include "rocebench/netcheck/tools.hpp"

using namespace rocebench::netcheck;
using namespace std::chrono_literals;

TEST(RunCommand, CapturesOutputAndExitCode) {
  const auto r = run_command({"printf", "%s|%s", "a b", "$HOME;x"}, 5s);  // no shell: arguments stay whole
  ASSERT_TRUE(r.started);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(r.out, "a b|$HOME;x");
  const auto fails = run_command({"ls", "/no/such/path/for/netcheck"}, 5s);
  EXPECT_NE(fails.exit_code, 0);
  EXPECT_FALSE(fails.err.empty());
}

TEST(RunCommand, MissingProgram) {
  const auto r = run_command({"netcheck-no-such-tool"}, 5s);
  EXPECT_FALSE(r.started);
  EXPECT_NE(r.error.find("netcheck-no-such-tool"), std::string::npos);
}

TEST(RunCommand, KilledAtDeadline) {
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_command({"sleep", "10"}, 200ms);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
}

TEST(ToolSource, CapturedLiveAndNone) {
  fixture::TempDir dir;
  fixture::write_file(dir.path() / "dcb-pfc-eth0.txt", "prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off\n");
  const auto captured = ToolSource::captured(dir.path());
  EXPECT_EQ(parse_dcb_pfc(*captured.get(dcb_pfc_query("eth0")).text), std::vector<int>{3});
  const auto absent = captured.get(dcb_pfc_query("eth1"));
  EXPECT_FALSE(absent.text);
  EXPECT_NE(absent.missing.find("dcb-pfc-eth1.txt"), std::string::npos);

  const auto none = ToolSource::none("tools are off").get(mlnx_qos_query("eth0"));
  EXPECT_FALSE(none.text);
  EXPECT_EQ(none.missing, "mlnx_qos -i eth0: not run (tools are off)");

  // A real tool on a netdev that does not exist: a clear reason, no text.
  const auto live = ToolSource::live(5s).get(ethtool_stats_query("netcheck-nosuch0"));
  EXPECT_FALSE(live.text);
  EXPECT_FALSE(live.missing.empty());
}

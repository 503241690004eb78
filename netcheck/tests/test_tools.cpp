// Running tools (argv, deadline) and reading their captured outputs.
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <sstream>

#include "fixture_host.hpp"
#include "rocebench/common/errors.hpp"
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

TEST(RunCommand, KilledAtDeadlineAfterClosingItsOutput) {
  // Its pipes close at once: only the deadline ends the wait for its exit.
  const auto start = std::chrono::steady_clock::now();
  const auto r = run_command({"sh", "-c", "exec >&- 2>&-; sleep 10"}, 300ms);
  EXPECT_TRUE(r.timed_out);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_LT(std::chrono::steady_clock::now() - start, 5s);
  const auto quick = run_command({"sh", "-c", "exec >&- 2>&-; exit 3"}, 5s);
  EXPECT_FALSE(quick.timed_out);
  EXPECT_EQ(quick.exit_code, 3);
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

TEST(CommandKey, EverySpellingOfACommandNetcheckReads) {
  const std::vector<std::pair<std::string, std::string>> same{
      {"dcb pfc show dev eth0", "dcb pfc show dev eth0"},
      {"dcb -s pfc show dev eth0", "dcb pfc show dev eth0"},
      {"sudo /usr/sbin/dcb pfc show dev eth0 prio-pfc", "dcb pfc show dev eth0"},
      {"dcb -N app show dev eth0 dscp-prio", "dcb app show dev eth0 dscp-prio"},
      {"dcb app show dev eth0", "dcb app show dev eth0 dscp-prio"},
      {"mlnx_qos -i eth0", "mlnx_qos -i eth0"},
      {"ethtool -S eth0", "ethtool -S eth0"},
      {"ethtool --statistics eth0", "ethtool -S eth0"},
      {"ethtool -a eth0", "ethtool -a eth0"},
      {"lspci -vvv", "lspci -D -vvv"},
      {"lspci -D -vvv", "lspci -D -vvv"},
      {"lspci -vvvD", "lspci -D -vvv"},
      {"ibv_devinfo -v", "ibv_devinfo -v"},
      {"show_gids", "show_gids"},
  };
  const auto words = [](const std::string& line) {
    std::istringstream in(line);
    std::vector<std::string> out;
    for (std::string w; in >> w;) out.push_back(w);
    return out;
  };
  for (const auto& [spelling, key] : same) EXPECT_EQ(command_key(words(spelling)), key) << spelling;
  for (const char* other : {"dcb -j pfc show dev eth0", "dcb pfc set dev eth0 prio-pfc 3:on", "lspci -v", "lspci -t",
                            "ethtool eth0", "ip -d link show", "mlnx_qos -i eth0 --trust dscp", ""}) {
    EXPECT_EQ(command_key(words(other)), std::nullopt) << other;
  }
  // Every query netcheck makes is a command it reads.
  for (const auto& q : all_queries({"eth0"})) EXPECT_TRUE(command_key(q.argv)) << join_argv(q.argv);
}

TEST(ToolSource, CapturedByCommand) {
  fixture::TempDir dir;
  fixture::write_file(dir.path() / "pfc_eth0.log", "prio-pfc 0:off 1:off 2:off 3:off 4:on 5:off 6:off 7:off\n");
  fixture::write_file(dir.path() / "dcb-pfc-eth1.txt", "prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off\n");
  fixture::write_file(dir.path() / "links.txt", "1: lo\n");
  fixture::write_file(dir.path() / kCommandsFile,
                      "# saved on gpu-a01\npfc_eth0.log\tdcb -s pfc show dev eth0\r\n\nlinks.txt\tip link\n");
  const auto captured = ToolSource::captured(dir.path());
  EXPECT_EQ(parse_dcb_pfc(*captured.get(dcb_pfc_query("eth0")).text), std::vector<int>{4});
  // With COMMANDS.tsv, a file is found by its command only, never by its name.
  const auto eth1 = captured.get(dcb_pfc_query("eth1"));
  EXPECT_FALSE(eth1.text);
  EXPECT_NE(eth1.missing.find("no output of 'dcb pfc show dev eth1'"), std::string::npos) << eth1.missing;
  EXPECT_EQ(captured.ignored(), std::vector<std::string>{"links.txt (ip link)"});
}

// Operators save both spellings of a dcb command: the one that prints more is read, and said so.
TEST(ToolSource, OfTwoSpellingsTheRicherIsReadAndNamed) {
  fixture::TempDir dir;
  fixture::write_file(dir.path() / "plain.txt", "prio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off\n");
  fixture::write_file(dir.path() / "stats.txt",
                      "pfc-cap 8 macsec-bypass off delay 4096\nprio-pfc 0:off 1:off 2:off 3:on 4:off 5:off 6:off 7:off\n"
                      "requests 0:0 1:0 2:0 3:12 4:0 5:0 6:0 7:0\n");
  fixture::write_file(dir.path() / "app.txt", "dscp-prio CS3:3\n");
  fixture::write_file(dir.path() / "app-n.txt", "dscp-prio 24:3\n");
  fixture::write_file(dir.path() / kCommandsFile,
                      "stats.txt\tdcb -s pfc show dev eth0\nplain.txt\tdcb pfc show dev eth0\n"
                      "app.txt\tdcb app show dev eth0\napp-n.txt\tdcb -N app show dev eth0\n");
  const auto captured = ToolSource::captured(dir.path());
  const auto pfc = captured.get(dcb_pfc_query("eth0"));
  ASSERT_TRUE(pfc.text);
  EXPECT_EQ(*pfc.text, fixture::read_file(dir.path() / "stats.txt"));
  EXPECT_EQ(pfc.source, (dir.path() / "stats.txt").string() + " ('dcb -s pfc show dev eth0', line 1, read rather than line 2)");
  const auto app = captured.get(dcb_app_query("eth0"));
  ASSERT_TRUE(app.text);
  EXPECT_EQ(*app.text, "dscp-prio 24:3\n");
  EXPECT_NE(app.source.find("line 4, read rather than line 3"), std::string::npos) << app.source;
  EXPECT_TRUE(captured.ignored().empty());
  EXPECT_EQ(captured.passed_over(),
            (std::vector<std::string>{"plain.txt (dcb pfc show dev eth0, line 2): line 1 'dcb -s pfc show dev eth0' says more and was read",
                                      "app.txt (dcb app show dev eth0, line 3): line 4 'dcb -N app show dev eth0' says more and was read"}));
}

TEST(ToolSource, BadCommandsLinesNameFileAndLine) {
  const std::vector<std::pair<std::string, std::string>> bad{
      {"a.txt dcb pfc show dev eth0\n", ":1: expected FILE<TAB>COMMAND"},
      {"# header\nmissing.txt\tdcb pfc show dev eth0\n", ":2: FILE 'missing.txt' is not in"},
      {"a.txt\t\n", ":1: no COMMAND after the tab for 'a.txt'"},
      {"../a.txt\tdcb pfc show dev eth0\n", ":1: FILE '../a.txt' must name a file in"},
      {"a.txt\tdcb -s pfc show dev eth0\nb.txt\tdcb --statistics pfc show dev eth0\n",
       ":2: 'dcb pfc show dev eth0' already has an output, on line 1, in the same spelling: keep one of them"},
  };
  for (const auto& [text, message] : bad) {
    fixture::TempDir dir;
    fixture::write_file(dir.path() / "a.txt", "prio-pfc 3:on\n");
    fixture::write_file(dir.path() / "b.txt", "prio-pfc 3:on\n");
    fixture::write_file(dir.path() / kCommandsFile, text);
    try {
      ToolSource::captured(dir.path());
      ADD_FAILURE() << "no error for " << text;
    } catch (const rocebench::InputError& e) {
      EXPECT_NE(std::string(e.what()).find((dir.path() / kCommandsFile).string() + message), std::string::npos) << e.what();
    }
  }
  // Through the command line: exit 2 with the same message.
  fixture::FixtureHost host;
  fixture::write_file(host.capture() / kCommandsFile, "lspci-vvv.txt lspci -vvv\n");
  const auto run = fixture::run_netcheck({"--root", host.root().string(), "--capture", host.capture().string(), "--host", "n1"});
  EXPECT_EQ(run.code, rocebench::kExitBadInput);
  EXPECT_NE(run.err.find("COMMANDS.tsv:1: expected FILE<TAB>COMMAND"), std::string::npos) << run.err;
}

// A capture that is /dev/zero was read without end, a FIFO COMMANDS.tsv blocked forever: each is
// refused by its kind, and a capture over the stated limit by its size, before it is read.
TEST(ToolSource, CapturesThatAreNotFilesOrTooLargeAreRefused) {
  const auto error = [](const auto& read) {
    try {
      read();
    } catch (const rocebench::InputError& e) {
      return std::string(e.what());
    }
    return std::string("(no InputError)");
  };
  fixture::TempDir dir;
  const auto zero = dir.path() / "dcb-pfc-eth0.txt";
  std::filesystem::create_symlink("/dev/zero", zero);
  const auto captured = ToolSource::captured(dir.path());
  EXPECT_EQ(error([&] { captured.get(dcb_pfc_query("eth0")); }), zero.string() + ": is a character device, not a file");
  const auto big = dir.path() / "dcb-pfc-eth1.txt";
  fixture::write_file(big, "");
  std::filesystem::resize_file(big, 17 << 20);
  EXPECT_EQ(error([&] { captured.get(dcb_pfc_query("eth1")); }), big.string() + ": is 17 MiB; a tool capture is at most 16 MiB");
  const auto list = dir.path() / kCommandsFile;
  ASSERT_EQ(::mkfifo(list.c_str(), 0600), 0);
  EXPECT_EQ(error([&] { ToolSource::captured(dir.path()); }), list.string() + ": is a FIFO (named pipe), not a file");
}

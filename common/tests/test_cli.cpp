#include <gtest/gtest.h>

#include "rocebench/common/cli.hpp"
#include "rocebench/common/errors.hpp"

#include <filesystem>
#include <functional>

#include <fmt/format.h>

#include <nlohmann/json.hpp>

using namespace rocebench;

TEST(ArgParser, OptionsFlagsAndPositionals) {
  std::string plan, host = "default";
  int ranks = 1;
  double timeout = 0;
  bool verbose = false;
  std::vector<std::string> extra;
  ArgParser p("rocebench run", "runs a plan");
  p.option("--host", &host, "host").option("--ranks", &ranks, "ranks").option("--timeout", &timeout, "s");
  p.flag("--verbose", &verbose, "talk").positional("PLAN", &plan, "plan file", false).rest("ARGS", &extra, "more");
  ASSERT_TRUE(p.parse({"--ranks", "8", "--timeout=2.5", "--verbose", "my.json", "a", "b"}));
  EXPECT_EQ(ranks, 8);
  EXPECT_DOUBLE_EQ(timeout, 2.5);
  EXPECT_TRUE(verbose);
  EXPECT_EQ(plan, "my.json");
  EXPECT_EQ(host, "default");
  EXPECT_EQ(extra, (std::vector<std::string>{"a", "b"}));
}

TEST(ArgParser, BadUsageThrowsWithUsageText) {
  int n = 0;
  ArgParser p("rocebench x", "does x");
  p.option("--n", &n, "count");
  for (const Args& bad : {Args{"--nope"}, Args{"--n"}, Args{"--n", "seven"}, Args{"stray"}}) {
    try {
      p.parse(bad);
      ADD_FAILURE() << "accepted " << bad.front();
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("usage: rocebench x"), std::string::npos);
    }
  }
}

TEST(ArgParser, NumbersOutsideTheirRangeAreRefusedNamingTheFlagAndTheRange) {
  int ranks = 4;
  double deadline = 30;
  ArgParser p("rocebench run", "runs a plan");
  p.option("--ranks", &ranks, "ranks").range(1, 4096);
  p.option("--deadline", &deadline, "s").range(nlohmann::json{{"exclusiveMinimum", 0}, {"maximum", 86400}});
  auto error_of = [&](const Args& args) -> std::string {
    try {
      p.parse(args);
    } catch (const UsageError& e) {
      return std::string(e.what()).substr(0, std::string(e.what()).find('\n'));
    }
    return "accepted";
  };
  EXPECT_EQ(error_of({"--ranks", "0"}), "rocebench run: --ranks: 0 is out of range [1, 4096]");
  EXPECT_EQ(error_of({"--ranks", "-1"}), "rocebench run: --ranks: -1 is out of range [1, 4096]");
  EXPECT_EQ(error_of({"--ranks", "99999"}), "rocebench run: --ranks: 99999 is out of range [1, 4096]");
  EXPECT_EQ(error_of({"--deadline", "0"}), "rocebench run: --deadline: 0 is out of range (0, 86400]");
  EXPECT_EQ(error_of({"--deadline", "-1"}), "rocebench run: --deadline: -1 is out of range (0, 86400]");
  EXPECT_EQ(error_of({"--deadline", "nan"}), "rocebench run: --deadline: 'nan' is not a valid number");
  EXPECT_EQ(error_of({"--deadline", "inf"}), "rocebench run: --deadline: 'inf' is not a valid number");
  EXPECT_EQ(error_of({"--ranks", "1", "--deadline", "86400", "--ranks=4096", "--deadline", "0.001"}), "accepted");
  EXPECT_EQ(ranks, 4096);
  EXPECT_DOUBLE_EQ(deadline, 0.001);
  EXPECT_NE(p.usage().find("--ranks N"), std::string::npos);
  EXPECT_NE(p.usage().find("ranks [1, 4096]"), std::string::npos) << p.usage();
  EXPECT_NE(p.usage().find("s (0, 86400]"), std::string::npos) << p.usage();
}

TEST(ArgParser, OneSidedRangesAreRefusedInOneLineAndShownInTheUsage) {
  double rate = 1, loss = 0;
  ArgParser p("rocebench x", "does x");
  p.option("--rate", &rate, "Gbit/s").range(nlohmann::json{{"exclusiveMinimum", 0}});
  p.option("--loss", &loss, "fraction").range(nlohmann::json{{"maximum", 0.5}});
  auto error_of = [&](const Args& args) -> std::string {
    try {
      p.parse(args);
    } catch (const UsageError& e) {
      return e.what();
    }
    return "accepted";
  };
  // The whole message: the range says what the usage would, so the usage does not follow.
  EXPECT_EQ(error_of({"--rate", "0"}), "rocebench x: --rate: 0 is out of range > 0");
  EXPECT_EQ(error_of({"--loss", "0.6"}), "rocebench x: --loss: 0.6 is out of range <= 0.5");
  EXPECT_EQ(error_of({"--rate", "1e9", "--loss", "-3"}), "accepted");
  EXPECT_NE(p.usage().find("Gbit/s > 0\n"), std::string::npos) << p.usage();
  EXPECT_NE(p.usage().find("fraction <= 0.5\n"), std::string::npos) << p.usage();
}

TEST(ArgParser, ASchemaWithoutBoundsAddsNoRangeAndNoReader) {
  int count = 0;
  std::string name, label;
  const auto never = [](const std::string& text) -> std::vector<double> { throw UsageError("read '" + text + "' as a number"); };
  ArgParser p("rocebench x", "does x");
  p.option("--count", &count, "how many").range(nlohmann::json{{"type", "integer"}});
  p.option("--name", &name, "a name").range(nlohmann::json{{"enum", {"a", "b"}}}, never);
  p.option("--label", &label, "a label").range(nlohmann::json{{"type", "string"}, {"minimum", 1}}, never);
  ASSERT_NO_THROW(p.parse({"--count", "-7", "--name", "c", "--label", "x"}));
  EXPECT_EQ(count, -7);
  EXPECT_EQ(label, "x");
  EXPECT_NE(p.usage().find("how many\n"), std::string::npos) << p.usage();
  EXPECT_NE(p.usage().find("a label\n"), std::string::npos) << p.usage();
}

TEST(ArgParser, OneNumberReaderNamesTheOptionAndWhatWasTyped) {
  EXPECT_EQ(parse_number<int>("--ranks", "-3"), -3);
  EXPECT_EQ(parse_number<long long>("--iters", "9000000000"), 9'000'000'000LL);
  EXPECT_DOUBLE_EQ(parse_number<double>("--deadline", "1e3"), 1000);
  const auto error_of = [](const std::function<void()>& read) -> std::string {
    try {
      read();
    } catch (const UsageError& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_EQ(error_of([] { parse_number<int>("--ranks", "1.5"); }), "--ranks: '1.5' is not a valid number");
  EXPECT_EQ(error_of([] { parse_number<int>("--ranks", "9000000000"); }), "--ranks: '9000000000' is not a valid number");
  EXPECT_EQ(error_of([] { parse_number<long long>("--iters", "4 "); }), "--iters: '4 ' is not a valid number");
  EXPECT_EQ(error_of([] { parse_number<double>("--rate", "nan"); }), "--rate: 'nan' is not a valid number");
  EXPECT_EQ(error_of([] { parse_number<double>("--rate", ""); }), "--rate: '' is not a valid number");
  // What was typed, quoted short and printable.
  std::string long_junk(100, '7');
  long_junk.push_back('\x01');
  EXPECT_EQ(error_of([&] { parse_number<double>("--rate", long_junk); }),
            "--rate: '" + std::string(80, '7') + "… (101 bytes)' is not a valid number");
}

TEST(LauncherFlags, TheHelpAndTheLaunchTakeTheCommandsDefaultRanks) {
  for (const int ranks : {1, 2}) {
    LauncherFlags launcher(ranks);
    ArgParser p("rocebench x", "does x");
    launcher.add_to(p);
    EXPECT_NE(p.usage().find(fmt::format("local ranks to start (default {})\n", ranks)), std::string::npos) << p.usage();
    ASSERT_TRUE(p.parse({"--deadline", "5"}));
    EXPECT_EQ(launcher.to_args(), (Args{"--ranks", std::to_string(ranks), "--deadline", "5"}));
    EXPECT_EQ(launcher.to_args(8), (Args{"--ranks", "8", "--deadline", "5"}));  // as many as a step needs
    EXPECT_EQ(launcher.given(), (Args{"--deadline", "5"}));  // a probe's sides started by hand start no ranks
  }
  LauncherFlags launcher(1);
  ArgParser p("rocebench x", "does x");
  launcher.add_to(p);
  ASSERT_TRUE(p.parse({"--launcher", "mpirun", "--ranks", "3"}));
  EXPECT_EQ(launcher.to_args(8), (Args{"--ranks", "3", "--launcher", "mpirun"}));  // what was typed wins
}

TEST(ArgParser, ByteSizes) {
  EXPECT_EQ(parse_bytes("-b", "8"), 8u);
  EXPECT_EQ(parse_bytes("-b", "64K"), 65536u);
  EXPECT_EQ(parse_bytes("-e", "128M"), 128u << 20);
  EXPECT_EQ(parse_bytes("-e", "2GB"), 2ull << 30);
  EXPECT_THROW(parse_bytes("-b", "lots"), UsageError);
  EXPECT_THROW(parse_bytes("-b", "-5"), UsageError);
  EXPECT_THROW(parse_bytes("-b", "8Q"), UsageError);
  EXPECT_THROW(parse_bytes("-b", "8MM"), UsageError);
  // One grammar for every size flag (microbench's own accepted KiB and refused T).
  EXPECT_EQ(parse_bytes("--size", "4KiB"), 4096u);
  EXPECT_EQ(parse_bytes("--size", "8mib"), 8u << 20);
  EXPECT_EQ(parse_bytes("-e", "2T"), 2ull << 40);
  EXPECT_THROW(parse_bytes("--size", "K"), UsageError);
  EXPECT_THROW(parse_bytes("-e", "8KiBB"), UsageError);
  // 99999999999T wrapped around to 8.5e18 bytes, then std::bad_alloc.
  try {
    parse_bytes("-e", "99999999999T");
    ADD_FAILURE() << "no error";
  } catch (const UsageError& e) {
    EXPECT_STREQ(e.what(), "-e: '99999999999T' is larger than a size can be here (16 EiB)");
  }
  EXPECT_EQ(parse_bytes("-e", "16777215T"), 16777215ull << 40);
  EXPECT_THROW(parse_bytes("-e", "16777216T"), UsageError);
  EXPECT_THROW(parse_bytes("-e", "99999999999999999999"), UsageError);  // 20 digits
}

TEST(ArgParser, RunGuardedMapsErrorsToExitCodes) {
  EXPECT_EQ(run_guarded("t", [] { return 0; }), kExitOk);
  EXPECT_EQ(run_guarded("t", []() -> int { throw UsageError("u"); }), kExitBadInput);
  EXPECT_EQ(run_guarded("t", []() -> int { throw InputError("f", 3, "x", "bad"); }), kExitBadInput);
  EXPECT_EQ(run_guarded("t", []() -> int { throw InfraError("peer lost"); }), kExitInfra);
  // A folder the user named that cannot be made: their input, exit 2, not an internal error.
  testing::internal::CaptureStderr();
  EXPECT_EQ(run_guarded("t", []() -> int {
              std::filesystem::create_directories("/proc/rocebench-not-here/r");
              return 0;
            }),
            kExitBadInput);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err.find("internal error"), std::string::npos) << err;
  EXPECT_NE(err.find("t: /proc/rocebench-not-here/r: "), std::string::npos) << err;
}

TEST(Errors, WhatTheUserGaveIsQuotedShortAndPrintable) {
  EXPECT_EQ(printable_excerpt("node01"), "node01");
  EXPECT_EQ(printable_excerpt(std::string("a\x01\n\xff", 4)), "a\\x01\\x0a\\xff");
  const std::string huge(10'000'000, 'x');
  EXPECT_EQ(printable_excerpt(huge), std::string(80, 'x') + "… (10000000 bytes)");
  EXPECT_EQ(printable_excerpt("abcdef", 3), "abc… (6 bytes)");
}

TEST(Errors, AJsonParseErrorQuotesAnExcerptOfWhatItRead) {
  const std::string what = "[json.exception.parse_error.101] parse error at line 1, column 10000011: syntax error while "
                           "parsing value - invalid string: missing closing quote; last read: '\"" +
                           std::string(10'000'000, 'x') + "'";
  const std::string shown = json_parse_message(what);
  EXPECT_LT(shown.size(), 300u);
  EXPECT_NE(shown.find("missing closing quote; last read: '\"xxx"), std::string::npos) << shown;
  EXPECT_NE(shown.find("… (10000001 bytes)'"), std::string::npos) << shown;
}

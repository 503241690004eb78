// One declaration per option: the flag, the plan's schema and the reader must agree.
#include <gtest/gtest.h>

#include <fstream>

#include "rocebench/common/cli.hpp"
#include "rocebench/common/options.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/common/temp_dir.hpp"

namespace rocebench {
namespace {

using nlohmann::json;

const OptionTable& table() {
  static const OptionTable t(
      {{.key = "spin_us", .flag = "--spin-us", .rules = {{"minimum", 0}, {"maximum", 10000}}, .fallback = 50,
        .help = "microseconds a wait polls"},
       {.key = "chunk_bytes", .flag = "--chunk", .type = OptionType::size, .rules = {{"minimum", 64}},
        .fallback = 1 << 20, .help = "pipelining chunk"},
       {.key = "algorithm", .flag = "--algorithm", .type = OptionType::text, .rules = {{"enum", {"ring", "ps"}}},
        .fallback = "ring", .help = "ring | ps", .family = "own"},
       {.key = "check", .flag = "--no-check", .type = OptionType::boolean, .fallback = true, .help = "skip the check"},
       {.key = "world_sizes", .flag = "--world-sizes", .type = OptionType::integer_list, .rules = {{"minimum", 1}},
        .help = "rank counts"},
       {.key = "bytes", .flag = "--size", .type = OptionType::sizes, .rules = {{"minimum", 1}}, .fallback = 2,
        .help = "message size"},
       {.key = "iters", .flag = "--iters", .rules = {{"minimum", 1}}, .help = "timed iterations"}},
      {{"iterations", "iters"}});
  return t;
}

json parse(const Args& args, bool with_defaults = true) {
  ArgParser p("prog", "a test");
  OptionFlags flags(table(), p);
  p.parse(args);
  return flags.params("prog", with_defaults);
}

std::string usage_error(const Args& args) {
  try {
    parse(args);
  } catch (const UsageError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(Options, FlagsSchemaAndReaderAgree) {
  const json params = parse({"--spin-us", "7", "--chunk", "64K", "--algorithm", "ps", "--no-check", "--world-sizes",
                             "1,2,4", "--size", "1M", "--iters", "3"});
  EXPECT_EQ(params, json({{"spin_us", 7}, {"chunk_bytes", 65536}, {"algorithm", "ps"}, {"check", false},
                          {"world_sizes", {1, 2, 4}}, {"bytes", 1 << 20}, {"iters", 3}}));
  EXPECT_TRUE(JsonSchema(table().schema()).validate(params).empty()) << table().schema().dump();
  EXPECT_EQ(table().get<int>(params, "spin_us"), 7);
  EXPECT_EQ(table().get<std::vector<int>>(params, "world_sizes"), (std::vector<int>{1, 2, 4}));
  // Not given: the declared default, from the flags and from the reader alike.
  const json defaults = parse({});
  EXPECT_EQ(defaults, json({{"spin_us", 50}, {"chunk_bytes", 1 << 20}, {"algorithm", "ring"}, {"check", true}, {"bytes", 2}}));
  EXPECT_EQ(table().get<int>(json::object(), "spin_us"), 50);
  EXPECT_EQ(table().get<bool>(json::object(), "check"), true);
  EXPECT_FALSE(table().find<int>(json::object(), "iters"));
  EXPECT_EQ(parse({}, false), json::object());
  // The plan takes one size or a list; the flag one.
  EXPECT_TRUE(JsonSchema(table().schema()).validate({{"bytes", {64, 4096}}}).empty());
  EXPECT_FALSE(JsonSchema(table().schema()).validate({{"bytes", {0}}}).empty());
}

TEST(Options, UsageShowsDefaultAndRange) {
  ArgParser p("prog", "a test");
  OptionFlags flags(table(), p);
  const std::string usage = p.usage();
  EXPECT_NE(usage.find("microseconds a wait polls (default 50) [0, 10000]\n"), std::string::npos) << usage;
  EXPECT_NE(usage.find("--chunk SIZE"), std::string::npos) << usage;
  EXPECT_NE(usage.find("pipelining chunk (default 1048576) >= 64\n"), std::string::npos) << usage;
  EXPECT_NE(usage.find("rank counts >= 1\n"), std::string::npos) << usage;
  EXPECT_NE(usage.find("ring | ps (default ring; ring | ps)"), std::string::npos) << usage;
}

TEST(Options, OutOfRangeNamesTheFlagOrTheField) {
  EXPECT_NE(usage_error({"--spin-us", "-4"}).find("prog: --spin-us: -4 is out of range [0, 10000]"), std::string::npos)
      << usage_error({"--spin-us", "-4"});
  // The parser's range check, one line: the flag, what was typed, the range.
  EXPECT_EQ(usage_error({"--chunk", "1"}), "prog: --chunk: 1 is out of range >= 64");
  EXPECT_EQ(usage_error({"--chunk", "64K", "--iters", "0"}), "prog: --iters: 0 is out of range >= 1");
  EXPECT_EQ(usage_error({"--world-sizes", "2,0,4"}), "prog: --world-sizes: 2,0,4 is out of range >= 1");
  EXPECT_NE(usage_error({"--algorithm", "tree"}).find("prog: --algorithm \"tree\": must be one of"), std::string::npos)
      << usage_error({"--algorithm", "tree"});
  EXPECT_NE(usage_error({"--spin-us", "lots"}).find("--spin-us: 'lots' is not a valid number"), std::string::npos);
  EXPECT_NE(usage_error({"--world-sizes", "1,,2"}).find("--world-sizes takes whole numbers like 1,2,4, not '1,,2'"),
            std::string::npos);
  // The same bound in a plan: the field's pointer and the bound.
  const auto errors = JsonSchema(table().schema()).validate({{"spin_us", 10001}});
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].pointer, "/spin_us");
  EXPECT_EQ(errors[0].message, "must be <= 10000");
}

TEST(Options, OnlyNumberFlagsAreReadAsNumbers) {
  // A bound in a text option's rules (JSON Schema applies it to numbers only) must not make its
  // flag's value read as a number.
  const OptionTable t({{.key = "host", .flag = "--host", .type = OptionType::text, .rules = {{"minimum", 1}}, .help = "a host"},
                       {.key = "n", .flag = "--n", .help = "a count without bounds"}});
  ArgParser p("prog", "a test");
  OptionFlags flags(t, p);
  ASSERT_NO_THROW(p.parse({"--host", "node7", "--n", "-5"}));
  EXPECT_EQ(flags.params("prog"), json({{"host", "node7"}, {"n", -5}}));
}

TEST(Options, OldSpellingsAreRefusedWithTheNewOne) {
  const auto errors = JsonSchema(table().schema()).validate({{"iterations", 5}});
  ASSERT_EQ(errors.size(), 1u);
  EXPECT_EQ(errors[0].pointer, "/iterations");
  EXPECT_EQ(errors[0].message, "'iterations' is now 'iters'");
  ArgParser p("prog", "a test");
  std::string results;
  p.option("--results", &results, "where records go").renamed("--out", "--results");
  try {
    p.parse({"--out", "r.jsonl"});
    ADD_FAILURE() << "--out accepted";
  } catch (const UsageError& e) {
    EXPECT_NE(std::string(e.what()).find("prog: '--out' is now '--results'"), std::string::npos) << e.what();
  }
}

// --results once named a file of records; a module command's --results is now the runs' folder.
TEST(Options, LauncherResultsNamingAFileIsRefusedWithTheFolderMeaning) {
  const auto dir = make_temp_dir("launcher-results");
  std::ofstream(dir / "existing") << "{}\n";
  for (const auto& given : {(dir / "r.jsonl").string(), (dir / "existing").string()}) {
    LauncherFlags launcher(1);
    ArgParser p("prog", "a test");
    launcher.add_to(p);
    ASSERT_TRUE(p.parse({"--results", given}));
    try {
      launcher.to_args();
      ADD_FAILURE() << "--results " << given << " accepted";
    } catch (const UsageError& e) {
      EXPECT_NE(std::string(e.what()).find("--results " + given + ": names a file; --results is now the folder"), std::string::npos)
          << e.what();
    }
  }
  LauncherFlags launcher(1);
  ArgParser p("prog", "a test");
  launcher.add_to(p);
  ASSERT_TRUE(p.parse({"--results", dir.string()}));
  EXPECT_EQ(launcher.to_args(), (Args{"--ranks", "1", "--results", dir.string()}));
}

TEST(Options, AFamilyLeavesTheSchemaOfAStepThatTakesNoneOfIt) {
  const json schema = table().schema("own");
  EXPECT_FALSE(schema["properties"].contains("algorithm"));
  EXPECT_TRUE(schema["properties"].contains("spin_us"));
  EXPECT_FALSE(JsonSchema(schema).validate({{"algorithm", "ring"}}).empty());
}

}  // namespace
}  // namespace rocebench

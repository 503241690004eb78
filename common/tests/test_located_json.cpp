#include <gtest/gtest.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/common/json_depth.hpp"
#include "rocebench/common/located_json.hpp"

using namespace rocebench;

TEST(LocatedJson, EveryValueHasItsLine) {
  const auto doc = parse_located(R"({
  "name": "local",
  "steps": [
    {"step": "harness.rendezvous",
     "params": {
       "rounds": 5
     }},
    {"step": "x"}
  ]
})",
                                 "plan.json");
  EXPECT_EQ(doc.line_of("/name"), 2);
  EXPECT_EQ(doc.line_of("/steps"), 3);
  EXPECT_EQ(doc.line_of("/steps/0"), 4);
  EXPECT_EQ(doc.line_of("/steps/0/params"), 5);
  EXPECT_EQ(doc.line_of("/steps/0/params/rounds"), 6);
  EXPECT_EQ(doc.line_of("/steps/1/step"), 8);
  // A missing field is placed at its nearest ancestor.
  EXPECT_EQ(doc.line_of("/steps/1/params"), 8);
}

TEST(LocatedJson, SyntaxErrorNamesFileLineAndColumn) {
  try {
    parse_located("{\n  \"a\": 1,\n  \"b\": ,\n}", "broken.json");
    FAIL() << "no error";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.rfind("broken.json:3:", 0), 0u) << what;
    EXPECT_NE(what.find("column 8"), std::string::npos) << what;
  }
}

// Found by fuzz_plan: a number beyond double's range was an uncaught out_of_range (exit 3, "internal error").
TEST(LocatedJson, ANumberBeyondDoublesRangeIsBadInput) {
  try {
    parse_located("{\"deadline_s\": 26843E456}", "plan.json");
    FAIL() << "no error";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("plan.json: not valid JSON: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("number overflow"), std::string::npos) << e.what();
  }
}

// 50,000 levels crashed the process (exit 139); the bound is checked before parsing.
TEST(LocatedJson, NestingDeeperThanTheBoundIsRefusedWithLineAndColumn) {
  const std::string deep = "{\"a\":\n" + std::string(50000, '[') + std::string(50000, ']') + "}";
  try {
    parse_located(deep, "deep.json");
    FAIL() << "no error";
  } catch (const InputError& e) {
    // The opening brace is level 1, so the 256th bracket of line 2 opens level 257.
    EXPECT_STREQ(e.what(), "deep.json:2: column 256: nested deeper than 256 levels");
  }
  const std::string just = std::string(256, '[') + std::string(256, ']');
  EXPECT_NO_THROW(parse_located(just, "ok.json"));
  // Brackets inside strings, escaped quotes too, are not nesting.
  EXPECT_EQ(json_too_deep_at("[\"" + std::string(300, '[') + "\\\"" + std::string(300, '{') + "\"]"), std::string::npos);
  EXPECT_EQ(json_too_deep_at(std::string(257, '[')), 256u);
}

TEST(LocatedJson, FailNamesFieldPath) {
  const auto doc = parse_located("{\"steps\": [\n {\"params\": {\"bytes\": -1}}]}", "p.json");
  try {
    doc.fail("/steps/0/params/bytes", "must be positive");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "p.json:2: field 'steps[0].params.bytes': must be positive");
  }
}

TEST(LocatedJson, EscapedKeysAreFound) {
  const auto doc = parse_located("{\n\"a/b\":\n 1, \"q\\\"x\": 2}", "f");
  EXPECT_EQ(doc.line_of("/a~1b"), 2);
  EXPECT_EQ(doc.line_of("/q\"x"), 3);
}

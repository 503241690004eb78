#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <functional>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "rocebench/common/record.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/common/temp_dir.hpp"
#include "setup_required.hpp"

using namespace rocebench;

namespace {

json valid_result() {
  ResultRecord r;
  r.step = "collectives.allreduce";
  r.host = "h0";
  r.world = 2;
  r.metrics = {{"busbw_GBps", 1.5}};
  r.samples = {{"n", 20}};
  return to_json(r, "run-x");
}

bool has_error_at(const std::vector<SchemaError>& errors, const std::string& pointer) {
  for (const auto& e : errors) {
    if (e.pointer == pointer) return true;
  }
  return false;
}

}  // namespace

TEST(Schema, ValidResultPasses) { EXPECT_TRUE(result_schema().validate(valid_result()).empty()); }

TEST(Schema, CompiledSchemaIsTheRepositoryFile) {
  const auto file = JsonSchema::from_file(std::string(ROCEBENCH_SOURCE_DIR) + "/common/schema/result.schema.json");
  EXPECT_EQ(file.document(), result_schema().document());
}

TEST(Schema, EachBrokenFieldIsNamed) {
  struct Case {
    const char* what;
    std::function<void(json&)> breakit;
    const char* pointer;
  };
  const std::vector<Case> cases{
      {"wrong schema id", [](json& j) { j["schema"] = "rocebench.result/9"; }, "/schema"},
      {"unknown kind", [](json& j) { j["kind"] = "measurement"; }, "/kind"},
      {"time not RFC 3339", [](json& j) { j["time"] = "yesterday"; }, "/time"},
      {"negative rank", [](json& j) { j["rank"] = -1; }, "/rank"},
      {"metric not a number", [](json& j) { j["metrics"]["busbw_GBps"] = "fast"; }, "/metrics/busbw_GBps"},
      {"step without module", [](json& j) { j["step"] = "allreduce"; }, "/step"},
      {"missing params", [](json& j) { j.erase("params"); }, "/params"},
      {"skip without reason", [](json& j) { j["status"] = "skip"; }, "/reason"},
      {"bad status", [](json& j) { j["status"] = "great"; }, "/status"},
  };
  for (const auto& c : cases) {
    json j = valid_result();
    c.breakit(j);
    const auto errors = result_schema().validate(j);
    EXPECT_TRUE(has_error_at(errors, c.pointer)) << c.what << ": no error at " << c.pointer;
  }
}

TEST(Schema, KeywordsOfTheSubset) {
  const JsonSchema s(json::parse(R"({
    "$defs": {"port": {"type": "integer", "minimum": 1, "maximum": 65535}},
    "type": "object",
    "properties": {
      "port": {"$ref": "#/$defs/port"},
      "mode": {"enum": ["a", "b"]},
      "tags": {"type": "array", "items": {"type": "string", "minLength": 1}, "minItems": 1},
      "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]}
    },
    "additionalProperties": false
  })"));
  EXPECT_TRUE(s.validate(json::parse(R"({"port": 80, "mode": "a", "tags": ["x"], "either": 3})")).empty());
  EXPECT_TRUE(has_error_at(s.validate(json::parse(R"({"port": 0})")), "/port"));
  EXPECT_TRUE(has_error_at(s.validate(json::parse(R"({"port": 2.5})")), "/port"));
  EXPECT_TRUE(has_error_at(s.validate(json::parse(R"({"mode": "c"})")), "/mode"));
  EXPECT_TRUE(has_error_at(s.validate(json::parse(R"({"tags": []})")), "/tags"));
  EXPECT_TRUE(has_error_at(s.validate(json::parse(R"({"tags": [""]})")), "/tags/0"));
  EXPECT_TRUE(has_error_at(s.validate(json::parse(R"({"either": 1.5})")), "/either"));
  EXPECT_TRUE(has_error_at(s.validate(json::parse(R"({"extra": 1})")), "/extra"));
}

// Cross-check against the reference implementation (python3-jsonschema, Debian): our records must
// be valid for it too, and an invalid one must be invalid for it.
// fuzz_plan (10 minutes): a huge number against "type": "integer" was cast to long long, undefined
// behaviour. It is an integer in JSON Schema's sense, and the range then refuses it.
TEST(Schema, AHugeWholeNumberIsAnIntegerAndTheRangeRefusesIt) {
  const JsonSchema s(json::parse(R"({"type": "object", "properties": {"ranks": {"type": "integer", "maximum": 4096}}})"));
  EXPECT_TRUE(has_error_at(s.validate(json::parse(R"({"ranks": 7.7e124})")), "/ranks"));
  EXPECT_TRUE(s.validate(json::parse(R"({"ranks": 4096.0})")).empty());
  EXPECT_TRUE(has_error_at(s.validate(json::parse(R"({"ranks": 2.5})")), "/ranks"));
}

TEST(Schema, ReferenceValidatorAgrees) {
  const char* python = "/usr/bin/python3";
  if (std::system((std::string(python) + " -c 'import jsonschema' 2>/dev/null").c_str()) != 0) {
    RB_SKIP_WITHOUT_SETUP("python3-jsonschema is not installed (ci/setup.sh installs it)");
  }
  const auto dir = rocebench::make_temp_dir("schema");
  std::ofstream(dir / "good.json") << valid_result().dump();
  json bad = valid_result();
  bad["metrics"]["busbw_GBps"] = "fast";
  std::ofstream(dir / "bad.json") << bad.dump();
  const std::string schema = std::string(ROCEBENCH_SOURCE_DIR) + "/common/schema/result.schema.json";
  auto check = [&](const std::string& file) {
    const std::string cmd = std::string(python) +
                            " -c 'import json,sys,jsonschema; jsonschema.validate(json.load(open(sys.argv[2])), "
                            "json.load(open(sys.argv[1])), cls=jsonschema.Draft202012Validator)' " +
                            schema + " " + (dir / file).string() + " 2>/dev/null";
    return std::system(cmd.c_str());
  };
  EXPECT_EQ(check("good.json"), 0);
  EXPECT_NE(check("bad.json"), 0);
}

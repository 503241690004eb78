#include <gtest/gtest.h>

#include <fstream>

#include "fixtures.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/reports/dataset.hpp"
#include "rocebench/reports/fast_check.hpp"

using namespace rocebench;
using namespace rocebench::reports;
using namespace rocebench::reports::testing;

TEST(Dataset, BadRecordIsReportedWithFileAndLineAndSkipped) {
  const auto dir = temp_dir();
  auto records = full_run("r1");
  json broken = records[2];
  broken["world"] = 0;  // the schema wants >= 1
  std::vector<json> lines{records[0], records[1], broken, records[3]};
  const auto file = write_records(dir / "results.jsonl", lines);
  std::ofstream(file, std::ios::app) << "{\"schema\": \"rocebench.result/1\", \"run\"\n";  // a writer died here

  Dataset d;
  d.load(file);
  EXPECT_EQ(d.results.size(), 3u);
  ASSERT_EQ(d.issues.size(), 2u);
  EXPECT_EQ(d.issues[0].line, 3);
  EXPECT_EQ(d.issues[0].file, file.string());
  EXPECT_NE(d.issues[0].message.find("/world"), std::string::npos) << d.issues[0].message;
  EXPECT_EQ(d.issues[1].line, 5);
  EXPECT_EQ(d.results[2].line, 4);
}

TEST(Dataset, EmptyMissingOrAllBadInputIsAnError) {
  const auto dir = temp_dir();
  Dataset d;
  write_file(dir / "empty.jsonl", "");
  EXPECT_THROW(d.load(dir / "empty.jsonl"), InputError);
  EXPECT_THROW(d.load(dir / "absent.jsonl"), InputError);
  write_file(dir / "bad.jsonl", "not json\n{\"kind\": \"result\"}\n");
  try {
    d.load(dir / "bad.jsonl");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("no valid record"), std::string::npos);
  }
  EXPECT_EQ(d.issues.size(), 2u);
}

TEST(Dataset, KeepsSampleSummaries) {
  const auto dir = temp_dir();
  Dataset d;
  d.load(write_records(dir / "r.jsonl", {collective("r", "allreduce", 4, 1024, 100, 8)}));
  ASSERT_EQ(d.results.size(), 1u);
  const Spread& s = d.results[0].samples;
  EXPECT_EQ(d.names.str(s.of), "time_us");
  EXPECT_TRUE(s.has_ci);
  EXPECT_DOUBLE_EQ(s.median, 100);
  EXPECT_EQ(s.n, 5u);
}

// The fast check may only say "valid" where the schema agrees.
TEST(FastCheck, NeverAcceptsWhatTheSchemaRejects) {
  std::vector<json> cases;
  for (const auto& r : full_run("run-1")) {
    EXPECT_TRUE(surely_valid(r) || r["kind"] != "result") << r.dump();
    cases.push_back(r);
    for (const auto& [key, value] : r.items()) {
      json drop = r;
      drop.erase(key);
      cases.push_back(drop);
      for (const json& bad : {json(nullptr), json(-1), json(""), json("Bad Step"), json(1.5), json::array(), json("2026-13")}) {
        json changed = r;
        changed[key] = bad;
        cases.push_back(changed);
      }
    }
    json metric_text = r;
    if (metric_text.contains("metrics")) {
      metric_text["metrics"]["x"] = "fast";
      cases.push_back(metric_text);
    }
    json failed_without_reason = r;
    failed_without_reason["status"] = "fail";
    failed_without_reason.erase("reason");
    cases.push_back(failed_without_reason);
  }
  std::size_t accepted = 0;
  for (const auto& c : cases) {
    if (!surely_valid(c)) continue;
    ++accepted;
    EXPECT_TRUE(result_schema().validate(c).empty()) << c.dump();
  }
  EXPECT_GT(accepted, 30u);
}

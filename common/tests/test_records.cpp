#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "rocebench/common/errors.hpp"
#include "rocebench/common/record.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/common/stats.hpp"
#include "rocebench/common/temp_dir.hpp"

using namespace rocebench;
namespace fs = std::filesystem;

namespace {

fs::path temp_dir() { return make_temp_dir("records"); }

ResultRecord sample_result() {
  ResultRecord r;
  r.step = "harness.rendezvous";
  r.host = "node-a";
  r.rank = 1;
  r.world = 4;
  r.params = {{"rounds", 10}};
  const std::vector<double> xs{1.0, 2.0, 3.0};
  const Summary s = summarize(xs);
  r.metrics = {{"barrier_us_p50", s.median}};
  r.samples = to_json(s);
  return r;
}

}  // namespace

TEST(Records, RoundTripThroughFileKeepsEveryField) {
  const fs::path dir = temp_dir();
  const fs::path file = dir / "results.jsonl";
  const json result = to_json(sample_result(), "run-1");
  CheckRecord c{"roce.pfc.enabled_priorities", "node-a", "mlx5_0/1", json::array({3}), json::array({4}),
                Status::fail, "mlnx_qos -i eth0 --pfc 0,0,0,1,0,0,0,0", ""};
  const json check = to_json(c, "run-1");
  const json event = event_record("run-1", "rank.lost", "rank 2 on node-c was lost", {{"rank", 2}});
  {
    RecordWriter w(file);
    w.append(result);
    w.append(check);
    w.append(event);
    w.sync();
  }
  const RecordFile back = read_records(file, &result_schema());
  EXPECT_TRUE(back.issues.empty()) << back.issues.front().message;
  ASSERT_EQ(back.records.size(), 3u);
  EXPECT_EQ(back.records[0], result);
  EXPECT_EQ(back.records[1], check);
  EXPECT_EQ(back.records[2], event);
  EXPECT_EQ(back.record_lines, (std::vector<int>{1, 2, 3}));
  fs::remove_all(dir);
}

TEST(Records, AppendsToAnExistingFileWithoutRewritingIt) {
  const fs::path dir = temp_dir();
  const fs::path file = dir / "results.jsonl";
  { RecordWriter(file).append(event_record("r", "first", "one")); }
  { RecordWriter(file).append(event_record("r", "second", "two")); }
  const RecordFile back = read_records(file);
  ASSERT_EQ(back.records.size(), 2u);
  EXPECT_EQ(back.records[0]["event"], "first");
  EXPECT_EQ(back.records[1]["event"], "second");
  fs::remove_all(dir);
}

TEST(Records, ANumberBeyondDoublesRangeIsAnIssueOfItsLine) {
  const fs::path dir = temp_dir();
  const fs::path file = dir / "results.jsonl";
  {
    RecordWriter w(file);
    w.append(to_json(sample_result(), "run-1"));
  }
  std::ofstream(file, std::ios::app) << "{\"kind\": \"result\", \"value\": 1E999}\n";
  const RecordFile back = read_records(file, &result_schema());
  EXPECT_EQ(back.records.size(), 1u);
  ASSERT_EQ(back.issues.size(), 1u);
  EXPECT_EQ(back.issues[0].line, 2);
  EXPECT_NE(back.issues[0].message.find("not a JSON record"), std::string::npos) << back.issues[0].message;
  fs::remove_all(dir);
}

TEST(Records, TruncatedLastLineKeepsCompleteRecordsAndSaysSo) {
  const fs::path dir = temp_dir();
  const fs::path file = dir / "results.jsonl";
  {
    RecordWriter w(file);
    w.append(to_json(sample_result(), "run-1"));
    w.append(to_json(sample_result(), "run-1"));
  }
  const std::string cut = to_json(sample_result(), "run-1").dump().substr(0, 40);
  std::ofstream(file, std::ios::app) << cut;  // a writer killed mid-record
  const RecordFile back = read_records(file, &result_schema());
  EXPECT_EQ(back.records.size(), 2u);
  EXPECT_TRUE(back.truncated_tail);
  ASSERT_EQ(back.issues.size(), 1u);
  EXPECT_EQ(back.issues[0].line, 3);
  EXPECT_NE(back.issues[0].message.find("cut short"), std::string::npos);
  fs::remove_all(dir);
}

TEST(Records, ALineNestedTooDeeplyIsReportedAndTheOthersKept) {
  const fs::path dir = temp_dir();
  const fs::path file = dir / "results.jsonl";
  {
    RecordWriter w(file);
    w.append(to_json(sample_result(), "run-1"));
  }
  std::ofstream(file, std::ios::app) << std::string(50000, '[') << std::string(50000, ']') << "\n";
  { RecordWriter(file).append(to_json(sample_result(), "run-1")); }
  const RecordFile back = read_records(file, &result_schema());
  EXPECT_EQ(back.records.size(), 2u);
  ASSERT_EQ(back.issues.size(), 1u);
  EXPECT_EQ(back.issues[0].line, 2);
  EXPECT_EQ(back.issues[0].message, "nested deeper than 256 levels; ignored");
  fs::remove_all(dir);
}

TEST(Records, BrokenLineInTheMiddleIsReportedWithItsLine) {
  const fs::path dir = temp_dir();
  const fs::path file = dir / "results.jsonl";
  std::ofstream out(file);
  out << to_json(sample_result(), "r").dump() << "\n";
  out << "{not json\n";
  json bad = to_json(sample_result(), "r");
  bad["rank"] = -1;
  out << bad.dump() << "\n";
  out << to_json(sample_result(), "r").dump() << "\n";
  out.close();
  const RecordFile back = read_records(file, &result_schema());
  EXPECT_EQ(back.records.size(), 2u);
  EXPECT_FALSE(back.truncated_tail);
  ASSERT_EQ(back.issues.size(), 2u);
  EXPECT_EQ(back.issues[0].line, 2);
  EXPECT_EQ(back.issues[1].line, 3);
  EXPECT_NE(back.issues[1].message.find("/rank"), std::string::npos) << back.issues[1].message;
  EXPECT_EQ(back.record_lines, (std::vector<int>{1, 4}));
  fs::remove_all(dir);
}

TEST(Records, UnwritableFolderIsRefused) {
  if (geteuid() == 0) {
    // root writes anywhere: use a path under a file, which no one can create.
    const fs::path dir = temp_dir();
    std::ofstream(dir / "plain-file") << "x";
    EXPECT_THROW(RecordWriter(dir / "plain-file" / "results.jsonl"), InputError);
    fs::remove_all(dir);
  } else {
    EXPECT_THROW(RecordWriter("/proc/rb-no-such/results.jsonl"), InputError);
  }
}

TEST(Records, MissingFileIsAnInputError) { EXPECT_THROW(read_records("/nonexistent/results.jsonl"), InputError); }

#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include <fstream>

#include "fixtures.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/results_limits.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/reports/dataset.hpp"
#include "rocebench/reports/fast_check.hpp"
#include "../records/src/record_scan.hpp"

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

// A run's folder reads as its results.jsonl, as `run --results-dir` wrote it; a folder without one
// is refused naming the file that is missing.
TEST(Dataset, ARunFolderReadsAsItsResultsFile) {
  const auto dir = temp_dir();
  std::filesystem::create_directories(dir / "run1");
  const auto file = write_records(dir / "run1" / "results.jsonl", full_run("r1"));
  Dataset d, from_file;
  d.load(dir / "run1");
  from_file.load(file);
  EXPECT_GT(d.results.size(), 0u);
  EXPECT_EQ(d.results.size(), from_file.results.size());
  ASSERT_EQ(d.files.size(), 1u);
  EXPECT_EQ(d.files[0], (dir / "run1" / "results.jsonl").string());
  std::filesystem::create_directories(dir / "empty-run");
  try {
    d.load(dir / "empty-run");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find((dir / "empty-run" / "results.jsonl").string()), std::string::npos) << e.what();
  }
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

// A count written as a float is read when it is one, and one beyond any count is not (UBSan on the
// general path, found by fuzz_records).
TEST(Dataset, SampleCountsOutsideWhatACountHoldsAreNotRead) {
  const auto dir = temp_dir();
  json whole = collective("r", "allreduce", 4, 1024, 100, 8), huge = whole;
  whole["samples"]["n"] = 5.0;
  huge["samples"]["n"] = 1.9e122;
  Dataset d;
  d.load(write_records(dir / "r.jsonl", {whole, huge}));
  ASSERT_EQ(d.results.size(), 2u);
  EXPECT_EQ(d.results[0].samples.n, 5u);
  EXPECT_EQ(d.results[1].samples.n, 0u);
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
  std::size_t accepted = 0, scanned = 0;
  for (const auto& c : cases) {
    ResultView view;
    if (scan_result(c.dump(), view)) {
      ++scanned;
      EXPECT_TRUE(result_schema().validate(c).empty()) << c.dump();
    }
    if (!surely_valid(c)) continue;
    ++accepted;
    EXPECT_TRUE(result_schema().validate(c).empty()) << c.dump();
  }
  EXPECT_GT(accepted, 30u);
  EXPECT_GT(scanned, 30u);
}

namespace {

// A record spelled unlike nlohmann's dump: keys in reverse order, blanks around every token.
std::string respelled(const json& v) {
  if (v.is_object()) {
    std::vector<std::string> members;
    for (const auto& [key, value] : v.items()) members.insert(members.begin(), json(key).dump() + " :  " + respelled(value));
    std::string out = "{ ";
    for (std::size_t i = 0; i < members.size(); ++i) out += (i ? " ,\t" : "") + members[i];
    return out + " }";
  }
  if (v.is_array()) {
    std::string out = "[ ";
    for (std::size_t i = 0; i < v.size(); ++i) out += (i ? " , " : "") + respelled(v[i]);
    return out + " ]";
  }
  return v.dump();
}

void expect_same_view(const ResultView& v, const json& r, const std::string& line) {
  EXPECT_EQ(v.run, r["run"].get<std::string>()) << line;
  EXPECT_EQ(v.step, r["step"].get<std::string>()) << line;
  EXPECT_EQ(v.host, r["host"].get<std::string>()) << line;
  EXPECT_EQ(v.rank, r["rank"].get<int>()) << line;
  EXPECT_EQ(v.world, r["world"].get<int>()) << line;
  EXPECT_EQ(to_string(v.status), r["status"].get<std::string>()) << line;
  EXPECT_EQ(v.has_reason, r.contains("reason")) << line;
  if (v.has_reason) {
    EXPECT_EQ(v.reason, r["reason"].get<std::string>()) << line;
  }
  EXPECT_EQ(json::parse(v.params), r["params"]) << line;
  std::vector<std::pair<std::string, double>> metrics;
  for (const auto& [name, value] : r["metrics"].items()) metrics.emplace_back(name, value.get<double>());
  ASSERT_EQ(v.metrics.size(), metrics.size()) << line;
  for (std::size_t i = 0; i < metrics.size(); ++i) {
    EXPECT_EQ(v.metrics[i].first, metrics[i].first) << line;
    EXPECT_EQ(v.metrics[i].second, metrics[i].second) << line;
  }
  const json& s = r["samples"];
  EXPECT_EQ(v.samples.n, s.contains("n") ? s["n"].get<std::size_t>() : s.value("values", json::array()).size()) << line;
  EXPECT_EQ(v.samples.median, s.value("median", 0.0)) << line;
  EXPECT_EQ(v.samples.has_ci, s.contains("median_ci95")) << line;
  EXPECT_EQ(v.samples.values, s.value("values", std::vector<double>{})) << line;
  EXPECT_EQ(v.cpu_pressure_pct, r.value("cpu_pressure_pct", -1.0)) << line;
}

}  // namespace

// The fast reader and the general path (nlohmann::json + the schema) must agree on every line the
// fast reader accepts, and every line it declines must still be judged by the general path.
TEST(RecordScan, ReadsWhatTheGeneralPathReadsOrDeclines) {
  std::vector<std::string> lines;
  std::size_t results = 0;  // the lines the fast reader must read: every result record, however spelled
  for (const auto& r : full_run("run-1")) {
    lines.push_back(r.dump());
    lines.push_back(respelled(r));
    results += r["kind"] == "result" ? 2 : 0;
  }
  json sampled = collective("r", "allreduce", 4, 1024, 100, 8);
  sampled["samples"]["values"] = {99.5, 100, 100.25, 1e2, -0.0, 2.5e-3};
  sampled["samples"]["metric"] = "time_us";
  sampled["reason"] = "ünïcode → fine";
  lines.push_back(sampled.dump());
  json pressured = collective("r", "allreduce", 4, 1024, 100, 8);
  pressured["cpu_pressure_pct"] = 42.5;
  lines.push_back(pressured.dump());
  results += 2;
  const std::string good = collective("r", "allreduce", 4, 1024, 100, 8).dump();
  auto with = [&](const std::string& from, const std::string& to) {
    std::string line = good;
    const auto at = line.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return line.replace(at, from.size(), to);
  };
  // Valid records the fast reader must decline or read exactly: escapes, 1.0 as an integer, a BOM.
  const std::vector<std::string> general = {
      with("\"host\":\"node01\"", "\"host\":\"node\\\"01\""), with("\"rank\":0", "\"rank\":0.0"),
      with("\"world\":4", "\"world\":4e0"), "\xEF\xBB\xBF" + good, with("\"host\":\"node01\"", "\"host\":\"n\\u00f6de\""),
      with("\"metrics\":{", "\"metrics\":{\"busbw_GBps\":1,"),  // a repeated key: the general parser keeps the last
      with("\"n\":5", "\"n\":19" + std::string(121, '0'))};  // a count no size_t holds (UBSan, found by fuzz_records)
  // Lines that are not valid JSON records, which the fast reader must never accept.
  const std::vector<std::string> broken = {
      with("\"rank\":0", "\"rank\":01"),      with("\"world\":4", "\"world\":4."),
      with("\"world\":4", "\"world\":+4"),    with("\"wrong\":0", "\"wrong\":.5"),
      with("\"wrong\":0", "\"wrong\":NaN"),   with("\"wrong\":0", "\"wrong\":1e"),
      with("\"host\":\"node01\"", "\"host\":\"node\xFF\""), with("\"host\":\"node01\"", "\"host\":\"no\tde\""),
      with("\"host\":\"node01\"", "\"host\":\"\xC0\xAF\""), with("\"host\":\"node01\"", "\"host\":\"\xED\xA0\x80\""),
      good + " x",                                good.substr(0, good.size() - 1),
      with("\"rank\":0", "\"rank\":-1"),      with("\"world\":4", "\"world\":0"),
      with("\"status\":\"ok\"", "\"status\":\"fail\""), with("\"step\":\"collectives.allreduce\"", "\"step\":\"Collectives\""),
      with("\"wrong\":0", "\"wrong\":\"0\""),  with("\"params\":{", "\"params\":[{"),
      good.substr(0, good.size() - 1) + ",\"cpu_pressure_pct\":100.5}", good.substr(0, good.size() - 1) + ",\"cpu_pressure_pct\":-1}",
  };
  for (const auto& l : general) lines.push_back(l);
  for (const auto& l : broken) lines.push_back(l);

  std::size_t read = 0;
  for (const auto& line : lines) {
    ResultView view;
    const bool fast = scan_result(line, view);
    json dom;
    bool valid = true;
    try {
      dom = json::parse(line);
      valid = result_schema().validate(dom).empty();
    } catch (const json::parse_error&) {
      valid = false;
    }
    if (!fast) continue;
    ++read;
    ASSERT_TRUE(valid) << line;
    expect_same_view(view, dom, line);
  }
  EXPECT_GE(read, results);
  for (const auto& line : broken) {
    ResultView view;
    EXPECT_FALSE(scan_result(line, view)) << line;
  }
}

// A file mixing both paths loads the same observations as its canonical spelling.
TEST(Dataset, RespelledRecordsLoadLikeCanonicalOnes) {
  const auto dir = temp_dir();
  auto records = full_run("r1");
  records[3]["reason"] = "a \"quoted\" reason";
  records[3]["status"] = "warn";
  std::ofstream(dir / "respelled.jsonl") << [&] {
    std::string text;
    for (const auto& r : records) text += respelled(r) + "\n";
    return text;
  }();
  Dataset a, b;
  a.load(write_records(dir / "canonical.jsonl", records));
  b.load(dir / "respelled.jsonl");
  ASSERT_EQ(a.results.size(), b.results.size());
  ASSERT_TRUE(a.issues.empty() && b.issues.empty());
  for (std::size_t i = 0; i < a.results.size(); ++i) {
    const Observation& x = a.results[i];
    const Observation& y = b.results[i];
    EXPECT_EQ(a.names.str(x.step), b.names.str(y.step));
    EXPECT_EQ(a.names.str(x.host), b.names.str(y.host));
    EXPECT_EQ(a.params_of(x), b.params_of(y));
    EXPECT_EQ(x.status, y.status);
    EXPECT_EQ(x.reason == kNoName ? "" : a.names.str(x.reason), y.reason == kNoName ? "" : b.names.str(y.reason));
    ASSERT_EQ(x.metrics.size(), y.metrics.size());
    for (std::size_t m = 0; m < x.metrics.size(); ++m) {
      EXPECT_EQ(a.names.str(x.metrics[m].first), b.names.str(y.metrics[m].first));
      EXPECT_EQ(x.metrics[m].second, y.metrics[m].second);
    }
    EXPECT_EQ(x.samples.of == kNoName ? "" : a.names.str(x.samples.of), y.samples.of == kNoName ? "" : b.names.str(y.samples.of));
    EXPECT_EQ(x.samples.median, y.samples.median);
    EXPECT_EQ(x.samples.ci_low, y.samples.ci_low);
  }
  EXPECT_EQ(a.params.size(), b.params.size());
}

namespace {

std::string load_error(const std::filesystem::path& file) {
  try {
    Dataset d;
    d.load(file);
  } catch (const InputError& e) {
    return e.what();
  }
  return "(no InputError)";
}

long peak_rss_kib() {
  rusage u{};
  ::getrusage(RUSAGE_SELF, &u);
  return u.ru_maxrss;
}

}  // namespace

// /dev/zero read as "empty", a FIFO blocked forever: both are refused by their kind.
TEST(Dataset, RefusesDevicesAndFifosByTheirKind) {
  const auto dir = temp_dir();
  EXPECT_EQ(load_error("/dev/zero"), "/dev/zero: is a character device, not a file");
  ASSERT_EQ(::mkfifo((dir / "fifo").c_str(), 0600), 0);
  EXPECT_EQ(load_error(dir / "fifo"), (dir / "fifo").string() + ": is a FIFO (named pipe), not a file");
}

// A 1 GiB line is refused at its line, having mapped in no more than the limit of a line.
TEST(Dataset, ALineOverTheLimitIsRefusedBeforeMemoryGrows) {
  const auto dir = temp_dir();
  const auto file = write_records(dir / "r.jsonl", {collective("r", "allreduce", 4, 1024, 100, 8)});
  std::filesystem::resize_file(file, std::filesystem::file_size(file) + kGiB);  // then a line of zeros
  const long before = peak_rss_kib();
  EXPECT_EQ(load_error(file), file.string() + ":2: a line of a results file is at most 8 MiB; this one is longer");
  EXPECT_LT(peak_rss_kib() - before, 64 * 1024) << "KiB grown while refusing a 1 GiB line";
}

// One 50 MB params value grew a history by 420 MB: a field that names a series is refused at its
// line, on the fast path and on the general one (a record with an escaped string).
TEST(Dataset, AFieldThatNamesASeriesOverItsLimitIsRefused) {
  const auto dir = temp_dir();
  const std::string big(kMaxSeriesFieldBytes + 1, 'v');
  const json good = collective("r", "allreduce", 4, 1024, 100, 8);
  const std::string limit = "the value is 1.0 KiB long; a field that names a series is at most 1 KiB";
  for (const bool escaped : {false, true}) {
    json r = good;
    if (escaped) r["reason"] = "a\nb";  // the fast scanner leaves escaped strings to the general path
    json model = r, host = r, metric = r, fine = r;
    model["params"]["model"] = big;
    host["host"] = big;
    metric["metrics"][big] = 1;
    fine["params"]["model"] = std::string(kMaxSeriesFieldBytes, 'v');
    const auto file = dir / "r.jsonl";
    EXPECT_EQ(load_error(write_records(file, {good, model})), file.string() + ":2: field 'params.model': " + limit) << escaped;
    EXPECT_EQ(load_error(write_records(file, {host})), file.string() + ":1: field 'host': " + limit) << escaped;
    EXPECT_NE(load_error(write_records(file, {metric})).find(":1: field 'metrics.vvvv"), std::string::npos) << escaped;
    EXPECT_EQ(load_error(write_records(file, {fine})), "(no InputError)") << escaped;
  }
}

TEST(Dataset, AFileOfMostlyBadLinesIsRefusedNotKeptAsIssues) {
  const auto dir = temp_dir();
  std::string junk;
  for (std::size_t i = 0; i <= kMaxReadIssues; ++i) junk += "x\n";
  write_file(dir / "junk", junk);
  EXPECT_EQ(load_error(dir / "junk"), (dir / "junk").string() + ":1001: more than 1000 lines are not valid records: not a results file");
}

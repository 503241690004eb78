// The subcommands end to end: report, compare, import.
#include <gtest/gtest.h>

#include <algorithm>

#include "fixtures.hpp"
#include "../../common/tests/setup_required.hpp"
#include "rocebench/reports/module.hpp"
#include "rocebench/reports/plots.hpp"

using namespace rocebench;
using namespace rocebench::reports;
using namespace rocebench::reports::testing;
namespace fs = std::filesystem;

namespace {

int run(const std::string& command, const Args& args) {
  for (const auto& s : subcommands()) {
    if (s.name == command) return s.main(args);
  }
  throw std::runtime_error("no subcommand " + command);
}

// full_run() without its failed records (a bad link, a netcheck failure): a run that exited 0.
std::vector<json> passed_run(const std::string& run_id) {
  std::vector<json> records = full_run(run_id);
  std::erase_if(records, [](const json& r) { return r.value("status", "ok") == "fail"; });
  return records;
}

void expect_nonempty(const fs::path& file) {
  ASSERT_TRUE(fs::exists(file)) << file;
  EXPECT_GT(fs::file_size(file), 0u) << file;
}

}  // namespace

TEST(Report, FullReportIsRendered) {
  const auto dir = temp_dir();
  const auto results = write_records(dir / "results.jsonl", full_run("run-1"));
  write_file(dir / "thresholds.json", R"({"thresholds": [
    {"name": "efficiency at 8 GPUs", "metric": "efficiency", "where": {"mode": "allreduce-rdma"}, "gpus": 8, "op": ">=", "value": 0.75},
    {"name": "busbw at 64MiB", "step": "collectives.allreduce", "where": {"bytes": 67108864}, "metric": "busbw_GBps", "op": ">=", "value": 11.0}]})");
  const fs::path out = dir / "report";
  EXPECT_EQ(run("report", {"-o", out.string(), "--thresholds", (dir / "thresholds.json").string(), results.string()}), 1);

  for (const char* f : {"report.md", "report.html", "junit.xml", "aggregate.csv"}) expect_nonempty(out / f);
  const std::string md = read_file(out / "report.md");
  for (const char* text : {"## Verdicts", "Training throughput", "missing (no record)", "node03 stays bad", "differs",
                           "busbw at 64MiB", "RoCE (verbs) and TCP"}) {
    EXPECT_NE(md.find(text), std::string::npos) << text;
  }
  const std::string html = read_file(out / "report.html");
  EXPECT_EQ(html.find("<img src=\"plots"), std::string::npos);  // self-contained: nothing linked

  std::string why_not;
  const std::string python = find_python(why_not);
  if (python.empty()) {
    EXPECT_NE(md.find("Plots are missing"), std::string::npos);
    RB_SKIP_WITHOUT_SETUP("the plots, the embedded images and the JUnit parse: " << why_not);
  }
  for (const char* png : {"speedup_resnet50.png", "busbw_size_allreduce.png", "busbw_ranks_allreduce.png", "latency_cdf.png",
                          "pairs_write_bw.png"}) {
    expect_nonempty(out / "plots" / png);
  }
  EXPECT_NE(html.find("src=\"data:image/png;base64,iVBORw0KGgo"), std::string::npos);
  // The JUnit file must parse with a real XML parser and hold one test case per verdict.
  const auto r = run_process({python, "-c",
                              "import sys, xml.etree.ElementTree as E; t = E.parse(sys.argv[1]).getroot();"
                              "c = t.findall('.//testcase'); f = t.findall('.//failure');"
                              "sys.exit(0 if (len(c), len(f)) == (2, 1) else 1)",
                              (out / "junit.xml").string()},
                             {}, std::chrono::seconds(30));
  EXPECT_EQ(r.exit_code, 0);
}

// A run with measured scaling and predictions (issue #42): the report lists both kinds apart, says
// where scaling is lost under the figure, and draws the throughput figure from them.
TEST(Report, PredictionsAreReportedBesideMeasurementsAndSaySo) {
  const auto dir = temp_dir();
  const auto results = write_records(dir / "results.jsonl", measured_and_predicted_run("run-1"));
  const fs::path out = dir / "report";
  EXPECT_EQ(run("report", {"-o", out.string(), results.string()}), 0);
  const std::string md = read_file(out / "report.md");
  for (const char* text : {"### Efficiency by world size: resnet50", "| GPUs | ring tcp (measured, replay) | ps on 25g-roce (predicted) |",
                           "### Where scaling is lost: resnet50",
                           "ring over 25 Gbit/s needs 38.2 Gbit/s per node or 50 MiB buckets for 90%",
                           "Predicted, not measured (models.predict, engine: predicted)"}) {
    EXPECT_NE(md.find(text), std::string::npos) << text;
  }
  const std::string html = read_file(out / "report.html");
  EXPECT_NE(html.find("<td>ring on 25g-roce (predicted)</td><td class=\"words\">at 128 GPUs: exposed allreduce 50 ms of a 250 ms step"),
            std::string::npos);
  std::string why_not;
  if (find_python(why_not).empty()) RB_SKIP_WITHOUT_SETUP("the throughput figure: " << why_not);
  expect_nonempty(out / "plots" / "throughput_resnet50.png");
  expect_nonempty(out / "plots" / "speedup_resnet50.png");  // the measured speedups, as before
  EXPECT_NE(md.find("![throughput_resnet50](plots/throughput_resnet50.png)"), std::string::npos);
}

// Without --plan, the plan.json a run wrote beside its results is judged.
TEST(Report, ThePlanBesideTheResultsIsJudged) {
  const auto dir = temp_dir();
  const auto results = write_records(dir / "results.jsonl", passed_run("run-1"));
  EXPECT_EQ(run("report", {"--no-plots", "-o", (dir / "a").string(), results.string()}), 0);
  write_file(dir / "plan.json", R"({"name": "p", "steps": [], "thresholds": [
    {"name": "busbw at 64MiB", "step": "collectives.allreduce", "where": {"bytes": 67108864}, "metric": "busbw_GBps", "op": ">=", "value": 99}]})");
  EXPECT_EQ(run("report", {"--no-plots", "-o", (dir / "b").string(), results.string()}), 1);
  EXPECT_NE(read_file(dir / "b" / "junit.xml").find("busbw at 64MiB"), std::string::npos);
}

// A check that could not look says why in the report, never "skip: null".
TEST(Report, NetcheckCellsGiveTheReasonOfASkip) {
  const auto dir = temp_dir();
  const auto results = write_records(dir / "results.jsonl", {skipped_check("r", "vm", "rdma.device_present", "no RDMA device"),
                                                             check("r", "vm", "host.kernel", "6.1.0", true)});
  EXPECT_EQ(run("report", {"--no-plots", "-o", (dir / "r").string(), results.string()}), 0);
  const std::string md = read_file(dir / "r" / "report.md");
  EXPECT_NE(md.find("| _skip: no RDMA device_ |"), std::string::npos) << md;
  EXPECT_NE(md.find("| ok: 6.1.0 |"), std::string::npos) << md;
  EXPECT_EQ(md.find("null"), std::string::npos) << md;
  EXPECT_NE(md.find("2 records (1 ok, 1 skip)"), std::string::npos) << md;
}

// A check netcheck could not read on a host it applies to: marked bad, counted, with what to install.
TEST(Report, AnUnverifiedCheckIsNotAPass) {
  const auto dir = temp_dir();
  json unverified = skipped_check("r", "gpu1", "roce.pfc.enabled_priorities", "not readable: no capture pfc.txt");
  unverified["status"] = "unverified";
  unverified["hint"] = "install mlnx-tools for mlnx_qos, or iproute2 >= 5.11 for dcb";
  const auto results = write_records(dir / "results.jsonl", {unverified, check("r", "gpu1", "host.kernel", "6.1.0", true)});
  EXPECT_EQ(run("report", {"--no-plots", "-o", (dir / "r").string(), results.string()}), 1) << "as `rocebench run` exited";
  const std::string md = read_file(dir / "r" / "report.md");
  EXPECT_NE(md.find("| **unverified: not readable: no capture pfc.txt** |"), std::string::npos) << md;
  EXPECT_NE(md.find("| install mlnx-tools for mlnx_qos, or iproute2 >= 5.11 for dcb |"), std::string::npos) << md;
  EXPECT_NE(md.find("2 records (1 ok, 1 unverified)"), std::string::npos) << md;
}

// Re-judging a run's results exits as the run did: a failed record fails the report, thresholds or not.
TEST(Report, AFailedRecordExitsOneAsTheRunDid) {
  const auto dir = temp_dir();
  const auto results = write_records(dir / "results.jsonl", {check("r", "gpu1", "link.mtu", "1500", false), check("r", "gpu1", "host.kernel", "6.1.0", true)});
  EXPECT_EQ(run("report", {"--no-plots", "-o", (dir / "r").string(), results.string()}), 1);
  const auto passed = write_records(dir / "passed.jsonl", {check("r", "gpu1", "host.kernel", "6.1.0", true)});
  EXPECT_EQ(run("report", {"--no-plots", "-o", (dir / "p").string(), passed.string()}), 0);
}

TEST(Report, BadInputExitsTwo) {
  const auto dir = temp_dir();
  write_file(dir / "empty.jsonl", "");
  EXPECT_EQ(run("report", {"-o", (dir / "r").string(), (dir / "empty.jsonl").string()}), 2);
  EXPECT_EQ(run("report", {"-o", (dir / "r").string(), (dir / "absent.jsonl").string()}), 2);
  EXPECT_EQ(run("report", {"-o", (dir / "r").string()}), 2);
  const auto results = write_records(dir / "results.jsonl", full_run("run-1"));
  write_file(dir / "bad.json", R"({"thresholds": [{"name": "x"}]})");
  EXPECT_EQ(run("report", {"--thresholds", (dir / "bad.json").string(), "-o", (dir / "r").string(), results.string()}), 2);
  EXPECT_EQ(run("report", {"--min-effect", "-1", "-o", (dir / "r").string(), results.string()}), 2);
  EXPECT_EQ(run("report", {"-o", "/proc/rocebench-report", results.string()}), 2) << "an -o that cannot be made";
  EXPECT_EQ(run("compare", {"--min-effect", "-1", results.string(), results.string()}), 2);
  EXPECT_EQ(run("compare", {"--alpha", "2", results.string(), results.string()}), 2);
  EXPECT_EQ(run("compare", {"--alpha", "0", results.string(), results.string()}), 2);
  EXPECT_EQ(run("compare", {"--alpha", "0.01", results.string(), results.string()}), 0);
}

TEST(Report, CleanRunWithoutThresholdsPasses) {
  const auto dir = temp_dir();
  const auto results = write_records(dir / "results.jsonl", passed_run("run-1"));
  EXPECT_EQ(run("report", {"--no-plots", "-o", (dir / "r").string(), results.string()}), 0);
  EXPECT_EQ(run("report", {"--no-plots", "-o", (dir / "f").string(), write_records(dir / "failed.jsonl", full_run("run-1")).string()}), 1)
      << "its failed link and netcheck records";
  EXPECT_NE(read_file(dir / "r" / "report.md").find("--no-plots was given"), std::string::npos);
}

TEST(CompareCommand, RegressionExitsOneAndBaselinesRoundTrip) {
  const auto dir = temp_dir();
  const auto base = write_records(dir / "base.jsonl", full_run("base"));
  auto slower = full_run("new");
  for (auto& r : slower) {
    if (r.value("step", "") == "collectives.allreduce") {
      r["metrics"]["time_us"] = r["metrics"]["time_us"].get<double>() * 1.2;
      for (auto& x : r["samples"]["median_ci95"]) x = x.get<double>() * 1.2;
    }
  }
  const auto now = write_records(dir / "new.jsonl", slower);
  EXPECT_EQ(run("compare", {base.string(), base.string()}), 0);
  EXPECT_EQ(run("compare", {"--junit", (dir / "c.xml").string(), base.string(), now.string()}), 1);
  EXPECT_NE(read_file(dir / "c.xml").find("<failure"), std::string::npos);

  const auto baseline = dir / "baseline.json";
  EXPECT_EQ(run("compare", {"--write-baseline", baseline.string(), "--machine", "dgx-h100-roce", base.string()}), 0);
  EXPECT_EQ(run("compare", {"--write-baseline", baseline.string(), "--machine", "cpu-node", base.string()}), 0);
  EXPECT_EQ(run("compare", {"--machine", "dgx-h100-roce", baseline.string(), base.string()}), 0);
  EXPECT_EQ(run("compare", {"--machine", "dgx-h100-roce", baseline.string(), now.string()}), 1);
  EXPECT_EQ(run("compare", {baseline.string(), now.string()}), 2);  // two machine types: which?
  EXPECT_EQ(run("report", {"--no-plots", "--baseline", baseline.string(), "--machine", "cpu-node", "-o",
                           (dir / "r").string(), now.string()}), 1);
}

TEST(ImportCommand, ImportedRecordsFeedTheReport) {
  const auto dir = temp_dir();
  const auto out = dir / "imported.jsonl";
  EXPECT_EQ(run("import", {"perftest", (source_dir() / "perftest_write_lat.txt").string(), "-o", out.string()}), 0);
  EXPECT_EQ(run("import", {"nccl-tests", (source_dir() / "all_reduce_perf.txt").string(), "-o", out.string()}), 0);
  EXPECT_EQ(run("import", {"osu", (source_dir() / "osu_allreduce.txt").string(), "-o", out.string()}), 2);
  EXPECT_EQ(run("report", {"--no-plots", "-o", (dir / "r").string(), out.string()}), 0);
  const std::string md = read_file(dir / "r" / "report.md");
  EXPECT_NE(md.find("verbs write (perftest)"), std::string::npos);
  EXPECT_NE(md.find("allreduce nccl nccl float out-of-place"), std::string::npos);
}

// Two runs of the same build on the same hardware differ only by noise: they must get the same
// verdicts, from thresholds and against a baseline written from either, and judging the same
// records twice must give the same files.
TEST(Report, SameBuildOnSameHardwareGetsTheSameVerdicts) {
  const auto dir = temp_dir();
  write_file(dir / "thresholds.json", R"({"thresholds": [
    {"name": "busbw at 64MiB", "step": "collectives.allreduce", "where": {"bytes": 67108864}, "metric": "busbw_GBps", "op": ">=", "value": 10.0},
    {"name": "busbw at 64MiB, 12 GB/s", "step": "collectives.allreduce", "where": {"bytes": 67108864}, "metric": "busbw_GBps", "op": ">=", "value": 12.0},
    {"name": "efficiency at 8 GPUs", "metric": "efficiency", "where": {"mode": "allreduce-rdma"}, "gpus": 8, "op": ">=", "value": 0.75},
    {"name": "RoCE latency", "step": "microbench.probe", "where": {"transport": "verbs", "test": "write_lat", "bytes": 2}, "metric": "lat_us_p50", "op": "<=", "value": 3},
    {"name": "alltoall", "step": "collectives.alltoall", "metric": "busbw_GBps", "op": ">", "value": 1}]})");
  std::vector<std::string> outcomes;
  for (unsigned seed : {1u, 2u}) {
    const auto results = write_records(dir / ("run" + std::to_string(seed) + ".jsonl"), noisy_run("run" + std::to_string(seed), seed));
    const fs::path out = dir / ("report" + std::to_string(seed));
    EXPECT_EQ(run("report", {"--no-plots", "-o", out.string(), "--thresholds", (dir / "thresholds.json").string(), results.string()}), 1);
    std::string junit = read_file(out / "junit.xml");
    const auto suites = junit.find("<testcase");
    ASSERT_NE(suites, std::string::npos);
    // Outcomes per verdict, without the measured values, which differ by noise.
    std::string summary;
    for (auto at = junit.find("<testcase", suites); at != std::string::npos; at = junit.find("<testcase", at + 1)) {
      const auto end = junit.find("</testcase>", at);
      const std::string tc = junit.substr(at, end - at);
      const auto failure = tc.find("<failure type=\"");
      summary += tc.substr(0, tc.find('>')) + " " + (failure == std::string::npos ? "pass" : tc.substr(failure + 15, 4)) + "\n";
    }
    outcomes.push_back(summary);
    EXPECT_EQ(run("report", {"--no-plots", "-o", (dir / "again").string(), "--thresholds", (dir / "thresholds.json").string(), results.string()}), 1);
    EXPECT_EQ(read_file(dir / "again" / "junit.xml"), junit);
    EXPECT_EQ(read_file(dir / "again" / "report.md"), read_file(out / "report.md"));
  }
  EXPECT_EQ(outcomes[0], outcomes[1]);
  EXPECT_EQ(std::count(outcomes[0].begin(), outcomes[0].end(), '\n'), 5);
  EXPECT_NE(outcomes[0].find("12 GB/s\" fail"), std::string::npos) << outcomes[0];
  EXPECT_NE(outcomes[0].find("alltoall\" miss"), std::string::npos) << outcomes[0];

  // Each run against a baseline of the other: nothing regressed, both ways.
  for (const auto& [base, now] : {std::pair{"run1", "run2"}, std::pair{"run2", "run1"}}) {
    const auto baseline = dir / (std::string(base) + "-baseline.json");
    EXPECT_EQ(run("compare", {"--write-baseline", baseline.string(), "--machine", "m", (dir / (std::string(base) + ".jsonl")).string()}), 0);
    EXPECT_EQ(run("compare", {"--machine", "m", baseline.string(), (dir / (std::string(now) + ".jsonl")).string()}), 0);
    EXPECT_EQ(run("compare", {(dir / (std::string(base) + ".jsonl")).string(), (dir / (std::string(now) + ".jsonl")).string()}), 0);
  }
}

#include <gtest/gtest.h>

#include <tuple>

#include "fixtures.hpp"
#include "rocebench/reports/aggregate.hpp"
#include "rocebench/reports/plots.hpp"
#include "rocebench/reports/tables.hpp"
#include "rocebench/reports/text.hpp"

using namespace rocebench;
using namespace rocebench::reports;
using namespace rocebench::reports::testing;

namespace {

Aggregate aggregate_of(const std::vector<json>& records) {
  Dataset d;
  d.load(write_records(temp_dir() / "results.jsonl", records));
  return aggregate(d);
}

const ScalingSeries& series(const Aggregate& a, const std::string& mode) {
  for (const auto& s : a.scaling) {
    if (s.key["mode"] == mode) return s;
  }
  throw std::runtime_error("no series " + mode);
}

}  // namespace

// Throughputs chosen so that speedup and efficiency are easy to work out by hand.
TEST(Scaling, HandComputedSpeedupAndEfficiencyFrom1To128Gpus) {
  const std::vector<std::pair<int, double>> x = {{1, 100},   {2, 190},   {4, 360},    {8, 720},
                                                 {16, 1440}, {32, 2560}, {64, 4800}, {128, 9600}};
  // S(N) = X(N) / 100; E(N) = S(N) / N
  const std::vector<std::pair<double, double>> expected = {{1.0, 1.0},   {1.9, 0.95},   {3.6, 0.9},   {7.2, 0.9},
                                                           {14.4, 0.9},  {25.6, 0.8},   {48.0, 0.75}, {96.0, 0.75}};
  std::vector<json> records;
  for (const auto& [gpus, ips] : x) records.push_back(train("r", "resnet50", "nccl", gpus, ips));
  const Aggregate a = aggregate_of(records);
  ASSERT_EQ(a.scaling.size(), 1u);
  const auto& s = a.scaling[0];
  EXPECT_EQ(s.base_gpus, 1);
  ASSERT_EQ(s.points.size(), x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    SCOPED_TRACE(x[i].first);
    EXPECT_EQ(s.points[i].gpus, x[i].first);
    EXPECT_DOUBLE_EQ(*s.points[i].images_per_s, x[i].second);
    EXPECT_NEAR(*s.points[i].speedup, expected[i].first, 1e-12);
    EXPECT_NEAR(*s.points[i].efficiency, expected[i].second, 1e-12);
    EXPECT_DOUBLE_EQ(s.points[i].ideal, x[i].first);
  }
}

// Ranks that each trained alone (models.train) make no speedup; data-parallel training
// (models.scaling) does, with its predicted speedup and the communication a step waited for.
TEST(Scaling, SpeedupOnlyFromDataParallelTrainingWithItsPrediction) {
  std::vector<json> records;
  for (int ranks : {1, 2, 4}) {
    json single = train("r", "resnet20_cifar", "single", ranks, 500);
    single["params"]["engine"] = "cpu";
    single["metrics"]["threads"] = ranks == 4 ? 1 : 2;  // 2 CPUs among its ranks
    single["metrics"]["cpus"] = 2;
    records.push_back(single);
    ResultRecord r;
    r.step = "models.scaling";
    r.host = "node01";
    r.world = ranks;
    r.params = {{"model", "resnet50"}, {"engine", "replay"}, {"precision", "fp32"}, {"batch", 2}, {"mode", "data_parallel"},
                {"sync", "ring"}, {"transport", "tcp"}, {"bucket_mb", 25}, {"ranks", ranks}, {"timeline", "t"}};
    r.metrics = {{"images_per_s", 10.0 * ranks * (ranks == 4 ? 0.9 : 1.0)}, {"step_time_ms_p50", 200}};
    if (ranks > 1)
      r.metrics.update({{"predicted_images_per_s", 10.0 * ranks * 0.95}, {"exposed_comm_ms", 5.0 * ranks},
                        {"buckets", 5}, {"first_waited_bucket", ranks == 4 ? 3 : 5}});
    r.samples = {{"n", 1}};
    // The one-rank point trained alone on three ranks in turn: its samples are their mean steps (ms).
    if (ranks == 1) r.samples = {{"n", 3}, {"values", {250, 200, 160}}};
    records.push_back(to_json(r, "r"));
  }
  const Aggregate a = aggregate_of(records);
  const ScalingSeries& alone = series(a, "single");
  EXPECT_TRUE(alone.independent());
  EXPECT_EQ(alone.ranks(), "CPU ranks");
  for (const auto& p : alone.points) {
    EXPECT_DOUBLE_EQ(*p.images_per_s, 500);
    EXPECT_FALSE(p.speedup) << p.gpus;
    EXPECT_FALSE(p.efficiency) << p.gpus;
    EXPECT_EQ(p.threads, p.gpus == 4 ? 1 : 2) << p.gpus;  // what the headline says each rank computed on
    EXPECT_EQ(p.cpus, 2) << p.gpus;
  }
  const ScalingSeries& dp = series(a, "data_parallel");
  EXPECT_FALSE(dp.independent());
  // Independent ranks of the same model at 8 ranks do not make the curve expect an 8-rank point.
  json eight = train("r", "resnet50", "single", 8, 500);
  records.push_back(eight);
  EXPECT_EQ(series(aggregate_of(records), "data_parallel").points.size(), 3u);
  EXPECT_EQ(dp.ranks(), "ranks (replayed timeline)");
  EXPECT_EQ(dp.label(), "resnet50 data_parallel replay fp32 batch 2 ring tcp buckets of 25 MiB timeline t");
  ASSERT_EQ(dp.points.size(), 3u);
  EXPECT_NEAR(*dp.points[2].speedup, 3.6, 1e-12);
  EXPECT_NEAR(*dp.points[2].efficiency, 0.9, 1e-12);
  EXPECT_FALSE(dp.points[0].predicted_speedup);
  EXPECT_NEAR(*dp.points[1].predicted_speedup, 1.9, 1e-12);
  EXPECT_NEAR(*dp.points[2].exposed_comm_ms, 20, 1e-12);
  // Where scaling is lost, in words.
  EXPECT_EQ(dp.points[2].waited_text(), "the update waits from bucket 3 of 5");
  EXPECT_EQ(dp.points[0].waited_text(), "") << "one rank alone waits for nothing";
  // Which ranks the one-rank point pools, at batch 2: each one's images/s.
  EXPECT_EQ(dp.points[0].alone_text(), "3 ranks alone in turn: 8 to 12.5");
  EXPECT_EQ(dp.points[1].alone_text(), "");
  // The plots get only the series with a speedup.
  const json plot = plot_input(a);
  ASSERT_EQ(plot["scaling"].size(), 1u);
  EXPECT_EQ(plot["scaling"][0]["key"]["sync"], "ring");
  EXPECT_EQ(plot["scaling"][0]["points"][1]["predicted_speedup"], 1.9);
}

// The default plan trains resnet20_cifar on the cpu engine at 1 and 2 ranks and replays it at 1, 2
// and 4: the cpu curve was never asked for 4 ranks, so it has no missing point there.
TEST(Scaling, SeriesOnAnotherEngineDoNotExpectEachOthersRanks) {
  std::vector<json> records;
  const auto scaling = [&](const std::string& engine, int ranks) {
    ResultRecord r;
    r.step = "models.scaling";
    r.host = "node01";
    r.world = ranks;
    r.params = {{"model", "resnet20_cifar"}, {"engine", engine}, {"precision", "fp32"}, {"batch", 16}, {"mode", "data_parallel"},
                {"sync", "ring"}, {"transport", "tcp"}, {"bucket_mb", 25}, {"ranks", ranks}};
    r.metrics = {{"images_per_s", 100.0 * ranks}};
    r.samples = {{"n", 1}};
    records.push_back(to_json(r, "r"));
  };
  for (int ranks : {1, 2}) scaling("cpu", ranks);
  for (int ranks : {1, 2, 4}) scaling("replay", ranks);
  const Aggregate a = aggregate_of(records);
  ASSERT_EQ(a.scaling.size(), 2u);
  for (const auto& s : a.scaling) {
    EXPECT_EQ(s.points.size(), s.key["engine"] == "cpu" ? 2u : 3u) << s.label();
    for (const auto& p : s.points) EXPECT_TRUE(p.images_per_s) << s.label() << " at " << p.gpus << ": " << p.missing;
  }
}

TEST(Scaling, WithoutAOneGpuPointSpeedupIsRelativeToTheSmallest) {
  std::vector<json> records;
  for (const auto& [gpus, ips] : std::vector<std::pair<int, double>>{{8, 800}, {16, 1520}, {32, 2880}}) {
    records.push_back(train("r", "vgg16", "allreduce-tcp", gpus, ips));
  }
  const Aggregate a = aggregate_of(records);  // held: `s` refers into it
  const auto& s = a.scaling.at(0);
  EXPECT_EQ(s.base_gpus, 8);
  EXPECT_DOUBLE_EQ(s.points[0].ideal, 1);
  EXPECT_NEAR(*s.points[1].speedup, 1.9, 1e-12);      // 1520 / 800
  EXPECT_NEAR(*s.points[1].efficiency, 0.95, 1e-12);  // 1.9 / (16 / 8)
  EXPECT_NEAR(*s.points[2].efficiency, 0.9, 1e-12);   // 3.6 / 4
}

// Over several runs, each run's speedup is over its own base point and the point's is their median
// (scaling_over's rule, the records' own): not the pooled throughput over the pooled base, which
// a fast night and a slow one would skew. A run without the base point has no speedup to give.
TEST(Scaling, SpeedupOverRunsIsTheMedianOfEachRunsOverItsOwnBase) {
  std::vector<json> records;
  for (const auto& [run, one, two] : std::vector<std::tuple<std::string, double, double>>{
           {"fast", 200, 300}, {"slow", 100, 190}, {"slower", 100, 170}}) {
    records.push_back(train(run, "resnet50", "nccl", 1, one));
    records.push_back(train(run, "resnet50", "nccl", 2, two));
  }
  records.push_back(train("no-base", "resnet50", "nccl", 2, 1000));  // counts for images/s only
  const Aggregate a = aggregate_of(records);
  const auto& s = a.scaling.at(0);
  EXPECT_EQ(s.base_gpus, 1);
  EXPECT_DOUBLE_EQ(*s.at(2)->images_per_s, (190 + 300) / 2.0);  // the median of 170, 190, 300, 1000
  EXPECT_NEAR(*s.at(2)->speedup, 1.7, 1e-12);                   // of 1.5, 1.9 and 1.7; pooled: 245 / 100
  EXPECT_NEAR(*s.at(2)->efficiency, 0.85, 1e-12);
  EXPECT_DOUBLE_EQ(*s.at(1)->speedup, 1);

  // Only a run without the base point at 2 ranks: no speedup there, and why.
  const Aggregate apart = aggregate_of({train("one", "resnet50", "nccl", 1, 100), train("two", "resnet50", "nccl", 2, 190)});
  const ScalingPoint* two = apart.scaling.at(0).at(2);
  ASSERT_NE(two, nullptr);
  EXPECT_TRUE(two->images_per_s);
  EXPECT_FALSE(two->speedup);
  EXPECT_FALSE(two->efficiency);
  EXPECT_EQ(two->missing, "no run measured both this point and the base point (1 rank)");
}

TEST(Scaling, MissingPointStaysMissingWithItsReason) {
  const Aggregate a = aggregate_of(full_run("r"));
  const auto& tcp = series(a, "allreduce-tcp");
  const ScalingPoint* four = tcp.at(4);  // measured for rdma, not for tcp
  ASSERT_NE(four, nullptr);
  EXPECT_FALSE(four->images_per_s);
  EXPECT_FALSE(four->speedup);
  EXPECT_EQ(four->missing, "no record");

  auto records = full_run("r");
  ResultRecord failed;
  failed.step = "models.train";
  failed.host = "node01";
  failed.world = 2;
  failed.params = {{"model", "resnet50"}, {"engine", "cudnn"}, {"precision", "fp16"}, {"batch", 64}, {"mode", "ps-tcp"}};
  failed.status = Status::error;
  failed.reason = "rank 1 lost (node02)";
  records.push_back(to_json(failed, "r"));
  records.push_back(train("r", "resnet50", "ps-tcp", 1, 900));
  const Aggregate with_ps = aggregate_of(records);
  const auto& ps = series(with_ps, "ps-tcp");
  EXPECT_EQ(ps.at(2)->missing, "rank 1 lost (node02)");
  EXPECT_FALSE(ps.at(8)->images_per_s);
}

TEST(Collectives, BusBandwidthAgainstSizeAndRanks) {
  const Aggregate a = aggregate_of(full_run("r"));
  ASSERT_EQ(a.size_curves.size(), 2u);  // world 2 and world 4
  const Curve& c = a.size_curves[0];
  EXPECT_EQ(c.op, "allreduce");
  EXPECT_EQ(c.key["world"], 2);
  ASSERT_EQ(c.points.size(), 3u);
  EXPECT_DOUBLE_EQ(c.points[2].x, 67108864);
  EXPECT_DOUBLE_EQ(*c.points[2].busbw, 11.1);
  ASSERT_EQ(a.world_curves.size(), 1u);
  EXPECT_EQ(a.world_curves[0].key["bytes"], 67108864.0);
  EXPECT_DOUBLE_EQ(*a.world_curves[0].points[1].busbw, 10.7);
}

// A series skipped before its sweep (NCCL without a GPU: one record, no size) is one line with its
// reason: no "0 B" row in its neighbours, no points, nothing to plot.
TEST(Collectives, ASeriesSkippedBeforeItsSweepIsOneLineWithItsReason) {
  std::vector<json> records;
  for (double bytes : {1024.0, 4096.0}) records.push_back(collective("r", "allreduce", 4, bytes, 10, 1, "tcp"));
  records.push_back(skipped_result("r", "collectives.allreduce", "node01", 4, {{"algorithm", "nccl"}}, "rank 0: no GPU"));
  const Aggregate a = aggregate_of(records);
  ASSERT_EQ(a.size_curves.size(), 2u);
  for (const auto& c : a.size_curves) {
    SCOPED_TRACE(c.label());
    if (c.key["algorithm"] == "nccl") {
      EXPECT_FALSE(c.measured());
      EXPECT_TRUE(c.points.empty());
      EXPECT_EQ(c.why, "rank 0: no GPU");
    } else {
      EXPECT_TRUE(c.measured());
      ASSERT_EQ(c.points.size(), 2u);  // 1 KiB and 4 KiB, no 0 B
      EXPECT_DOUBLE_EQ(c.points[0].x, 1024);
    }
  }
  EXPECT_EQ(plot_input(a)["busbw_by_size"].size(), 1u);
  EXPECT_EQ(record_counts(a), "3 records (2 ok, 1 skip)");
}

// A probe source that measured nothing (verbs without a device) is a line with its reason, not a
// column of missing cells.
TEST(Probes, ASourceThatMeasuredNothingIsALineNotAColumn) {
  std::vector<json> records{probe("r", "tcp", "lat", 64, 7.0, "vm", "vm rank 0")};
  records.push_back(skipped_result("r", "microbench.probe", "vm", 2, {{"transport", "verbs"}, {"test", "write_lat"}},
                                   "no RDMA device on this host"));
  const Aggregate a = aggregate_of(records);
  EXPECT_EQ(a.probes.sources, std::vector<std::string>{"tcp"});
  ASSERT_EQ(a.probes.rows.size(), 1u);
  EXPECT_DOUBLE_EQ(a.probes.rows[0].bytes, 64);
  EXPECT_EQ(a.probes.not_measured, std::vector<std::string>{"verbs write latency from vm: no RDMA device on this host"});
}

// verbs write_lat and TCP lat (microbench's names) share a row; the operation names the source.
TEST(Probes, RoceAndTcpSideBySide) {
  const Aggregate a = aggregate_of(full_run("r"));
  ASSERT_EQ(a.probes.sources, (std::vector<std::string>{"verbs write", "tcp"}));
  ASSERT_EQ(a.probes.rows.size(), 3u);
  const ProbeRow& bw = a.probes.rows.at(0);
  EXPECT_EQ(bw.test, "bandwidth");
  EXPECT_DOUBLE_EQ(bw.by_source.at("verbs write").at("bw_avg_Gbps"), 92);
  EXPECT_DOUBLE_EQ(bw.by_source.at("tcp").at("bw_avg_Gbps"), 11.5);
  const auto& lat = a.probes.rows.at(1);
  EXPECT_EQ(lat.test, "latency");
  EXPECT_DOUBLE_EQ(lat.bytes, 2);
  EXPECT_DOUBLE_EQ(lat.by_source.at("verbs write").at("lat_us_p50"), 1.6);
  EXPECT_DOUBLE_EQ(lat.by_source.at("tcp").at("lat_us_p50"), 12.8);
  EXPECT_TRUE(lat.samples.empty());  // the fixture's records keep only the summary
}

// The latency CDF is drawn from the raw samples when records kept them, not from percentiles.
TEST(Probes, LatencyCdfUsesTheRawSamples) {
  auto records = full_run("r");
  std::vector<double> raw;
  for (auto& r : records) {
    if (r.value("step", "") != "microbench.probe" || r["params"]["test"] != "write_lat") continue;
    const double p50 = r["metrics"]["lat_us_p50"];
    r["samples"]["values"] = {p50 * 0.9, p50, p50, p50 * 1.1, p50 * 3};
    if (r["params"]["bytes"] == 2) raw = r["samples"]["values"].get<std::vector<double>>();
  }
  const Aggregate a = aggregate_of(records);
  EXPECT_EQ(a.probes.rows.at(1).samples.at("verbs write"), raw);
  const json plot = plot_input(a);
  std::size_t with_samples = 0;
  for (const auto& e : plot["latency"]) {
    if (!e.contains("samples")) continue;
    ++with_samples;
    if (e["bytes"] == 2) {
      EXPECT_EQ(e["samples"], json({1.6 * 0.9, 1.6, 1.6, 1.6 * 1.1, 1.6 * 3}));
    }
  }
  EXPECT_EQ(with_samples, 2u);  // verbs at 2 B and 4 KiB; TCP kept only percentiles
}

TEST(AllPairs, MatrixWithFlaggedPairsAndBadHosts) {
  const Aggregate a = aggregate_of(full_run("r"));
  ASSERT_EQ(a.pairs.size(), 1u);
  const PairMatrix& m = a.pairs[0];
  EXPECT_EQ(m.hosts, (std::vector<std::string>{"node01", "node02", "node03"}));
  EXPECT_TRUE(m.cells.at("node01").at("node03").flagged);
  EXPECT_FALSE(m.cells.at("node03").at("node01").flagged);
  EXPECT_TRUE(m.summary_failed);
  EXPECT_EQ(m.summary, "node03 stays bad after retest");
}

// A check that could not look shows why, never "skip: null".
TEST(Netcheck, ASkippedCheckShowsItsReason) {
  const Aggregate a =
      aggregate_of({skipped_check("r", "vm", "rdma.device_present", "no RDMA device"), check("r", "vm", "host.kernel", "6.1.0", true)});
  ASSERT_EQ(a.netcheck.rows.size(), 2u);
  EXPECT_EQ(a.netcheck.rows[1].by_host.at("vm").reason, "no RDMA device");
  EXPECT_EQ(record_counts(a), "2 records (1 ok, 1 skip)");
}

TEST(Netcheck, CrossHostDifferences) {
  const Aggregate a = aggregate_of(full_run("r"));
  ASSERT_EQ(a.netcheck.rows.size(), 1u);
  EXPECT_TRUE(a.netcheck.rows[0].differs);
  EXPECT_EQ(a.netcheck.rows[0].by_host.at("node02").status, "fail");
}

// Nightly files given newest first (as a glob may order them) still trend oldest to newest.
TEST(Trends, RunsAreOrderedByTheirRunRecordsTime) {
  std::vector<json> records{run_record("night-b", "2026-11-28T02:00:00.5+01:00", {{"node01", 100000}})};
  for (const auto& r : full_run("night-b")) records.push_back(r);
  records.push_back(run_record("night-a", "2026-11-27T23:59:59Z", {{"node01", 100000}}));
  for (const auto& r : full_run("night-a")) records.push_back(r);
  const Aggregate a = aggregate_of(records);
  EXPECT_TRUE(a.runs_by_time);
  EXPECT_EQ(a.runs, (std::vector<std::string>{"night-a", "night-b"}));
  EXPECT_EQ(a.run_times.at(1), "2026-11-28T02:00:00.5+01:00");
  records.erase(records.begin());  // night-b without its run record: the order given
  const Aggregate given = aggregate_of(records);
  EXPECT_FALSE(given.runs_by_time);
  EXPECT_EQ(given.runs, (std::vector<std::string>{"night-b", "night-a"}));
}

TEST(Trends, OneValuePerRunInOrder) {
  auto records = full_run("night-1");
  for (auto r : full_run("night-2")) {
    if (r.contains("metrics") && r["metrics"].contains("busbw_GBps")) r["metrics"]["busbw_GBps"] = r["metrics"]["busbw_GBps"].get<double>() * 0.5;
    records.push_back(r);
  }
  const Aggregate a = aggregate_of(records);
  EXPECT_EQ(a.runs, (std::vector<std::string>{"night-1", "night-2"}));
  bool found = false;
  for (const auto& t : a.trends) {
    if (t.metric != "busbw_GBps" || t.label.find("2 ranks") == std::string::npos) continue;
    found = true;
    EXPECT_DOUBLE_EQ(*t.values[0], 11.1);
    EXPECT_DOUBLE_EQ(*t.values[1], 5.55);
  }
  EXPECT_TRUE(found);
}

// What the tables and the console summary print: 4 significant digits, no exponent between 1e-3 and 1e7.
TEST(Text, NumbersAreReadableAtEveryScale) {
  EXPECT_EQ(number(6.7834), "6.783");
  EXPECT_EQ(number(0.0012345), "0.001234");
  EXPECT_EQ(number(10012.3), "10012") << "a p99 of 10 ms in µs, not 1.001e+04";
  EXPECT_EQ(number(4004.0), "4004");
  EXPECT_EQ(number(2.5e7), "2.500e+07");
  EXPECT_EQ(number(0.0), "0");
}


// A run that measured ring at 1, 2 and 4 ranks and predicted ring and ps to 128 GPUs (issue #42):
// the predictions are series of their own, never among the measured ones (which thresholds, baselines
// and trends read), and the plot and the tables give each kind as itself.
TEST(Scaling, PredictionsAreDrawnAndListedBesideMeasurementsNeverAsThem) {
  const Aggregate a = aggregate_of(measured_and_predicted_run("r"));
  ASSERT_EQ(a.scaling.size(), 1u);
  EXPECT_FALSE(a.scaling[0].predicted());
  ASSERT_EQ(a.predicted.size(), 2u);
  const ScalingSeries& ring = a.predicted[0].key["sync"] == "ring" ? a.predicted[0] : a.predicted[1];
  EXPECT_TRUE(ring.predicted());
  EXPECT_EQ(ring.label(), "resnet50 predicted timeline t batch 2 on 25g-roce ring buckets of 25 MiB first bucket 1 MiB");
  EXPECT_EQ(ring.line_label(), "ring on 25g-roce (predicted)");
  EXPECT_EQ(a.scaling[0].line_label(), "ring tcp (measured, replay)");
  EXPECT_NEAR(*ring.at(128)->efficiency, 0.8, 1e-12);
  ASSERT_TRUE(ring.at(128)->loss);
  EXPECT_FALSE(ring.at(8)->loss);
  EXPECT_EQ(scaling_loss_text(*ring.at(128)->loss),
            "at 128 GPUs: exposed allreduce 50 ms of a 250 ms step (efficiency 0.800); ring over 25 Gbit/s needs 38.2 Gbit/s "
            "per node or 50 MiB buckets for 90%");

  // The plot input: measured speedups as before, and the throughput figure with both kinds apart.
  const json plot = plot_input(a);
  ASSERT_EQ(plot["scaling"].size(), 1u);
  EXPECT_EQ(plot["scaling"][0]["key"]["engine"], "replay");
  ASSERT_EQ(plot["throughput"].size(), 1u);
  const json& figure = plot["throughput"][0];
  EXPECT_EQ(figure["model"], "resnet50");
  std::map<std::string, json> by_line;
  for (const auto& s : figure["series"]) by_line[s["line"]] = s;
  ASSERT_EQ(by_line.size(), 3u);
  EXPECT_EQ(by_line["ring tcp (measured, replay)"]["kind"], "measured");
  EXPECT_EQ(by_line["ring on 25g-roce (predicted)"]["kind"], "predicted");
  EXPECT_EQ(by_line["ring on 25g-roce (predicted)"]["beyond_gpus"], 4);  // dashed beyond the measured ring
  EXPECT_TRUE(by_line["ps on 25g-roce (predicted)"]["beyond_gpus"].is_null());  // no measured ps
  EXPECT_EQ(by_line["ring on 25g-roce (predicted)"]["ideal_per_gpu"], 10);
  EXPECT_EQ(by_line["ring on 25g-roce (predicted)"]["points"].back()["gpus"], 128);

  // The tables: efficiency by world size with a column per series, each saying what it is, and the
  // sentence under the figure.
  const std::vector<Verdict> verdicts;
  const std::vector<LoadIssue> issues;
  const std::vector<std::string> files;
  const auto sections = build_sections({&a, &verdicts, &issues, &files, nullptr});
  const auto training = std::find_if(sections.begin(), sections.end(), [](const Section& s) { return s.title == "Training throughput and scaling"; });
  ASSERT_NE(training, sections.end());
  const Table& efficiency = training->tables.at(0);
  EXPECT_EQ(efficiency.title, "Efficiency by world size: resnet50");
  EXPECT_EQ(efficiency.columns, (std::vector<std::string>{"GPUs", "ring tcp (measured, replay)", "ps on 25g-roce (predicted)",
                                                          "ring on 25g-roce (predicted)"}));
  std::vector<std::vector<std::string>> cells;
  for (const auto& row : efficiency.rows) {
    cells.emplace_back();
    for (const auto& c : row) cells.back().push_back(c.text);
  }
  EXPECT_EQ(cells, (std::vector<std::vector<std::string>>{{"1", "1", "1", "1"},
                                                          {"2", "0.9", "—", "—"},
                                                          {"4", "0.9", "—", "—"},
                                                          {"8", "—", "0.2", "0.8"},
                                                          {"128", "—", "0.2", "0.8"}}));
  const Table& lost = training->tables.at(1);
  EXPECT_EQ(lost.title, "Where scaling is lost: resnet50");
  ASSERT_EQ(lost.rows.size(), 1u);
  EXPECT_EQ(lost.rows[0][0].text, "ring on 25g-roce (predicted)");
  EXPECT_EQ(lost.rows[0][1].text, scaling_loss_text(*ring.at(128)->loss));
  const std::string md = render_markdown("t", sections, "plots");
  EXPECT_NE(md.find("| ring on 25g-roce (predicted) | at 128 GPUs: exposed allreduce 50 ms"), std::string::npos) << md;
  EXPECT_NE(md.find("Predicted, not measured"), std::string::npos);
}

#include <gtest/gtest.h>

#include <chrono>
#include <numeric>
#include <utility>

#include "rocebench/common/cli.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/microbench/driver.hpp"
#include "rocebench/microbench/probe.hpp"

using namespace rocebench;
using namespace rocebench::microbench;

TEST(Sizes, SweepIsEveryPowerOfTwoFrom2BytesTo8MiB) {
  const auto s = sweep_sizes();
  ASSERT_EQ(s.size(), 23u);
  EXPECT_EQ(s.front(), 2u);
  EXPECT_EQ(s.back(), 8u << 20);
  for (std::size_t i = 1; i < s.size(); ++i) EXPECT_EQ(s[i], 2 * s[i - 1]);
}

TEST(Bandwidth, AverageAndRateFromPostAndCompletionTimes) {
  // 4 messages of 1000 bytes, posted at 0,10,20,30 ns, completed at 100,200,300,400 ns.
  const auto f = bandwidth_figures(1000, {0, 10, 20, 30}, {100, 200, 300, 400}, 1);
  EXPECT_DOUBLE_EQ(f.avg_Gbps, 4 * 8000.0 / 400.0);  // bits per ns = Gb/s
  EXPECT_DOUBLE_EQ(f.msg_rate_Mpps, 4.0 / 400.0 * 1e3);
  // perftest's peak: best (completed[j] - posted[i]) / (j - i + 1); here i=0, j=0: 100 ns.
  EXPECT_DOUBLE_EQ(f.peak_Gbps, 8000.0 / 100.0);
  // Pipelined completions: the whole run, i=0..j=3, is best: 130 ns / 4 messages.
  const auto g = bandwidth_figures(1000, {0, 10, 20, 30}, {100, 110, 120, 130}, 1);
  EXPECT_DOUBLE_EQ(g.peak_Gbps, 8000.0 / 32.5);
  EXPECT_GE(g.peak_Gbps, g.avg_Gbps);
}

TEST(Bandwidth, PeakRunsEndOnlyWherePerftestSeesACompletion) {
  // Message 0 completes fast, but with CQ moderation 2 perftest times only messages 1, 3 and the last.
  const auto every = bandwidth_figures(1000, {0, 10, 20, 30}, {50, 200, 300, 400}, 1);
  EXPECT_DOUBLE_EQ(every.peak_Gbps, 8000.0 / 50.0);
  const auto moderated = bandwidth_figures(1000, {0, 10, 20, 30}, {50, 200, 300, 400}, 2);
  EXPECT_DOUBLE_EQ(moderated.peak_Gbps, 8000.0 / 100.0);  // i=0..j=1: 200 ns for 2 messages
  // 5 messages: the last (index 4) is signaled too, and the whole run is the best: 410 ns / 5.
  const auto last = bandwidth_figures(1000, {0, 10, 20, 30, 40}, {100, 200, 300, 400, 410}, 2);
  EXPECT_DOUBLE_EQ(last.peak_Gbps, 8000.0 / 82.0);
  EXPECT_DOUBLE_EQ(last.avg_Gbps, 5 * 8000.0 / 410.0);  // the average ignores the grid
}

TEST(Bandwidth, NoMessagesGiveZeros) {
  const auto f = bandwidth_figures(64, {}, {}, 100);
  EXPECT_EQ(f.avg_Gbps, 0);
  EXPECT_EQ(f.peak_Gbps, 0);
}

TEST(Latency, MetricNamesAreTheContract) {
  const std::vector<double> us{1, 2, 3, 4, 100};
  const json m = latency_metrics(summarize(us));
  for (const char* k : {"lat_us_min", "lat_us_max", "lat_us_p50", "lat_us_avg", "lat_us_stdev", "lat_us_p99", "lat_us_p99_9"}) {
    EXPECT_TRUE(m.contains(k)) << k;
  }
  EXPECT_EQ(m["lat_us_p50"], 3);
}

TEST(Records, SkipRecordValidatesAndCarriesItsReason) {
  ProbeSpec spec;
  spec.transport = "verbs";
  spec.test = "write_bw";
  ResultRecord r = skip_record("microbench.probe", spec_params(spec), "no RDMA device");
  r.host = "h";
  const json j = to_json(r, "run1");
  EXPECT_TRUE(result_schema().validate(j).empty()) << j.dump();
  EXPECT_EQ(j["status"], "skip");
  EXPECT_EQ(j["params"]["transport"], "verbs");
  EXPECT_EQ(table_row(r, ProbeKind::bandwidth).find("skip: no RDMA device") != std::string::npos, true);
}

TEST(Spec, StepParamsMapToTheSameOptionsAsTheCli) {
  const ProbeSpec s = spec_from_params(json::parse(
      R"({"transport":"verbs","test":"read_bw","bytes":[64,4096],"iters":10,"qps":4,"tos":104,"connect":"oob","bidirectional":true})"));
  EXPECT_EQ(s.driver.sizes, (std::vector<std::size_t>{64, 4096}));
  EXPECT_EQ(s.driver.iterations, 10);
  EXPECT_EQ(s.verbs.qps, 4);
  EXPECT_EQ(s.verbs.tos, 104);
  EXPECT_EQ(s.verbs.connect, "oob");
  EXPECT_TRUE(s.verbs.bidirectional);
  EXPECT_EQ(kind_of(s), ProbeKind::bandwidth);
  EXPECT_EQ(spec_from_params(json::parse(R"({"all":true})")).driver.sizes.size(), 23u);
  EXPECT_THROW(spec_from_params(json::parse(R"({"transport":"tcp","test":"write_lat"})")), UsageError);
  EXPECT_THROW(spec_from_params(json::parse(R"({"transport":"ib"})")), UsageError);
  EXPECT_THROW(spec_from_params(json::parse(R"({"transport":"verbs","connect":"ucx"})")), UsageError);
  EXPECT_THROW(spec_from_params(json::parse(R"({"transport":"tcp","mode":"lazy"})")), UsageError);
}

TEST(Spec, SchemaAcceptsWhatTheStepReads) {
  const JsonSchema schema(probe_params_schema());
  EXPECT_TRUE(schema.validate(json::parse(R"({"transport":"tcp","test":"lat","bytes":64,"mode":"blocking"})")).empty());
  EXPECT_FALSE(schema.validate(json::parse(R"({"transport":"tcp","bogus":1})")).empty());
  EXPECT_FALSE(schema.validate(json::parse(R"({"bytes":0})")).empty());
}

TEST(Bidirectional, RecordIsTheSumOfBothDirectionsAsPerftestB) {
  ResultRecord r;
  r.metrics = {{"bw_avg_Gbps", 3.0}, {"bw_peak_Gbps", 4.0}, {"msg_rate_Mpps", 0.5},
               {"rev_bw_avg_Gbps", 1.0}, {"rev_bw_peak_Gbps", 2.0}, {"rev_msg_rate_Mpps", 0.25}};
  sum_directions(r);
  EXPECT_DOUBLE_EQ(r.metrics["bw_avg_Gbps"], 4.0);
  EXPECT_DOUBLE_EQ(r.metrics["bw_peak_Gbps"], 6.0);
  EXPECT_DOUBLE_EQ(r.metrics["msg_rate_Mpps"], 0.75);
  EXPECT_DOUBLE_EQ(r.metrics["fwd_bw_avg_Gbps"], 3.0);
  EXPECT_DOUBLE_EQ(r.metrics["rev_bw_avg_Gbps"], 1.0);
}

namespace {
// The parts of a bandwidth probe that the driver tests below do not look at.
class FakeBandwidthProbe : public Probe {
 public:
  ProbeKind kind() const override { return ProbeKind::bandwidth; }
  json params() const override { return json::object(); }
  std::string peer() const override { return "fake"; }
  void begin_size(std::size_t) override {}
  void ping(bool) override {}
  std::size_t next_size() override { return 0; }
  void serve(std::size_t) override {}
};

// A passive side whose messages complete at once: what the driver's mirrored loop does with it.
class EchoProbe final : public FakeBandwidthProbe {
 public:
  void post(bool last, bool) override {
    ++posted;
    lasts += last;
  }
  std::size_t poll(bool) override { return posted - std::exchange(reported, posted); }
  std::size_t next_size() override { return sizes_left-- > 0 ? 4096 : 0; }
  void serve(std::size_t) override { ++served; }
  std::optional<DriverOptions> reverse_loop() const override { return loop; }
  void set_reverse_figures(const BandwidthFigures& f) override { figures.push_back(f); }

  std::optional<DriverOptions> loop;
  int sizes_left = 2, served = 0, lasts = 0;
  std::size_t posted = 0, reported = 0;
  std::vector<BandwidthFigures> figures;
};
}  // namespace

TEST(Bidirectional, ThePassiveSideRunsTheActiveSidesLoopOnlyWhenAsked) {
  EchoProbe one_way;
  EXPECT_EQ(run_passive(one_way), 2);
  EXPECT_EQ(one_way.posted, 0u);  // a plain server only serves
  EXPECT_TRUE(one_way.figures.empty());

  EchoProbe both_ways;
  both_ways.loop = DriverOptions{.iterations = 50, .warmup = 8, .tx_depth = 4};
  EXPECT_EQ(run_passive(both_ways), 2);
  EXPECT_EQ(both_ways.served, 2);
  EXPECT_EQ(both_ways.posted, 2u * (50 + 8));  // per size: the warm-up, then the timed messages
  EXPECT_EQ(both_ways.lasts, 2);                // each timed loop marks its last message
  ASSERT_EQ(both_ways.figures.size(), 2u);
  EXPECT_GT(both_ways.figures[0].avg_Gbps, 0);
}

namespace {
// A queue with perftest's CQ moderation: a message completes (at once) only when a signaled one at or
// after it has been posted; waiting with nothing signaled outstanding would hang a real device.
class ModeratedProbe final : public FakeBandwidthProbe {
 public:
  void post(bool, bool signaled) override {
    if (signaled) signaled_at.push_back(posted);
    ++posted;
  }
  std::size_t poll(bool wait) override {
    const std::size_t done = signaled_at.empty() ? 0 : signaled_at.back() + 1;
    if (wait && done == reported) throw std::runtime_error("waits with no signaled message outstanding");
    return done - std::exchange(reported, done);
  }

  std::vector<std::size_t> signaled_at;  // post indices, warm-up and timed loop counted together
  std::size_t posted = 0, reported = 0;
};
}  // namespace

TEST(Bandwidth, EveryCqModThMessageAndTheLastOfEachLoopAreSignaled) {
  ModeratedProbe probe;
  DriverOptions o{.sizes = {4096}, .iterations = 10, .warmup = 5, .tx_depth = 4, .cq_mod = 3};
  std::vector<ResultRecord> records;
  run_active(probe, o, [&](const ResultRecord& r) { records.push_back(r); });
  // Warm-up: 2 (3rd message) and 4 (its last); timed: 3rd, 6th, 9th and the 10th (last) of 10.
  EXPECT_EQ(probe.signaled_at, (std::vector<std::size_t>{2, 4, 7, 10, 13, 14}));
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].samples["messages"], 10);
  // The moderation never exceeds the window (perftest lowers cq_mod to the TX depth), or a full
  // window could hold no signaled message.
  ModeratedProbe deep;
  run_active(deep, DriverOptions{.sizes = {4096}, .iterations = 10, .warmup = 0, .tx_depth = 4, .cq_mod = 100}, [](const ResultRecord&) {});
  EXPECT_EQ(deep.signaled_at, (std::vector<std::size_t>{3, 7, 9}));
}

namespace {
// A queue that completes its first `completes` messages at once, then nothing: an RC stream whose
// resends no longer get through. Waiting on it (poll(true)) would hang until the probe's deadline.
class StallingProbe final : public FakeBandwidthProbe {
 public:
  explicit StallingProbe(std::size_t completes) : completes_(completes) {}
  void post(bool, bool) override { ++posted; }
  std::size_t poll(bool wait) override {
    if (wait) throw std::runtime_error("waited on a stalled queue");
    const std::size_t done = std::min(posted, completes_);
    return done - std::exchange(reported_, done);
  }
  std::size_t posted = 0;

 private:
  std::size_t completes_, reported_ = 0;
};

// A queue that completes one message every 20 ms.
class TrickleProbe final : public FakeBandwidthProbe {
 public:
  void post(bool, bool) override { ++posted; }
  std::size_t poll(bool) override {
    const auto now = std::chrono::steady_clock::now();
    if (reported_ == posted || now - last_ < std::chrono::milliseconds(20)) return 0;
    last_ = now;
    ++reported_;
    return 1;
  }
  std::size_t posted = 0;

 private:
  std::size_t reported_ = 0;
  std::chrono::steady_clock::time_point last_{};
};
}  // namespace

TEST(Bandwidth, AWindowThatStopsCompletingIsGivenUpAfterDrainSecondsWithoutACompletion) {
  StallingProbe probe(300);
  const DriverOptions o{.sizes = {4096}, .warmup = 0, .duration_s = 0.05, .tx_depth = 16, .interval_ns = 10'000'000, .drain_s = 0.1};
  std::vector<ResultRecord> records;
  const auto start = std::chrono::steady_clock::now();
  run_active(probe, o, [&](const ResultRecord& r) { records.push_back(r); });
  const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_GE(took_s, 0.15);  // duration + drain, not the probe's deadline
  EXPECT_LT(took_s, 5.0);
  ASSERT_EQ(records.size(), 1u);
  const ResultRecord& r = records[0];
  EXPECT_EQ(probe.posted, 316u);  // 300 completed, then one full window
  EXPECT_EQ(r.samples["messages"], 316);
  EXPECT_EQ(r.samples["abandoned_messages"], 16);
  // Goodput over the whole wait, and the 10 ms intervals run to the give-up, empty after the stall.
  EXPECT_NEAR(r.metrics["bw_avg_Gbps"].get<double>(), 300 * 4096 * 8 / (took_s * 1e9), 300 * 4096 * 8 / (took_s * 1e9) * 0.5);
  const auto intervals = r.samples["interval_bytes"].get<std::vector<std::uint64_t>>();
  ASSERT_GE(intervals.size(), 14u);
  EXPECT_EQ(intervals.back(), 0u);
  EXPECT_EQ(std::accumulate(intervals.begin(), intervals.end(), std::uint64_t{0}), 300u * 4096);
  // A window that still completes, one message every 20 ms, is waited for: 16 of them take longer than
  // drain_s, none of the gaps does.
  TrickleProbe trickle;
  std::vector<ResultRecord> slow;
  run_active(trickle, o, [&](const ResultRecord& rec) { slow.push_back(rec); });
  ASSERT_EQ(slow.size(), 1u);
  EXPECT_FALSE(slow[0].samples.contains("abandoned_messages"));
  EXPECT_EQ(slow[0].samples["messages"], trickle.posted);
  // Without drain_s the driver waits on the queue as before (the probe's own deadline bounds it).
  StallingProbe waits(300);
  EXPECT_THROW(run_active(waits, DriverOptions{.sizes = {4096}, .warmup = 0, .duration_s = 0.05, .tx_depth = 16}, [](const ResultRecord&) {}),
               std::runtime_error);
}

TEST(GpuBuffers, ForTheVerbsBandwidthTestsAndReadLatOnly) {
  ProbeSpec s;
  s.transport = "verbs";
  s.verbs.gpu = 0;
  for (const char* test : {"write_bw", "send_bw", "read_bw", "read_lat"}) {
    s.test = test;
    EXPECT_NO_THROW(validate(s)) << test;
  }
  for (const char* test : {"write_lat", "send_lat"}) {  // their ping-pong touches the buffer from the host
    s.test = test;
    EXPECT_THROW(validate(s), UsageError) << test;
  }
  s.transport = "tcp";
  s.test = "bw";
  EXPECT_THROW(validate(s), UsageError);
  EXPECT_EQ(spec_from_params(json::parse(R"({"transport":"verbs","test":"write_bw","gpu":1})")).verbs.gpu, 1);
  EXPECT_EQ(spec_from_params(json::parse(R"({"transport":"verbs","test":"write_bw"})")).verbs.gpu, -1);
}

TEST(Bidirectional, OnlyForTheVerbsBandwidthTests) {
  ProbeSpec s;
  s.verbs.bidirectional = true;
  s.transport = "verbs";
  s.test = "send_bw";
  EXPECT_NO_THROW(validate(s));
  s.test = "write_lat";
  EXPECT_THROW(validate(s), UsageError);
  s.transport = "tcp";
  s.test = "bw";
  EXPECT_THROW(validate(s), UsageError);
}

// A latency probe that answers at once and ends each size with what the verbs probe's counters give:
// the driver must put numbers in metrics, strings in params and "samples" beside the samples.
class EndsWithCounters : public Probe {
 public:
  ProbeKind kind() const override { return ProbeKind::latency; }
  json params() const override { return {{"transport", "test"}}; }
  std::string peer() const override { return "self"; }
  void begin_size(std::size_t) override {}
  void ping(bool) override {}
  void post(bool, bool) override {}
  std::size_t poll(bool) override { return 0; }
  json end_size() override {
    return {{"nic_seq_naks_rx", 5},
            {"gpu_registration", "dmabuf"},
            {"samples", {{"counter_sources", {{"seq_naks_rx", "hw_counters/packet_seq_err"}}},
                         {"counters_reset", {"hw_counters/local_ack_timeout_err"}}}}};
  }
  std::size_t next_size() override { return 0; }
  void serve(std::size_t) override {}
};

TEST(Driver, EndOfSizeNotesGoBesideTheSamplesNotIntoParams) {
  EndsWithCounters probe;
  DriverOptions o;
  o.iterations = 10;
  o.warmup = 0;
  std::vector<ResultRecord> records;
  run_active(probe, o, [&](const ResultRecord& r) { records.push_back(r); });
  ASSERT_EQ(records.size(), 1u);
  const ResultRecord& r = records[0];
  EXPECT_EQ(r.metrics["nic_seq_naks_rx"], 5);
  EXPECT_EQ(r.params["gpu_registration"], "dmabuf");
  EXPECT_FALSE(r.params.contains("samples"));
  EXPECT_FALSE(r.params.contains("counter_sources"));
  EXPECT_EQ(r.samples["counter_sources"]["seq_naks_rx"], "hw_counters/packet_seq_err");
  EXPECT_EQ(r.samples["counters_reset"][0], "hw_counters/local_ack_timeout_err");
  EXPECT_EQ(r.samples["unit"], "us");  // the latency samples themselves are still there
}

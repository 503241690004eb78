// The models.train measurement, its records, the step kind and the command line's bad input.
#include <gtest/gtest.h>

#include "../../harness/tests/process_util.hpp"

#include "rocebench/common/errors.hpp"
#include "rocebench/common/record.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/models/module.hpp"
#include "rocebench/models/graph.hpp"
#include "rocebench/models/train.hpp"

namespace rocebench::models {
namespace {

void expect_valid(const ResultRecord& r) {
  const json j = to_json(r, "test-run");
  const auto errors = result_schema().validate(j);
  for (const auto& e : errors) ADD_FAILURE() << e.pointer << ": " << e.message << "\n" << j.dump();
}

TrainConfig tiny() { return {.model = "resnet20_cifar", .batch = 2, .iters = 3, .warmup = 1}; }

TEST(Train, RecordKeepsTheReportsContract) {
  ResultRecord r = measure_training(tiny(), 4);
  r.host = "h";
  EXPECT_EQ(r.step, "models.train");
  EXPECT_EQ(r.world, 4);
  EXPECT_EQ(r.status, Status::ok);
  EXPECT_EQ(r.params, (json{{"model", "resnet20_cifar"}, {"engine", "cpu"}, {"precision", "fp32"}, {"batch", 2}, {"mode", "single"}}));
  EXPECT_GT(r.metrics.at("images_per_s").get<double>(), 0);
  EXPECT_GT(r.metrics.at("step_time_ms_p50").get<double>(), 0);
  EXPECT_GT(r.metrics.at("tflops").get<double>(), 0);
  EXPECT_EQ(r.samples.at("n").get<int>(), 3);
  // images/sec and the step times describe the same timed steps.
  EXPECT_NEAR(r.metrics["images_per_s"].get<double>(), 2 * 1000 / r.samples["avg"].get<double>(),
              1e-6 * r.metrics["images_per_s"].get<double>());
  expect_valid(r);
}

void expect_input_error(const TrainConfig& c, const std::string& expected) {
  try {
    validate(c);
    ADD_FAILURE() << "no error, expected " << expected;
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find(expected), std::string::npos) << e.what();
  }
}

// Two timed steps after a warm-up: the table shows (after − before) / steps per op and node.
TEST(Train, LayerTimeTableAveragesTheTimedStepsByOpAndNode) {
  Graph g("t", {3, 8, 8}, 4);
  g.softmax_ce(g.linear(g.relu(g.conv(g.input(), 4, square(3, 1, 1))), 4));  // nodes 1 conv, 2 relu, 3 linear, 4 loss
  const std::vector<LayerTime> before{{1, 1.0, 2.0}, {2, 0.5, 0.5}, {3, 0, 0}, {4, 0, 0}, {-1, 0, 1.0}};
  const std::vector<LayerTime> after{{1, 5.0, 10.0}, {2, 0.9, 1.3}, {3, 0.2, 0.2}, {4, 0.1, 0.1}, {-1, 0, 2.0}};
  const std::string table = layer_time_table(g, before, after, 2, 10.0);
  EXPECT_NE(table.find("mean of 2 steps"), std::string::npos) << table;
  // conv: (5 − 1) / 2 = 2 ms forward, (10 − 2) / 2 = 4 ms backward, 6 ms = 60% of a 10 ms step.
  EXPECT_NE(table.find("conv             1       2.000        4.000     6.000   60.0%"), std::string::npos) << table;
  EXPECT_NE(table.find("update           1       0.000        0.500     0.500    5.0%"), std::string::npos) << table;
  // 6 + 0.6 + 0.2 + 0.1 + 0.5 = 7.4 ms of the 10.
  EXPECT_NE(table.find("7.400   74.0% of the step's 10.000 ms"), std::string::npos) << table;
  // The slowest node first, with its output shape.
  const auto slowest = table.find("slowest nodes:\n");
  ASSERT_NE(slowest, std::string::npos) << table;
  const std::string first = table.substr(slowest + 15, table.find('\n', slowest + 15) - slowest - 15);
  EXPECT_NE(first.find("node    1 conv"), std::string::npos) << first;
  EXPECT_NE(first.find("4x8x8       2.000        4.000"), std::string::npos) << first;
}

TEST(Train, BadInputNamesWhatExists) {
  auto c = tiny();
  c.model = "resnet51";
  expect_input_error(c, "models: resnet50, resnet152");
  c = tiny();
  c.engine = "tpu";
  expect_input_error(c, "engines: cpu, gpu");
  c = tiny();
  c.precision = "fp8";
  expect_input_error(c, "precisions: fp32, tf32, bf16, fp16");
  c = tiny();
  c.batch = 0;
  expect_input_error(c, "batch (0)");
  c = tiny();
  c.layout = "nhwc";
  expect_input_error(c, "unknown layout 'nhwc'; layouts: blocked, plain");
  c = tiny();
  c.data = "/tmp";
  c.prefetch = 1;
  expect_input_error(c, "prefetch (1) at least 2");
}

TEST(Train, BatchThatDoesNotFitNamesBatchAndMemory) {
  TrainConfig c{.model = "resnet50", .batch = 1'000'000};
  expect_input_error(c, "batch 1000000 of resnet50 does not fit: it needs");
}

TEST(Train, PlainLayoutIsNamedInTheRecord) {
  auto c = tiny();
  c.layout = "plain";
  const ResultRecord r = measure_training(c, 1);
  EXPECT_EQ(r.status, Status::ok);
  EXPECT_EQ(r.params.at("layout"), "plain");
}

TEST(Train, CpuEngineRejectsReducedPrecision) {
  auto c = tiny();
  c.precision = "fp16";
  EXPECT_THROW(measure_training(c, 1), InputError);
}

TEST(Train, GpuEngineWithoutGpuSkipsWithReason) {
  auto c = tiny();
  c.engine = "gpu";
  ResultRecord r = measure_training(c, 1);
  r.host = "h";
  ASSERT_EQ(r.status, Status::skip) << "this test runs on machines without a GPU";
  EXPECT_FALSE(r.reason.empty());
  expect_valid(r);
}

struct Collect : Recorder {
  std::vector<json> records;
  void emit(const json& r) override { records.push_back(r); }
  void end_step() override {}
};

TEST(Train, StepKindRecordsOneResultPerRank) {
  const auto kinds = steps();
  ASSERT_EQ(kinds.size(), 3u);
  EXPECT_EQ(kinds[0].name, "models.train");
  EXPECT_EQ(kinds[1].name, "models.scaling");
  EXPECT_EQ(kinds[2].name, "models.predict");
  JsonSchema params(kinds[0].params_schema);
  EXPECT_TRUE(params.validate({{"model", "resnet20_cifar"}, {"batch", 2}, {"iters", 1}, {"warmup", 0}}).empty());
  EXPECT_FALSE(params.validate({{"model", "resnet20_cifar"}, {"engine", "tpu"}}).empty());
  Collect rec;
  StepContext ctx;
  ctx.run_id = "r";
  ctx.step = "models.train";
  ctx.host = "h";
  ctx.rank = 1;
  ctx.world = 2;
  ctx.params = {{"model", "resnet20_cifar"}, {"batch", 2}, {"iters", 1}, {"warmup", 0}};
  ctx.recorder = &rec;
  kinds[0].run(ctx);
  ASSERT_EQ(rec.records.size(), 1u);
  EXPECT_TRUE(result_schema().validate(rec.records[0]).empty()) << rec.records[0].dump();
  EXPECT_EQ(rec.records[0]["world"], 2);
  EXPECT_EQ(rec.records[0]["rank"], 1);
}

// Each option is declared once: the flag takes the plan field's range, both steps refuse the old
// spelling, and a flag of the other step is refused rather than ignored.
TEST(Train, FlagsTakeThePlanFieldsRangesAndTheOtherStepsFlagsAreRefused) {
  const auto main = subcommands().at(0).main;
  const auto error_of = [&](const std::vector<std::string>& args) {
    testing::internal::CaptureStderr();
    const int rc = main(args);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_EQ(rc, 2) << err;
    return err.substr(0, err.find('\n'));
  };
  EXPECT_EQ(error_of({"--iters", "0"}), "rocebench train: --iters: 0 is out of range [1, 100000]");
  EXPECT_EQ(error_of({"--prefetch", "1"}), "rocebench train: --prefetch: 1 is out of range [2, 1024]");
  EXPECT_EQ(error_of({"--world-sizes", "2", "--first-bucket-mb", "0"}), "rocebench train: --first-bucket-mb: 0 is out of range (0, 4096]");
  EXPECT_EQ(error_of({"--sync", "ps"}), "rocebench train: --sync is for data-parallel training: it needs --world-sizes");
  EXPECT_EQ(error_of({"--spin-us", "0"}), "rocebench train: --spin-us is for data-parallel training: it needs --world-sizes");
  EXPECT_EQ(error_of({"--world-sizes", "2", "--data", "d"}), "rocebench train: --data is models.train's: not with --world-sizes");
  // The largest world size is how many ranks start: too many is said of --world-sizes, with its range,
  // not of the --ranks the user never typed.
  EXPECT_EQ(error_of({"--world-sizes", "1,100000"}), "rocebench train: --world-sizes: 1,100000 is out of range [1, 4096]");
  // A timeline only the replay engine plays is refused with another engine, not ignored.
  EXPECT_EQ(error_of({"--timeline", "cpu-resnet20_cifar-fp32-b64"}),
            "rocebench train: --timeline (plan field 'timeline') needs --engine replay: the cpu engine plays no timeline and "
            "would ignore it");
  EXPECT_EQ(error_of({"--engine", "replay"}),
            "rocebench train: the replay engine needs a timeline (--timeline, plan field 'timeline'): a shipped one's name or a "
            "results file");
  for (const auto& kind : steps()) {
    if (kind.name == "models.predict") continue;  // it trains nothing: no iters (its own tests)
    const JsonSchema schema(kind.params_schema);
    EXPECT_FALSE(schema.validate({{"model", "alexnet"}, {"iters", 0}}).empty()) << kind.name;
    const auto old = schema.validate({{"model", "alexnet"}, {"steps", 5}});
    ASSERT_FALSE(old.empty()) << kind.name;
    EXPECT_EQ(old[0].message, "'steps' is now 'iters'") << kind.name;
    EXPECT_FALSE(schema.validate({{"batch", 2}}).empty()) << kind.name << ": a plan names its model";
  }
  EXPECT_TRUE(JsonSchema(steps()[1].params_schema).validate({{"model", "alexnet"}, {"spin_us", 0}, {"lr", 0.2}}).empty());
}

// `rocebench train` is a one-step plan: its record lands in the results folder after the run's,
// bad input found by the rank still exits 2, and the old --out is refused naming --results.
TEST(Train, CommandLineRunsAsAOneStepPlanIntoTheResultsFolder) {
  RBTEST_NEEDS_ROCEBENCH();
  const auto dir = rbtest::temp_dir("train-cli");
  const std::string binary = ROCEBENCH_BINARY;
  const std::vector<std::string> tiny_run = {binary, "train", "--model", "resnet20_cifar", "--batch", "2", "--iters", "2",
                                             "--warmup", "0"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), tiny_run.begin(), tiny_run.end());
    return more;
  };
  ASSERT_EQ(rbtest::run(with({"--results-dir", (dir / "ok").string()}), dir, "ok"), 0) << rbtest::slurp(dir / "ok.err");
  EXPECT_NE(rbtest::slurp(dir / "ok.out").find("resnet20_cifar cpu fp32 batch 2: "), std::string::npos) << rbtest::slurp(dir / "ok.out");
  const RecordFile f = read_records(dir / "ok" / "results.jsonl", &result_schema());
  EXPECT_TRUE(f.issues.empty());
  ASSERT_FALSE(f.records.empty());
  EXPECT_EQ(f.records[0]["kind"], "run");
  std::vector<json> results;
  for (const auto& r : f.records)
    if (r["kind"] == "result") results.push_back(r);
  ASSERT_EQ(results.size(), 1u);
  EXPECT_EQ(results[0]["step"], "models.train");
  EXPECT_EQ(results[0]["world"], 1);  // no --ranks: as many as the help says
  testing::internal::CaptureStdout();
  EXPECT_EQ(subcommands().at(0).main({"--help"}), 0);
  const std::string help = testing::internal::GetCapturedStdout();
  EXPECT_NE(help.find("local ranks to start (default 1)\n"), std::string::npos) << help;
  EXPECT_EQ(results[0]["status"], "ok");
  EXPECT_EQ(results[0]["samples"]["n"], 2);

  EXPECT_EQ(rbtest::run({binary, "train", "--model", "nope", "--results-dir", (dir / "bad").string()}, dir, "bad"), 2);
  // Refused with the flag, before a rank starts: no rank records an error for it.
  EXPECT_NE(rbtest::slurp(dir / "bad.err").find("rocebench train: --model \"nope\": must be one of"), std::string::npos)
      << rbtest::slurp(dir / "bad.err");
  EXPECT_NE(rbtest::slurp(dir / "bad.err").find("resnet20_cifar"), std::string::npos) << rbtest::slurp(dir / "bad.err");
  EXPECT_FALSE(std::filesystem::exists(dir / "bad" / "results.jsonl"));
  EXPECT_EQ(rbtest::run(with({"--out", (dir / "r.jsonl").string()}), dir, "out"), 2);
  EXPECT_NE(rbtest::slurp(dir / "out.err").find("rocebench train: '--out' is now '--results'"), std::string::npos)
      << rbtest::slurp(dir / "out.err");
  EXPECT_FALSE(std::filesystem::exists(dir / "r.jsonl"));
  EXPECT_EQ(subcommands().at(0).main({"--list"}), 0);
}

}  // namespace
}  // namespace rocebench::models

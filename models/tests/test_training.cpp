// Optimizer and schedules against hand-computed values; a fixed-seed training run on a learnable
// synthetic task; bit-identical steps.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>

#include <gtest/gtest.h>

#include "rocebench/models/engine.hpp"
#include "rocebench/models/optimizer.hpp"

namespace rocebench::models {
namespace {

TEST(Sgd, MomentumAndWeightDecayTwoSteps) {
  std::vector<float> w{1.f}, g{0.5f}, v{0.f};
  const SgdOptions o{.momentum = 0.9, .weight_decay = 0.1};
  sgd_update(ParamRole::weight, w, g, v, 0.1, o);
  // d = 0.5 + 0.1·1 = 0.6; v = 0.6; w = 1 − 0.1·0.6
  EXPECT_FLOAT_EQ(v[0], 0.6f);
  EXPECT_FLOAT_EQ(w[0], 0.94f);
  sgd_update(ParamRole::weight, w, g, v, 0.1, o);
  // d = 0.5 + 0.094 = 0.594; v = 0.54 + 0.594 = 1.134; w = 0.94 − 0.1134
  EXPECT_FLOAT_EQ(v[0], 1.134f);
  EXPECT_FLOAT_EQ(w[0], 0.8266f);
}

TEST(Sgd, LarsScalesWeightsByTrustRatioAndLeavesBiasesPlain) {
  const SgdOptions o{.momentum = 0.9, .weight_decay = 0.01, .lars = true, .lars_eta = 0.001};
  std::vector<float> w{3.f, 4.f}, g{0.6f, 0.8f}, v{0.f, 0.f};
  sgd_update(ParamRole::weight, w, g, v, 1.0, o);
  // ‖w‖ = 5, ‖g‖ = 1: ratio = 0.001·5 / (1 + 0.01·5); d = g + 0.01·w = (0.63, 0.84)
  const double ratio = 0.005 / 1.05;
  EXPECT_NEAR(v[0], ratio * 0.63, 1e-8);
  EXPECT_NEAR(w[1], 4 - ratio * 0.84, 1e-6);
  std::vector<float> b{1.f}, gb{0.5f}, vb{0.f};
  sgd_update(ParamRole::bias, b, gb, vb, 0.1, o);
  EXPECT_FLOAT_EQ(b[0], 0.95f);  // no decay, no ratio
}

TEST(Schedule, WarmupThenExponentialDecay) {
  ExponentialDecay s{.base = 0.1, .warmup_epochs = 5, .rate = 0.94, .decay_epochs = 2};
  EXPECT_DOUBLE_EQ(s.at(2.5), 0.05);
  EXPECT_DOUBLE_EQ(s.at(5), 0.1);
  EXPECT_DOUBLE_EQ(s.at(9), 0.1 * 0.94 * 0.94);
  EXPECT_DOUBLE_EQ(s.at(8), 0.1 * std::pow(0.94, 1.5));
  s.staircase = true;
  EXPECT_DOUBLE_EQ(s.at(8), 0.1 * 0.94);
}

TEST(Schedule, WarmupThenCosine) {
  const WarmupCosine s{.base = 0.1, .warmup_epochs = 5, .total_epochs = 90};
  EXPECT_DOUBLE_EQ(s.at(1), 0.02);
  EXPECT_NEAR(s.at(47.5), 0.05, 1e-15);
  EXPECT_NEAR(s.at(90), 0.0, 1e-15);
}

// Four classes, each a fixed random 3×8×8 pattern plus noise of the same size.
struct PatternTask {
  Graph graph{"patterns", {3, 8, 8}, 4};
  std::vector<std::vector<float>> patterns;
  std::mt19937 rng{11};

  PatternTask() {
    int x = graph.relu(graph.batch_norm(graph.conv(graph.input(), 8, square(3, 1, 1))));
    x = graph.max_pool(x, square(2, 2));
    x = graph.relu(graph.batch_norm(graph.conv(x, 16, square(3, 1, 1))));
    graph.softmax_ce(graph.linear(graph.dropout(graph.avg_pool(x, square(2, 2)), 0.1f), 4));
    std::normal_distribution<float> normal;
    for (int k = 0; k < 4; ++k) {
      patterns.emplace_back(3 * 8 * 8);
      for (auto& v : patterns.back()) v = normal(rng);
    }
  }
  void next_batch(Engine& e, int batch) {
    std::normal_distribution<float> normal;
    std::vector<float> images;
    std::vector<int> labels;
    for (int b = 0; b < batch; ++b) {
      labels.push_back(std::uniform_int_distribution<int>(0, 3)(rng));
      for (float v : patterns[static_cast<std::size_t>(labels.back())]) images.push_back(v + normal(rng));
    }
    e.set_batch(images, labels);
  }
};

void train_step(Engine& e, double lr) {
  e.forward();
  e.backward({});
  e.update({.momentum = 0.9, .weight_decay = 5e-4}, lr);
}

// Trains the pattern task for 60 steps; the mean loss of the first and of the last five steps.
std::pair<double, double> learn_patterns(Precision precision) {
  PatternTask task;
  auto engine = make_cpu_engine(task.graph, {.batch = 16, .precision = precision, .seed = 5});
  const WarmupCosine schedule{.base = 0.05, .warmup_epochs = 1, .total_epochs = 6};
  double first = 0, last = 0;
  constexpr int steps_per_epoch = 10, steps = 60;
  for (int step = 0; step < steps; ++step) {
    task.next_batch(*engine, 16);
    train_step(*engine, schedule.at(static_cast<double>(step + 1) / steps_per_epoch));
    if (step < 5) first += engine->loss() / 5;
    if (step >= steps - 5) last += engine->loss() / 5;
  }
  return {first, last};
}

TEST(Training, FixedSeedRunLearnsSyntheticPatterns) {
  const auto [first, last] = learn_patterns(Precision::fp32);
  EXPECT_NEAR(first, std::log(4.0), 0.6);  // chance level at the start
  EXPECT_LT(last, 0.1) << "first five steps averaged " << first;
}

TEST(Training, Bf16RunLearnsSyntheticPatterns) {
  const auto all = cpu_precisions();
  if (std::find(all.begin(), all.end(), Precision::bf16) == all.end()) GTEST_SKIP() << "this CPU has no bf16 instructions";
  const auto [first, last] = learn_patterns(Precision::bf16);
  EXPECT_NEAR(first, std::log(4.0), 0.6);
  EXPECT_LT(last, 0.1) << "first five steps averaged " << first;
}

TEST(Training, SameStepTwiceGivesBitIdenticalWeights) {
  std::vector<std::vector<float>> weights[2];
  for (auto& result : weights) {
    PatternTask task;
    auto engine = make_cpu_engine(task.graph, {.batch = 8, .seed = 9});
    for (int step = 0; step < 2; ++step) {
      task.next_batch(*engine, 8);
      train_step(*engine, 0.05);
    }
    for (int p = 0; p < static_cast<int>(task.graph.params().size()); ++p) result.push_back(engine->parameter(p));
  }
  for (std::size_t p = 0; p < weights[0].size(); ++p)
    EXPECT_EQ(std::memcmp(weights[0][p].data(), weights[1][p].data(), weights[0][p].size() * 4), 0) << "param " << p;
}

}  // namespace
}  // namespace rocebench::models

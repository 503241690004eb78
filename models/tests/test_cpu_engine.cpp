// The CPU engine's layouts and precisions: blocked layouts give the plain layout's results, bf16
// mixed precision follows fp32 within bf16's resolution and keeps fp32 master weights, and bf16 is
// offered exactly where oneDNN reports a CPU with bf16 instructions.
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <string>

#include <gtest/gtest.h>

#include "cpu_engine.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/models/engine.hpp"

namespace rocebench::models {
namespace {

bool cpu_has(Precision p) {
  const auto all = cpu_precisions();
  return std::find(all.begin(), all.end(), p) != all.end();
}

// Every layer type: a stem, a residual block, an Inception-style concat, two heads (one linear on
// a 4-D blocked input, one after global pooling and dropout). Channels are multiples of 16 so
// oneDNN's blocked layouts apply.
Graph all_layers() {
  Graph g("all_layers", {3, 16, 16}, 10);
  int x = g.max_pool(g.relu(g.batch_norm(g.conv(g.input(), 16, square(3, 1, 1)))), square(3, 2, 1));
  const int body = g.batch_norm(g.conv(g.relu(g.batch_norm(g.conv(x, 16, square(3, 1, 1)))), 16, square(3, 1, 1)));
  x = g.relu(g.add(body, x));
  x = g.concat({g.conv(x, 16, square(1), 1, true), g.avg_pool(x, square(3, 1, 1)), g.conv(x, 32, square(3, 1, 1), 2)});
  x = g.relu(g.batch_norm(g.conv(x, 32, square(3, 2, 1))));
  g.softmax_ce(g.linear(x, 10), 0.4f);
  g.softmax_ce(g.linear(g.dropout(g.global_avg_pool(x), 0.2f), 10));
  return g;
}

struct Step {
  double loss = 0, next_loss = 0;
  std::vector<std::vector<float>> grads, weights;
  std::vector<float> input_grad;
  int blocked = 0;
};

// One forward, backward and update from a fixed batch, then the next forward's loss.
Step run_step(const Graph& g, EngineOptions options) {
  options.seed = 3;
  options.input_gradient = true;
  auto engine = make_cpu_engine(g, options);
  const SyntheticBatch b = synthetic_batch(g, options.batch, 5);
  engine->set_batch(b.images, b.labels);
  engine->forward();
  Step s;
  s.loss = engine->loss();
  engine->backward({});
  for (int p = 0; p < static_cast<int>(g.params().size()); ++p) s.grads.push_back(engine->gradient(p));
  s.input_grad = engine->input_gradient();
  engine->update({.momentum = 0.9, .weight_decay = 1e-4}, 0.05);
  for (int p = 0; p < static_cast<int>(g.params().size()); ++p) s.weights.push_back(engine->parameter(p));
  engine->forward();
  s.next_loss = engine->loss();
  s.blocked = cpu_blocked_activations(*engine);
  return s;
}

// ‖a − b‖ / ‖b‖.
double relative_l2(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, norm = 0;
  for (std::size_t k = 0; k < b.size(); ++k) {
    diff += std::pow(static_cast<double>(a[k]) - b[k], 2);
    norm += std::pow(static_cast<double>(b[k]), 2);
  }
  return norm > 0 ? std::sqrt(diff / norm) : std::sqrt(diff);
}

// Largest |a − b| over the largest |b|: every element, not an average.
double relative_max(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (std::size_t k = 0; k < b.size(); ++k) {
    diff = std::max(diff, std::abs(static_cast<double>(a[k]) - b[k]));
    scale = std::max(scale, std::abs(static_cast<double>(b[k])));
  }
  return scale > 0 ? diff / scale : diff;
}

TEST(CpuLayouts, BlockedAndPlainGiveTheSameStepInFp32) {
  const Graph g = all_layers();
  const Step blocked = run_step(g, {.batch = 4});
  const Step plain = run_step(g, {.batch = 4, .plain_layout = true});
  EXPECT_GT(blocked.blocked, 0) << "oneDNN chose no blocked layout, so this test compares plain with plain";
  EXPECT_EQ(plain.blocked, 0);
  EXPECT_NEAR(blocked.loss, plain.loss, 1e-5 * plain.loss);
  EXPECT_NEAR(blocked.next_loss, plain.next_loss, 1e-5 * plain.next_loss);
  for (std::size_t p = 0; p < plain.grads.size(); ++p) {
    EXPECT_LE(relative_max(blocked.grads[p], plain.grads[p]), 1e-4) << "gradient of param " << p;
    EXPECT_LE(relative_max(blocked.weights[p], plain.weights[p]), 1e-5) << "param " << p << " after the update";
  }
  ASSERT_EQ(blocked.input_grad.size(), plain.input_grad.size());
  EXPECT_LE(relative_max(blocked.input_grad, plain.input_grad), 1e-4);
}

// bf16 against the fp32 engine (itself checked against float64 finite differences in
// test_gradients.cpp): bf16 keeps 8 significant bits (relative rounding 2^-9 ≈ 0.2%), which sums of
// hundreds of products and a few layers compound to percents; the loss is computed in fp32 from
// bf16 logits. Gradients are compared as whole tensors (relative L2), not element by element.
void expect_bf16_follows_fp32(const Graph& g, double gradient_tolerance, bool plain_layout = false) {
  const Step ref = run_step(g, {.batch = 4, .plain_layout = plain_layout});
  const Step bf16 = run_step(g, {.batch = 4, .precision = Precision::bf16, .plain_layout = plain_layout});
  // 2% of the loss, and 1e-3 absolute for a loss near zero after the update (a net that overfits its batch).
  EXPECT_NEAR(bf16.loss, ref.loss, 0.02 * ref.loss + 1e-3);
  EXPECT_NEAR(bf16.next_loss, ref.next_loss, 0.02 * ref.next_loss + 1e-3);
  for (std::size_t p = 0; p < ref.grads.size(); ++p)
    EXPECT_LE(relative_l2(bf16.grads[p], ref.grads[p]), gradient_tolerance) << "gradient of param " << p;
  EXPECT_LE(relative_l2(bf16.input_grad, ref.input_grad), gradient_tolerance) << "input gradient";
}

class CpuBf16 : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!cpu_has(Precision::bf16)) GTEST_SKIP() << "this CPU has no bf16 instructions (CpuPrecisions tests the error)";
  }
};

// input {16, 6, 6} → body → linear(3) → softmax cross-entropy: one layer type at a time.
Graph tiny(const std::function<int(Graph&, int)>& body) {
  Graph g("tiny", {16, 6, 6}, 3);
  g.softmax_ce(g.linear(body(g, g.input()), 3));
  return g;
}

TEST_F(CpuBf16, EachLayerTypeFollowsFp32) {
  struct Layer {
    const char* name;
    std::function<int(Graph&, int)> body;
    double tolerance;  // relative L2 of every gradient
  };
  const std::vector<Layer> layers = {
      {"conv stride padding groups bias", [](Graph& g, int x) { return g.conv(x, 32, square(3, 2, 1), 2, true); }, 0.05},
      {"depthwise conv", [](Graph& g, int x) { return g.conv(x, 16, square(3, 1, 1), 16); }, 0.05},
      {"batch norm", [](Graph& g, int x) { return g.batch_norm(g.conv(x, 16, square(3))); }, 0.05},
      {"relu", [](Graph& g, int x) { return g.relu(g.conv(x, 16, square(3, 1, 1), 1, true)); }, 0.05},
      // Rounding to bf16 can flip which of two near-equal entries of a window is the maximum, which
      // moves a whole element of the input gradient: measured 6% here.
      {"max pool", [](Graph& g, int x) { return g.max_pool(x, square(3, 2, 1)); }, 0.1},
      {"avg pool", [](Graph& g, int x) { return g.avg_pool(x, square(3, 1, 1)); }, 0.05},
      {"global avg pool", [](Graph& g, int x) { return g.global_avg_pool(g.conv(x, 16, square(3))); }, 0.05},
      {"residual add", [](Graph& g, int x) { return g.add(x, g.conv(x, 16, square(3, 1, 1))); }, 0.05},
      {"concat", [](Graph& g, int x) { return g.concat({g.conv(x, 16, square(1)), g.max_pool(x, square(3, 1, 1))}); }, 0.05},
      {"linear", [](Graph& g, int x) { return g.relu(g.linear(x, 6, false)); }, 0.05},
      {"dropout", [](Graph& g, int x) { return g.dropout(g.conv(x, 16, square(3)), 0.3f); }, 0.05},
  };
  for (const auto& layer : layers) {
    SCOPED_TRACE(layer.name);
    expect_bf16_follows_fp32(tiny(layer.body), layer.tolerance);
  }
}

// Deeper, gradients compound bf16 rounding layer by layer, and batch norm's backward subtracts
// per-channel means of dy and dy·x̂ (cancellation) at every stage: measured 7–15% at batch 4 on
// this network, against 1–3% per single layer above.
TEST_F(CpuBf16, EveryLayerTogetherFollowsFp32) { expect_bf16_follows_fp32(all_layers(), 0.25); }
TEST_F(CpuBf16, PlainLayoutFollowsFp32) { expect_bf16_follows_fp32(all_layers(), 0.25, true); }

TEST_F(CpuBf16, MasterWeightsAndGradientsStayFp32) {
  const Graph g = all_layers();
  const Step s = run_step(g, {.batch = 4, .precision = Precision::bf16});
  // A weight rounded to bf16 has its low 16 bits zero; fp32 master weights after an update do not.
  auto below_bf16 = [](const std::vector<float>& v) {
    std::size_t count = 0;
    for (float f : v) {
      std::uint32_t bits;
      std::memcpy(&bits, &f, 4);
      count += (bits & 0xffff) != 0;
    }
    return count;
  };
  std::size_t weights = 0, grads = 0, total = 0;
  for (std::size_t p = 0; p < s.weights.size(); ++p) {
    weights += below_bf16(s.weights[p]);
    grads += below_bf16(s.grads[p]);
    total += s.weights[p].size();
  }
  EXPECT_GT(weights, total / 2) << "master weights look rounded to bf16";
  EXPECT_GT(grads, total / 2) << "weight gradients look rounded to bf16";
}

TEST(CpuPrecisions, Bf16WhereOneDnnReportsBf16Instructions) {
  const auto all = cpu_precisions();
  ASSERT_FALSE(all.empty());
  EXPECT_EQ(all.front(), Precision::fp32);
  // CTest runs this test a second time with ONEDNN_MAX_CPU_ISA=AVX512_CORE: no bf16 then.
  const char* max_isa = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (max_isa && std::string(max_isa) == "AVX512_CORE") {
    EXPECT_FALSE(cpu_has(Precision::bf16));
  }
  const Graph g = all_layers();
  if (cpu_has(Precision::bf16)) {
    EXPECT_NO_THROW(make_cpu_engine(g, {.batch = 2, .precision = Precision::bf16}));
  } else {
    try {
      make_cpu_engine(g, {.batch = 2, .precision = Precision::bf16});
      ADD_FAILURE() << "bf16 engine built on a CPU without bf16";
    } catch (const InputError& e) {
      EXPECT_NE(std::string(e.what()).find("supports precisions fp32 on this CPU, not bf16 (bf16 needs avx512_bf16"),
                std::string::npos) << e.what();
    }
  }
  try {
    make_cpu_engine(g, {.batch = 2, .precision = Precision::fp16});
    ADD_FAILURE() << "fp16 engine built";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("engine cpu supports precisions fp32"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace rocebench::models

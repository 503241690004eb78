// The gpu engine's device-free parts, checked without a GPU: NHWC layouts, the device layout of
// weights, the cuBLAS shapes of a linear layer, the convolution-algorithm cache key, the loss
// scaler's state machine, the dropout hash and the memory plan.
#include <algorithm>
#include <random>
#include <set>
#include <tuple>

#include <gtest/gtest.h>

#include "gpu_engine_device.hpp"
#include "gpu_engine_plan.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/models/zoo.hpp"

namespace rocebench::models::gpu {
namespace {

std::vector<float> iota_floats(std::size_t n) {
  std::vector<float> v(n);
  for (std::size_t i = 0; i < n; ++i) v[i] = static_cast<float>(i);
  return v;
}

TEST(GpuLayout, PackedNhwcHasChannelsInnermost) {
  const Nhwc t = packed(2, {3, 4, 5});
  EXPECT_EQ(t.n_stride(), 60);
  EXPECT_EQ(t.h_stride(), 15);
  EXPECT_EQ(t.w_stride(), 3);
  EXPECT_EQ(Nhwc::c_stride(), 1);
  EXPECT_EQ(t.elements(), 120);
  // Every element has its own offset and they fill 0..119.
  std::set<std::int64_t> seen;
  for (int n = 0; n < 2; ++n)
    for (int c = 0; c < 3; ++c)
      for (int h = 0; h < 4; ++h)
        for (int w = 0; w < 5; ++w) seen.insert(t.offset(n, c, h, w));
  EXPECT_EQ(seen.size(), 120u);
  EXPECT_EQ(*seen.rbegin(), 119);
  EXPECT_EQ(t.offset(1, 2, 3, 4), 60 + 3 * 15 + 4 * 3 + 2);
}

TEST(GpuLayout, ChannelSliceAddressesItsChannelsOfTheWhole) {
  // A concat of 2 + 5 channels: the second input's channel k is the whole's channel 2 + k.
  const Nhwc whole = packed(3, {7, 2, 4});
  const Nhwc slice = channel_slice(whole, 5);
  EXPECT_EQ(slice.c, 5);
  EXPECT_EQ(slice.elements(), 3 * 5 * 2 * 4);
  const int first = 2;
  for (int n = 0; n < 3; ++n)
    for (int c = 0; c < 5; ++c)
      for (int h = 0; h < 2; ++h)
        for (int w = 0; w < 4; ++w) EXPECT_EQ(first + slice.offset(n, c, h, w), whole.offset(n, first + c, h, w));
}

TEST(GpuLayout, NchwNhwcConversionsAgreeWithTheIndexMap) {
  const Shape s{3, 2, 5};
  const int batch = 2;
  const auto nchw = iota_floats(static_cast<std::size_t>(s.size() * batch));
  const auto nhwc = nchw_to_nhwc(nchw, batch, s);
  for (std::size_t i = 0; i < nhwc.size(); ++i)
    EXPECT_EQ(nhwc[i], nchw[static_cast<std::size_t>(nhwc_to_nchw_index(static_cast<std::int64_t>(i), s.c, s.h, s.w))]);
  EXPECT_EQ(nhwc_to_nchw(nhwc, batch, s), nchw);
  // Channel 1 of pixel (h=0, w=1) of image 1, NCHW index ((1·3 + 1)·2 + 0)·5 + 1 = 41, sits at
  // NHWC offset 30 + 1·3 + 1 = 34.
  EXPECT_EQ(nhwc[34], 41.f);
  EXPECT_THROW(nchw_to_nhwc(nchw, 3, s), std::invalid_argument);
}

TEST(GpuLayout, ConvAndLinearWeightsArePermutedToOutputKernelInput) {
  Graph g("layout", {3, 4, 4}, 2);
  const int conv = g.conv(g.input(), 2, square(2, 2), 1, true);  // params 0 (weight [2,3,2,2]), 1 (bias)
  const int bn = g.batch_norm(conv);                               // params 2, 3
  const int fc1 = g.linear(bn, 4);                                 // params 4 (weight [4, 2·2·2]), 5
  g.softmax_ce(g.linear(fc1, 2));                                  // params 6 ([2, 4]), 7
  EXPECT_EQ(permuted_dims(g, 0), (std::array<std::int64_t, 4>{2, 3, 2, 2}));
  EXPECT_EQ(permuted_dims(g, 4), (std::array<std::int64_t, 4>{4, 2, 2, 2}));
  for (int p : {1, 2, 3, 5, 6, 7}) EXPECT_FALSE(permuted_dims(g, p).has_value()) << "param " << p;

  const auto w = iota_floats(24);
  const auto device = to_device_layout(g, 0, w);
  // graph [o=1][c=2][h=0][w=1] = index 12 + 8 + 1 = 21 → device [o=1][h=0][w=1][c=2] = 12 + 3 + 2 = 17
  EXPECT_EQ(device[17], 21.f);
  EXPECT_EQ(to_graph_layout(g, 0, device), w);
  const auto bias = iota_floats(2);
  EXPECT_EQ(to_device_layout(g, 1, bias), bias);
  EXPECT_THROW(to_device_layout(g, 0, iota_floats(23)), std::invalid_argument);
}

// Column-major C = op(A)·op(B), as cuBLAS computes it, with beta = 0.
void gemm_reference(const Gemm& g, const std::vector<float>& a, const std::vector<float>& b, std::vector<float>& c) {
  auto A = [&](int i, int l) { return g.trans_a ? a[static_cast<std::size_t>(i * g.lda + l)] : a[static_cast<std::size_t>(l * g.lda + i)]; };
  auto B = [&](int l, int j) { return g.trans_b ? b[static_cast<std::size_t>(l * g.ldb + j)] : b[static_cast<std::size_t>(j * g.ldb + l)]; };
  for (int i = 0; i < g.m; ++i)
    for (int j = 0; j < g.n; ++j) {
      double sum = 0;
      for (int l = 0; l < g.k; ++l) sum += static_cast<double>(A(i, l)) * B(l, j);
      c[static_cast<std::size_t>(j * g.ldc + i)] = static_cast<float>(sum);
    }
}

TEST(GpuGemm, LinearShapesComputeTheRowMajorDefinitions) {
  const int batch = 3, in = 5, out = 4;
  std::mt19937 rng(1);
  std::normal_distribution<float> normal;
  auto random = [&](int n) {
    std::vector<float> v(static_cast<std::size_t>(n));
    for (auto& x : v) x = normal(rng);
    return v;
  };
  const auto x = random(batch * in), w = random(out * in), dy = random(batch * out);
  auto X = [&](int b, int i) { return x[static_cast<std::size_t>(b * in + i)]; };
  auto W = [&](int o, int i) { return w[static_cast<std::size_t>(o * in + i)]; };
  auto DY = [&](int b, int o) { return dy[static_cast<std::size_t>(b * out + o)]; };

  std::vector<float> y(static_cast<std::size_t>(batch * out)), dx(static_cast<std::size_t>(batch * in)),
      dw(static_cast<std::size_t>(out * in));
  gemm_reference(linear_forward(batch, in, out), w, x, y);
  gemm_reference(linear_backward_data(batch, in, out), w, dy, dx);
  gemm_reference(linear_backward_weights(batch, in, out), x, dy, dw);
  for (int b = 0; b < batch; ++b)
    for (int o = 0; o < out; ++o) {
      double want = 0;
      for (int i = 0; i < in; ++i) want += static_cast<double>(X(b, i)) * W(o, i);
      EXPECT_NEAR(y[static_cast<std::size_t>(b * out + o)], want, 1e-5) << "y[" << b << "][" << o << "]";
    }
  for (int b = 0; b < batch; ++b)
    for (int i = 0; i < in; ++i) {
      double want = 0;
      for (int o = 0; o < out; ++o) want += static_cast<double>(DY(b, o)) * W(o, i);
      EXPECT_NEAR(dx[static_cast<std::size_t>(b * in + i)], want, 1e-5) << "dx[" << b << "][" << i << "]";
    }
  for (int o = 0; o < out; ++o)
    for (int i = 0; i < in; ++i) {
      double want = 0;
      for (int b = 0; b < batch; ++b) want += static_cast<double>(DY(b, o)) * X(b, i);
      EXPECT_NEAR(dw[static_cast<std::size_t>(o * in + i)], want, 1e-5) << "dW[" << o << "][" << i << "]";
    }
}

TEST(GpuAlgorithmCache, EveryFieldOfTheKeyMatters) {
  Graph g("keys", {8, 16, 16}, 2);
  const int a = g.conv(g.input(), 8, square(3, 1, 1));
  const int b = g.conv(a, 8, square(3, 1, 1));  // the same geometry as `a`
  const int c = g.conv(b, 16, square(3, 2, 1));
  g.softmax_ce(g.linear(c, 2));
  const ConvKey base = conv_key(g, a, 32, Precision::bf16, ConvDirection::forward, 0);
  EXPECT_EQ(base, conv_key(g, b, 32, Precision::bf16, ConvDirection::forward, 0));
  EXPECT_EQ(ConvKeyHash{}(base), ConvKeyHash{}(conv_key(g, b, 32, Precision::bf16, ConvDirection::forward, 0)));
  EXPECT_EQ(base.dtype, DType::bf16);
  EXPECT_EQ(base.c, 8);
  EXPECT_EQ(base.h, 16);
  EXPECT_EQ(base.r, 3);
  EXPECT_THROW(conv_key(g, g.input(), 32, Precision::bf16, ConvDirection::forward, 0), std::logic_error);

  std::vector<ConvKey> variants;
  auto vary = [&](auto change) {
    ConvKey k = base;
    change(k);
    variants.push_back(k);
  };
  vary([](ConvKey& k) { k.direction = ConvDirection::backward_filter; });
  vary([](ConvKey& k) { k.dtype = DType::f16; });
  vary([](ConvKey& k) { k.precision = Precision::fp16; });
  vary([](ConvKey& k) { k.device = 1; });
  vary([](ConvKey& k) { k.n = 64; });
  vary([](ConvKey& k) { k.c = 4; });
  vary([](ConvKey& k) { k.h = 8; });
  vary([](ConvKey& k) { k.w = 8; });
  vary([](ConvKey& k) { k.k = 16; });
  vary([](ConvKey& k) { k.r = 1; });
  vary([](ConvKey& k) { k.s = 1; });
  vary([](ConvKey& k) { k.pad_h = 0; });
  vary([](ConvKey& k) { k.pad_w = 0; });
  vary([](ConvKey& k) { k.stride_h = 2; });
  vary([](ConvKey& k) { k.stride_w = 2; });
  vary([](ConvKey& k) { k.groups = 8; });
  std::set<std::size_t> hashes{ConvKeyHash{}(base)};
  for (const auto& k : variants) {
    EXPECT_FALSE(k == base);
    hashes.insert(ConvKeyHash{}(k));
  }
  EXPECT_EQ(hashes.size(), variants.size() + 1) << "a field does not reach the hash";
}

TEST(GpuAlgorithmCache, SearchesOncePerDistinctShape) {
  const Graph g = build_model("resnet20_cifar");
  std::set<std::tuple<int, int, int, int, int, int>> shapes;  // c, h, w, k, r, stride
  AlgorithmCache<int> cache;
  int searched = 0;
  for (int pass = 0; pass < 2; ++pass)
    for (int i = 0; i < static_cast<int>(g.nodes().size()); ++i) {
      if (g.node(i).op != Op::conv) continue;
      const ConvKey k = conv_key(g, i, 128, Precision::fp16, ConvDirection::forward, 0);
      shapes.insert({k.c, k.h, k.w, k.k, k.r, k.stride_h});
      const int first = cache.get(k, [&] { return ++searched; });
      EXPECT_EQ(cache.get(k, [] { return -1; }), first) << "a second get reuses the first answer";
    }
  EXPECT_EQ(cache.searches(), static_cast<int>(shapes.size()));
  EXPECT_EQ(searched, static_cast<int>(shapes.size()));
  EXPECT_LT(searched, 10) << "ResNet-20 repeats a handful of conv shapes";
}

TEST(GpuLossScale, OverflowSkipsAndHalvesGoodStepsGrow) {
  const LossScaleConfig c{.initial = 1024.f, .growth_interval = 3, .min_scale = 1.f, .max_scale = 4096.f};
  LossScaleState s = initial_loss_scale(c);
  EXPECT_EQ(s.scale, 1024.f);
  s.overflow = 1;
  finish_loss_scale_step(s, c);
  EXPECT_EQ(s.scale, 512.f);
  EXPECT_EQ(s.skipped_steps, 1);
  EXPECT_EQ(s.overflow, 0) << "the flag is cleared for the next step";
  for (int step = 0; step < 2; ++step) finish_loss_scale_step(s, c);
  EXPECT_EQ(s.scale, 512.f) << "two good steps are not yet three";
  s.overflow = 1;
  finish_loss_scale_step(s, c);
  EXPECT_EQ(s.scale, 256.f);
  EXPECT_EQ(s.good_steps, 0) << "an overflow restarts the count";
  for (int step = 0; step < 3; ++step) finish_loss_scale_step(s, c);
  EXPECT_EQ(s.scale, 512.f);
  for (int step = 0; step < 9; ++step) finish_loss_scale_step(s, c);
  EXPECT_EQ(s.scale, 4096.f) << "growth stops at max_scale";
  for (int step = 0; step < 20; ++step) {
    s.overflow = 1;
    finish_loss_scale_step(s, c);
  }
  EXPECT_EQ(s.scale, 1.f) << "backoff stops at min_scale";
  EXPECT_EQ(s.skipped_steps, 22);
}

TEST(GpuDropout, DeviceHashDrawsTheSameMaskAsTheHost) {
  int kept = 0;
  for (std::uint64_t pass : {0ull, 1ull, 77ull})
    for (int node : {1, 9})
      for (std::int64_t i = 0; i < 2000; ++i) {
        const bool host = dropout_keeps(5, pass, node, i, 0.3f);
        ASSERT_EQ(dropout_keeps_hd(5, pass, node, i, 0.3f), host) << pass << " " << node << " " << i;
        kept += host;
      }
  EXPECT_NEAR(kept / 12000.0, 0.7, 0.03);
}

struct Block {
  std::int64_t offset, bytes;
  bool operator<(const Block& o) const { return offset < o.offset; }
};

// Every buffer of the plan with its size, to check alignment and overlap.
std::vector<Block> blocks(const Graph& g, int batch, const MemoryPlan& plan) {
  const std::int64_t elem = dtype_bytes(plan.dtype);
  std::vector<Block> all;
  auto add = [&](std::int64_t offset, std::int64_t bytes) {
    if (offset >= 0) all.push_back({offset, bytes});
  };
  for (std::size_t i = 0; i < plan.nodes.size(); ++i) {
    const Node& n = g.nodes()[i];
    const auto& b = plan.nodes[i];
    add(b.out, n.out.size() * batch * elem);
    add(b.diff, n.out.size() * batch * elem);
    add(b.saved, n.op == Op::batch_norm ? 8 * n.out.c : 4 * batch * g.classes());
    add(b.running, 8 * n.out.c);
    add(b.row_loss, 4 * batch);
  }
  for (std::size_t p = 0; p < plan.params.size(); ++p) {
    const auto size = g.params()[p].size();
    const auto& b = plan.params[p];
    for (auto o : {b.master, b.grad, b.velocity}) add(o, 4 * size);
    add(b.compute, elem * size);
  }
  add(plan.labels, 4 * batch);
  add(plan.loss_scale, sizeof(LossScaleState));
  std::sort(all.begin(), all.end());
  return all;
}

TEST(GpuMemoryPlan, Fp32MatchesBytesNeededLessTheCpuScratch) {
  const Graph g = build_model("resnet20_cifar");
  const int batch = 8;
  const MemoryPlan plan = plan_memory(g, batch, Precision::fp32, false);
  std::int64_t largest = 0;
  for (const auto& n : g.nodes()) largest = std::max(largest, n.out.size());
  // bytes_needed() counts every node's output and gradient plus one scratch activation; the gpu
  // engine accumulates through cuDNN's beta instead of a scratch, keeps no gradient of the input
  // images and no output or gradient of the loss node (1 float per image each).
  const std::int64_t params = g.parameter_count();
  EXPECT_EQ(plan.parameter_bytes, 12 * params);
  EXPECT_EQ(plan.activation_bytes,
            bytes_needed(g, batch) - 12 * params - 4 * batch * (largest + g.input_shape().size() + 2));
  EXPECT_GE(plan.total, plan.activation_bytes + plan.parameter_bytes);
  EXPECT_EQ(plan.staging, -1);
  EXPECT_EQ(plan.weight_grad, -1);

  const MemoryPlan with_dx = plan_memory(g, batch, Precision::fp32, true);
  EXPECT_EQ(with_dx.activation_bytes - plan.activation_bytes, 4 * batch * g.input_shape().size());
}

TEST(GpuMemoryPlan, HalfPrecisionHalvesActivationsAndAddsComputeCopies) {
  const Graph g = build_model("resnet20_cifar");
  const MemoryPlan f32 = plan_memory(g, 16, Precision::tf32, false);
  const MemoryPlan bf16 = plan_memory(g, 16, Precision::bf16, false);
  EXPECT_EQ(bf16.dtype, DType::bf16);
  EXPECT_EQ(2 * bf16.activation_bytes, f32.activation_bytes);
  std::int64_t weights = 0;
  for (const auto& p : g.params())
    if (p.role == ParamRole::weight) weights += p.size();
  EXPECT_EQ(bf16.parameter_bytes, 12 * g.parameter_count() + 2 * weights);
  EXPECT_GE(bf16.staging, 0);
  EXPECT_GE(bf16.weight_grad, 0);
}

TEST(GpuMemoryPlan, BuffersAreAlignedDisjointAndInsideTheArena) {
  for (const char* model : {"resnet20_cifar", "inception3_aux"})
    for (Precision p : {Precision::fp32, Precision::fp16}) {
      const Graph g = build_model(model);
      const int batch = 4;
      const MemoryPlan plan = plan_memory(g, batch, p, true);
      const auto all = blocks(g, batch, plan);
      ASSERT_FALSE(all.empty());
      for (std::size_t k = 0; k < all.size(); ++k) {
        EXPECT_EQ(all[k].offset % kAlignment, 0) << model;
        if (k + 1 < all.size()) {
          EXPECT_LE(all[k].offset + all[k].bytes, all[k + 1].offset) << model << " block " << k;
        }
      }
      EXPECT_LE(all.back().offset + all.back().bytes, plan.total);
    }
}

TEST(GpuMemoryPlan, InputGradientIsKeptWhenABatchNormReadsTheImages) {
  Graph g("bn-first", {2, 3, 3}, 2);
  g.softmax_ce(g.linear(g.batch_norm(g.input()), 2));
  EXPECT_TRUE(needs_output_gradient(g, g.input(), false));
  EXPECT_FALSE(needs_output_gradient(g, static_cast<int>(g.nodes().size()) - 1, true)) << "the loss node";
  const Graph r = build_model("resnet20_cifar");
  EXPECT_FALSE(needs_output_gradient(r, r.input(), false));
}

TEST(GpuMemoryPlan, ABatchThatDoesNotFitNamesBatchAndMemory) {
  const Graph g = build_model("resnet50");
  const MemoryPlan plan = plan_memory(g, 4096, Precision::bf16, false);
  EXPECT_NO_THROW(check_fits(g, 4096, plan, 1 << 20, plan.total + (1 << 20), std::int64_t{80} << 30));
  try {
    check_fits(g, 4096, plan, 1 << 20, std::int64_t{40} << 30, std::int64_t{80} << 30);
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("batch 4096 of resnet50 does not fit on the GPU: it needs"), std::string::npos) << m;
    EXPECT_NE(m.find("40.00 GiB of 80.00 GiB is free"), std::string::npos) << m;
    EXPECT_NE(m.find("in bf16"), std::string::npos) << m;
  }
}

TEST(GpuEngine, WithoutAGpuTheEngineIsUnavailableWithTheReason) {
  const Graph g = build_model("resnet20_cifar");
  try {
    auto engine = make_engine("gpu", g, {.batch = 2});
    GTEST_SKIP() << "a GPU is here: models_gpu_tests covers the engine";
  } catch (const Unavailable& e) {
    EXPECT_EQ(std::string(e.what()).rfind("engine gpu: ", 0), 0u) << e.what();
  }
}

}  // namespace
}  // namespace rocebench::models::gpu

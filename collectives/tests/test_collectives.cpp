#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <fstream>
#include <limits>
#include <numeric>

#include <fmt/format.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "local_rendezvous.hpp"
#include "rocebench/collectives/algorithms.hpp"
#include "rocebench/collectives/buckets.hpp"
#include "rocebench/collectives/sweep.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/schema.hpp"
#include "rocebench/transport/tcp/mesh.hpp"

using namespace rocebench;
using namespace rocebench::collectives;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<transport::Transport> mesh(rbtest::LocalRendezvous& shared, int rank, int world, int sockets = 1,
                                std::chrono::microseconds spin = tcp::MeshOptions{}.spin, const std::string& congestion = "",
                                std::optional<std::size_t> send_buffer = std::nullopt) {
  tcp::MeshOptions options;
  options.sockets_per_peer = sockets;
  options.spin = spin;
  options.congestion = congestion;
  options.send_buffer = send_buffer;
  options.stripe_min_bytes = 1024;  // exercise striping with small test buffers
  return tcp::connect_mesh(shared.rank(rank), rank, world, "127.0.0.1", "host" + std::to_string(rank), options,
                          Deadline(10s));
}

// Element i of rank r: distinct per rank and element, exact in every type when summed.
double value(int r, std::size_t i) { return static_cast<double>((r * 7 + i) % 5); }

void expect_all_ok(const std::vector<std::string>& errors) {
  for (std::size_t r = 0; r < errors.size(); ++r) EXPECT_EQ(errors[r], "") << "rank " << r;
}

}  // namespace

TEST(DataTypes, SixteenBitConversionsRoundToNearestEven) {
  EXPECT_EQ(float_to_half(1.0f), 0x3c00);
  EXPECT_EQ(float_to_half(65504.0f), 0x7bff);
  EXPECT_FLOAT_EQ(half_to_float(0x3555), 0.333251953125f);
  EXPECT_EQ(float_to_bfloat16(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bfloat16(1.00390625f), 0x3f80);  // halfway between 0x3f80 and 0x3f81: to even
  EXPECT_EQ(float_to_bfloat16(1.01171875f), 0x3f82);  // halfway between 0x3f81 and 0x3f82: to even
  EXPECT_FLOAT_EQ(bfloat16_to_float(0x4049), 3.140625f);
}

#if defined(__x86_64__)
__attribute__((target("f16c"))) std::uint16_t f16c_from_float(float f) {
  return static_cast<std::uint16_t>(_mm_extract_epi16(_mm_cvtps_ph(_mm_set_ss(f), _MM_FROUND_TO_NEAREST_INT), 0));
}
__attribute__((target("f16c"))) float f16c_to_float(std::uint16_t h) { return _cvtsh_ss(h); }

// The float16 conversions are written by hand: bit for bit what the CPU's F16C gives, for every
// half and for floats of every exponent (a stride of all 2^32 patterns: ties, subnormals, NaNs).
TEST(DataTypes, HalfConversionsAgreeWithF16cBitForBit) {
  const std::vector<std::string> kernels = sum_kernels();
  if (std::find(kernels.begin(), kernels.end(), "avx2") == kernels.end()) GTEST_SKIP() << "this CPU has no F16C to compare with";
  for (std::uint32_t h = 0; h < 65536; ++h) {
    const auto half = static_cast<std::uint16_t>(h);
    ASSERT_EQ(std::bit_cast<std::uint32_t>(half_to_float(half)), std::bit_cast<std::uint32_t>(f16c_to_float(half)))
        << fmt::format("{:#06x}", h);
  }
  for (std::uint64_t bits = 0; bits < (1ull << 32); bits += 4099) {
    for (const std::uint32_t near_tie : {0u, 0x0fffu, 0x1000u, 0x1001u, 0x2000u}) {  // around the 13 dropped bits' half
      const float f = std::bit_cast<float>(static_cast<std::uint32_t>((bits & ~0x1fffull) | near_tie));
      ASSERT_EQ(float_to_half(f), f16c_from_float(f)) << fmt::format("{:#010x}", std::bit_cast<std::uint32_t>(f));
    }
  }
}
#endif

TEST(DataTypes, ReductionsAccumulateInFloat32) {
  for (DataType t : {DataType::float32, DataType::float16, DataType::bfloat16, DataType::float64}) {
    std::vector<char> a(4 * size_of(t)), b(4 * size_of(t));
    for (std::size_t i = 0; i < 4; ++i) {
      store(t, a.data(), i, static_cast<double>(i));
      store(t, b.data(), i, 10.0 - static_cast<double>(i) * 3);
    }
    std::vector<char> sum = a, max = a;
    reduce_into(t, ReduceOp::sum, sum.data(), b.data(), 4);
    reduce_into(t, ReduceOp::max, max.data(), b.data(), 4);
    for (std::size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(load(t, sum.data(), i), 10.0 - 2.0 * static_cast<double>(i)) << to_string(t);
      EXPECT_EQ(load(t, max.data(), i), std::max<double>(static_cast<double>(i), 10.0 - 3.0 * static_cast<double>(i)));
    }
  }
}

// Every 16-bit sum kernel this CPU runs (AVX-512, AVX2 + F16C, portable) against the element-wise
// definition: every 16-bit pattern as src, against dst values that cover zeros, denormals, rounding
// ties, overflow to infinity, infinities and NaN; odd lengths so the masked or scalar tail runs too.
TEST(DataTypes, SixteenBitSumsMatchTheElementWiseDefinitionForEveryPattern) {
  const std::vector<float> dst_values{0.0f, -0.0f, 1.0f, -1.0f, 3.140625f, 65504.0f, -65504.0f, 1e-7f, 6e-5f,
                                      1.00390625f, 3e38f, -3e38f, INFINITY, -INFINITY, NAN, 0.333f, 1e-40f};
  const std::vector<std::string> kernels = sum_kernels();
  ASSERT_EQ(kernels.back(), "portable");
  for (const std::string& kernel : kernels) {
    for (const DataType t : {DataType::float16, DataType::bfloat16}) {
      const bool half = t == DataType::float16;
      auto to_float = [&](std::uint16_t b) { return half ? half_to_float(b) : bfloat16_to_float(b); };
      auto from_float = [&](float f) { return half ? float_to_half(f) : float_to_bfloat16(f); };
      const std::size_t n = 65536 + 5;
      std::vector<std::uint16_t> src(n);
      for (std::size_t i = 0; i < n; ++i) src[i] = static_cast<std::uint16_t>(i);
      for (const float v : dst_values) {
        std::vector<std::uint16_t> dst(n, from_float(v));
        sum_16bit_with(kernel, t, dst.data(), src.data(), n);
        for (std::size_t i = 0; i < n; ++i) {
          const float want = to_float(from_float(v)) + to_float(src[i]);
          const std::string what = fmt::format("{} {} {} + pattern {:#06x}", kernel, to_string(t), v, src[i]);
          if (std::isnan(want)) {
            ASSERT_TRUE(std::isnan(to_float(dst[i]))) << what;
          } else {
            ASSERT_EQ(dst[i], from_float(want)) << what;
          }
        }
      }
    }
  }
}

// A kernel touches exactly `count` elements, whatever the length (the masked tail of AVX-512).
TEST(DataTypes, SixteenBitSumsWriteOnlyTheirElements) {
  for (const std::string& kernel : sum_kernels()) {
    for (const DataType t : {DataType::float16, DataType::bfloat16}) {
      for (std::size_t n = 0; n <= 70; ++n) {
        std::vector<std::uint16_t> dst(n + 8), src(n + 8);
        for (std::size_t i = 0; i < dst.size(); ++i) {
          store(t, dst.data(), i, 1.0);
          store(t, src.data(), i, static_cast<double>(i % 7));
        }
        sum_16bit_with(kernel, t, dst.data(), src.data(), n);
        for (std::size_t i = 0; i < dst.size(); ++i) {
          ASSERT_EQ(load(t, dst.data(), i), i < n ? 1.0 + static_cast<double>(i % 7) : 1.0)
              << kernel << " " << to_string(t) << " n=" << n << " i=" << i;
        }
      }
    }
  }
  EXPECT_THROW(sum_16bit_with("no-such-kernel", DataType::float16, nullptr, nullptr, 0), InputError);
}

TEST(Sweep, SizesAreWholeSegments) {
  SweepConfig c;
  c.min_bytes = 8;
  c.max_bytes = 1024;
  c.factor = 4;
  EXPECT_EQ(sweep_sizes(c, 1), (std::vector<std::size_t>{8, 32, 128, 512}));
  EXPECT_EQ(sweep_sizes(c, 3), (std::vector<std::size_t>{12, 24, 120, 504}));  // multiples of 3 floats
  c.factor = 1;
  EXPECT_EQ(sweep_sizes(c, 2), (std::vector<std::size_t>{8}));
  // Near the top of size_t the next size would wrap around to a small one and the sweep never end.
  c.min_bytes = std::size_t{1} << 62;
  c.max_bytes = std::numeric_limits<std::size_t>::max();
  c.factor = 8;
  EXPECT_EQ(sweep_sizes(c, 1), (std::vector<std::size_t>{std::size_t{1} << 62}));
}

// min_bytes above max_bytes gave an empty sweep, whose largest size every rank then read: SIGSEGV.
TEST(Sweep, MinAboveMaxIsRefusedNamingTheField) {
  try {
    sweep_config_from({{"min_bytes", 2048}, {"max_bytes", 1024}});
    ADD_FAILURE() << "no error";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "field 'max_bytes': 1024 is smaller than min_bytes 2048; the sweep would have no size");
  }
}

TEST(Allreduce, EveryAlgorithmWorldAndTypeGivesTheExactSum) {
  for (int world : {1, 2, 3, 4, 5}) {
    rbtest::LocalRendezvous shared(world);
    const auto errors = rbtest::on_ranks(world, [&](int r) {
      // Odd worlds wait sleeping at once, even ones spin first (the default).
      auto t = mesh(shared, r, world, world == 4 ? 2 : 1, world % 2 ? 0us : tcp::MeshOptions{}.spin);
      for (Algorithm algorithm : {Algorithm::ring, Algorithm::ps, Algorithm::rd}) {
        for (DataType dtype : {DataType::float32, DataType::float16, DataType::bfloat16}) {
          for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{4099}}) {
            std::vector<char> buf(count * size_of(dtype));
            for (std::size_t i = 0; i < count; ++i) store(dtype, buf.data(), i, value(r, i));
            CollectiveOptions options;
            options.chunk_bytes = 256;  // many chunks per segment
            options.servers = 2;
            allreduce(*t, algorithm, buf.data(), count, dtype, ReduceOp::sum, options, Deadline(10s));
            for (std::size_t i = 0; i < count; ++i) {
              double want = 0;
              for (int k = 0; k < world; ++k) want += value(k, i);
              if (load(dtype, buf.data(), i) != want) {
                throw std::runtime_error(fmt::format("{} {} count {} world {}: element {} is {}, want {}",
                                                     to_string(algorithm), to_string(dtype), count, world, i,
                                                     load(dtype, buf.data(), i), want));
              }
            }
          }
        }
      }
    });
    expect_all_ok(errors);
  }
}

TEST(Allreduce, AverageAndMax) {
  const int world = 3;
  rbtest::LocalRendezvous shared(world);
  expect_all_ok(rbtest::on_ranks(world, [&](int r) {
    auto t = mesh(shared, r, world);
    std::vector<float> avg(100, static_cast<float>(r * 3)), max(100);
    for (std::size_t i = 0; i < max.size(); ++i) max[i] = static_cast<float>(value(r, i));
    allreduce(*t, Algorithm::ring, avg.data(), avg.size(), DataType::float32, ReduceOp::avg, {}, Deadline(10s));
    allreduce(*t, Algorithm::rd, max.data(), max.size(), DataType::float32, ReduceOp::max, {}, Deadline(10s));
    for (std::size_t i = 0; i < 100; ++i) {
      if (avg[i] != 3.0f) throw std::runtime_error("avg wrong");
      if (max[i] != static_cast<float>(std::max({value(0, i), value(1, i), value(2, i)}))) throw std::runtime_error("max wrong");
    }
  }));
}

TEST(RingHalves, ReduceScatterAndAllgatherOwnSegmentRank) {
  const int world = 4;
  const std::size_t count = 1001;
  rbtest::LocalRendezvous shared(world);
  expect_all_ok(rbtest::on_ranks(world, [&](int r) {
    auto t = mesh(shared, r, world);
    std::vector<float> rs(count), ag(count, -1.0f);
    for (std::size_t i = 0; i < count; ++i) rs[i] = static_cast<float>(value(r, i));
    const std::size_t b = segment_begin(count, world, r), e = segment_begin(count, world, r + 1);
    for (std::size_t i = b; i < e; ++i) ag[i] = static_cast<float>(r);
    ring_reduce_scatter(*t, rs.data(), count, DataType::float32, ReduceOp::sum, 128, Deadline(10s));
    ring_allgather(*t, ag.data(), count, DataType::float32, 128, Deadline(10s));
    for (std::size_t i = b; i < e; ++i) {
      double want = 0;
      for (int k = 0; k < world; ++k) want += value(k, i);
      if (rs[i] != want) throw std::runtime_error("reduce_scatter wrong");
    }
    for (int s = 0; s < world; ++s) {
      for (std::size_t i = segment_begin(count, world, s); i < segment_begin(count, world, s + 1); ++i) {
        if (ag[i] != static_cast<float>(s)) throw std::runtime_error("allgather wrong");
      }
    }
  }));
}

TEST(Transport, SocketsUseTheCongestionControlAskedForAndRefuseAnUnknownOne) {
  const int world = 2;
  rbtest::LocalRendezvous shared(world);
  expect_all_ok(rbtest::on_ranks(world, [&](int r) {
    auto t = mesh(shared, r, world, 1, tcp::MeshOptions{}.spin, "reno");  // built into every Linux kernel
    if (t->settings().at("tcp_congestion").get<std::string>() != "reno") throw std::runtime_error("got " + t->settings().at("tcp_congestion").get<std::string>());
  }));
  rbtest::LocalRendezvous other(world);
  const auto errors = rbtest::on_ranks(world, [&](int r) { mesh(other, r, world, 1, tcp::MeshOptions{}.spin, "no-such-cc"); });
  for (const auto& e : errors) EXPECT_NE(e.find("tcp_congestion 'no-such-cc' cannot be set"), std::string::npos) << e;
  for (const auto& e : errors) EXPECT_NE(e.find("this host has: "), std::string::npos) << e;
}

TEST(Transport, APeerOnThisHostGetsTheSmallSendBufferUnlessThePlanLeavesItToTheKernel) {
  const int world = 2;
  const std::string granted = std::to_string(2 * tcp::kSameHostSendBuffer);  // the kernel doubles a request
  rbtest::LocalRendezvous by_default(world), autotuned(world);
  expect_all_ok(rbtest::on_ranks(world, [&](int r) {
    auto t = mesh(by_default, r, world);
    if (t->settings().at("tcp_sndbuf").get<std::string>() != granted) throw std::runtime_error("default: " + t->settings().at("tcp_sndbuf").get<std::string>());
  }));
  expect_all_ok(rbtest::on_ranks(world, [&](int r) {
    auto t = mesh(autotuned, r, world, 1, tcp::MeshOptions{}.spin, "", 0);
    if (t->settings().at("tcp_sndbuf").get<std::string>() != "auto") throw std::runtime_error("0: " + t->settings().at("tcp_sndbuf").get<std::string>());
  }));
}

TEST(Transport, AFixedSendBufferIsSetRecordedAndMovesMessagesLargerThanItself) {
  const int world = 3;
  rbtest::LocalRendezvous shared(world);
  expect_all_ok(rbtest::on_ranks(world, [&](int r) {
    // 16 KiB asked, 32 KiB granted: a 1 MiB ring step must go out in many partial sends.
    auto t = mesh(shared, r, world, 1, tcp::MeshOptions{}.spin, "", 16 << 10);
    if (t->settings().at("tcp_sndbuf").get<std::string>() != "32768") throw std::runtime_error("tcp_sndbuf " + t->settings().at("tcp_sndbuf").get<std::string>());
    std::vector<float> buf(3 << 18);
    for (std::size_t i = 0; i < buf.size(); ++i) buf[i] = static_cast<float>(value(r, i));
    allreduce(*t, Algorithm::ring, buf.data(), buf.size(), DataType::float32, ReduceOp::sum, {}, Deadline(20s));
    for (std::size_t i = 0; i < buf.size(); ++i) {
      if (buf[i] != static_cast<float>(value(0, i) + value(1, i) + value(2, i))) throw std::runtime_error("wrong sum");
    }
  }));
}

TEST(Transport, ALostPeerIsNamedByRankAndHost) {
  const int world = 3;
  rbtest::LocalRendezvous shared(world);
  const auto errors = rbtest::on_ranks(world, [&](int r) {
    auto t = mesh(shared, r, world);
    if (r == 2) return;  // leaves: its sockets close with the transport
    std::vector<float> buf(1 << 16, 1.0f);
    allreduce(*t, Algorithm::ring, buf.data(), buf.size(), DataType::float32, ReduceOp::sum, {}, Deadline(10s));
  });
  // Rank 0 receives from rank 2 in the ring and names it; rank 1 may first see rank 0 give up.
  EXPECT_NE(errors[0].find("rank 2 on host host2"), std::string::npos) << errors[0];
  EXPECT_NE(errors[1].find("tcp transport: rank "), std::string::npos) << errors[1];
}

namespace {

// Two ranks over TCP: rank 1 connects, then neither sends nor closes until rank 0's wait for it has ended;
// `meanwhile` runs as rank 0 starts waiting. Returns rank 0's error and how long its wait took.
struct WaitOutcome {
  std::string error;
  std::chrono::steady_clock::duration took;
};
template <class Meanwhile>
WaitOutcome wait_for_a_silent_rank_1(rbtest::LocalRendezvous& shared, std::chrono::milliseconds deadline,
                                     Meanwhile meanwhile) {
  std::mutex done_mutex;
  std::condition_variable done_cv;
  bool done = false;
  std::chrono::steady_clock::duration took{};
  const auto errors = rbtest::on_ranks(2, [&](int r) {
    auto t = mesh(shared, r, 2);
    if (r == 1) {
      std::unique_lock lock(done_mutex);
      done_cv.wait(lock, [&] { return done; });
      return;
    }
    float x = 1;
    const auto t0 = std::chrono::steady_clock::now();
    meanwhile();
    try {
      t->wait(t->recv(1, &x, sizeof x), Deadline(deadline));
    } catch (...) {
      took = std::chrono::steady_clock::now() - t0;
      {
        std::lock_guard lock(done_mutex);
        done = true;
      }
      done_cv.notify_all();
      throw;
    }
  });
  return {errors[0], took};
}

}  // namespace

TEST(Transport, ASilentPeerMeetsTheDeadline) {
  rbtest::LocalRendezvous shared(2);
  const auto [error, took] = wait_for_a_silent_rank_1(shared, 300ms, [] {});
  EXPECT_LT(took, 2s);
  EXPECT_NE(error.find("deadline passed with transfers pending to/from rank 1 on host host1"), std::string::npos) << error;
}

// A rank whose process died while its connections stayed quiet (a peer further along a ring, a host
// gone without a reset): the rendezvous knows, and the wait ends on it long before the deadline.
TEST(Transport, ALostRankEndsAWaitBeforeTheDeadline) {
  rbtest::LocalRendezvous shared(2);
  const auto [error, took] = wait_for_a_silent_rank_1(shared, 30s, [&] { shared.lose(1); });
  EXPECT_LT(took, 5s);
  EXPECT_EQ(error.find("deadline passed"), std::string::npos) << error;
  EXPECT_NE(error.find("rank 0: tcp transport: transfers pending to/from rank 1 on host host1, and the run lost a rank: "
                       "rank 1 on host host1 was lost"),
            std::string::npos)
      << error;
}

TEST(Buckets, RanksThatDisagreeOnTheTensorsAreRefused) {
  const int world = 2;
  rbtest::LocalRendezvous shared(world);
  const auto errors = rbtest::on_ranks(world, [&](int r) {
    auto t = mesh(shared, r, world);
    std::vector<float> g(r == 0 ? 100 : 120, 1.0f);
    GradientBuckets buckets(*t, {}, 10s);
    buckets.add(g);
    buckets.finish();
  });
  EXPECT_EQ(errors[0], "rank 0: the ranks disagree on the bucket's element count: this rank has 100, the ranks range over 100..120");
  EXPECT_NE(errors[1].find("rank 1: the ranks disagree"), std::string::npos) << errors[1];
}

TEST(Buckets, AverageEveryTensorWhateverTheBucketSize) {
  const int world = 3;
  for (std::size_t bucket_bytes : {std::size_t{4}, std::size_t{1000}, std::size_t{1} << 30}) {
    rbtest::LocalRendezvous shared(world);
    expect_all_ok(rbtest::on_ranks(world, [&](int r) {
      auto t = mesh(shared, r, world);
      std::vector<std::vector<float>> grads;
      for (std::size_t n : {1, 300, 17, 2048, 5}) grads.emplace_back(n, static_cast<float>(3 * r));
      GradientBuckets buckets(*t, {.first_bucket_bytes = bucket_bytes, .bucket_bytes = bucket_bytes}, 10s);
      for (auto& g : grads) buckets.add(g);
      buckets.finish();
      for (const auto& g : grads) {
        for (float x : g) {
          if (x != 3.0f) throw std::runtime_error(fmt::format("bucket {}: got {}", bucket_bytes, x));
        }
      }
      if (bucket_bytes == 4 && buckets.buckets_sent() != grads.size()) throw std::runtime_error("one bucket per tensor expected");
      if (bucket_bytes == (std::size_t{1} << 30) && buckets.buckets_sent() != 1) throw std::runtime_error("one bucket expected");
    }));
  }
}

// DDP's plan: a small first bucket, then larger ones; bucket_bytes 0 sends one bucket when
// backward is over. Each step's buckets are timed, and the same object takes the next step.
TEST(Buckets, TheFirstBucketIsSmallAndZeroMeansOneBucketAfterBackward) {
  const int world = 2;
  struct Case {
    BucketOptions options;
    std::vector<std::size_t> bytes;  // of each bucket, in order
  };
  // Tensors of 100, 300, 300, 300 and 50 floats: 400, 1200, 1200, 1200 and 200 bytes.
  const std::vector<Case> cases{{{.first_bucket_bytes = 400, .bucket_bytes = 2000}, {400, 2400, 1400}},
                                {{.first_bucket_bytes = 400, .bucket_bytes = 0}, {4200}}};
  for (const Case& c : cases) {
    rbtest::LocalRendezvous shared(world);
    expect_all_ok(rbtest::on_ranks(world, [&](int r) {
      auto t = mesh(shared, r, world);
      std::vector<std::vector<float>> grads;
      for (std::size_t n : {100, 300, 300, 300, 50}) grads.emplace_back(n, static_cast<float>(r));
      GradientBuckets buckets(*t, c.options, 10s);
      for (int step = 0; step < 2; ++step) {
        const std::int64_t before = now_ns();
        for (auto& g : grads) buckets.add(g);
        buckets.finish();
        const auto times = buckets.take_times();
        std::vector<std::size_t> bytes;
        for (const auto& bt : times) {
          bytes.push_back(bt.bytes);
          if (!(before <= bt.sealed_ns && bt.sealed_ns <= bt.start_ns && bt.start_ns < bt.end_ns && bt.end_ns <= now_ns()))
            throw std::runtime_error("bucket times out of order");
        }
        if (bytes != c.bytes) throw std::runtime_error(fmt::format("step {}: buckets of {} bytes", step, fmt::join(bytes, ", ")));
        for (const auto& g : grads)
          for (float x : g)
            if (x != 0.5f) throw std::runtime_error(fmt::format("step {}: got {}", step, x));
        for (auto& g : grads) std::fill(g.begin(), g.end(), static_cast<float>(r));
      }
    }));
  }
}

namespace {

// What the sweep's max-reduction across ranks makes of each rank's with_loop_and_median vector.
std::vector<double> slowest_of(std::initializer_list<std::vector<double>> ranks) {
  std::vector<double> reduced = *ranks.begin();
  for (const auto& r : ranks)
    for (std::size_t i = 0; i < reduced.size(); ++i) reduced[i] = std::max(reduced[i], r[i]);
  return reduced;
}

}  // namespace

TEST(Sweep, TimePerOperationIsTheSlowestRanksLoopNotTheMeanOfEachIterationsSlowest) {
  // Two ranks take turns being late by 10 us: each loop took 30 us for 2 operations.
  const auto rank_a = with_loop_and_median({10, 20}), rank_b = with_loop_and_median({20, 10});
  ASSERT_EQ(rank_a, (std::vector<double>{10, 20, 30, 15}));
  const SweepTiming timing = sweep_timing(slowest_of({rank_a, rank_b}));
  EXPECT_DOUBLE_EQ(timing.per_op_us, 15);
  EXPECT_EQ(timing.slowest_per_iteration.n, 2u);
  EXPECT_DOUBLE_EQ(timing.slowest_per_iteration.avg, 20);
  const json m = timing.metrics(3000, 1.5);
  EXPECT_DOUBLE_EQ(m["algbw_GBps"], 0.2);  // 3000 bytes in 15 us
  EXPECT_DOUBLE_EQ(m["busbw_GBps"], 0.3);
}

TEST(Sweep, MedianOperationIsTheSlowestRanksMedianNotTheMedianOfEachIterationsSlowest) {
  // One stall of 10 us per rank, in a different iteration on each: each rank's median operation is
  // 10 us, and so is the slowest rank's, but every iteration has a rank that stalled.
  const auto rank_a = with_loop_and_median({20, 10, 10}), rank_b = with_loop_and_median({10, 20, 10}),
             rank_c = with_loop_and_median({10, 10, 20});
  ASSERT_EQ(rank_a, (std::vector<double>{20, 10, 10, 40, 10}));
  const SweepTiming timing = sweep_timing(slowest_of({rank_a, rank_b, rank_c}));
  EXPECT_DOUBLE_EQ(timing.median_op_us, 10);
  EXPECT_DOUBLE_EQ(timing.metrics(1000, 1.0)["time_us_p50"], 10);
  EXPECT_DOUBLE_EQ(timing.slowest_per_iteration.median, 20) << "the samples keep each iteration's slowest rank";
  EXPECT_THROW(sweep_timing(std::vector<double>{30, 15}), std::logic_error) << "a loop total and median without iterations";
}

namespace {

// What each rank receives when every rank r hands NCCL its send block (as layout(count, r, ranks)
// places it) with the counts the NCCL backend passes; the collectives as NCCL documents them.
std::vector<std::vector<double>> nccl_received(const std::string& collective, std::size_t count, int ranks, ReduceOp op) {
  const CollectiveShape& shape = collective_shape(collective);
  std::vector<std::vector<double>> send(static_cast<std::size_t>(ranks));
  std::vector<Layout> layouts;
  for (int r = 0; r < ranks; ++r) {
    layouts.push_back(shape.layout(count, r, ranks));
    for (std::size_t j = 0; j < layouts.back().send.count; ++j) send[r].push_back(sweep_input(r, layouts.back().send.offset + j));
  }
  auto reduce = [&](std::size_t at) {
    double sum = 0, max = 0;
    for (const auto& s : send) {
      sum += s.at(at);
      max = std::max(max, s.at(at));
    }
    return op == ReduceOp::max ? max : sum;
  };
  std::vector<std::vector<double>> recv(static_cast<std::size_t>(ranks));
  for (int r = 0; r < ranks; ++r) {
    const Layout& l = layouts[r];
    auto& out = recv[r];
    if (collective == "allreduce") {
      for (std::size_t i = 0; i < l.count; ++i) out.push_back(reduce(i));
    } else if (collective == "allgather") {  // ncclAllGather(send, recv, sendcount): rank k's block lands at k * sendcount
      for (int k = 0; k < ranks; ++k) out.insert(out.end(), send[k].begin(), send[k].begin() + l.send.count);
    } else if (collective == "reduce_scatter") {  // ncclReduceScatter(send, recv, recvcount): block r of the reduction
      for (std::size_t j = 0; j < l.recv.count; ++j) out.push_back(reduce(r * l.recv.count + j));
    } else if (collective == "broadcast") {
      out = send[0];
    } else {  // alltoall: ncclSend of block k to rank k, ncclRecv of rank k's into block k
      for (int k = 0; k < ranks; ++k) {
        for (std::size_t j = 0; j < l.block; ++j) out.push_back(send[k].at(r * l.block + j));
      }
    }
  }
  return recv;
}

}  // namespace

TEST(SweepShape, EachCollectiveExpectsWhatNcclDelivers) {
  // Blocks of 3 elements: an offset off by a block changes the (rank + i) % 2 pattern of the input.
  const int ranks = 3;
  const std::size_t count = 9;
  for (const std::string collective : {"allreduce", "allgather", "reduce_scatter", "broadcast", "alltoall"}) {
    for (const ReduceOp op : {ReduceOp::sum, ReduceOp::max}) {
      const auto received = nccl_received(collective, count, ranks, op);
      for (int r = 0; r < ranks; ++r) {
        const Layout l = collective_shape(collective).layout(count, r, ranks);
        ASSERT_EQ(received[r].size(), l.recv.count) << collective << " rank " << r;
        for (std::size_t j = 0; j < l.recv.count; ++j) {
          EXPECT_EQ(received[r][j], collective_shape(collective).expected(r, ranks, l.recv.offset + j, count, op))
              << collective << " " << to_string(op) << " rank " << r << " element " << l.recv.offset + j;
        }
      }
    }
  }
}

TEST(SweepShape, BlocksSentAndReceivedAreNcclTestsCounts) {
  // Rank 1 of 3, 9 elements (nccl-tests: allgather sends a block, reduce_scatter receives one).
  auto at = [](const std::string& collective) {
    const Layout l = collective_shape(collective).layout(9, 1, 3);
    return std::vector<std::size_t>{l.block, l.send.offset, l.send.count, l.recv.offset, l.recv.count};
  };
  EXPECT_EQ(at("allreduce"), (std::vector<std::size_t>{3, 0, 9, 0, 9}));
  EXPECT_EQ(at("allgather"), (std::vector<std::size_t>{3, 3, 3, 0, 9}));
  EXPECT_EQ(at("reduce_scatter"), (std::vector<std::size_t>{3, 0, 9, 3, 3}));
  EXPECT_EQ(at("broadcast"), (std::vector<std::size_t>{3, 0, 9, 0, 9}));
  EXPECT_EQ(at("alltoall"), (std::vector<std::size_t>{3, 0, 9, 0, 9}));
  EXPECT_THROW(collective_shape("gather"), InputError);
}

TEST(SweepShape, ExpectedValuesByHand) {
  // Inputs: rank r, element i holds 1 + (r + i) % 2. Three ranks, blocks of 3, as rank 1 sees them.
  auto expect = [](const std::string& collective, std::size_t i, ReduceOp op = ReduceOp::sum) {
    return collective_shape(collective).expected(1, 3, i, 9, op);
  };
  EXPECT_EQ(expect("allreduce", 0), 4);  // 1 + 2 + 1
  EXPECT_EQ(expect("allreduce", 1), 5);  // 2 + 1 + 2
  EXPECT_EQ(expect("allreduce", 1, ReduceOp::max), 2);
  EXPECT_EQ(expect("reduce_scatter", 3), 5);  // rank 1's block starts at element 3 (odd)
  EXPECT_EQ(expect("allgather", 3), 1);  // block 1 from rank 1: 1 + (1 + 3) % 2
  EXPECT_EQ(expect("allgather", 6), 1);  // block 2 from rank 2: 1 + (2 + 6) % 2
  EXPECT_EQ(expect("broadcast", 3), 2);  // rank 0's element 3
  EXPECT_EQ(expect("alltoall", 0), 2);   // from rank 0, its element 3 (block 1 = rank 1's): 1 + 3 % 2
  EXPECT_EQ(expect("alltoall", 1), 1);   // from rank 0, its element 4: 1 + 4 % 2
  EXPECT_EQ(expect("alltoall", 4), 2);   // from rank 1, its element 4: 1 + (1 + 4) % 2
  EXPECT_EQ(expect("alltoall", 8), 2);   // from rank 2, its element 5: 1 + (2 + 5) % 2
}

TEST(Sweep, RecordsBusBandwidthAndValidRecords) {
  std::string host_congestion;
  std::getline(std::ifstream("/proc/sys/net/ipv4/tcp_congestion_control"), host_congestion);
  const int world = 3;
  rbtest::LocalRendezvous shared(world);
  rbtest::KeptRecords kept;
  SweepConfig config;
  config.min_bytes = 64;
  config.max_bytes = 4096;
  config.factor = 8;
  config.iters = 3;
  config.warmup = 1;
  config.options.chunk_bytes = 4096;
  expect_all_ok(rbtest::on_ranks(world, [&](int r) {
    auto t = mesh(shared, r, world, 2, 7us);
    rbtest::LocalRendezvous::Rank rdv(shared, r);
    StepContext ctx = rbtest::sweep_context(r, world, rdv, kept);
    if (run_sweep(ctx, *t, allreduce_spec(), config) != 0) throw std::runtime_error("wrong elements");
  }));
  ASSERT_EQ(kept.records.size(), 6u);  // 3 sizes x in/out of place, from rank 0
  for (const auto& rec : kept.records) {
    EXPECT_TRUE(result_schema().validate(rec).empty()) << rec.dump();
    const double algbw = rec["metrics"]["algbw_GBps"], busbw = rec["metrics"]["busbw_GBps"];
    EXPECT_NEAR(busbw, algbw * 4.0 / 3.0, 1e-9 * busbw);  // 2(n-1)/n
    EXPECT_EQ(rec["metrics"]["wrong"], 0);
    EXPECT_EQ(rec["samples"]["n"], 3);
    EXPECT_NEAR(algbw, rec["params"]["bytes"].get<double>() / rec["metrics"]["time_us"].get<double>() / 1e3, 1e-9 * algbw);
    EXPECT_LE(rec["metrics"]["time_us"].get<double>(), rec["samples"]["avg"].get<double>() * (1 + 1e-12))
        << "the slowest loop is never longer than the iterations' slowest ranks summed";
    EXPECT_EQ(rec["params"]["tcp_congestion"], host_congestion) << "the sockets' own, the host's default";
    EXPECT_EQ(rec["params"]["tcp_sndbuf"], std::to_string(2 * tcp::kSameHostSendBuffer)) << "every peer is on this host";
    // Every setting that shapes the figures identifies the series, as it took effect.
    EXPECT_EQ(rec["params"]["sockets_per_peer"], 2);
    EXPECT_EQ(rec["params"]["spin_us"], 7);
    EXPECT_EQ(rec["params"]["chunk_bytes"], 4096);
    EXPECT_FALSE(rec["params"].contains("servers")) << "a ring has no servers";
  }
}

TEST(Sweep, AWrongElementFailsTheStepNamingRankAndOffset) {
  // A collective that corrupts element 5 on rank 1 stands in for a broken transport.
  static CollectiveSpec broken = allreduce_spec();
  broken.run = [](transport::Transport& t, void* data, std::size_t count, const SweepConfig& c, const Deadline& d) {
    allreduce_spec().run(t, data, count, c, d);
    if (t.rank() == 1 && count > 5) store(c.dtype, data, 5, 1e6);
  };
  const int world = 2;
  rbtest::LocalRendezvous shared(world);
  rbtest::KeptRecords kept;
  SweepConfig config;
  config.min_bytes = config.max_bytes = 256;
  config.iters = 1;
  config.warmup = 0;
  config.out_of_place = false;
  std::vector<std::size_t> wrong(world);
  expect_all_ok(rbtest::on_ranks(world, [&](int r) {
    auto t = mesh(shared, r, world);
    rbtest::LocalRendezvous::Rank rdv(shared, r);
    StepContext ctx = rbtest::sweep_context(r, world, rdv, kept);
    wrong[r] = run_sweep(ctx, *t, broken, config);
  }));
  EXPECT_EQ(wrong[0], 1u);
  EXPECT_EQ(wrong[1], 1u);
  bool named = false;
  for (const auto& rec : kept.records) {
    EXPECT_EQ(rec["status"], "fail");
    named |= rec.value("reason", "").find("rank 1 on host host1: 1 wrong elements, the first at element 5 (byte offset 20)") !=
             std::string::npos;
  }
  EXPECT_TRUE(named);
}

namespace {

struct SweepCase {
  const CollectiveSpec& (*spec)();
  double bus_factor_of_3_ranks;  // nccl-tests' PERFORMANCE.md, by hand
  std::size_t wrong_if_nothing_moves_per_element;  // over the 3 ranks, for each element of the buffer
};

void PrintTo(const SweepCase& c, std::ostream* os) { *os << c.spec().name; }

class EverySweep : public ::testing::TestWithParam<SweepCase> {};

// Runs the sweep on 3 local ranks and returns the total of wrong elements each rank saw.
std::vector<std::size_t> sweep_on_three_ranks(const CollectiveSpec& spec, const SweepConfig& config,
                                              rbtest::KeptRecords& kept) {
  const int world = 3;
  rbtest::LocalRendezvous shared(world);
  std::vector<std::size_t> wrong(world);
  expect_all_ok(rbtest::on_ranks(world, [&](int r) {
    auto t = mesh(shared, r, world);
    rbtest::LocalRendezvous::Rank rdv(shared, r);
    StepContext ctx = rbtest::sweep_context(r, world, rdv, kept);
    wrong[r] = run_sweep(ctx, *t, spec, config);
  }));
  return wrong;
}

}  // namespace

TEST_P(EverySweep, RecordsItsBusFactorAndChecksEveryElement) {
  const SweepCase& c = GetParam();
  SweepConfig config;
  config.min_bytes = 96;
  config.max_bytes = 96 * 16;
  config.factor = 16;
  config.iters = 2;
  config.warmup = 0;
  rbtest::KeptRecords kept;
  EXPECT_EQ(sweep_on_three_ranks(c.spec(), config, kept), (std::vector<std::size_t>{0, 0, 0}));
  ASSERT_EQ(kept.records.size(), 4u);  // 2 sizes x in/out of place
  for (const auto& rec : kept.records) {
    EXPECT_EQ(rec["status"], "ok") << rec.dump();
    const double algbw = rec["metrics"]["algbw_GBps"], busbw = rec["metrics"]["busbw_GBps"];
    EXPECT_NEAR(busbw, algbw * c.bus_factor_of_3_ranks, 1e-9 * busbw) << rec.dump();
  }
}

TEST_P(EverySweep, AnOperationThatMovesNothingIsCaughtOnEveryElementItOwes) {
  // The collective leaves every buffer as it was: each element a rank must receive is wrong.
  static CollectiveSpec idle;
  idle = GetParam().spec();
  idle.run = [](transport::Transport&, void*, std::size_t, const SweepConfig&, const Deadline&) {};
  SweepConfig config;
  config.min_bytes = config.max_bytes = 96;  // 24 floats, 8 per rank
  config.iters = 1;
  config.warmup = 0;
  config.out_of_place = false;
  rbtest::KeptRecords kept;
  const auto wrong = sweep_on_three_ranks(idle, config, kept);
  for (std::size_t r = 0; r < wrong.size(); ++r) EXPECT_EQ(wrong[r], 24 * GetParam().wrong_if_nothing_moves_per_element) << r;
  ASSERT_FALSE(kept.records.empty());
  for (const auto& rec : kept.records) EXPECT_EQ(rec["status"], "fail") << rec.dump();
}

// allreduce: every rank owes every element its sum (3 ranks x 1); reduce_scatter: each element is owed
// by its segment's owner (1); allgather: each element is owed by the 2 ranks that do not own it.
INSTANTIATE_TEST_SUITE_P(Sweep, EverySweep,
                         ::testing::Values(SweepCase{allreduce_spec, 4.0 / 3.0, 3}, SweepCase{reduce_scatter_spec, 2.0 / 3.0, 1},
                                           SweepCase{allgather_spec, 2.0 / 3.0, 2}),
                         [](const auto& instance) { return std::string(instance.param.spec().name); });

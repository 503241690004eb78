// The incast step's own arithmetic: Jain's fairness index, goodput per interval, the receivers' order,
// and its declared options' ranges (the flags and the plan refuse the same values).
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "rocebench/common/errors.hpp"
#include "rocebench/common/stats.hpp"
#include "rocebench/microbench/driver.hpp"
#include "rocebench/microbench/incast.hpp"

using namespace rocebench;
using namespace rocebench::microbench;

TEST(Incast, JainFairnessByHand) {
  const std::vector<double> equal{2, 2, 2};
  EXPECT_DOUBLE_EQ(*jain_fairness(equal), 1.0);
  const std::vector<double> one_takes_all{3, 0, 0};
  EXPECT_DOUBLE_EQ(*jain_fairness(one_takes_all), 1.0 / 3);
  // (1 + 2 + 3)^2 / (3 (1 + 4 + 9)) = 36 / 42
  const std::vector<double> skewed{1, 2, 3};
  EXPECT_DOUBLE_EQ(*jain_fairness(skewed), 36.0 / 42.0);
  // Scale-free: the same shares at another rate are as fair.
  const std::vector<double> scaled{10, 20, 30};
  EXPECT_DOUBLE_EQ(*jain_fairness(scaled), 36.0 / 42.0);
  const std::vector<double> alone{0.7};
  EXPECT_DOUBLE_EQ(*jain_fairness(alone), 1.0);
}

TEST(Incast, JainFairnessUndefinedIsNotAFigure) {
  EXPECT_FALSE(jain_fairness(std::vector<double>{}).has_value());
  EXPECT_FALSE(jain_fairness(std::vector<double>{0, 0}).has_value());
  EXPECT_THROW(jain_fairness(std::vector<double>{1, -1}), std::invalid_argument);
}

TEST(Incast, IntervalGoodputSumsStreamsOverTheIntervalsAllCoverLessTheFirst) {
  // 100 ms intervals: 1.25e6 bytes in one is 0.1 Gb/s.
  const std::vector<std::vector<std::uint64_t>> streams{{1, 1250000, 2500000, 1250000, 99},
                                                        {1, 1250000, 0, 2500000}};
  const auto g = aggregate_interval_Gbps(streams);
  ASSERT_EQ(g.size(), 3u);  // intervals 1..3: the second stream covers 4, the first is ramp-up
  EXPECT_DOUBLE_EQ(g[0], 0.2);
  EXPECT_DOUBLE_EQ(g[1], 0.2);
  EXPECT_DOUBLE_EQ(g[2], 0.3);
  EXPECT_TRUE(aggregate_interval_Gbps({}).empty());
  EXPECT_TRUE(aggregate_interval_Gbps({{5}}).empty());  // only the ramp-up
}

TEST(Incast, IntervalPercentilesShowAStall) {
  // 20 intervals at 1 Gb/s with one stalled: p1 is the stall, p50 the steady rate.
  std::vector<double> g(20, 1.0);
  g[7] = 0.05;
  EXPECT_DOUBLE_EQ(percentile_nearest_rank(g, 0.01), 0.05);
  EXPECT_DOUBLE_EQ(percentile_nearest_rank(g, 0.50), 1.0);
}

TEST(Incast, BytesPerIntervalFromTheOrigin) {
  // Completions (ns) of 10-byte messages, 100 ns intervals from t = 1000.
  const std::vector<std::int64_t> completed{1050, 1099, 1100, 1250, 1320};
  const auto b = bytes_per_interval(10, 1000, completed, 100);
  // Whole intervals up to the last completion (320 ns in): 3; the one at 1320 is in the partial fourth.
  EXPECT_EQ(b, (std::vector<std::uint64_t>{20, 10, 10}));
  // A stream that started late, counted from the others' origin: nothing in its first intervals.
  EXPECT_EQ(bytes_per_interval(10, 800, completed, 100), (std::vector<std::uint64_t>{0, 0, 20, 10, 10}));
  EXPECT_TRUE(bytes_per_interval(10, 1000, {}, 100).empty());
  // A stream given up at 1560: its intervals run to then, empty after its last completion.
  EXPECT_EQ(bytes_per_interval(10, 1000, completed, 100, 1560), (std::vector<std::uint64_t>{20, 10, 10, 10, 0}));
  EXPECT_EQ(bytes_per_interval(10, 1000, {}, 100, 1250), (std::vector<std::uint64_t>{0, 0}));
}

TEST(Incast, ReceiversInTurn) {
  const std::vector<std::string> hosts{"h0", "h1", "h2", "h3"};
  EXPECT_EQ(receiver_order(hosts, ""), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(receiver_order(hosts, "h2,h0"), (std::vector<int>{2, 0}));
  try {
    receiver_order(hosts, "h1,h9");
    FAIL() << "a receiver outside the run accepted";
  } catch (const InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("--receivers"), std::string::npos) << what;
    EXPECT_NE(what.find("'h9'"), std::string::npos) << what;
  }
  EXPECT_THROW(receiver_order(hosts, "h1,h1"), InputError);
  EXPECT_THROW(receiver_order(hosts, ","), InputError);
}

TEST(Incast, OptionsDeclareTheirRanges) {
  const auto schema = incast_options().schema();
  const auto& p = schema.at("properties");
  EXPECT_EQ(p.at("tos").at("minimum"), 0);
  EXPECT_EQ(p.at("tos").at("maximum"), 255);
  EXPECT_GT(p.at("duration_s").at("minimum").get<double>(), 0.0);
  EXPECT_EQ(p.at("qps").at("minimum"), 1);
  EXPECT_EQ(p.at("transport").at("enum"), nlohmann::json::array({"tcp", "verbs"}));
  for (const char* own : {"receivers", "link_gbps", "bytes", "tx_depth", "cq_mod", "device", "connect"}) {
    EXPECT_TRUE(p.contains(own)) << own;
  }
  EXPECT_FALSE(p.contains("bidirectional"));  // the probes' options that an incast has no use for
  EXPECT_FALSE(p.contains("iters"));
  EXPECT_EQ(incast_step().name, "microbench.incast");
}

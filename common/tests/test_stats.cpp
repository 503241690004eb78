#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "rocebench/common/stats.hpp"

using namespace rocebench;

TEST(Stats, OddCountByHand) {
  // Sorted: 1 2 3 4 100. avg 22, population stdev sqrt(((21^2)+(20^2)+(19^2)+(18^2)+(78^2))/5).
  const std::vector<double> xs{4, 1, 100, 3, 2};
  const Summary s = summarize(xs);
  EXPECT_EQ(s.n, 5u);
  EXPECT_DOUBLE_EQ(s.min, 1);
  EXPECT_DOUBLE_EQ(s.max, 100);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.avg, 22);
  EXPECT_NEAR(s.stdev, std::sqrt((441 + 400 + 361 + 324 + 6084) / 5.0), 1e-12);
  // ceil(5 * 0.99) = 5 -> past the end -> the largest.
  EXPECT_DOUBLE_EQ(s.p99, 100);
  EXPECT_DOUBLE_EQ(s.p999, 100);
}

TEST(Stats, EvenCountMedianIsMeanOfMiddlePair) {
  const std::vector<double> xs{10, 20, 30, 40};
  EXPECT_DOUBLE_EQ(summarize(xs).median, 25);
}

TEST(Stats, PercentilesIndexLikePerftest) {
  // 1000 samples 1..1000: p99 = sorted[ceil(990)] = 991, p99.9 = sorted[ceil(999)] = 1000.
  std::vector<double> xs;
  for (int i = 1000; i >= 1; --i) xs.push_back(i);
  const Summary s = summarize(xs);
  EXPECT_DOUBLE_EQ(s.p99, 991);
  EXPECT_DOUBLE_EQ(s.p999, 1000);
  EXPECT_DOUBLE_EQ(s.median, 500.5);
}

TEST(Stats, PercentileRankRoundsUpWhereTheProductIsNotWhole) {
  // 1050 samples 1..1050: 1050 * 0.99 = 1039.5 -> sorted[1040] = 1041 (floor would give 1040);
  // 1050 * 0.999 = 1048.95 -> sorted[1049] = 1050 (floor: 1049).
  std::vector<double> xs;
  for (int i = 1; i <= 1050; ++i) xs.push_back(i);
  const Summary s = summarize(xs);
  EXPECT_DOUBLE_EQ(s.p99, 1041);
  EXPECT_DOUBLE_EQ(s.p999, 1050);
}

TEST(Stats, NearestRankPercentileByHand) {
  // The ceil(q n)-th smallest.
  const std::vector<double> v{5, 1, 4, 2, 3};
  EXPECT_DOUBLE_EQ(percentile_nearest_rank(v, 0.50), 3);  // ceil(2.5) = 3rd
  EXPECT_DOUBLE_EQ(percentile_nearest_rank(v, 0.40), 2);  // ceil(2.0) = 2nd
  EXPECT_DOUBLE_EQ(percentile_nearest_rank(v, 0.01), 1);  // p1 of up to 100 values: their minimum
  EXPECT_DOUBLE_EQ(percentile_nearest_rank(v, 1.0), 5);
  std::vector<double> hundred;
  for (int i = 1; i <= 100; ++i) hundred.push_back(i);
  EXPECT_DOUBLE_EQ(percentile_nearest_rank(hundred, 0.07), 7);  // not 8: 0.07 * 100 is 7.000000000000001
  EXPECT_THROW(percentile_nearest_rank({}, 0.5), std::invalid_argument);
  EXPECT_THROW(percentile_nearest_rank(v, 0), std::invalid_argument);
  EXPECT_THROW(percentile_nearest_rank(v, 1.5), std::invalid_argument);
}

TEST(Stats, PercentilesAfterTheTailDropIndexLikePerftest) {
  // 152 samples 1..152, the 2 largest dropped: n = 150. p99 = sorted[ceil(148.5)] = sorted[149] = 150,
  // the last one kept; p99.9 = sorted[ceil(149.85)] = sorted[150] = 151, the first one dropped (perftest
  // indexes the whole sorted array), not the largest kept.
  std::vector<double> xs;
  for (int i = 152; i >= 1; --i) xs.push_back(i);
  const Summary s = summarize(xs, {.drop_largest = 2});
  EXPECT_EQ(s.n, 150u);
  EXPECT_DOUBLE_EQ(s.p99, 150);
  EXPECT_DOUBLE_EQ(s.p999, 151);
  EXPECT_DOUBLE_EQ(s.max, 151);
  EXPECT_DOUBLE_EQ(s.median, 75.5);
}

TEST(Stats, DropLargestAsPerftestLatencyTail) {
  // perftest drops LAT_MEASURE_TAIL = 2 of the largest; t_max is then the first dropped value.
  const std::vector<double> xs{5, 1, 2, 3, 4, 1000, 2000};
  const Summary s = summarize(xs, {.drop_largest = 2});
  EXPECT_EQ(s.n, 5u);
  EXPECT_DOUBLE_EQ(s.median, 3);
  EXPECT_DOUBLE_EQ(s.avg, 3);
  EXPECT_DOUBLE_EQ(s.max, 1000);
}

TEST(Stats, MedianConfidenceRanksMatchBinomialTables) {
  // n = 10: the 95% interval is (x(2), x(9)) in 1-based order statistics, coverage 97.9%.
  EXPECT_EQ(median_ci_ranks(10, 0.95).low, 1u);
  EXPECT_EQ(median_ci_ranks(10, 0.95).high, 8u);
  // n = 20: (x(6), x(15)).
  EXPECT_EQ(median_ci_ranks(20, 0.95).low, 5u);
  EXPECT_EQ(median_ci_ranks(20, 0.95).high, 14u);
  // n = 5 cannot reach 95%: the whole range.
  EXPECT_EQ(median_ci_ranks(5, 0.95).low, 0u);
  EXPECT_EQ(median_ci_ranks(5, 0.95).high, 4u);
  // Large n: close to n/2 -+ 1.96 sqrt(n)/2.
  const auto big = median_ci_ranks(1000000, 0.95);
  EXPECT_NEAR(static_cast<double>(big.low), 500000 - 980, 3);
  EXPECT_EQ(big.high, 1000000 - 1 - big.low);
}

TEST(Stats, SummaryCarriesInterval) {
  std::vector<double> xs;
  for (int i = 1; i <= 20; ++i) xs.push_back(i);
  const Summary s = summarize(xs);
  EXPECT_DOUBLE_EQ(s.median_ci_low, 6);
  EXPECT_DOUBLE_EQ(s.median_ci_high, 15);
}

TEST(Stats, NoSamplesIsAnError) {
  EXPECT_THROW(summarize(std::vector<double>{}), std::invalid_argument);
}

#include "rocebench/common/sha256.hpp"

TEST(Sha256, KnownVectors) {
  EXPECT_EQ(sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
}

// The one rule of speedup and efficiency (step and report): S = X(N) / X(B), E = S / (N / B).
TEST(Stats, ScalingOverABasePoint) {
  const Scaling one = scaling_over(360, 4, 100, 1);
  EXPECT_DOUBLE_EQ(one.speedup, 3.6);
  EXPECT_DOUBLE_EQ(one.efficiency, 0.9);
  const Scaling eight = scaling_over(1520, 16, 800, 8);  // no one-rank point: relative to 8
  EXPECT_DOUBLE_EQ(eight.speedup, 1.9);
  EXPECT_DOUBLE_EQ(eight.efficiency, 0.95);
  EXPECT_DOUBLE_EQ(scaling_over(100, 1, 100, 1).efficiency, 1);
}

// Student's t, exact: p-values against scipy.stats.t.sf(t, df) * 2, critical values against t.ppf.
TEST(Stats, StudentTMatchesTables) {
  EXPECT_NEAR(student_t_two_sided_p(2.0, 10), 0.073388, 1e-5);
  EXPECT_NEAR(student_t_two_sided_p(3.5, 30), 0.00147681, 1e-7);
  EXPECT_NEAR(student_t_two_sided_p(0.0, 5), 1.0, 1e-12);
  EXPECT_EQ(student_t_two_sided_p(2.0, 0), 1.0);
  EXPECT_NEAR(student_t_critical(0.005, 4), 5.597568367, 1e-8);  // t.ppf(0.9975, 4)
  EXPECT_NEAR(student_t_critical(0.005, 1), 127.321336469, 1e-8);  // tan(0.4975 pi)
  EXPECT_NEAR(student_t_critical(0.05, 10), 2.228138852, 1e-8);  // t.ppf(0.975, 10)
}

// The two standard deviations by their divisor, and the MAD.
TEST(Stats, StandardDeviationsAreNamedByTheirDivisor) {
  const std::vector<double> xs{2, 4, 4, 4, 5, 5, 7, 9};  // mean 5, Σ(x − mean)² = 32
  EXPECT_DOUBLE_EQ(population_stdev(xs), 2);  // sqrt(32 / 8)
  EXPECT_DOUBLE_EQ(sample_stdev(xs), std::sqrt(32.0 / 7));
  EXPECT_DOUBLE_EQ(summarize(xs).stdev, population_stdev(xs)) << "a record's stdev is the population one";
  EXPECT_DOUBLE_EQ(population_stdev(std::vector<double>{3}), 0);
  EXPECT_THROW(sample_stdev(std::vector<double>{3}), std::invalid_argument);
  EXPECT_THROW(population_stdev(std::vector<double>{}), std::invalid_argument);
  // median 4.5; |x − 4.5| = 2.5 0.5 0.5 0.5 0.5 0.5 2.5 4.5: median 0.5.
  EXPECT_DOUBLE_EQ(mad(xs), 0.5);
  EXPECT_DOUBLE_EQ(mad_sigma(xs), 1.4826 * 0.5);
  EXPECT_DOUBLE_EQ(mad(std::vector<double>{1, 2, 3, 1000}), 1) << "one outlier does not move it";
}

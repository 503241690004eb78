#pragma once
// Sample statistics as perftest defines them (t_min, t_max, t_typical = median, t_avg, t_stdev,
// p99, p99.9) plus a distribution-free confidence interval of the median; the spreads and tests
// built on them (standard deviations by their divisor, the median absolute deviation, Student's t),
// each defined once here and named by what it is.
#include <cstddef>
#include <span>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace rocebench {

struct Summary {
  std::size_t n = 0;  // samples the statistics were computed from
  // stdev: population_stdev (divisor n), as perftest's t_stdev
  double min = 0, max = 0, median = 0, avg = 0, stdev = 0, p99 = 0, p999 = 0;
  double median_ci_low = 0, median_ci_high = 0;  // 95% interval of the median
};

struct SummaryOptions {
  // perftest sorts the samples and drops this many of the largest before computing (LAT_MEASURE_TAIL
  // = 2 in its latency tests); its p99 / p99.9 may still index into the dropped tail.
  std::size_t drop_largest = 0;
  double confidence = 0.95;
};

// Throws std::invalid_argument when fewer than 1 sample remains.
Summary summarize(std::span<const double> samples, SummaryOptions options = {});

// The nearest-rank percentile: the smallest value with at least a share q (0 < q <= 1) of the values at
// or below it, the ceil(q n)-th smallest (so p1 of up to 100 values is their minimum). Throws
// std::invalid_argument for no values or q outside (0, 1].
double percentile_nearest_rank(std::vector<double> values, double q);

// Median as perftest's get_median: mean of the two middle values when n is even. `sorted` is ascending.
double median_of_sorted(std::span<const double> sorted);
// The same of values in any order.
double median_of(std::vector<double> values);

// Ranks (0-based, inclusive) of the order statistics bounding the median with the given confidence,
// from the binomial(n, 1/2) distribution; exact for small n.
struct RankInterval {
  std::size_t low, high;
};
RankInterval median_ci_ranks(std::size_t n, double confidence);

// {"n":…, "min":…, …} for the `samples` field of a result record.
nlohmann::json to_json(const Summary& s);

// Standard deviations, named by their divisor:
// - population: sqrt(Σ(x − mean)² / n), the spread of these values themselves: perftest's t_stdev,
//   Summary::stdev, a record's samples.stdev. 0 for one value; throws std::invalid_argument for none.
// - sample (Bessel's): sqrt(Σ(x − mean)² / (n − 1)), the spread estimated of what the values were
//   drawn from: Google Benchmark's stddev aggregate (microbench.host), the history's spread of a
//   point's samples. Throws std::invalid_argument for fewer than 2 values.
double population_stdev(std::span<const double> values);
double sample_stdev(std::span<const double> values);

// Median absolute deviation, median(|x − median(x)|): a spread that one outlier does not move.
// Throws std::invalid_argument for no values.
double mad(std::span<const double> values);
// 1.4826 MAD (1 / Φ⁻¹(3/4)): the standard deviation that the MAD estimates on normal data.
inline constexpr double kMadToSigma = 1.4826;
double mad_sigma(std::span<const double> values);

// Student's t distribution with `df` degrees of freedom (exact, through the regularized incomplete
// beta function): the two-sided p-value of t, P(|T| ≥ |t|) (1 when df ≤ 0), and the critical value at
// two-sided level p, the t whose p-value is p (p = 0.005: the upper 0.25% point, t.ppf(0.9975, df)).
double student_t_two_sided_p(double t, double df);
double student_t_critical(double p, double df);

// Speedup and efficiency of training on more ranks: the one rule that the models.scaling step
// records and the report shows (thresholds judge the report's figures, compare and history the
// records', so the two must be the same numbers):
//   speedup    S(N) = X(N) / X(B)
//   efficiency E(N) = S(N) / (N / B)
// X is the throughput (images/s) at N ranks and B the base point: the fewest ranks of the series with
// a throughput, one rank wherever one rank was measured. Both throughputs are of the same run (a
// speedup is a ratio within a run, so a machine that is faster or slower from one run to the next
// does not move it); over several runs a point's speedup and efficiency are the medians of its runs'
// (a run without the base point has none), which is how compare and history pool the records'.
// The step records them only over a one-rank base: a record does not name its base, and compare
// matches records by params and world alone.
struct Scaling {
  double speedup = 0, efficiency = 0;
};
Scaling scaling_over(double throughput, int ranks, double base_throughput, int base_ranks);

}  // namespace rocebench

#include "rocebench/common/stats.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace rocebench {

double median_of(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return median_of_sorted(values);
}

double median_of_sorted(std::span<const double> sorted) {
  const std::size_t n = sorted.size();
  if (n == 0) throw std::invalid_argument("median of no samples");
  return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0;
}

RankInterval median_ci_ranks(std::size_t n, double confidence) {
  if (n == 0) throw std::invalid_argument("confidence interval of no samples");
  // The order statistics [x[j], x[n-1-j]] (0-based) cover the median with probability
  // 1 - 2 P(X <= j), X ~ Binomial(n, 1/2): take the largest j whose P(X <= j) is within
  // (1 - confidence) / 2, or the whole range when even j = 0 is not.
  // The pmf is stepped in log space so that large n neither overflows nor costs more than O(n).
  const double tail = (1.0 - confidence) / 2.0;
  const double nd = static_cast<double>(n);
  double log_pmf = nd * std::log(0.5);  // P(X = 0)
  double cdf = 0;
  std::size_t low = 0;
  for (std::size_t j = 0; j < n / 2; ++j) {
    cdf += std::exp(log_pmf);
    if (cdf > tail) break;
    low = j;
    log_pmf += std::log((nd - static_cast<double>(j)) / static_cast<double>(j + 1));
  }
  return {low, n - 1 - low};
}

double percentile_nearest_rank(std::vector<double> values, double q) {
  if (values.empty()) throw std::invalid_argument("a percentile of no values");
  if (!(q > 0 && q <= 1)) throw std::invalid_argument("a percentile's share must be in (0, 1]");
  // Less a hair: 0.07 * 100 is 7.000000000000001 in doubles, and its rank is 7.
  const auto rank = static_cast<std::size_t>(std::ceil(q * static_cast<double>(values.size()) - 1e-9));
  const auto at = values.begin() + static_cast<std::ptrdiff_t>(std::max<std::size_t>(rank, 1) - 1);
  std::nth_element(values.begin(), at, values.end());
  return *at;
}

Summary summarize(std::span<const double> samples, SummaryOptions options) {
  std::vector<double> sorted(samples.begin(), samples.end());
  std::sort(sorted.begin(), sorted.end());
  if (sorted.size() <= options.drop_largest) throw std::invalid_argument("too few samples to summarize");
  const std::size_t n = sorted.size() - options.drop_largest;
  const std::span<const double> kept(sorted.data(), n);

  Summary s;
  s.n = n;
  s.min = kept.front();
  // perftest reports delta[measure_cnt]: the first dropped value when a tail is dropped.
  s.max = sorted[std::min(n, sorted.size() - 1)];
  s.median = median_of_sorted(kept);
  s.avg = std::accumulate(kept.begin(), kept.end(), 0.0) / static_cast<double>(n);
  s.stdev = population_stdev(kept);
  auto at_rank = [&](double q) {
    auto i = static_cast<std::size_t>(std::ceil(static_cast<double>(n) * q));
    return sorted[std::min(i, sorted.size() - 1)];
  };
  s.p99 = at_rank(0.99);
  s.p999 = at_rank(0.999);
  const RankInterval ci = median_ci_ranks(n, options.confidence);
  s.median_ci_low = kept[ci.low];
  s.median_ci_high = kept[ci.high];
  return s;
}

namespace {

// Σ(x − mean)², the mean as summarize takes it.
double squared_deviations(std::span<const double> values) {
  const double mean = std::accumulate(values.begin(), values.end(), 0.0) / static_cast<double>(values.size());
  double sq = 0;
  for (double x : values) sq += (x - mean) * (x - mean);
  return sq;
}

// Continued fraction of the regularized incomplete beta function (modified Lentz).
double beta_fraction(double a, double b, double x) {
  constexpr double tiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  d = 1 / (std::abs(d) < tiny ? tiny : d);
  double h = d;
  for (int m = 1; m <= 300; ++m) {
    const double m2 = 2.0 * m;
    for (const double aa : {m * (b - m) * x / ((a + m2 - 1) * (a + m2)), -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1))}) {
      d = 1 + aa * d;
      d = 1 / (std::abs(d) < tiny ? tiny : d);
      c = 1 + aa / c;
      if (std::abs(c) < tiny) c = tiny;
      h *= d * c;
    }
    if (std::abs(d * c - 1) < 1e-14) break;
  }
  return h;
}

double incomplete_beta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  const double front = std::exp(std::lgamma(a + b) - std::lgamma(a) - std::lgamma(b) + a * std::log(x) + b * std::log1p(-x));
  if (x < (a + 1) / (a + b + 2)) return front * beta_fraction(a, b, x) / a;
  return 1 - front * beta_fraction(b, a, 1 - x) / b;
}

}  // namespace

double population_stdev(std::span<const double> values) {
  if (values.empty()) throw std::invalid_argument("standard deviation of no values");
  return std::sqrt(squared_deviations(values) / static_cast<double>(values.size()));
}

double sample_stdev(std::span<const double> values) {
  if (values.size() < 2) throw std::invalid_argument("sample standard deviation of fewer than 2 values");
  return std::sqrt(squared_deviations(values) / static_cast<double>(values.size() - 1));
}

double mad(std::span<const double> values) {
  const double m = median_of(std::vector<double>(values.begin(), values.end()));
  std::vector<double> deviations;
  deviations.reserve(values.size());
  for (double x : values) deviations.push_back(std::abs(x - m));
  return median_of(std::move(deviations));
}

double mad_sigma(std::span<const double> values) { return kMadToSigma * mad(values); }

double student_t_two_sided_p(double t, double df) {
  if (!(df > 0)) return 1;
  if (std::isinf(t)) return 0;
  return incomplete_beta(df / 2, 0.5, df / (df + t * t));
}

double student_t_critical(double p, double df) {
  double lo = 0, hi = 1e3;  // bisection: the p-value falls as t grows
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2;
    (student_t_two_sided_p(mid, df) > p ? lo : hi) = mid;
  }
  return hi;
}

Scaling scaling_over(double throughput, int ranks, double base_throughput, int base_ranks) {
  const double speedup = throughput / base_throughput;
  return {speedup, speedup / (static_cast<double>(ranks) / static_cast<double>(base_ranks))};
}

nlohmann::json to_json(const Summary& s) {
  return {{"n", s.n},        {"min", s.min},       {"max", s.max},
          {"median", s.median}, {"avg", s.avg},    {"stdev", s.stdev},
          {"p99", s.p99},    {"p99_9", s.p999},     {"median_ci95", {s.median_ci_low, s.median_ci_high}}};
}

}  // namespace rocebench

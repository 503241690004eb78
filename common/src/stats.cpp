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
  double sq = 0;
  for (double x : kept) sq += (x - s.avg) * (x - s.avg);
  s.stdev = std::sqrt(sq / static_cast<double>(n));
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

#include "rocebench/reports/changepoint.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>

#include <fmt/format.h>

#include "rocebench/common/stats.hpp"

namespace rocebench::reports {

double ChangePoint::step() const {
  if (mean_before == 0) return mean_after == 0 ? 0.0 : std::copysign(INFINITY, mean_after);
  return (mean_after - mean_before) / std::abs(mean_before);
}

namespace {

// One-sided z of 80% power: SAME means these runs would have flagged a regression of min_effect 4
// times in 5. 95% power (z 1.645) made 41% of quiet nights UNKNOWN at CV 2% (was 7%): a nightly
// that asks for reruns that often is ignored.
constexpr double kPowerZ = 0.8416;
// Huber levels pull points beyond k sigma in to k sigma. Their variance on normal data, in units of
// sigma^2 / n: 1.0104 at k = 2, 99% as efficient as the mean (k = 1.5: 96.4%, which cost a point of
// detection at CV 2%).
constexpr double kHuberK = 2.0;
constexpr double kHuberVariance = 1.0104;

// max_p is the false alarms allowed a series a night, both directions together, each tested
// one-sided. Regressions, what the check is for, get 9/10 of it; improvements, which can wait a
// night, 1/20; the rest covers the robust test's size, 4% above nominal on normal noise. Even the
// whole budget sees a 5% step at CV 2% in 3 runs only 95.6 times in 100 (a t-test of means).
constexpr double kRegressionShare = 0.9, kImprovementShare = 0.05;
// A step must pass two tests, the t-test of levels and the rank test. Only the rank test is exact
// whatever the noise's shape; together they flag less than either, so each is run above the night's
// level, as far as the A/A bench (ci/bench/history_check.sh) keeps the two together under it.
constexpr double kEachTestsShare = 1.75;
// Reruns asked for at most: an operator makes a few, not dozens; beyond this the noise must go down.
constexpr std::size_t kMostRerunsAsked = 5;

// The fewest reruns, up to kMostRerunsAsked, after which `decides(reruns)`; 0 when none that few.
std::size_t fewest_reruns(const std::function<bool(std::size_t)>& decides) {
  for (std::size_t more = 1; more <= kMostRerunsAsked; ++more) {
    if (decides(more)) return more;
  }
  return 0;
}

// What an UNKNOWN asks for: `more_runs` reruns, or, when none are asked, a quieter machine (`how`).
std::string rerun_advice(std::size_t more_runs, bool more_would_decide, const char* how) {
  if (more_runs) return fmt::format("rerun: {} more run(s) decide", more_runs);
  if (more_would_decide) return fmt::format("over {} more runs would decide: lower the noise ({})", kMostRerunsAsked, how);
  return fmt::format("more runs would not decide: lower the noise ({})", how);
}

// The chance that m runs drawn like a baseline of nb runs are beaten (as far moved or further) by
// its runs in `beaten` or fewer of the m x nb pairs: the Mann-Whitney U's lower tail, exact for
// exchangeable runs whatever the shape of their noise. Counting a tie as a beat only raises it.
// By the most moved of a runs and b baseline runs: P_ab(u) = a/(a+b) P_(a-1)b(u) + b/(a+b) P_a(b-1)(u-a).
double chance_beaten_at_most(std::size_t beaten, std::size_t nb, std::size_t m) {
  if (2 * beaten >= m * nb) return 1;  // the median of U or above: far from any level
  const std::size_t w = beaten;
  std::vector<std::vector<double>> prev(nb + 1, std::vector<double>(w + 1, 1.0)), cur = prev;  // a = 0: U = 0 always
  for (std::size_t a = 1; a <= m; ++a) {
    std::fill(cur[0].begin(), cur[0].end(), 1.0);
    for (std::size_t b = 1; b <= nb; ++b) {
      const double pa = static_cast<double>(a) / static_cast<double>(a + b);
      for (std::size_t u = 0; u <= w; ++u) cur[b][u] = pa * prev[b][u] + (1 - pa) * (u >= a ? cur[b - 1][u - a] : 0.0);
    }
    std::swap(prev, cur);
  }
  return prev[nb][w];
}

// The chance that all m runs drawn like a baseline of nb runs land among its k most moved:
// C(k + m, m) / C(nb + m, m), exact for exchangeable runs whatever the shape of their noise.
double chance_all_among(std::size_t k, std::size_t nb, std::size_t m) {
  double p = 1;
  for (std::size_t i = 1; i <= m; ++i) p *= static_cast<double>(k + i) / static_cast<double>(nb + i);
  return p;
}

// The rank test of m runs against a baseline of nb: `beaten` pairs in all, the least moved run
// beaten by `most_beaten` baseline runs. The smaller of two exact chances, doubled (Bonferroni): the
// rank sum sees a step whose one run noise left behind; all-among sees burst nights, each beaten by
// some of the baseline's bursts, which the sum dilutes.
double rank_chance(std::size_t beaten, std::size_t most_beaten, std::size_t nb, std::size_t m) {
  return std::min(1.0, 2 * std::min(chance_beaten_at_most(beaten, nb, m), chance_all_among(most_beaten, nb, m)));
}

}  // namespace

ChangePoint t_test(const std::vector<double>& x, std::size_t a, std::size_t b, std::size_t c) {
  ChangePoint cp;
  cp.begin = a;
  cp.index = b;
  cp.end = c;
  const double n1 = static_cast<double>(b - a), n2 = static_cast<double>(c - b);
  if (n1 < 1 || n2 < 1) return cp;
  // Medians and the median absolute deviation instead of means and standard deviation: one night
  // of a loaded machine (10x slower) must not move a level or hide a step.
  cp.mean_before = median_of({x.begin() + static_cast<long>(a), x.begin() + static_cast<long>(b)});
  cp.mean_after = median_of({x.begin() + static_cast<long>(b), x.begin() + static_cast<long>(c)});
  std::vector<double> dev;
  for (std::size_t i = a; i < c; ++i) dev.push_back(std::abs(x[i] - (i < b ? cp.mean_before : cp.mean_after)));
  const double df = n1 + n2 - 2;
  if (df < 1) return cp;
  // MAD of the points, less the ones that are their side's median by construction (a side of one).
  cp.stdev = kMadToSigma * median_of(dev) * std::sqrt((n1 + n2) / std::max(1.0, n1 + n2 - (n1 < 2) - (n2 < 2)));
  const double diff = cp.mean_after - cp.mean_before;
  // Relative to the values: a sum of squares of equal doubles is not exactly 0.
  if (cp.stdev <= 1e-12 * std::max(std::abs(cp.mean_before), std::abs(cp.mean_after))) {
    cp.p = std::abs(diff) <= 1e-12 * std::abs(cp.mean_before) ? 1.0 : 0.0;
    return cp;
  }
  // The test compares Huber M-estimates of each side's level (scale: the pooled MAD): the mean of
  // the points within 2 sigma of it, the far ones pulled in to 2 sigma. As powerful as means on
  // normal noise (99%), yet a night of a loaded machine (10x slower) moves it by 2 sigma / n at most.
  auto huber = [&](std::size_t from, std::size_t to, double start) {
    const double k = kHuberK * cp.stdev;
    double mu = start;
    for (int it = 0; it < 50; ++it) {
      double sw = 0, swx = 0;
      for (std::size_t i = from; i < to; ++i) {
        const double d = std::abs(x[i] - mu), w = d <= k ? 1.0 : k / d;
        sw += w;
        swx += w * x[i];
      }
      const double next = swx / sw;
      if (std::abs(next - mu) <= 1e-9 * k) return next;
      mu = next;
    }
    return mu;
  };
  cp.mean_before = huber(a, b, cp.mean_before);
  cp.mean_after = huber(b, c, cp.mean_after);
  const double h1 = cp.mean_before, h2 = cp.mean_after, hdiff = h2 - h1;
  // The variance of those levels as the noise makes it (the M-estimator's sandwich: the mean of
  // psi^2 over the squared share of points inside k), not as normal noise would: runs that land in
  // two regimes (a third 20% faster) make the levels jump between them, and the MAD of the larger
  // regime alone says the noise is small. stdev is the normal noise of that variance: on normal
  // data kHuberVariance sigma^2 / n, so stdev estimates sigma there.
  if (df >= 4) {
    const double k = kHuberK * cp.stdev;
    double psi2 = 0, inside = 0;
    for (std::size_t i = a; i < c; ++i) {
      const double r = x[i] - (i < b ? h1 : h2);
      psi2 += std::min(r * r, k * k);
      inside += std::abs(r) <= k;
    }
    const double share_inside = std::max(inside, 1.0) / (n1 + n2);
    cp.stdev = std::sqrt(psi2 / df / (share_inside * share_inside) / kHuberVariance);
  }
  // Its variance on normal data: kHuberVariance sigma^2 / n.
  cp.p = student_t_two_sided_p(hdiff / (cp.stdev * std::sqrt(kHuberVariance / n1 + kHuberVariance / n2)), df);
  return cp;
}

std::size_t best_split(const std::vector<double>& x, std::size_t a, std::size_t c, std::size_t lo, std::size_t hi,
                       const std::vector<bool>& is_rerun) {
  // Q(t) = p q / n (2 B / (p q) - W_L / C(p,2) - W_R / C(q,2)) with p = t - a, q = c - t, B the sum
  // of distances across t and W the sums within each side; all from per-point sums of distances
  // to the points before (left) and after (right) it, O(n^2) for every t at once.
  const std::size_t n = c - a;
  std::vector<double> left(n, 0.0), right(n, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    for (std::size_t j = i + 1; j < n; ++j) {
      const double d = std::abs(x[a + i] - x[a + j]);
      right[i] += d;
      left[j] += d;
    }
  }
  double total = 0;
  for (double v : left) total += v;
  double within_left = 0, within_right = total;  // right[t] summed over t >= split: all pairs at first
  for (std::size_t t = 0; t < lo - a; ++t) {
    within_left += left[t];
    within_right -= right[t];
  }
  std::size_t best = lo;
  double best_q = -std::numeric_limits<double>::infinity();
  for (std::size_t t = lo; t < hi; ++t) {
    const double p = static_cast<double>(t - a), q = static_cast<double>(c - t);
    const double between = total - within_left - within_right;
    double stat = 2 * between / (p * q);
    if (p > 1) stat -= within_left / (p * (p - 1) / 2);
    if (q > 1) stat -= within_right / (q * (q - 1) / 2);
    stat *= p * q / static_cast<double>(n);
    if (stat > best_q && !(t < is_rerun.size() && is_rerun[t])) {
      best_q = stat;
      best = t;
    }
    within_left += left[t - a];
    within_right -= right[t - a];
  }
  return best;
}

namespace {

std::size_t min_segment(const DetectOptions& o) { return std::max<std::size_t>(o.min_segment, 2); }

// The split tested is the best of every place it could have been: its p-value times their number
// (Bonferroni), or noise alone would find steps in every long series.
ChangePoint tested_split(const std::vector<double>& x, std::size_t a, std::size_t t, std::size_t c, const DetectOptions& o) {
  ChangePoint cp = t_test(x, a, t, c);
  cp.p = std::min(1.0, cp.p * static_cast<double>(c - a - 2 * min_segment(o) + 1));
  return cp;
}

}  // namespace

std::vector<ChangePoint> e_divisive(const std::vector<double>& x, const DetectOptions& o) {
  const std::size_t m = min_segment(o);
  auto tested = [&](std::size_t a, std::size_t t, std::size_t c) { return tested_split(x, a, t, c, o); };
  std::vector<std::size_t> found;
  std::vector<std::pair<std::size_t, std::size_t>> todo{{0, x.size()}};
  while (!todo.empty()) {
    const auto [a, c] = todo.back();
    todo.pop_back();
    if (c - a < 2 * m) continue;
    const std::size_t t = best_split(x, a, c, a + m, c - m + 1);
    if (tested(a, t, c).p >= o.max_p) continue;
    found.push_back(t);
    todo.emplace_back(a, t);
    todo.emplace_back(t, c);
  }
  std::sort(found.begin(), found.end());
  // A split judged inside a wide segment may not hold between its final neighbours.
  while (true) {
    std::vector<ChangePoint> cps;
    for (std::size_t i = 0; i < found.size(); ++i) {
      cps.push_back(tested(i ? found[i - 1] : 0, found[i], i + 1 < found.size() ? found[i + 1] : x.size()));
    }
    const auto weakest = std::max_element(cps.begin(), cps.end(), [](const auto& l, const auto& r) { return l.p < r.p; });
    if (weakest == cps.end() || weakest->p < o.max_p) return cps;
    found.erase(found.begin() + (weakest - cps.begin()));
  }
}

const char* to_string(Call t) {
  switch (t) {
    case Call::same: return "SAME";
    case Call::regressed: return "REGRESSED";
    case Call::improved: return "IMPROVED";
    case Call::unknown: return "UNKNOWN";
  }
  return "UNKNOWN";
}

TrendVerdict judge(const std::vector<double>& x, std::size_t first_new, const std::vector<ChangePoint>& history,
                   bool higher_is_better, const JudgeOptions& o) {
  TrendVerdict v;
  const std::size_t n = x.size();
  if (first_new >= n) {
    v.why = "no new run";
    return v;
  }
  // The baseline starts at the last change point that the runs before the judged ones show by
  // themselves. One found with the judged runs' help is not history: a step in them pulls the split
  // of a long segment a few runs early, or puts its first night just before them.
  std::size_t base = 0;
  for (const auto& cp : history) {
    if (cp.index + min_segment(o.detect) <= first_new &&
        tested_split(x, cp.begin, cp.index, std::min(cp.end, first_new), o.detect).p < o.detect.max_p) {
      base = cp.index;
    }
  }
  if (first_new - base < o.min_baseline) {
    v.call = Call::unknown;
    v.more_nights = o.min_baseline - (first_new - base);
    v.why = base == 0 ? fmt::format("{} runs of history; {} are needed to judge", first_new, o.min_baseline)
                      : fmt::format("the series stepped {} runs before these; {} runs at its new level are needed to judge",
                                    first_new - base, o.min_baseline);
    v.why += fmt::format(": {} more night(s) decide", v.more_nights);
    return v;
  }
  auto is_worse = [&](const ChangePoint& c) { return (c.mean_after > c.mean_before) != higher_is_better && c.mean_after != c.mean_before; };
  // Each rerun among the judged runs was one more look at these nights: the looks share the level.
  const auto reruns = static_cast<std::size_t>(
      std::count(o.is_rerun.begin() + static_cast<long>(std::min(first_new, o.is_rerun.size())), o.is_rerun.end(), true));
  // The one-sided level a step must pass, once `more` reruns have joined these nights.
  auto level = [&](bool worse, std::size_t more = 0) {
    return kEachTestsShare * o.detect.max_p / static_cast<double>(1 + reruns + more) * (worse ? kRegressionShare : kImprovementShare);
  };
  auto is_significant = [&](const ChangePoint& c) { return c.p / 2 < level(is_worse(c)); };
  ChangePoint cp = t_test(x, base, best_split(x, base, n, first_new, n, o.is_rerun), n);
  // The best split may leave fewer than min_after runs after it only because noise put the first
  // night of a step near the old level: then the best split with min_after runs after it decides,
  // when it is significant.
  if (n - cp.index < o.min_after && n >= first_new + o.min_after) {
    const ChangePoint settled = t_test(x, base, best_split(x, base, n, first_new, n - o.min_after + 1, o.is_rerun), n);
    if (is_significant(settled)) cp = settled;
  }
  // A run after the split that is 1,000 times likelier at the old level than at the new one (the
  // median of the other runs after the split; normal noise of the pooled sigma) says the runs after
  // it are a burst, not a step (two slow nights after a normal one): min_after runs after the last
  // such run decide.
  // The step is named from its first run that is not such a run: the settled split may start at one.
  std::size_t settled_runs = n - cp.index, first_moved = n;
  for (std::size_t i = cp.index; i < n && n - cp.index > 1; ++i) {
    std::vector<double> others(x.begin() + static_cast<long>(cp.index), x.end());
    others.erase(others.begin() + static_cast<long>(i - cp.index));
    const double new_level = median_of(others);
    const double log_odds = (std::pow(x[i] - new_level, 2) - std::pow(x[i] - cp.mean_before, 2)) / (2 * cp.stdev * cp.stdev);
    if (log_odds > std::log(1000.0)) settled_runs = n - 1 - i;
    else first_moved = std::min(first_moved, i);
  }
  v.change = cp;
  v.start = first_moved < n ? first_moved : cp.index;
  const std::size_t moved_runs = n - v.start;
  v.effect = cp.step();
  const std::size_t baseline_runs = cp.index - base;
  const double nb = static_cast<double>(baseline_runs), after = static_cast<double>(n - cp.index);
  const bool significant = is_significant(cp);
  // Noise the t-test does not know: load bursts, and runs that land in two or three regimes (this
  // machine's allreduce sizes: a third of runs 20% faster). A few burst nights in a row, or a night
  // and its reruns in the other regime, fake a step; so a step must also be rare by rank (exact for
  // exchangeable runs): the baseline's runs must seldom be as far moved as its runs.
  const bool up = cp.mean_after > cp.mean_before;
  std::vector<std::size_t> beaten_by;  // per run after the split: baseline runs as far moved
  for (std::size_t j = cp.index; significant && j < n; ++j) {
    beaten_by.push_back(0);
    for (std::size_t i = base; i < cp.index; ++i) beaten_by.back() += up ? x[i] >= x[j] : x[i] <= x[j];
  }
  std::size_t beaten = 0;
  for (std::size_t b : beaten_by) beaten += b;
  const std::size_t most_beaten = beaten_by.empty() ? 0 : *std::max_element(beaten_by.begin(), beaten_by.end());
  const double rank_p = significant ? rank_chance(beaten, most_beaten, baseline_runs, n - cp.index) : 1.0;
  const bool by_chance = rank_p >= level(is_worse(cp));
  const double cv = cp.mean_before != 0 ? cp.stdev / std::abs(cp.mean_before) : 0;
  // Runs after the step that a t-test of this noise needs to see a regression of size `effect`, once
  // `more` reruns have joined: 0 when no number of runs would (the baseline alone is too noisy).
  auto runs_to_see = [&](double effect, std::size_t more) -> std::size_t {
    if (cv == 0) return 1;
    // Tested one-sided: its two-sided critical value is at twice its level.
    const double tc = student_t_critical(2 * level(true, more), nb + 1);
    const double inv = std::pow(effect / ((tc + kPowerZ) * cv), 2) / kHuberVariance - 1 / nb;
    return inv <= 0 ? 0 : static_cast<std::size_t>(std::ceil(1 / inv));
  };
  const double tc = student_t_critical(o.detect.max_p, nb + after - 2);
  // How large the step may be: its estimate plus the t-test's margin.
  const double upper = std::abs(v.effect) + tc * cv * std::sqrt(1 / nb + 1 / after);
  if (significant && upper < o.min_effect) {
    v.why = fmt::format("a step of {:+.1f}% (p={:.2g}), surely below the {:.0f}% that counts", v.effect * 100, cp.p, o.min_effect * 100);
  } else if (significant && settled_runs < o.min_after) {
    v.call = Call::unknown;
    v.more_runs = o.min_after - settled_runs;
    v.why = fmt::format("{} run(s) {:+.1f}% off (p={:.2g}): an outlier or a step? rerun: {} more run(s) decide", moved_runs,
                        v.effect * 100, cp.p, v.more_runs);
  } else if (significant && by_chance) {
    v.call = Call::unknown;
    // Reruns that decide, each as far moved as the median of these: none when more than
    // kMostRerunsAsked would.
    std::nth_element(beaten_by.begin(), beaten_by.begin() + static_cast<long>(beaten_by.size() / 2), beaten_by.end());
    const std::size_t typical = beaten_by[beaten_by.size() / 2];
    v.more_runs = fewest_reruns([&](std::size_t more) {
      return rank_chance(beaten + more * typical, most_beaten, baseline_runs, n - cp.index + more) < level(is_worse(cp), more);
    });
    const std::string advice = rerun_advice(v.more_runs, most_beaten < baseline_runs, "a quieter machine");
    // None as far off: the rank test cannot pass on so few runs, which says nothing about the baseline.
    v.why = beaten == 0
                ? fmt::format("{} run(s) {:+.1f}% off (p={:.2g}) and none of the {} runs before as far off, but that few runs cannot "
                              "pass the rank test (p={:.2g} at best, {:.2g} needed): {}",
                              moved_runs, v.effect * 100, cp.p, baseline_runs, rank_p, level(is_worse(cp)), advice)
                : fmt::format("{} run(s) {:+.1f}% off (p={:.2g}), but the {} runs before were as far off often enough (by rank, "
                              "p={:.2g}): load bursts or a step? {}",
                              moved_runs, v.effect * 100, cp.p, baseline_runs, rank_p, advice);
  } else if (significant) {
    v.call = (v.effect > 0) == higher_is_better ? Call::improved : Call::regressed;
    v.why = fmt::format("stepped {:+.1f}% (p={:.2g}) over the last {} runs", v.effect * 100, cp.p, moved_runs);
  } else {
    // Nothing significant: SAME only when these runs would have shown a step of min_effect (or of
    // the size seen, when that is larger).
    const double size = std::max(std::abs(v.effect), o.min_effect);
    const std::size_t need = runs_to_see(size, 0);
    const std::size_t have = std::max<std::size_t>(n - first_new, o.min_after);
    if (need && need <= have && std::abs(v.effect) < o.min_effect) {
      v.why = fmt::format("{:+.1f}% (p={:.2g}), within noise (CV {:.1f}%)", v.effect * 100, cp.p, cv * 100);
    } else {
      v.call = Call::unknown;
      v.more_runs = fewest_reruns([&](std::size_t more) {
        const std::size_t with_more = runs_to_see(size, more);
        return with_more && with_more <= n - cp.index + more;
      });
      v.why = fmt::format("{:+.1f}% (p={:.2g}) with run-to-run noise CV {:.1f}%: a {:.0f}% step would not show in {} run(s); {}",
                          v.effect * 100, cp.p, cv * 100, size * 100, have,
                          rerun_advice(v.more_runs, need > 0, "more iterations per run, a quieter machine"));
    }
  }
  return v;
}

}  // namespace rocebench::reports

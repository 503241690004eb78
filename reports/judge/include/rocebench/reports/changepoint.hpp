#pragma once
// Change points in a series of per-run values, and the verdict on the newest runs of a series.
//
// Located by E-divisive means (Matteson & James 2014, the univariate energy statistic with
// alpha = 1), judged by a deterministic test as Apache Otava (formerly Hunter) does: a two-sample
// t-test between the segments on either side of a candidate, instead of the original permutation
// test, so the same history always gives the same change points. Ours compares Huber levels and
// scales by the median absolute deviation: a night on a busy machine (10x slower) is common in
// shared CI and must neither move a level nor hide a step. The runs are the samples: what a change
// must beat is the noise from run to run, not the spread inside one run.
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace rocebench::reports {

// A step between two segments: [begin, index) and [index, end) of the series.
struct ChangePoint {
  std::size_t index = 0;  // first point after the step
  std::size_t begin = 0, end = 0;
  double mean_before = 0, mean_after = 0;  // the segments' levels: Huber M-estimates (k = 2 sigma)
  double stdev = 0;  // pooled: residuals around each side's Huber level, clipped at 2.5 x (1.4826 MAD)
  double p = 1;      // two-sided p-value of the t-test
  double step() const;  // (after - before) / |before|
};

// The t-test of x[a, b) against x[b, c): the difference of Huber levels over their standard error
// from the pooled sigma, Student's t with n - 2 degrees of freedom. A single point on one side is
// allowed (the other side's spread stands for both).
ChangePoint t_test(const std::vector<double>& x, std::size_t a, std::size_t b, std::size_t c);

struct DetectOptions {
  double max_p = 0.01;          // a change point's p-value must be below this; judge: false alarms a series a night
  std::size_t min_segment = 3;  // points on each side of a historical change point
};

// Every change point of the series, in index order: binary segmentation by the E-divisive
// statistic, each split kept only when significant (its t-test p-value times the number of places
// the split could have been), then each re-tested against its neighbours (the weakest dropped
// first) until all are.
std::vector<ChangePoint> e_divisive(const std::vector<double>& x, const DetectOptions& options);

// The index in [lo, hi) at which splitting x[a, c) maximises the E-divisive statistic; never at an
// index that `is_rerun` marks (a rerun belongs to the night before it), unless all are (then lo).
std::size_t best_split(const std::vector<double>& x, std::size_t a, std::size_t c, std::size_t lo, std::size_t hi,
                       const std::vector<bool>& is_rerun = {});

enum class Call { same, regressed, improved, unknown };
const char* to_string(Call t);  // "SAME", "REGRESSED", "IMPROVED", "UNKNOWN"

struct JudgeOptions {
  DetectOptions detect;
  double min_effect = 0.05;      // a step surely smaller than this is SAME however significant
  std::size_t min_baseline = 5;  // runs before the new ones needed to judge at all
  std::size_t min_after = 3;     // runs after a step before it is called: one or two may be a load burst
  // Per run of the series (shorter: the rest are not): a rerun (history add --rerun-of) joins the
  // night before it. A step starts at a night, never inside one; and each rerun among the judged
  // runs was one more look at the same nights, so a step's false-alarm level is shared among the
  // looks (Bonferroni).
  std::vector<bool> is_rerun;
};

struct TrendVerdict {
  Call call = Call::same;
  std::optional<ChangePoint> change;  // the step judged (in the new runs), when there is a candidate
  std::size_t start = 0;              // with change: the step's first run at its new level, named to people
  double effect = 0;                  // relative step of the candidate, signed as the metric moved
  std::size_t more_runs = 0;          // UNKNOWN: reruns that would decide (0: a few would not)
  std::size_t more_nights = 0;        // UNKNOWN: nights of history needed first (a rerun joins no baseline)
  std::string why;                    // one line for people
};

// Judges the runs from index `first_new` on against the history before them. `history` holds the
// change points of the whole series (e_divisive); the baseline starts at the last one that the runs
// before `first_new` show by themselves. A step needs min_after runs after it, none of them at the
// old level, and must pass a rank test as well as the t-test: its runs must be rarely as far moved
// in the baseline, which is exact whatever the noise's shape (load bursts, runs in two regimes).
TrendVerdict judge(const std::vector<double>& x, std::size_t first_new, const std::vector<ChangePoint>& history,
                   bool higher_is_better, const JudgeOptions& options);

}  // namespace rocebench::reports

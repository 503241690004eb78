#pragma once
// The results history: every run added to one SQLite file, as series of per-run points keyed by
// (machine class, step, params, world, metric), for change-point checks across nights.
//
// One `add` is one transaction (all its files or none); a second add of a run changes nothing; a
// busy timeout lets two writers at once take turns. The file carries its schema version (PRAGMA
// user_version), migrated forward on open, and an application id, so another program's database is
// refused rather than altered.
//
// A rerun (add --rerun-of RUN) joins the night of the run it repeats: it sits right after that
// night's runs, and checks count nights, not runs, so the reruns an UNKNOWN asks for are judged with
// the night that asked for them, not as later nights that push it out of the window.
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rocebench/common/record.hpp"
#include "rocebench/reports/changepoint.hpp"
#include "rocebench/reports/compare.hpp"

struct sqlite3;

namespace rocebench::reports {

inline constexpr int kHistorySchemaVersion = 4;

// What makes runs comparable: per host its CPU model, GPU models and RDMA NIC models (the device
// name without its index: mlx5_0 -> mlx5), distinct hosts joined with " + ", "4x " for repeats.
// Throws InputError naming `file` and the first missing field (hosts[0].cpu.model, …).
std::string machine_class(const json& run_record, const std::string& file);

struct HistoryPoint {
  std::string run, time, revision;
  std::string night;  // the run whose night this is: its own id, or the one it reruns
  double value = 0;  // the metric's median over the run's records
  std::size_t n = 0;  // samples behind it
  std::optional<double> stdev, ci_low, ci_high;
  std::optional<double> cpu_pressure_pct;  // the most its records said some task waited for a CPU (%); none: not stamped
};

struct HistorySeries {
  std::string machine, step, params, metric;  // params: canonical JSON
  int world = 1;
  std::vector<HistoryPoint> points;  // in run order (History::runs)
  std::string label() const;         // "step metric [k=v …] world=N"
};

struct HistoryRun {
  std::string run, time, revision, version, machine;
  std::string night;  // as HistoryPoint::night
};

struct AddResult {
  std::vector<std::string> added, already;  // run ids
  std::size_t points = 0;
};

class History {
 public:
  enum class Mode { create, existing };
  // Opens `file`, migrated to `version` (tests make older files with a smaller one). Every read and
  // write waits up to `busy_timeout` for another writer. InputError: not a history database, or of a
  // newer schema; InfraError: locked past the busy timeout.
  explicit History(const std::filesystem::path& file, Mode mode = Mode::create,
                   std::chrono::milliseconds busy_timeout = std::chrono::seconds(10), int version = kHistorySchemaVersion);
  ~History();
  History(const History&) = delete;
  History& operator=(const History&) = delete;

  // Adds the runs of results files in one transaction. `machine` replaces the machine class
  // the run records give (for records imported from other tools). `rerun_of` names a run of the
  // history (of the same machine class) that these runs repeat; InputError naming --rerun-of else.
  AddResult add(const std::vector<std::string>& results_files, const std::string& machine = "", const std::string& rerun_of = "");

  std::vector<HistorySeries> series(const std::string& machine = "") const;
  // In run order: nights by the time of their first run, each night's reruns right after it (by time, then id).
  std::vector<HistoryRun> runs() const;
  std::string hosts_of(const std::string& run) const;  // "node1,node2"
  int schema_version() const;
  const std::filesystem::path& file() const { return file_; }

 private:
  void exec(const std::string& sql) const;
  [[noreturn]] void fail(int rc, const std::string& doing) const;
  void migrate(int version);
  std::filesystem::path file_;
  sqlite3* db_ = nullptr;
  std::chrono::milliseconds busy_timeout_;
  friend class Statement;
};

// Per series with at least 5 points (by MetricKey::id): the relative run-to-run spread,
// 1.4826 MAD / median, which one step or outlier does not blow up. For compare's run_noise.
std::map<std::string, RunNoise> run_noise(const std::vector<HistorySeries>& series);

struct CheckOptions {
  JudgeOptions judge;
  std::string since;        // judge the runs from this one on; empty: the last `window` nights
  std::size_t window = 3;   // nights judged when `since` is empty, each with its reruns: a step stays reported while its evidence grows
};

struct SeriesCheck {
  const HistorySeries* series = nullptr;
  std::vector<ChangePoint> changes;  // of the whole series (trend pages)
  TrendVerdict verdict;
};

// A verdict for every series that has a point in the newest run of its machine class, the metric's
// direction from its step's declaration (shapes.hpp: a metric without a direction is never a
// regression). Regressions first, then UNKNOWN, IMPROVED and SAME, each by size of change. InputError when `since` names no run of the history.
std::vector<SeriesCheck> check_history(const std::vector<HistorySeries>& series, const std::vector<HistoryRun>& runs,
                                       const CheckOptions& options);

// What a run whose plan names a history does at its end: adds the run (its results.jsonl) to `db`,
// then checks the newest runs of its machine class as `history check` does (the last 3 nights),
// printing the verdicts and writing them as JUnit to `junit`. `rerun_of`: as History::add. Returns 1
// when a series regressed, else 0; throws what History and its add throw (InputError: bad file or
// rerun_of; InfraError: locked).
int add_and_check(const std::filesystem::path& db, const std::filesystem::path& results, const std::filesystem::path& junit,
                  const std::string& rerun_of = "");

}  // namespace rocebench::reports

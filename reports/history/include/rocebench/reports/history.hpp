#pragma once
// The results history: every run added to one SQLite file, as series of per-run points keyed by
// (machine class, step, params, world, metric), for change-point checks across nights.
//
// One `add` is one transaction (all its files or none, and all of a file or none: a file with a bad
// line adds nothing); a second add of a run changes nothing unless it replaces it; a busy timeout
// lets two writers at once take turns. Opening runs SQLite's quick_check: a damaged file is refused
// before anything is read from it or written to it. The file carries its schema version (PRAGMA
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
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "rocebench/common/record.hpp"
#include "rocebench/reports/changepoint.hpp"
#include "rocebench/reports/compare.hpp"

struct sqlite3;

namespace rocebench::reports {

inline constexpr int kHistorySchemaVersion = 5;

// How long after a run its rerun may be made (a Friday night's rerun on Monday morning): a later
// run is a night of its own, not a second look at that one.
inline constexpr std::chrono::hours kRerunWithin{72};

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

// Refuses (InputError naming --rerun-of) a run made before the night it would join, or more than
// kRerunWithin after it; a time that is not RFC 3339 (records imported from other tools) passes.
void check_rerun_time(const std::string& rerun_of, const std::string& night, const std::string& night_time, const std::string& run,
                      const std::string& run_time);

// A result a run recorded without a measurement (status fail, skip or error, with its reason), or
// one of its events (step empty; status "event NAME": a rank lost, a run interrupted): why a series
// has no point in that run.
inline constexpr std::string_view kEventNote = "event ";  // a RunNote's status for an event: "event rank.lost"
struct RunNote {
  std::string run, step, params;  // params: canonical JSON
  int world = 0;
  std::string status, reason;
};

struct AddOptions {  // members initialised, so that a call names only the ones it sets ({.rerun_of = RUN})
  std::string machine{};   // replaces the machine class the run records give (records imported from other tools)
  std::string rerun_of{};  // a run of the history (same machine class, made within kRerunWithin before) these runs repeat
  std::string replace{};   // a run already in the history that the (one) file replaces, in the same transaction
};

struct AddResult {
  std::vector<std::string> added, already, replaced;  // run ids
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

  // Adds the runs of results files in one transaction; a file with a bad line adds nothing (InputError
  // naming file:line). InputError naming --rerun-of or --replace when the run they name cannot be.
  AddResult add(const std::vector<std::string>& results_files, const AddOptions& options = {});

  std::vector<HistorySeries> series(const std::string& machine = "") const;
  // In run order: nights by the time of their first run, each night's reruns right after it (by time, then id).
  std::vector<HistoryRun> runs() const;
  std::string hosts_of(const std::string& run) const;  // "node1,node2"
  std::vector<RunNote> notes_of(const std::vector<std::string>& runs) const;
  int schema_version() const;
  const std::filesystem::path& file() const { return file_; }

 private:
  void exec(const std::string& sql) const;
  [[noreturn]] void fail(int rc, const std::string& doing) const;
  void migrate(int version);
  void check_integrity() const;
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

// A verdict for every series that has a point in the newest night of its machine class, the metric's
// direction from its step's declaration (shapes.hpp: a metric without a direction is never a
// regression). Regressions first, then UNKNOWN, IMPROVED and SAME, each by size of change. InputError when `since` names no run of the history.
std::vector<SeriesCheck> check_history(const std::vector<HistorySeries>& series, const std::vector<HistoryRun>& runs,
                                       const CheckOptions& options);

// What the newest night of a machine class did not measure: the series that its night before measured
// and it did not, or all when it measured nothing at all. A nightly that died early measures nothing,
// and a check that only judges what was measured would turn green over it.
struct Unmeasured {
  std::string machine;
  std::vector<std::string> night;  // the newest night's runs: the night, then its reruns
  std::size_t points = 0;          // what it measured
  std::vector<const HistorySeries*> missing;
  std::string why(const HistorySeries& s, const std::vector<RunNote>& notes) const;  // what the night's records say of it
};
// Per machine class (only `machine` when given) whose newest night missed something.
std::vector<Unmeasured> unmeasured(const std::vector<HistorySeries>& series, const std::vector<HistoryRun>& runs,
                                   const std::string& machine = "");

// Reruns a nightly made of its own night: which series were UNKNOWN before the latest one, and how
// many reruns earlier series took to be decided (by label). The check says of each series decided by a
// rerun how many it took, and adds the newly decided ones to `decided_after`.
struct NightReruns {
  int made = 0;                                // reruns of the night so far
  std::set<std::string> unknown_before;        // labels UNKNOWN before the latest rerun
  std::map<std::string, int> decided_after;    // label -> the rerun that decided it
};

// What add_and_check found (members initialised, so that a call names only the ones it sets).
struct NightCheck {
  int exit_code = 0;                 // 1 when a series regressed or the night measured less than the one before
  std::string night{};               // the newest night of the run's machine class (what a rerun joins)
  std::map<std::string, std::string> rerun_would_decide{};  // UNKNOWN series a rerun would decide: label -> its step kind
  std::set<std::string> unknown{};   // every UNKNOWN series' label
};

// What a run whose plan names a history does at its end: adds the run (its results.jsonl) to `db`,
// then checks the newest runs of its machine class as `history check` does (the last 3 nights),
// printing the verdicts and writing them as JUnit to `junit`. `rerun_of`: as History::add. Throws what
// History and its add throw (InputError: bad file or rerun_of; InfraError: locked).
NightCheck add_and_check(const std::filesystem::path& db, const std::filesystem::path& results, const std::filesystem::path& junit,
                         const std::string& rerun_of = "", NightReruns* reruns = nullptr);

}  // namespace rocebench::reports

#include "rocebench/reports/history.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

#include <fmt/format.h>

#include "rocebench/common/bounded_read.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/common/stats.hpp"
#include "rocebench/reports/compare.hpp"
#include "rocebench/reports/report.hpp"
#include "rocebench/reports/text.hpp"

namespace rocebench::reports {

namespace {

constexpr int kApplicationId = 0x52624831;  // "RbH1": PRAGMA application_id of a rocebench history

// Migrations[v] takes a file from schema v to v + 1.
const char* const kMigrations[] = {
    // 0 -> 1: runs, their hosts, series and one point per (series, run)
    "CREATE TABLE runs(id INTEGER PRIMARY KEY, run TEXT NOT NULL UNIQUE, time TEXT NOT NULL, revision TEXT NOT NULL,"
    " version TEXT NOT NULL, plan TEXT NOT NULL, machine TEXT NOT NULL, added TEXT NOT NULL);"
    "CREATE TABLE hosts(run_id INTEGER NOT NULL REFERENCES runs(id), hostname TEXT NOT NULL, info TEXT NOT NULL,"
    " PRIMARY KEY(run_id, hostname));"
    "CREATE TABLE series(id INTEGER PRIMARY KEY, machine TEXT NOT NULL, step TEXT NOT NULL, params TEXT NOT NULL,"
    " world INTEGER NOT NULL, metric TEXT NOT NULL, UNIQUE(machine, step, params, world, metric));"
    "CREATE TABLE points(series_id INTEGER NOT NULL REFERENCES series(id), run_id INTEGER NOT NULL REFERENCES runs(id),"
    " value REAL NOT NULL, n INTEGER NOT NULL, stdev REAL, ci_low REAL, ci_high REAL, PRIMARY KEY(series_id, run_id))"
    " WITHOUT ROWID;",
    // 1 -> 2: the points of a run, for export and for listing what a run measured
    "CREATE INDEX points_by_run ON points(run_id);",
    // 2 -> 3: how busy the machine was (the records' cpu_pressure_pct), so that a busy night asks for a rerun
    "ALTER TABLE points ADD COLUMN cpu_pressure_pct REAL;",
    // 3 -> 4: the night a rerun joins (the run it repeats; NULL: a night of its own)
    "ALTER TABLE runs ADD COLUMN night TEXT;",
    // 4 -> 5: what a run recorded without a measurement, and its events: why a series has no point
    "CREATE TABLE notes(run_id INTEGER NOT NULL REFERENCES runs(id), step TEXT NOT NULL, params TEXT NOT NULL,"
    " world INTEGER NOT NULL, status TEXT NOT NULL, reason TEXT NOT NULL);"
    "CREATE INDEX notes_by_run ON notes(run_id);",
};

// Runs in run order (History::runs): a night's reruns right after it, whenever they were made.
constexpr const char* kRunsInOrder =
    "SELECT r.id, r.run, r.time, r.revision, r.version, r.machine, COALESCE(r.night, r.run) FROM runs r "
    "LEFT JOIN runs n ON n.run = r.night ORDER BY COALESCE(n.time, r.time), COALESCE(r.night, r.run), r.time, r.run";
static_assert(std::size(kMigrations) == kHistorySchemaVersion);

std::string text_at(sqlite3_stmt* s, int col) {
  const auto* p = sqlite3_column_text(s, col);
  return p ? reinterpret_cast<const char*>(p) : "";
}

std::optional<double> real_at(sqlite3_stmt* s, int col) {
  if (sqlite3_column_type(s, col) == SQLITE_NULL) return std::nullopt;
  return sqlite3_column_double(s, col);
}

std::string now_utc() {
  const auto t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min,
                     tm.tm_sec);
}

// "mlx5_0" -> "mlx5": the model of an RDMA device is its provider's name.
std::string device_model(std::string name) {
  while (!name.empty() && std::isdigit(static_cast<unsigned char>(name.back()))) name.pop_back();
  if (!name.empty() && name.back() == '_') name.pop_back();
  return name;
}

// "2x NVIDIA H100" from device names; `none` when there are none.
std::string models_of(const json& devices, const char* field, bool strip_index, const std::string& none) {
  std::map<std::string, int> count;
  for (const auto& d : devices) {
    if (d.is_object() && d.contains(field) && d[field].is_string()) {
      const std::string name = d[field].get<std::string>();
      ++count[strip_index ? device_model(name) : name];
    }
  }
  std::string out;
  for (const auto& [name, n] : count) out += (out.empty() ? "" : ", ") + (n > 1 ? fmt::format("{}x ", n) : "") + name;
  return out.empty() ? none : out;
}

}  // namespace

std::string machine_class(const json& run, const std::string& file) {
  auto missing = [&](const std::string& field) {
    return InputError(file, 0, field,
                      "missing: the machine class (CPU, GPU and NIC models of every host) comes from it; give it with "
                      "--machine CLASS for records from other tools");
  };
  const auto hosts = run.find("hosts");
  if (hosts == run.end() || !hosts->is_array() || hosts->empty()) throw missing("hosts");
  std::map<std::string, int> classes;
  for (std::size_t i = 0; i < hosts->size(); ++i) {
    const json& h = (*hosts)[i];
    const std::string at = fmt::format("hosts[{}]", i);
    if (!h.is_object()) throw missing(at);
    const auto cpu = h.find("cpu");
    if (cpu == h.end() || !cpu->is_object() || !cpu->contains("model") || !(*cpu)["model"].is_string() ||
        (*cpu)["model"].get<std::string>().empty()) {
      throw missing(at + ".cpu.model");
    }
    for (const char* part : {"gpu", "rdma"}) {
      if (!h.contains(part) || !h[part].is_object() || !h[part].contains("devices") || !h[part]["devices"].is_array()) {
        throw missing(at + "." + part + ".devices");
      }
    }
    ++classes[fmt::format("{} / {} / {}", (*cpu)["model"].get<std::string>(), models_of(h["gpu"]["devices"], "name", false, "no GPU"),
                          models_of(h["rdma"]["devices"], "name", true, "no RDMA NIC"))];
  }
  std::string out;
  for (const auto& [c, n] : classes) out += (out.empty() ? "" : " + ") + (n > 1 ? fmt::format("{}x ", n) : "") + c;
  return out;
}

std::string HistorySeries::label() const {
  return MetricKey{step, json::parse(params), world, metric}.label();
}

// A prepared statement that is finalized whatever happens; errors name the database file.
class Statement {
 public:
  Statement(const History& h, const std::string& sql) : h_(h) {
    if (const int rc = sqlite3_prepare_v2(h.db_, sql.c_str(), -1, &s_, nullptr); rc != SQLITE_OK) h.fail(rc, "prepare");
  }
  ~Statement() { sqlite3_finalize(s_); }
  Statement& bind(int i, const std::string& v) { return check(sqlite3_bind_text(s_, i, v.c_str(), -1, SQLITE_TRANSIENT)); }
  Statement& bind(int i, double v) { return check(sqlite3_bind_double(s_, i, v)); }
  Statement& bind(int i, std::int64_t v) { return check(sqlite3_bind_int64(s_, i, v)); }
  Statement& bind(int i, std::optional<double> v) { return v ? bind(i, *v) : check(sqlite3_bind_null(s_, i)); }
  // True while there is a row.
  bool step() {
    const int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc != SQLITE_DONE) h_.fail(rc, "step");
    return false;
  }
  void run() {
    step();
    sqlite3_reset(s_);
    sqlite3_clear_bindings(s_);
  }
  sqlite3_stmt* get() const { return s_; }

 private:
  Statement& check(int rc) {
    if (rc != SQLITE_OK) h_.fail(rc, "bind");
    return *this;
  }
  const History& h_;
  sqlite3_stmt* s_ = nullptr;
};

void History::fail(int rc, const std::string& doing) const {
  const std::string what = db_ ? sqlite3_errmsg(db_) : sqlite3_errstr(rc);
  const int primary = rc & 0xff;
  if (primary == SQLITE_BUSY || primary == SQLITE_LOCKED) {
    throw InfraError(fmt::format("{}: locked by another process for more than {} ms ({}); nothing was changed, try again",
                                 file_.string(), busy_timeout_.count(), what));
  }
  if (primary == SQLITE_NOTADB || primary == SQLITE_CORRUPT) {
    throw InputError(fmt::format("{}: not a usable history database ({}); nothing was changed: restore it from a copy, or "
                                 "give another --db", file_.string(), what));
  }
  if (primary == SQLITE_CANTOPEN || primary == SQLITE_READONLY || primary == SQLITE_PERM) {
    throw InputError(fmt::format("{}: cannot open for writing ({})", file_.string(), what));
  }
  throw InfraError(fmt::format("{}: {} failed: {}", file_.string(), doing, what));
}

void History::exec(const std::string& sql) const {
  char* err = nullptr;
  const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err);
  sqlite3_free(err);
  if (rc != SQLITE_OK) fail(rc, sql.substr(0, sql.find(' ')));
}

History::History(const std::filesystem::path& file, Mode mode, std::chrono::milliseconds busy_timeout, int version)
    : file_(file), busy_timeout_(busy_timeout) {
  refuse_other_kinds(file);  // /dev/zero was "disk I/O error", exit 3
  if (mode == Mode::existing && !std::filesystem::exists(file)) {
    throw InputError(fmt::format("{}: no such history database (rocebench history add creates it)", file.string()));
  }
  const int flags = SQLITE_OPEN_READWRITE | (mode == Mode::create ? SQLITE_OPEN_CREATE : 0);
  try {  // the destructor does not run for a constructor that throws
    if (const int rc = sqlite3_open_v2(file.c_str(), &db_, flags, nullptr); rc != SQLITE_OK) fail(rc, "open");
    sqlite3_busy_timeout(db_, static_cast<int>(busy_timeout_.count()));
    // A year of 2,000 series is ~30 MB: read it mapped and cached, not a pread per 4 KiB page.
    exec("PRAGMA foreign_keys = ON; PRAGMA mmap_size = 268435456; PRAGMA cache_size = -65536");
    check_integrity();
    migrate(version);
  } catch (...) {
    sqlite3_close(db_);
    throw;
  }
}

History::~History() { sqlite3_close(db_); }

void History::check_integrity() const {
  // quick_check reads every page once (O(N), no index cross-check): a damaged page is found on open,
  // not by a check that reads around it and turns green.
  Statement s(*this, "PRAGMA quick_check(3)");
  std::string found;
  while (s.step()) {
    std::string line = text_at(s.get(), 0);
    if (line == "ok") continue;
    std::replace(line.begin(), line.end(), '\n', ' ');
    found += (found.empty() ? "" : "; ") + line;
  }
  if (found.empty()) return;
  throw InputError(fmt::format("{0}: the history database is damaged (SQLite quick_check: {1}); nothing was read or written. "
                               "The way back: restore it from a copy, or recover what is readable into a new file with "
                               "`sqlite3 {0} .recover | sqlite3 NEW.sqlite` and give --db NEW.sqlite",
                               file_.string(), printable_excerpt(found, 300)));
}

int History::schema_version() const {
  Statement s(*this, "PRAGMA user_version");
  s.step();
  return sqlite3_column_int(s.get(), 0);
}

void History::migrate(int version) {
  auto app_id = [&] {
    Statement s(*this, "PRAGMA application_id");
    s.step();
    return sqlite3_column_int(s.get(), 0);
  };
  // Reading the header first also finds a file that is not a database at all.
  if (schema_version() == version && app_id() == kApplicationId) return;
  exec("BEGIN IMMEDIATE");  // re-read under the write lock: another writer may have migrated meanwhile
  try {
    const int at = schema_version();
    Statement tables(*this, "SELECT count(*) FROM sqlite_master");
    tables.step();
    const bool empty = sqlite3_column_int(tables.get(), 0) == 0;
    if (app_id() != kApplicationId && !(empty && at == 0)) {
      throw InputError(fmt::format("{}: a SQLite database, but not a rocebench history (application_id {:#x}); nothing was "
                                   "changed", file_.string(), app_id()));
    }
    if (at > kHistorySchemaVersion) {
      throw InputError(fmt::format("{}: history schema version {} is newer than this rocebench's ({}); use a newer rocebench; "
                                   "nothing was changed", file_.string(), at, kHistorySchemaVersion));
    }
    for (int v = at; v < version; ++v) exec(kMigrations[v]);
    exec(fmt::format("PRAGMA application_id = {}", kApplicationId));
    exec(fmt::format("PRAGMA user_version = {}", std::max(at, version)));
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

namespace {

// What a run recorded without a measurement, and its events, once each: why a series has no point.
std::vector<RunNote> notes_in(const Dataset& data) {
  std::set<std::tuple<std::string, std::string, int, std::string, std::string>> seen;
  std::vector<RunNote> out;
  auto note = [&](RunNote n) {
    if (seen.emplace(n.step, n.params, n.world, n.status, n.reason).second) out.push_back(std::move(n));
  };
  for (const auto& o : data.results) {
    if (o.status == Status::ok || o.status == Status::warn) continue;
    note({"", data.names.str(o.step), data.params_of(o).dump(), o.world, to_string(o.status),
          o.reason == kNoName ? "" : data.names.str(o.reason)});
  }
  for (const auto& e : data.events) note({"", "", "{}", 0, std::string(kEventNote) + e.value("event", "?"), e.value("message", "")});
  return out;
}

}  // namespace

void check_rerun_time(const std::string& rerun_of, const std::string& night, const std::string& night_time, const std::string& run,
                      const std::string& run_time) {
  const auto at = rfc3339_seconds(run_time), of = rfc3339_seconds(night_time);
  if (!at || !of) return;
  const double hours = (*at - *of) / 3600, limit = static_cast<double>(kRerunWithin.count());
  if (hours >= 0 && hours <= limit) return;
  throw InputError(fmt::format("--rerun-of {}: run {} was made {:.1f} h {} night {} ({}); a rerun is made after the night it "
                               "repeats, within {:.0f} h, or it is a night of its own (add it without --rerun-of); nothing was added",
                               printable_excerpt(rerun_of), run, std::abs(hours), hours < 0 ? "before" : "after", night, night_time,
                               limit));
}

AddResult History::add(const std::vector<std::string>& files, const AddOptions& options) {
  // Everything is read and checked before the write lock is taken: a bad file changes nothing.
  struct Pending {
    json run;
    std::string machine;
    EvidenceMap evidence;
    std::vector<RunNote> notes;
  };
  std::vector<Pending> pending;
  for (const auto& f : files) {
    Dataset data;  // not load_results: its readers skip bad lines, and this one adds none of a file that has one
    data.load(f);
    if (!data.issues.empty()) {
      const LoadIssue& first = data.issues.front();
      throw InputError(fmt::format("{}: {} bad line(s), the first {}:{}: {}; a run is added whole or not at all: nothing was added "
                                   "(fix the file and add it again)", f, data.issues.size(), first.file, first.line, first.message));
    }
    json run;
    if (data.runs.size() == 1) {
      run = data.runs.front();
    } else if (data.runs.empty() && !options.machine.empty() && !data.results.empty()) {
      // Records imported from other tools: the run is named by its results, the class by --machine.
      run = {{"run", data.names.str(data.results.front().run)}, {"time", ""}};
    } else {
      throw InputError(f, 0, "kind", data.runs.size() > 1 ? fmt::format("{} run records: add one run per file", data.runs.size())
                                     : "no run record: the history needs the run's metadata (records from other tools: give "
                                       "--machine CLASS)");
    }
    for (const auto& o : data.results) {
      if (data.names.str(o.run) != run["run"].get<std::string>()) {
        throw InputError(f, o.line, "run", fmt::format("'{}' is not the file's run '{}'", data.names.str(o.run), run["run"].get<std::string>()));
      }
    }
    pending.push_back({run, options.machine.empty() ? machine_class(run, f) : options.machine, collect_evidence(data), notes_in(data)});
  }
  if (!options.replace.empty() && (pending.size() != 1 || pending.front().run["run"] != options.replace)) {
    throw InputError(fmt::format("--replace {}: give one results file of that run (given: {}); nothing was added",
                                 printable_excerpt(options.replace),
                                 pending.size() == 1 ? "run " + pending.front().run["run"].get<std::string>()
                                                     : fmt::format("{} files", pending.size())));
  }

  AddResult result;
  exec("BEGIN IMMEDIATE");
  try {
    std::string night;  // the night the runs join: rerun_of's, or the replaced run's
    if (!options.rerun_of.empty()) {
      Statement of(*this, "SELECT COALESCE(night, run), machine, (SELECT time FROM runs n WHERE n.run = COALESCE(r.night, r.run)) "
                          "FROM runs r WHERE run = ?1");
      of.bind(1, options.rerun_of);
      if (!of.step()) {
        throw InputError(fmt::format("--rerun-of {}: no such run in {}; nothing was added", printable_excerpt(options.rerun_of),
                                     file_.string()));
      }
      night = text_at(of.get(), 0);
      const std::string machine = text_at(of.get(), 1), night_time = text_at(of.get(), 2);
      for (const auto& p : pending) {
        if (p.machine != machine) {
          throw InputError(fmt::format("--rerun-of {}: a run on '{}', but run {} is on '{}': a rerun repeats a run on the same kind "
                                       "of machine; nothing was added", printable_excerpt(options.rerun_of), machine,
                                       p.run["run"].get<std::string>(), p.machine));
        }
        check_rerun_time(options.rerun_of, night, night_time, p.run["run"], p.run.value("time", ""));
      }
    }
    if (!options.replace.empty()) {
      Statement old(*this, "SELECT id, COALESCE(night, '') FROM runs WHERE run = ?1");
      old.bind(1, options.replace);
      if (!old.step()) {
        throw InputError(fmt::format("--replace {}: no such run in {}; nothing was added", printable_excerpt(options.replace),
                                     file_.string()));
      }
      const std::int64_t old_id = sqlite3_column_int64(old.get(), 0);
      if (options.rerun_of.empty()) night = text_at(old.get(), 1);  // a replaced rerun stays in its night
      for (const char* table : {"points", "hosts", "notes"}) {
        Statement(*this, fmt::format("DELETE FROM {} WHERE run_id = ?1", table)).bind(1, old_id).run();
      }
      Statement(*this, "DELETE FROM runs WHERE id = ?1").bind(1, old_id).run();
      result.replaced.push_back(options.replace);
    }
    Statement exists(*this, "SELECT id FROM runs WHERE run = ?1");
    Statement add_run(*this, "INSERT INTO runs(run, time, revision, version, plan, machine, added, night) "
                             "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, NULLIF(?8, ''))");
    Statement add_host(*this, "INSERT INTO hosts(run_id, hostname, info) VALUES(?1, ?2, ?3)");
    Statement add_series(*this, "INSERT INTO series(machine, step, params, world, metric) VALUES(?1, ?2, ?3, ?4, ?5) "
                                "ON CONFLICT DO UPDATE SET machine = machine RETURNING id");
    Statement add_point(*this, "INSERT INTO points(series_id, run_id, value, n, stdev, ci_low, ci_high, cpu_pressure_pct) "
                               "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
    Statement add_note(*this, "INSERT INTO notes(run_id, step, params, world, status, reason) VALUES(?1, ?2, ?3, ?4, ?5, ?6)");
    const std::string added_at = now_utc();
    for (const auto& p : pending) {
      const std::string id = p.run["run"];
      exists.bind(1, id);
      const bool known = exists.step();
      sqlite3_reset(exists.get());
      if (known || std::count(result.added.begin(), result.added.end(), id)) {
        result.already.push_back(id);
        continue;
      }
      const json rb = p.run.value("rocebench", json::object());
      add_run.bind(1, id)
          .bind(2, p.run.value("time", "").empty() ? added_at : p.run.value("time", ""))  // imported: ordered as added
          .bind(3, rb.value("git_revision", "unknown"))
          .bind(4, rb.value("version", "unknown"))
          .bind(5, p.run.contains("plan") ? p.run["plan"].value("name", "") : "")
          .bind(6, p.machine)
          .bind(7, added_at)
          .bind(8, night)
          .run();
      const std::int64_t run_id = sqlite3_last_insert_rowid(db_);
      for (const auto& h : p.run.value("hosts", json::array())) {
        if (h.is_object() && h.contains("hostname") && h["hostname"].is_string()) {
          add_host.bind(1, run_id).bind(2, h["hostname"].get<std::string>()).bind(3, h.dump()).run();
        }
      }
      for (const auto& [key_id, entry] : p.evidence) {
        const auto& [key, e] = entry;
        add_series.bind(1, p.machine).bind(2, key.step).bind(3, key.params.dump()).bind(4, std::int64_t{key.world}).bind(5, key.metric);
        add_series.step();
        const std::int64_t series_id = sqlite3_column_int64(add_series.get(), 0);
        while (add_series.step()) {
        }
        sqlite3_reset(add_series.get());
        // The spread of the samples when records kept them, else of the records' values: the sample
        // standard deviation, of what they were drawn from.
        const auto& spread_of = e.samples.size() > 1 ? e.samples : e.values;
        std::optional<double> stdev;
        if (spread_of.size() > 1) stdev = sample_stdev(spread_of);
        add_point.bind(1, series_id)
            .bind(2, run_id)
            .bind(3, e.median())
            .bind(4, static_cast<std::int64_t>(e.n))
            .bind(5, stdev)
            .bind(6, e.ci ? std::optional<double>(e.ci->first) : std::nullopt)
            .bind(7, e.ci ? std::optional<double>(e.ci->second) : std::nullopt)
            .bind(8, e.cpu_pressure_pct >= 0 ? std::optional<double>(e.cpu_pressure_pct) : std::nullopt)
            .run();
        ++result.points;
      }
      for (const auto& n : p.notes) {
        add_note.bind(1, run_id).bind(2, n.step).bind(3, n.params).bind(4, std::int64_t{n.world}).bind(5, n.status).bind(6, n.reason).run();
      }
      result.added.push_back(id);
    }
    exec("COMMIT");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
  return result;
}

std::vector<HistorySeries> History::series(const std::string& machine) const {
  std::unordered_map<std::int64_t, std::size_t> place;  // run's row id -> its place in run order
  {
    Statement runs(*this, kRunsInOrder);
    while (runs.step()) place.emplace(sqlite3_column_int64(runs.get(), 0), place.size());
  }
  Statement s(*this,
              "SELECT s.id, s.machine, s.step, s.params, s.world, s.metric, r.run, r.time, r.revision, p.value, p.n, p.stdev, "
              "p.ci_low, p.ci_high, p.cpu_pressure_pct, COALESCE(r.night, r.run), r.id FROM points p JOIN series s ON s.id = p.series_id "
              "JOIN runs r ON r.id = p.run_id WHERE ?1 = '' OR s.machine = ?1 ORDER BY p.series_id");  // the points' own order: no sort
  s.bind(1, machine);
  std::vector<HistorySeries> out;
  std::vector<std::vector<std::pair<std::size_t, HistoryPoint>>> placed;  // per series
  std::int64_t last = -1;
  while (s.step()) {
    sqlite3_stmt* q = s.get();
    if (const std::int64_t id = sqlite3_column_int64(q, 0); id != last) {
      last = id;
      out.push_back({text_at(q, 1), text_at(q, 2), text_at(q, 3), text_at(q, 5), sqlite3_column_int(q, 4), {}});
      placed.emplace_back();
    }
    placed.back().emplace_back(place.at(sqlite3_column_int64(q, 16)),
                               HistoryPoint{text_at(q, 6), text_at(q, 7), text_at(q, 8), text_at(q, 15), sqlite3_column_double(q, 9),
                                            static_cast<std::size_t>(sqlite3_column_int64(q, 10)), real_at(q, 11), real_at(q, 12),
                                            real_at(q, 13), real_at(q, 14)});
  }
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::sort(placed[i].begin(), placed[i].end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [at, point] : placed[i]) out[i].points.push_back(std::move(point));
  }
  std::sort(out.begin(), out.end(), [](const HistorySeries& a, const HistorySeries& b) {
    return std::tie(a.machine, a.step, a.params, a.world, a.metric) < std::tie(b.machine, b.step, b.params, b.world, b.metric);
  });
  return out;
}

std::vector<HistoryRun> History::runs() const {
  Statement s(*this, kRunsInOrder);
  std::vector<HistoryRun> out;
  while (s.step()) {
    sqlite3_stmt* q = s.get();
    out.push_back({text_at(q, 1), text_at(q, 2), text_at(q, 3), text_at(q, 4), text_at(q, 5), text_at(q, 6)});
  }
  return out;
}

std::string History::hosts_of(const std::string& run) const {
  Statement s(*this, "SELECT hostname FROM hosts JOIN runs ON runs.id = hosts.run_id WHERE runs.run = ?1 ORDER BY hostname");
  s.bind(1, run);
  std::string out;
  while (s.step()) out += (out.empty() ? "" : ",") + text_at(s.get(), 0);
  return out;
}

std::vector<RunNote> History::notes_of(const std::vector<std::string>& runs) const {
  Statement s(*this, "SELECT r.run, n.step, n.params, n.world, n.status, n.reason FROM notes n JOIN runs r ON r.id = n.run_id "
                     "WHERE r.run = ?1 ORDER BY n.rowid");
  std::vector<RunNote> out;
  for (const auto& run : runs) {
    s.bind(1, run);
    while (s.step()) {
      sqlite3_stmt* q = s.get();
      out.push_back({text_at(q, 0), text_at(q, 1), text_at(q, 2), sqlite3_column_int(q, 3), text_at(q, 4), text_at(q, 5)});
    }
    sqlite3_reset(s.get());
  }
  return out;
}

}  // namespace rocebench::reports

#include "rocebench/reports/plots.hpp"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <thread>

#include "rocebench/common/atomic_write.hpp"
#include "rocebench/common/clock.hpp"
#include "rocebench/reports/text.hpp"
#include "embedded.hpp"

extern char** environ;

namespace rocebench::reports {

ProcessResult run_process(const std::vector<std::string>& argv, const std::vector<std::string>& extra_env,
                          std::chrono::milliseconds deadline, const std::filesystem::path& log) {
  std::vector<std::string> env_strings(extra_env);
  for (char** e = environ; *e; ++e) env_strings.emplace_back(*e);
  std::vector<char*> env, args;
  for (auto& s : env_strings) env.push_back(s.data());
  env.push_back(nullptr);
  std::vector<std::string> argv_copy(argv);
  for (auto& s : argv_copy) args.push_back(s.data());
  args.push_back(nullptr);

  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  const std::string out = log.empty() ? "/dev/null" : log.string();
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);

  ProcessResult result;
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), env.data());
  posix_spawn_file_actions_destroy(&actions);
  if (rc != 0) return result;  // not found or not executable: exit_code stays -1

  const Deadline until(deadline);
  int status = 0;
  while (true) {
    const pid_t done = ::waitpid(pid, &status, WNOHANG);
    if (done == pid) break;
    if (done < 0 && errno != EINTR) return result;
    if (until.expired()) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      result.timed_out = true;
      return result;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  result.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return result;
}

std::string find_python(std::string& why_not) {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("ROCEBENCH_PYTHON"); env && *env) candidates.emplace_back(env);
  candidates.emplace_back("/usr/bin/python3");
  candidates.emplace_back("python3");
  for (const auto& py : candidates) {
    const auto r = run_process({py, "-c", "import matplotlib"}, {"MPLBACKEND=Agg"}, std::chrono::seconds(30));
    if (r.exit_code == 0) return py;
  }
  why_not = "no Python interpreter could import matplotlib (tried $ROCEBENCH_PYTHON, /usr/bin/python3, python3 on "
            "PATH); install python3-matplotlib or point ROCEBENCH_PYTHON at an interpreter that has it";
  return "";
}

namespace {

json optional_json(const std::optional<double>& v) { return v ? json(*v) : json(nullptr); }

// The sorted samples, thinned to at most ~2000 evenly ranked ones (always keeping the extremes):
// enough for a CDF to look exactly like the full one.
json cdf_points(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  constexpr std::size_t kMax = 2000;
  if (values.size() <= kMax) return values;
  json out = json::array();
  for (std::size_t i = 0; i < kMax; ++i) out.push_back(values[i * (values.size() - 1) / (kMax - 1)]);
  return out;
}

}  // namespace

json plot_input(const Aggregate& a) {
  json out = {{"runs", a.runs}, {"run_times", a.run_times}, {"runs_by_time", a.runs_by_time}};
  for (const auto& s : a.scaling) {
    json points = json::array();
    for (const auto& p : s.points) {
      points.push_back({{"gpus", p.gpus}, {"images_per_s", optional_json(p.images_per_s)},
                        {"speedup", optional_json(p.speedup)}, {"efficiency", optional_json(p.efficiency)},
                        {"predicted_speedup", optional_json(p.predicted_speedup)}, {"ideal", p.ideal}});
    }
    if (s.independent()) continue;  // no speedup to draw
    out["scaling"].push_back({{"label", s.label()}, {"model", param_text(s.key, "model")}, {"ranks", s.ranks()}, {"key", s.key}, {"key_order", s.label_order()}, {"base_gpus", s.base_gpus},
                              {"points", points}});
  }
  // The throughput figure of each model with predictions: measured series and predicted ones apart,
  // a predicted line drawn beyond the largest measured point of its sync mode.
  std::map<std::string, json> by_model;
  const auto series_json = [](const ScalingSeries& s) {
    json points = json::array();
    std::optional<double> base;
    for (const auto& p : s.points) {
      points.push_back({{"gpus", p.gpus}, {"images_per_s", optional_json(p.images_per_s)}, {"efficiency", optional_json(p.efficiency)}});
      if (p.gpus == s.base_gpus) base = p.images_per_s;
    }
    return json{{"line", s.line_label()}, {"label", s.label()}, {"kind", s.predicted() ? "predicted" : "measured"},
                {"engine", param_text(s.key, "engine")}, {"sync", param_text(s.key, "sync")}, {"base_gpus", s.base_gpus},
                {"ideal_per_gpu", base ? json(*base / s.base_gpus) : json(nullptr)}, {"points", points}};
  };
  for (const auto& s : a.predicted) by_model[param_text(s.key, "model")]["series"].push_back(series_json(s));
  for (const auto& s : a.scaling) {
    const auto it = by_model.find(param_text(s.key, "model"));
    if (it == by_model.end() || s.independent()) continue;
    it->second["series"].push_back(series_json(s));
  }
  for (auto& [model, figure] : by_model) {
    for (auto& s : figure["series"]) {
      if (s["kind"] != "predicted") continue;
      std::optional<int> beyond;
      for (const auto& m : figure["series"]) {
        if (m["kind"] != "measured" || m["sync"] != s["sync"]) continue;
        for (const auto& p : m["points"])
          if (!p["images_per_s"].is_null()) beyond = std::max(beyond.value_or(0), p["gpus"].get<int>());
      }
      s["beyond_gpus"] = beyond ? json(*beyond) : json(nullptr);
    }
    figure["model"] = model;
    out["throughput"].push_back(std::move(figure));
  }
  for (const auto* curves : {&a.size_curves, &a.world_curves}) {
    for (const auto& c : *curves) {
      if (!c.measured()) continue;  // one line with its reason in the tables, nothing to draw
      json points = json::array();
      for (const auto& p : c.points) points.push_back({{"x", p.x}, {"busbw", optional_json(p.busbw)}, {"algbw", optional_json(p.algbw)}});
      out[c.x_name == "bytes" ? "busbw_by_size" : "busbw_by_ranks"].push_back(
          {{"label", c.label()}, {"op", c.op}, {"points", points}});
    }
  }
  for (const auto& row : a.probes.rows) {
    if (row.test != "latency") continue;  // the probe variant its step declares
    for (const auto& [source, m] : row.by_source) {
      json q = json::object();
      for (const char* k : {"lat_us_min", "lat_us_p50", "lat_us_p99", "lat_us_p99_9", "lat_us_max"}) {
        if (auto it = m.find(k); it != m.end()) q[k] = it->second;
      }
      json entry = {{"label", source + " " + bytes_text(row.bytes) + " " + row.host + "→" + row.peer},
                    {"series", source + " " + row.host + "→" + row.peer}, {"bytes", row.bytes}, {"quantiles", q}};
      if (auto raw = row.samples.find(source); raw != row.samples.end()) {
        entry["n"] = raw->second.size();
        entry["samples"] = cdf_points(raw->second);
      }
      if (!q.empty() || entry.contains("samples")) out["latency"].push_back(std::move(entry));
    }
  }
  for (const auto& m : a.pairs) {
    json matrix = json::array();
    for (const auto& src : m.hosts) {
      json row = json::array();
      for (const auto& dst : m.hosts) {
        const auto r = m.cells.find(src);
        const PairCell* cell = nullptr;
        if (r != m.cells.end()) {
          if (auto c = r->second.find(dst); c != r->second.end()) cell = &c->second;
        }
        row.push_back(cell ? json{{"value", optional_json(cell->value)}, {"flagged", cell->flagged}} : json(nullptr));
      }
      matrix.push_back(row);
    }
    out["pairs"].push_back({{"test", m.test}, {"metric", m.metric}, {"hosts", m.hosts}, {"matrix", matrix}});
  }
  for (const auto& t : a.trends) {
    json values = json::array();
    for (const auto& v : t.values) values.push_back(optional_json(v));
    out["trends"].push_back({{"label", t.label}, {"metric", t.metric}, {"values", values}});
  }
  return out;
}

Plots draw_plots(const Aggregate& agg, const std::filesystem::path& dir, std::chrono::milliseconds deadline) {
  Plots plots;
  const std::string python = find_python(plots.missing);
  if (python.empty()) return plots;
  std::filesystem::create_directories(dir);
  const auto script = dir / "plot.py";
  const auto input = dir / "plot-input.json";
  const auto log = dir / "plot.log";
  write_file_atomically(script, plot_py_source());
  write_file_atomically(input, plot_input(agg).dump());
  const auto r = run_process({python, script.string(), input.string(), dir.string()}, {"MPLBACKEND=Agg"}, deadline, log);
  if (r.timed_out) plots.missing = "plot.py did not finish within its deadline; see " + log.string();
  else if (r.exit_code != 0) plots.missing = "plot.py failed (exit " + std::to_string(r.exit_code) + "); see " + log.string();
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    if (entry.path().extension() == ".png" && entry.file_size() > 0) plots.files.push_back(entry.path());
  }
  std::sort(plots.files.begin(), plots.files.end());
  std::filesystem::remove(script);
  return plots;
}

}  // namespace rocebench::reports

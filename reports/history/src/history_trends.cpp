// `rocebench history trends`: one plot per series over time with its change points (trends.py,
// compiled in, drawn with matplotlib as the report's plots are) and an index page.
#include <iostream>

#include <fmt/format.h>

#include "rocebench/reports/history_cli.hpp"
#include "rocebench/common/atomic_write.hpp"
#include "rocebench/common/errors.hpp"
#include "embedded.hpp"
#include "rocebench/reports/history.hpp"
#include "rocebench/reports/plots.hpp"
#include "rocebench/reports/report.hpp"

namespace rocebench::reports {

int trends_main(const Args& args) {
  std::string db, out = "trends", machine;
  bool all = false;
  CheckOptions o;
  ArgParser p("rocebench history trends",
              "Draws one plot per series over time, its change points marked and the judged runs shaded in the\n"
              "colour of their verdict, and index.html listing the series, most recent regressions first.\n"
              "Without --all, only series that are not SAME or that have a change point.");
  p.option("--db", &db, "history database", "FILE")
      .option("-o", &out, "output folder (default: trends)", "DIR")
      .option("--machine", &machine, "only this machine class", "CLASS")
      .option("--since", &o.since, "judge the runs from this one on (default: the last 3 nights, each with its reruns)", "RUN")
      .flag("--all", &all, "plot every series");
  if (!p.parse(args)) return kExitOk;
  if (db.empty()) throw UsageError("rocebench history trends: --db is missing\n\n" + p.usage());
  const History h(db, History::Mode::existing);
  const auto series = h.series(machine);
  const auto checks = check_history(series, h.runs(), o);
  json doc{{"db", db}, {"series", json::array()}};
  for (const auto& c : checks) {
    if (!all && c.verdict.call == Call::same && c.changes.empty()) continue;
    json s{{"id", fmt::format("s{:05}", doc["series"].size())}, {"label", c.series->label()}, {"machine", c.series->machine},
           {"metric", c.series->metric}, {"call", to_string(c.verdict.call)}, {"why", c.verdict.why}, {"points", json::array()},
           {"changes", json::array()}};
    for (const auto& pt : c.series->points) s["points"].push_back({{"run", pt.run}, {"time", pt.time}, {"revision", pt.revision}, {"value", pt.value}});
    for (const auto& cp : c.changes) s["changes"].push_back({{"index", cp.index}, {"step", cp.step()}, {"p", cp.p}});
    if (c.verdict.change) {
      const auto& at = c.series->points[c.verdict.start];
      s["judged_from"] = c.verdict.start;
      s["since"] = at.time;
      s["since_run"] = fmt::format("{} ({})", at.run, at.revision);
    }
    doc["series"].push_back(std::move(s));
  }
  std::string why_not;
  const std::string python = find_python(why_not);
  if (python.empty()) throw InfraError(why_not);
  std::filesystem::create_directories(out);
  const auto dir = std::filesystem::path(out);
  write_file_atomically(dir / "trends-input.json", doc.dump());
  write_file_atomically(dir / "trends.py", trends_py_source());
  const auto r = run_process({python, (dir / "trends.py").string(), (dir / "trends-input.json").string(), dir.string()},
                             {"MPLBACKEND=Agg"}, std::chrono::minutes(30), dir / "trends.log");
  std::filesystem::remove(dir / "trends.py");
  if (r.exit_code != 0) throw InfraError(fmt::format("trends.py failed (exit {}); see {}", r.exit_code, (dir / "trends.log").string()));
  std::cout << fmt::format("{} series plotted: {}\n", doc["series"].size(), (dir / "index.html").string());
  return kExitOk;
}

}  // namespace rocebench::reports

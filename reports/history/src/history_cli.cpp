// `rocebench history add | check | export | trends`: the nightly results history (history.hpp).
#include "rocebench/reports/history_cli.hpp"

#include <iostream>
#include <set>
#include <tuple>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rocebench/common/atomic_write.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/reports/compare.hpp"
#include "rocebench/reports/history.hpp"
#include "rocebench/reports/shapes.hpp"
#include "rocebench/reports/report.hpp"
#include "rocebench/reports/tables.hpp"
#include "rocebench/reports/text.hpp"

namespace rocebench::reports {

namespace {

constexpr const char* kUsage =
    "usage: rocebench history add|check|export|trends [options]   (rocebench history <command> --help for each)\n\n"
    "  add      add runs (results.jsonl) to the history database\n"
    "  check    change points across runs: SAME, REGRESSED, IMPROVED or UNKNOWN per series; exit 1 on a regression\n"
    "  export   the latest run's metrics for the node_exporter textfile collector (Prometheus / OpenMetrics text)\n"
    "  trends   one plot per series over time with its change points, and an index page\n";

int add_main(const Args& args) {
  std::string db;
  AddOptions o;
  double busy_s = 10;
  std::vector<std::string> files;
  ArgParser p("rocebench history add", "Add runs to the history database (created when missing), all in one transaction: a\n"
                                       "file with a bad line adds nothing, and a run already there is left as it is\n"
                                       "(--replace RUN replaces it).");
  p.option("--db", &db, "history database (SQLite)", "FILE")
      .option("--machine", &o.machine, "machine class of the runs, for records that do not describe their hosts", "CLASS")
      .option("--rerun-of", &o.rerun_of, "the runs repeat this run of the history (an UNKNOWN asked for them): they join its night", "RUN")
      .option("--replace", &o.replace, "replace this run of the history by the one results file given (a repaired file)", "RUN")
      .option("--busy-timeout", &busy_s, "seconds to wait for another writer (default 10)", "S")
      .range(0.001, 3600)
      .rest("RESULTS", &files, "run folders or their results.jsonl, one run each");
  if (!p.parse(args)) return kExitOk;
  if (db.empty()) throw UsageError("rocebench history add: --db is missing\n\n" + p.usage());
  if (files.empty()) throw UsageError("rocebench history add: no results file given\n\n" + p.usage());
  History h(db, History::Mode::create, std::chrono::milliseconds(static_cast<long>(busy_s * 1000)));
  const AddResult r = h.add(files, o);
  for (const auto& run : r.already) std::cout << fmt::format("{}: already in the history, left as it is (--replace {} replaces it)\n", run, run);
  for (const auto& run : r.replaced) std::cout << fmt::format("{}: replaced\n", run);
  std::cout << fmt::format("added {} run(s), {} points, to {}\n", r.added.size(), r.points, db);
  return kExitOk;
}

std::string change_text(const SeriesCheck& c) {
  const auto& v = c.verdict;
  if (!v.change || v.call == Call::same) return v.why;
  const auto& at = c.series->points[v.start];
  return fmt::format("{}; from run {} (revision {}, {})", v.why, at.run, at.revision, at.time.substr(0, 10));
}

// The machine classes of the history, for a --machine that names none of them.
void require_machine(const History& h, const std::string& machine, const char* command) {
  if (machine.empty()) return;
  std::set<std::string> classes;
  for (const auto& r : h.runs()) classes.insert(r.machine);
  if (classes.count(machine)) return;
  std::string list;
  for (const auto& c : classes) list += "\n  " + c;
  throw UsageError(fmt::format("rocebench history {}: --machine {}: no such machine class in {}; it holds {}", command,
                               printable_excerpt(machine), h.file().string(), classes.empty() ? "no run yet" : "these:" + list));
}

// Prints what the newest nights did not measure, and adds it to `verdicts` as failures. Returns how
// many machine classes missed something.
std::size_t print_unmeasured(const History& h, const std::vector<HistorySeries>& series, const std::vector<HistoryRun>& runs,
                             const std::string& machine, std::vector<Verdict>& verdicts) {
  const auto gaps = unmeasured(series, runs, machine);
  for (const auto& u : gaps) {
    const std::string night = fmt::format("run {}", fmt::join(u.night, ", "));
    if (u.points == 0) {  // every series is missing: what the night's records say is the news
      const auto notes = h.notes_of(u.night);
      std::string why;
      for (const auto& n : notes) why += fmt::format("\n            {}{}: {}", n.step.empty() ? "" : n.step + " ", n.status, n.reason);
      const std::string text = fmt::format("the newest night ({}) measured nothing{}", night,
                                           why.empty() ? ": its records hold no result and no event (did the run die before its first "
                                                         "measurement?)" : "; its records say:" + why);
      std::cout << fmt::format("machine {}\n  NOT MEASURED {}\n", u.machine, text);
      verdicts.push_back({"history", u.machine + ": newest night", Outcome::fail, "NOT MEASURED: " + text});
      continue;
    }
    std::cout << fmt::format("machine {}\n  NOT MEASURED {} series that the night before (run {}) measured, in the newest night ({}):\n",
                             u.machine, u.missing.size(), u.missing.front()->points.back().night, night);
    const auto notes = h.notes_of(u.night);
    // One line per measurement (step, params, world) with its metrics: a lost size loses all of them.
    std::map<std::tuple<std::string, std::string, int>, std::pair<std::vector<std::string>, std::string>> lines;
    for (const HistorySeries* s : u.missing) {
      auto& [metrics, why] = lines[{s->step, s->params, s->world}];
      metrics.push_back(s->metric);
      why = u.why(*s, notes);
    }
    for (const auto& [key, line] : lines) {
      const auto& [step, params, world] = key;
      const std::string what = fmt::format("{} [{}] {}", step, fmt::join(line.first, ", "), series_label(json::parse(params), world));
      std::cout << fmt::format("    {}\n            {}\n", what, line.second);
      verdicts.push_back({"history", u.machine + ": " + what, Outcome::fail, "NOT MEASURED: " + line.second});
    }
  }
  return gaps.size();
}

// Prints every verdict but SAME (all: those too) and the counts; writes JUnit when `junit` is set.
// Its exit code: 1 when a series regressed or the newest night did not measure what the night before did, else 0.
NightCheck print_check(const History& h, const CheckOptions& o, const std::string& machine, bool all, const std::string& junit,
                       NightReruns* night_reruns = nullptr) {
  NightCheck out;
  const auto series = h.series(machine);
  const auto runs = h.runs();
  const auto checks = check_history(series, runs, o);
  std::map<Call, std::size_t> count;
  std::vector<Verdict> verdicts;
  std::string machine_shown, newest;  // newest: the run an UNKNOWN's reruns repeat
  for (const auto& r : runs) {
    if (machine.empty() || r.machine == machine) newest = r.night;
  }
  out.night = newest;
  // UNKNOWNs that reruns would decide and that later nights would: how many, and the most any asks for.
  struct Asked {
    std::size_t series = 0, most = 0;
    void add(std::size_t n) {
      series += n > 0;
      most = std::max(most, n);
    }
  } reruns, nights;
  for (const auto& c : checks) {
    ++count[c.verdict.call];
    const std::string label = c.series->machine + ": " + c.series->label();
    if (c.verdict.call == Call::unknown) {
      reruns.add(c.verdict.more_runs);
      nights.add(c.verdict.more_nights);
      out.unknown.insert(label);
      if (c.verdict.more_runs > 0) out.rerun_would_decide[label] = c.series->step;
      if (night_reruns) night_reruns->decided_after.erase(label);  // a later rerun took it back
    }
    std::string text = change_text(c);
    if (night_reruns && c.verdict.call != Call::unknown) {
      auto& decided = night_reruns->decided_after;
      if (night_reruns->unknown_before.count(label) && !decided.count(label)) decided[label] = night_reruns->made;
      if (decided.count(label)) text += fmt::format(" (decided after {} rerun(s) of the night)", decided[label]);
    }
    verdicts.push_back({"history", label,
                        c.verdict.call == Call::regressed ? Outcome::fail : Outcome::pass,
                        fmt::format("{}: {}", to_string(c.verdict.call), text)});
    if (c.verdict.call == Call::same && !all) continue;
    if (c.series->machine != machine_shown) std::cout << "machine " << (machine_shown = c.series->machine) << "\n";
    std::cout << fmt::format("  {:<9} {:>7}  {}\n            {}\n", to_string(c.verdict.call),
                             c.verdict.change ? fmt::format("{:+.1f}%", c.verdict.effect * 100) : "", c.series->label(), text);
  }
  const std::size_t gaps = print_unmeasured(h, series, runs, machine, verdicts);
  std::cout << fmt::format("{} series checked ({}): {} REGRESSED, {} IMPROVED, {} UNKNOWN, {} SAME\n", checks.size(),
                           o.since.empty() ? fmt::format("the last {} night(s)", o.window) : "since " + o.since,
                           count[Call::regressed], count[Call::improved], count[Call::unknown], count[Call::same]);
  if (night_reruns && night_reruns->made > 0) {
    std::cout << fmt::format("reruns: {} of night {} made; {} series decided by them, {} still UNKNOWN\n", night_reruns->made, newest,
                             night_reruns->decided_after.size(), count[Call::unknown]);
  }
  if (reruns.series) {
    std::cout << fmt::format("UNKNOWN: reruns would decide {} of them: make {} (the most any asks for), and add each rerun with "
                             "--rerun-of {} so that it joins that night\n", reruns.series, reruns.most, newest);
  }
  if (nights.series) {
    std::cout << fmt::format("UNKNOWN: a longer history would decide {} of them: up to {} more night(s)\n", nights.series, nights.most);
  }
  if (count[Call::unknown] > reruns.series + nights.series) {
    std::cout << fmt::format("UNKNOWN: a few reruns would not decide {} of them: each line says why (most: lower the noise)\n",
                             count[Call::unknown] - reruns.series - nights.series);
  }
  if (gaps) {
    std::cout << fmt::format("FAIL: the newest night of {} machine class(es) did not measure what it measured before (NOT MEASURED "
                             "above): a night that lost its measurements cannot show a regression\n", gaps);
  }
  if (!junit.empty()) write_file_atomically(junit, render_junit("rocebench history check", verdicts));
  out.exit_code = count[Call::regressed] || gaps ? kExitCheckFailed : kExitOk;
  return out;
}

int check_main(const Args& args) {
  std::string db, junit, machine;
  CheckOptions o;
  int window = static_cast<int>(o.window), min_baseline = static_cast<int>(o.judge.min_baseline);
  bool all = false;
  ArgParser p("rocebench history check",
              "Finds change points in every series of the history (E-divisive means, each tested by a t-test between\n"
              "the runs on either side: the same history always gives the same answer) and judges the newest runs:\n"
              "SAME, REGRESSED, IMPROVED, or UNKNOWN when the runs cannot decide (it says how many more would).\n"
              "Exit 1 on a regression.");
  p.option("--db", &db, "history database", "FILE")
      .option("--since", &o.since, "judge the runs from this one on (default: the last --window nights)", "RUN")
      .option("--window", &window, "nights judged without --since, each with its reruns (default 3)")
      .range(1, 1000)
      .option("--machine", &machine, "only this machine class", "CLASS")
      .option("--min-effect", &o.judge.min_effect, "smallest relative step that counts (default 0.05)")
      .range(0, 100)
      .option("--max-p", &o.judge.detect.max_p, "significance level of each change point (default 0.01)")
      .range(1e-12, 0.5)
      .option("--min-baseline", &min_baseline, "runs before the judged ones needed to judge (default 5)")
      .range(2, 100000)
      .option("--junit", &junit, "also write the verdicts as JUnit XML", "FILE")
      .flag("--all", &all, "list SAME series too");
  if (!p.parse(args)) return kExitOk;
  if (db.empty()) throw UsageError("rocebench history check: --db is missing\n\n" + p.usage());
  if (!junit.empty()) require_writable(junit, "--junit");
  o.window = static_cast<std::size_t>(window);
  o.judge.min_baseline = static_cast<std::size_t>(min_baseline);
  const History h(db, History::Mode::existing);
  require_machine(h, machine, "check");
  return print_check(h, o, machine, all, junit).exit_code;
}

int export_main(const Args& args) {
  std::string db, out, format = "prometheus", machine;
  ArgParser p("rocebench history export",
              "Writes the newest run's metrics (per machine class) as the node_exporter textfile collector reads them:\n"
              "one gauge per metric, labelled by machine, host, step, world and the step's params. The file is\n"
              "replaced atomically, so the collector never reads half of it; a newest run that measured nothing\n"
              "leaves it as it was (exit 1).");
  p.option("--db", &db, "history database", "FILE")
      .option("-o", &out, "output file (default: stdout), e.g. /var/lib/node_exporter/rocebench.prom", "FILE")
      .option("--format", &format, "prometheus (text format 0.0.4) or openmetrics", "NAME")
      .option("--machine", &machine, "only this machine class", "CLASS");
  if (!p.parse(args)) return kExitOk;
  if (db.empty()) throw UsageError("rocebench history export: --db is missing\n\n" + p.usage());
  if (!out.empty()) require_writable(out, "-o");
  if (format != "prometheus" && format != "openmetrics") {
    throw UsageError(fmt::format("rocebench history export: --format {}: must be prometheus or openmetrics", printable_excerpt(format)));
  }
  const History h(db, History::Mode::existing);
  require_machine(h, machine, "export");
  std::map<std::string, HistoryRun> newest;  // by machine class; runs() is in run order
  for (const auto& r : h.runs()) {
    if (machine.empty() || r.machine == machine) newest[r.machine] = r;
  }
  std::map<std::string, std::string> hosts;  // run -> "a,b"
  struct Gauge {
    std::string metric, better;  // as recorded, and its declared direction
    std::vector<std::string> samples;
  };
  std::map<std::string, Gauge> lines;  // by gauge name
  for (const auto& s : h.series(machine)) {
    const auto& last = s.points.back();
    if (last.run != newest[s.machine].run) continue;
    std::string labels = fmt::format("machine=\"{}\",step=\"{}\",world=\"{}\",run=\"{}\",revision=\"{}\"", prom_label_value(s.machine),
                                     prom_label_value(s.step), s.world, prom_label_value(last.run), prom_label_value(last.revision));
    const json params = json::parse(s.params);  // items() of a temporary would outlive it
    for (const auto& [k, v] : params.items()) {
      std::string name = prom_name(k);
      for (const char* taken : {"machine", "step", "world", "run", "revision", "host", "le", "quantile"}) {
        if (name == taken) name = "param_" + name;
      }
      labels += fmt::format(",{}=\"{}\"", name, prom_label_value(v.is_string() ? v.get<std::string>() : v.dump()));
    }
    if (!hosts.count(last.run)) hosts[last.run] = h.hosts_of(last.run);
    labels += fmt::format(",host=\"{}\"", prom_label_value(hosts[last.run]));
    Gauge& g = lines["rocebench_" + prom_name(s.metric)];
    if (g.samples.empty()) {
      const Better b = declared_shapes().better(s.step, s.metric);
      g = {s.metric, b == Better::higher ? "higher is better" : b == Better::lower ? "lower is better"
                     : b == Better::none ? "neither direction is better" : "direction undeclared", {}};
    }
    g.samples.push_back(fmt::format("{{{}}} {:.17g}", labels, last.value));
  }
  std::string text;
  for (const auto& [name, g] : lines) {
    text += fmt::format("# HELP {} rocebench {} of the newest run ({})\n# TYPE {} gauge\n", name, g.metric, g.better, name);
    for (const auto& s : g.samples) text += name + s + "\n";
  }
  if (lines.empty()) {
    std::string runs;
    for (const auto& [m, r] : newest) runs += (runs.empty() ? "" : ", ") + r.run;
    std::cerr << fmt::format("rocebench history export: nothing to export: the newest run ({}) measured nothing{}\n", runs,
                             out.empty() ? "" : "; " + out + " left as it was");
    return kExitCheckFailed;
  }
  if (format == "openmetrics") text += "# EOF\n";
  if (out.empty()) {
    std::cout << text;
    return kExitOk;
  }
  write_file_atomically(out, text);
  std::cerr << fmt::format("rocebench history export: {} metrics to {}\n", lines.size(), out);
  return kExitOk;
}

}  // namespace

NightCheck add_and_check(const std::filesystem::path& db, const std::filesystem::path& results, const std::filesystem::path& junit,
                         const std::string& rerun_of, NightReruns* reruns) {
  std::string machine;
  for (const auto& r : read_records(results).records) {
    if (r.value("kind", "") == "run") machine = machine_class(r, results.string());
  }
  History h(db, History::Mode::create);
  const AddResult added = h.add({results.string()}, {.rerun_of = rerun_of});
  std::cout << fmt::format("history: {} {}\n", added.added.empty() ? "already held this run:" : "added this run to", db.string());
  return print_check(h, CheckOptions{}, machine, false, junit.string(), reruns);
}

int history_main(const Args& args) {
  if (args.empty() || args[0] == "--help" || args[0] == "-h") {
    std::cout << kUsage;
    return args.empty() ? kExitBadInput : kExitOk;
  }
  const Args rest(args.begin() + 1, args.end());
  if (args[0] == "add") return add_main(rest);
  if (args[0] == "check") return check_main(rest);
  if (args[0] == "export") return export_main(rest);
  if (args[0] == "trends") return trends_main(rest);
  throw UsageError(fmt::format("rocebench history: unknown command '{}'\n\n{}", printable_excerpt(args[0]), kUsage));
}

}  // namespace rocebench::reports

#include "rocebench/reports/module.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <optional>
#include <iostream>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "rocebench/reports/history_cli.hpp"
#include "rocebench/common/atomic_write.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/reports/accept_actions.hpp"
#include "rocebench/reports/acceptance.hpp"
#include "rocebench/reports/baseline.hpp"
#include "rocebench/reports/exit_code.hpp"
#include "rocebench/reports/history.hpp"
#include "rocebench/reports/importers.hpp"
#include "rocebench/reports/report.hpp"
#include "rocebench/reports/tables.hpp"
#include "rocebench/reports/text.hpp"
#include "rocebench/reports/thresholds.hpp"

namespace rocebench::reports {

namespace {

namespace fs = std::filesystem;

// One side of a compare: evidence from a results file (with its first run record and plan, when it
// has them), or from a baseline file for one machine type.
struct Side {
  EvidenceMap evidence;
  std::optional<json> run;
  std::optional<PlanOfRun> plan;
};
Side side_of(const std::string& file, const std::string& machine) {
  if (is_baseline_file(file)) return {read_baseline(file, machine), std::nullopt, std::nullopt};
  const Dataset data = load_results({file});
  return {collect_evidence(data), data.runs.empty() ? std::nullopt : std::optional<json>(data.runs.front()), plan_of(data)};
}

// "BASE ran plan 'nightly' (sha256 1a2b3c4d5e6f)": the hash's first 12 digits tell plans apart.
std::string plan_text(const char* side, const PlanOfRun& plan) {
  return fmt::format("{} ran plan '{}' (sha256 {})", side, plan.name, plan.sha256.substr(0, 12));
}

// `report --accept DIR`: a finished acceptance judged again from its records alone (accept.jsonl and
// its stages' results), under the profile it ran under or another; the host x stage table and the
// exit code `accept` gave, for the same profile.
int accept_report(const std::string& dir, const std::string& profile_name, const accept::ActionOptions& actions) {
  if (!fs::is_directory(dir)) throw InputError(fmt::format("--accept '{}': not a folder", printable_excerpt(dir)));
  if (!fs::exists(fs::path(dir) / accept::kAcceptRecords)) {
    throw InputError(fmt::format("--accept '{}': not an acceptance's folder: it has no {} (rocebench accept writes it)", printable_excerpt(dir),
                                 accept::kAcceptRecords));
  }
  const accept::Acceptance recorded = accept::load_acceptance(dir);
  accept::Profile profile;
  if (profile_name.empty()) {
    profile = accept::profile_from_document(recorded.profile, recorded.profile_file);
  } else {
    try {
      profile = accept::load_profile(profile_name);
    } catch (const InputError& e) {
      throw InputError(fmt::format("--profile: {}", e.what()));
    }
  }
  std::cout << fmt::format("accept {} judged again from its records under profile {}{} (accepting over {})\n", dir,
                           profile.file, profile_name.empty() ? " (the one it ran under)" : "", profile.transport);
  const accept::Verdicts verdicts = accept::judge_acceptance(recorded, profile);
  std::cout << "\n" << accept::verdict_table(verdicts);
  accept::write_actions(actions, verdicts, accept::stamp_of(recorded, actions.valid_h));
  return acceptance_exit_code(verdicts);
}

int report_main(const Args& args) {
  ReportRequest r;
  std::string out_dir = r.out_dir.string();
  std::string accept_dir, profile;
  accept::ActionOptions actions;
  bool no_plots = false;
  ArgParser p("rocebench report", "Aggregate result records into a report: Markdown, HTML, PNG plots, JUnit XML and CSV.\n"
                                  "Judges the thresholds of --plan, or of the plan.json beside a single results file.\n"
                                  "With --accept, judges a finished acceptance again from its records and prints its host x stage table.\n"
                                  "Exit 1 when a record failed or is unverified, or a threshold or baseline verdict fails, as `rocebench run`\n"
                                  "exits (with --accept: when a node fails).");
  p.option("-o", &out_dir, "output folder (default: report)", "DIR")
      .option("--accept", &accept_dir, "an acceptance's folder (rocebench accept): judge it again from its records", "RUN")
      .option("--profile", &profile, fmt::format("with --accept: judge under this profile ({}, or a JSON file) instead of the one it ran under",
                                                 fmt::join(accept::builtin_profiles(), ", ")), "NAME|FILE")
      .option("--thresholds", &r.thresholds_file, "a plan or thresholds file with a top-level \"thresholds\" array", "FILE")
      .option("--plan", &r.thresholds_file, "the run's plan (default: plan.json beside the results, when there is one)", "FILE")
      .option("--baseline", &r.baseline_file, "judge against this baseline (rocebench compare --write-baseline)", "FILE")
      .option("--machine", &r.machine, "machine type in the baseline", "TYPE")
      .option("--min-effect", &r.min_effect, "smallest relative change called a regression (default 0.05)")
      .range(0, 100)
      .option("--title", &r.title, "report title", "TEXT")
      .flag("--no-plots", &no_plots, "skip the PNG plots")
      .rest("RESULTS", &r.inputs, "run folders or their results.jsonl (several runs: given in time order)");
  accept::declare_action_options(p, actions);
  if (!p.parse(args)) return kExitOk;
  if (!profile.empty() && accept_dir.empty()) throw UsageError("rocebench report: --profile applies to --accept RUN\n\n" + p.usage());
  if (accept_dir.empty() && !(actions.k8s.empty() && actions.k8s_commands.empty() && actions.metrics.empty())) {
    throw UsageError("rocebench report: --k8s, --k8s-commands and --metrics apply to --accept RUN\n\n" + p.usage());
  }
  if (!accept_dir.empty()) {
    if (!r.inputs.empty()) throw UsageError("rocebench report: --accept RUN takes no results files\n\n" + p.usage());
    accept::check_action_options(actions);
    return accept_report(accept_dir, profile, actions);
  }
  if (r.inputs.empty()) throw UsageError("rocebench report: no results file given\n\n" + p.usage());
  r.out_dir = out_dir;
  r.plots = !no_plots;
  const ReportResult result = write_report(r);
  std::cout << result.summary;
  if (!result.verdicts.empty() && !result.thresholds_from.empty()) std::cout << "thresholds from " << result.thresholds_from << "\n";
  std::cout << fmt::format("report in {}{}\n", result.html.string(),
                           result.plots_missing.empty() ? "" : " (no plots: " + result.plots_missing + ")");
  return result.exit_code;
}

int compare_main(const Args& args) {
  std::string base, now, junit, baseline_out, machine, db;
  double min_effect = 0.05, alpha = 0.05;
  bool all = false;
  ArgParser p("rocebench compare", "Compare two runs (or a run and a baseline) metric by metric. A change is a regression\n"
                                   "when it is larger than --min-effect, larger than either run's noise and significant;\n"
                                   "a change hidden by noise is UNKNOWN (rerun). Rows: largest change first. Exit 1 on a regression.\n"
                                   "With --write-baseline, write BASE's metrics as the baseline of --machine instead.");
  p.option("--junit", &junit, "also write the verdicts as JUnit XML", "FILE")
      .option("--min-effect", &min_effect, "smallest relative change that counts (default 0.05)")
      .range(0, 100)
      .option("--alpha", &alpha, "significance level of the Mann-Whitney test (default 0.05)")
      .range(1e-9, 0.5)
      .option("--machine", &machine, "machine type in a baseline file; with --db, NEW's machine class when NEW has no run "
                                     "record (records imported from other tools)", "TYPE")
      .option("--db", &db, "history database: a change must also stand out of how much runs vary on NEW's machine class",
              "FILE")
      .option("--write-baseline", &baseline_out, "write BASE as a baseline to FILE (and compare nothing)", "FILE")
      .flag("--all", &all, "list unchanged metrics too")
      .positional("BASE", &base, "a run folder, its results.jsonl, or a baseline file")
      .positional("NEW", &now, "a run folder or its results.jsonl", false);
  if (!p.parse(args)) return kExitOk;
  if (!junit.empty()) require_writable(junit, "--junit");

  if (!baseline_out.empty()) {
    if (!now.empty()) throw UsageError("rocebench compare: --write-baseline takes one results file\n\n" + p.usage());
    const auto evidence = collect_evidence(load_results({base}));
    write_baseline(baseline_out, machine.empty() ? "default" : machine, evidence, {base});
    std::cout << fmt::format("wrote {} metrics as baseline '{}' to {}\n", evidence.size(), machine.empty() ? "default" : machine, baseline_out);
    return kExitOk;
  }
  if (now.empty()) throw UsageError("rocebench compare: NEW is missing\n\n" + p.usage());
  const Side base_side = side_of(base, machine), new_side = side_of(now, machine);
  CompareOptions options{min_effect, alpha, {}};
  // Runs of two plans: only what both ran is judged; what one ran alone is listed, never a failure.
  options.same_plan = !base_side.plan || !new_side.plan || base_side.plan->sha256 == new_side.plan->sha256;
  if (!db.empty()) {
    if (!new_side.run && machine.empty()) {
      throw InputError(now, 0, "kind", "no run record: --db needs NEW's machine class (records from other tools: give --machine CLASS)");
    }
    const std::string machine_class_of_new = new_side.run ? machine_class(*new_side.run, now) : machine;
    options.run_noise = run_noise(History(db, History::Mode::existing).series(machine_class_of_new));
  }
  const auto comparisons = compare(base_side.evidence, new_side.evidence, options);
  // Largest changes first; metrics in one run only after them.
  std::vector<const Comparison*> rows;
  for (const auto& c : comparisons) rows.push_back(&c);
  auto size = [](const Comparison* c) { return c->base && c->now ? std::abs(c->effect) : -1.0; };
  std::stable_sort(rows.begin(), rows.end(), [&](const auto* a, const auto* b) { return size(a) > size(b); });
  std::map<Change, std::size_t> count;
  if (!options.same_plan) {
    std::cout << fmt::format("plans differ: {}, {}: only the metrics both measured are judged\n", plan_text("BASE", *base_side.plan),
                             plan_text("NEW", *new_side.plan));
  }
  std::cout << fmt::format("{:<10} {:>12} {:>12} {:>8}  {:<26} {}\n", "verdict", "base", "new", "effect", "significance", "metric");
  for (const Comparison* c : rows) {
    ++count[c->change];
    if (c->change == Change::same && !all) continue;
    std::cout << fmt::format("{:<10} {:>12} {:>12} {:>8}  {:<26} {}\n", to_string(c->change), number(c->base), number(c->now),
                             effect_text(*c), c->significance, c->key.label());
  }
  const std::size_t regressions = count[Change::regressed] + count[Change::missing];
  std::cout << fmt::format("{} metrics compared: {} REGRESSED, {} IMPROVED, {} UNKNOWN, {} SAME, {} missing, {} new{}\n",
                           comparisons.size(), count[Change::regressed], count[Change::improved], count[Change::unknown],
                           count[Change::same], count[Change::missing], count[Change::added],
                           options.same_plan ? "" : fmt::format(", {} gone (BASE's plan only: not judged)", count[Change::gone]));
  if (count[Change::unknown]) {
    std::cout << "UNKNOWN: these runs cannot tell the change from their noise; each row says what would decide, and many "
                 "runs are judged with rocebench history check\n";
  }
  if (!junit.empty()) write_file_atomically(junit, render_junit("rocebench compare", verdicts(comparisons, "compare")));
  return regressions ? kExitCheckFailed : kExitOk;
}

int import_main(const Args& args) {
  std::string tool, file, output;
  ImportOptions o;
  ArgParser p("rocebench import", "Turn perftest, nccl-tests or OSU output into result records.");
  p.option("-o", &output, "append the records to this results.jsonl (default: stdout)", "FILE")
      .option("--run", &o.run, "run id of the records", "ID")
      .option("--host", &o.host, "host that ran the tool (default: from the output, else 'imported')", "HOST")
      .option("--peer", &o.peer, "the other endpoint of a perftest / OSU point-to-point test", "HOST")
      .option("--transport", &o.transport, "probe transport (perftest: verbs; OSU: mpi)", "NAME")
      .option("--bw-units", &o.bw_units, "unit of a perftest --out_json bandwidth: MiB/s (default) or Gb/s", "UNIT")
      .option("--op", &o.op, "nccl-tests collective when the output does not name it (allreduce, ...)", "OP")
      .option("--world", &o.world, "ranks, when the output does not say (OSU collectives)")
      .range(1, 1 << 20)
      .flag("--lenient", &o.lenient, "skip a bad row (listed on stderr and in the import event) instead of refusing the file")
      .positional("TOOL", &tool, "perftest | nccl-tests | osu")
      .positional("FILE", &file, "the tool's output (text, or JSON from perftest --out_json / nccl-tests -J)");
  if (!p.parse(args)) return kExitOk;
  // Refused before reading the tool's output: nothing is written into a file that is not a results file.
  const bool ends_mid_line = !output.empty() && check_results_file_for_append(output);
  const auto records = import_file(tool, file, o);
  const json& details = records.front()["details"];
  for (const auto& why : details.value("skipped_rows", json::array())) std::cerr << "rocebench import: skipped " << why.get<std::string>() << "\n";
  if (details.value("ranks", "") == "unknown") {
    std::cerr << "rocebench import: the output does not say how many ranks ran: records say ranks unknown (--world N gives it)\n";
  }
  if (output.empty()) {
    for (const auto& r : records) std::cout << r.dump() << "\n";
  } else {
    // A writer that died left its last line unfinished: ours start on a line of their own.
    if (ends_mid_line) std::ofstream(output, std::ios::app | std::ios::binary) << "\n";
    RecordWriter writer(output);
    for (const auto& r : records) writer.append(r);
    writer.sync();
    std::cerr << fmt::format("rocebench import: {} records appended to {}\n", records.size(), output);
  }
  return kExitOk;
}

}  // namespace

std::vector<Verdict> verdicts_of_compare(const EvidenceMap& base, const EvidenceMap& now, double min_effect) {
  return verdicts(compare(base, now, {min_effect, 0.05, {}}), "baseline");
}

std::vector<Subcommand> subcommands() {
  auto guarded = [](const char* name, int (*body)(const Args&)) {
    return [name, body](const Args& args) { return run_guarded(std::string("rocebench ") + name, [&] { return body(args); }); };
  };
  return {{"report", "render a report from result records", guarded("report", report_main)},
          {"compare", "compare two runs and flag regressions", guarded("compare", compare_main)},
          {"import", "turn perftest / nccl-tests / OSU output into records", guarded("import", import_main)},
          {"history", "results across runs: add, check for regressions, export, trends", guarded("history", history_main)}};
}

}  // namespace rocebench::reports

#include "rocebench/reports/report.hpp"

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "rocebench/common/atomic_write.hpp"
#include "rocebench/common/cli.hpp"
#include "rocebench/common/errors.hpp"
#include "rocebench/reports/baseline.hpp"
#include "rocebench/reports/exit_code.hpp"
#include "rocebench/reports/lossless_verdict.hpp"
#include "rocebench/reports/tables.hpp"
#include "rocebench/reports/text.hpp"
#include "rocebench/reports/thresholds.hpp"

namespace rocebench::reports {

namespace {

namespace fs = std::filesystem;

// The thresholds to judge: the file asked for, else the plan the run wrote beside its results.
std::string thresholds_file_of(const ReportRequest& r) {
  if (!r.thresholds_file.empty() || r.inputs.size() != 1) return r.thresholds_file;
  const fs::path beside = fs::path(r.inputs.front()).parent_path() / "plan.json";
  return fs::exists(beside) ? beside.string() : "";
}

std::string headline_of_point(const ScalingSeries& s, const ScalingPoint& p) {
  std::string out = fmt::format("{} images/s at {} {}", number(p.images_per_s), p.gpus, s.ranks());
  // models.train: every rank trains at once on its own, so the figure is one rank's throughput while
  // the others train beside it (on shared CPUs, its share of them: the step's console lines say so).
  if (s.independent()) {
    out += ", the median rank's own, its ranks training at once without exchanging anything";
    if (p.threads && p.cpus) {
      out += fmt::format(" ({} thread{} a rank on {} CPU{})", number(p.threads), *p.threads == 1 ? "" : "s", number(p.cpus), *p.cpus == 1 ? "" : "s");
    }
    return out;
  }
  if (p.speedup && p.gpus != s.base_gpus) out += fmt::format(", speedup {}× (efficiency {})", number(p.speedup), number(p.efficiency));
  // Where scaling is lost: "exposed allreduce 41 ms per step, the update waits from bucket 3 of 5".
  if (p.exposed_comm_ms && p.gpus > 1) {
    out += fmt::format("; exposed communication {} ms per step", number(p.exposed_comm_ms));
    if (!p.waited_text().empty()) out += ", " + p.waited_text();
  }
  return out;
}

void training_lines(const Aggregate& a, std::vector<std::string>& out) {
  for (const auto& s : a.scaling) {
    const ScalingPoint* widest = nullptr;
    for (const auto& p : s.points) {
      if (p.images_per_s) widest = &p;
    }
    if (widest) out.push_back(fmt::format("  {}: {}", s.label(), headline_of_point(s, *widest)));
  }
}

void prediction_lines(const Aggregate& a, std::vector<std::string>& out) {
  for (const auto& s : a.predicted) {
    for (const auto& p : s.points) {
      if (p.loss) out.push_back(fmt::format("  {}: {}", s.label(), scaling_loss_text(*p.loss)));
    }
  }
}

void collective_lines(const Aggregate& a, std::vector<std::string>& out) {
  for (const auto& c : a.size_curves) {
    if (!c.measured()) continue;
    const CurvePoint* peak = nullptr;
    int wrong = 0;
    for (const auto& p : c.points) {
      if (p.busbw && (!peak || *p.busbw > *peak->busbw)) peak = &p;
      wrong += p.wrong && *p.wrong != 0;
    }
    std::string line = peak ? fmt::format("  {}: peak busbw {} GB/s at {}", c.label(), number(peak->busbw), bytes_text(peak->x))
                            : fmt::format("  {}: no bus bandwidth recorded", c.label());
    if (wrong) line += fmt::format(", WRONG RESULTS at {} size(s)", wrong);
    out.push_back(line);
  }
}

void probe_lines(const Aggregate& a, std::vector<std::string>& out) {
  for (const auto& row : a.probes.rows) {
    for (const auto& source : a.probes.sources) {  // RoCE before TCP
      const auto found = row.by_source.find(source);
      if (found == row.by_source.end()) continue;
      const auto& m = found->second;
      const auto get = [&m](const char* name) {
        const auto it = m.find(name);
        return it == m.end() ? std::optional<double>() : std::optional<double>(it->second);
      };
      const std::string what = row.test == "latency"
                                   ? fmt::format("p50 {} µs, p99 {} µs", number(get("lat_us_p50")), number(get("lat_us_p99")))
                                   : fmt::format("{} Gb/s", number(get("bw_avg_Gbps")));
      out.push_back(fmt::format("  {} {} {} → {}, {}: {}", source, row.test, row.host, row.peer, bytes_text(row.bytes), what));
    }
  }
}

void pair_lines(const Aggregate& a, std::vector<std::string>& out) {
  for (const auto& m : a.pairs) {
    std::size_t flagged = 0, cells = 0;
    for (const auto& [src, row] : m.cells) {
      for (const auto& [dst, cell] : row) {
        ++cells;
        flagged += cell.flagged;
      }
    }
    out.push_back(fmt::format("  all pairs {} ({} hosts): {} of {} pairs flagged{}", m.test, m.hosts.size(), flagged, cells,
                              m.summary.empty() ? "" : "; " + m.summary));
  }
}

void netcheck_lines(const Aggregate& a, std::vector<std::string>& out) {
  std::map<std::string, std::size_t> counts;
  std::vector<std::string> failures;
  for (const auto& row : a.netcheck.rows) {
    for (const auto& [host, cell] : row.by_host) {
      ++counts[cell.status];
      if (cell.status == "fail" || cell.status == "warn") {
        failures.push_back(fmt::format("    {} {} {} {}: expected {}, observed {}{}", cell.status == "fail" ? "FAIL" : "WARN", host,
                                       row.check, row.subject, cell.expected, cell.observed,
                                       cell.hint.empty() ? "" : "; fix: " + cell.hint));
      } else if (cell.status == "unverified") {  // not a pass: say what could not be read and how to read it
        failures.push_back(fmt::format("    UNVERIFIED {} {} {}: {}{}", host, row.check, row.subject, cell.reason,
                                       cell.hint.empty() ? "" : "; to verify: " + cell.hint));
      }
    }
  }
  if (counts.empty()) return;
  std::vector<std::string> parts;
  for (const auto& [status, n] : counts) parts.push_back(fmt::format("{} {}", n, status));
  out.push_back(fmt::format("  {} checks on {} host(s): {}", a.netcheck.rows.size(), a.netcheck.hosts.size(), fmt::join(parts, ", ")));
  out.insert(out.end(), failures.begin(), failures.end());
}

// Each reason once, with what it stopped: "no GPU: collectives.allreduce (1 record), models.train (4)".
void skip_lines(const Dataset& d, std::vector<std::string>& out) {
  std::map<std::string, std::map<std::string, std::size_t>> what_by_reason;
  for (const auto& o : d.results) {
    if (o.status != Status::skip) continue;
    std::string what = d.names.str(o.step);
    for (const char* name : {"algorithm", "transport", "test", "model", "engine"}) {
      const std::string v = param_text(d.params_of(o), name);
      if (!v.empty()) what += " " + v;
    }
    what_by_reason[o.reason == kNoName ? "no reason recorded" : d.names.str(o.reason)][what]++;
  }
  for (const auto& c : d.checks) {
    if (c.record.value("status", "") != "skip") continue;
    what_by_reason[c.record.value("reason", "no reason recorded")]["check " + c.record.value("check", "?")]++;
  }
  for (const auto& [reason, what] : what_by_reason) {
    std::vector<std::string> parts;
    for (const auto& [step, n] : what) parts.push_back(n == 1 ? step : fmt::format("{} ({} records)", step, n));
    out.push_back(fmt::format("  {}: {}", reason, fmt::join(parts, ", ")));
  }
}

void failure_lines(const Dataset& d, std::vector<std::string>& out) {
  for (const auto& o : d.results) {
    if (o.status != Status::fail && o.status != Status::error) continue;
    out.push_back(fmt::format("  {} {} rank {} on {}: {}", to_string(o.status), d.names.str(o.step), o.rank, d.names.str(o.host),
                              o.reason == kNoName ? "no reason recorded" : d.names.str(o.reason)));
  }
}

}  // namespace

std::string console_summary(const Dataset& data, const Aggregate& agg, const std::vector<Verdict>& verdicts) {
  std::string out;
  const auto section = [&out](const std::string& title, void (*fill)(const Aggregate&, std::vector<std::string>&), const Aggregate& a) {
    std::vector<std::string> lines;
    fill(a, lines);
    if (lines.empty()) return;
    out += title + "\n";
    for (const auto& l : lines) out += l + "\n";
  };
  section("training (images/s at the most ranks measured):", training_lines, agg);
  section("predicted, where scaling is lost (models.predict, not measured):", prediction_lines, agg);
  section("collectives (peak bus bandwidth):", collective_lines, agg);
  section("probes:", probe_lines, agg);
  section("links:", pair_lines, agg);
  section("netcheck:", netcheck_lines, agg);
  std::vector<std::string> lines;
  for (const auto& e : data.events) lines.push_back(fmt::format("  {}: {}", e.value("event", "?"), e.value("message", "")));
  if (!lines.empty()) out += "events:\n" + fmt::format("{}\n", fmt::join(lines, "\n"));
  lines.clear();
  failure_lines(data, lines);
  if (!lines.empty()) out += "failed:\n" + fmt::format("{}\n", fmt::join(lines, "\n"));
  lines.clear();
  skip_lines(data, lines);
  if (!lines.empty()) out += "skipped, by reason:\n" + fmt::format("{}\n", fmt::join(lines, "\n"));
  if (!agg.undeclared.empty()) out += fmt::format("in no table (no declaration covers them):\n  {}\n", fmt::join(agg.undeclared, "\n  "));
  std::size_t failed = 0;
  for (const auto& v : verdicts) {
    if (v.outcome == Outcome::pass) continue;
    ++failed;
    std::string message = v.message;  // a message of several lines: each further line indented under the first
    for (std::size_t at = message.find('\n'); at != std::string::npos; at = message.find('\n', at + 5)) message.replace(at, 1, "\n    ");
    out += fmt::format("{}: {}: {}\n", to_string(v.outcome), v.name, message);
  }
  out += verdicts.empty() ? "verdicts: no thresholds or baseline given, nothing was judged\n"
                          : fmt::format("verdicts: {} of {} pass\n", verdicts.size() - failed, verdicts.size());
  out += record_counts(agg) + (data.issues.empty() ? "" : fmt::format(", {} bad lines left out", data.issues.size())) + "\n";
  return out;
}

Dataset load_results(const std::vector<std::string>& files) {
  if (files.empty()) throw UsageError("no results file given");
  Dataset data;
  for (const auto& f : files) data.load(f);
  for (const auto& issue : data.issues) std::cerr << issue.text() << " (record skipped)\n";
  return data;
}

ReportResult write_report(const ReportRequest& request) {
  const Dataset data = load_results(request.inputs);
  const Aggregate agg = aggregate(data);

  ReportResult result;
  result.thresholds_from = thresholds_file_of(request);
  if (!result.thresholds_from.empty()) result.verdicts = judge(load_thresholds(result.thresholds_from), data, agg);
  std::vector<json> checks;
  for (const auto& c : data.checks) checks.push_back(c.record);
  const PfcPriorities pfc = pfc_priorities(checks);
  const auto lossless = lossless_verdicts(data.incast, pfc);
  result.verdicts.insert(result.verdicts.end(), lossless.begin(), lossless.end());
  if (!request.baseline_file.empty()) {
    const auto against = verdicts_of_compare(read_baseline(request.baseline_file, request.machine), collect_evidence(data),
                                             request.min_effect);
    result.verdicts.insert(result.verdicts.end(), against.begin(), against.end());
  }

  fs::create_directories(request.out_dir);
  Plots plots;
  if (!request.plots) plots.missing = "--no-plots was given";
  else plots = draw_plots(agg, request.out_dir / "plots", std::chrono::minutes(5));
  const auto sections = build_sections({&agg, &result.verdicts, &data.issues, &data.files, &plots, &data.incast, &pfc});
  write_file_atomically(request.out_dir / "report.md", render_markdown(request.title, sections, "plots"));
  write_file_atomically(request.out_dir / "report.html", render_html(request.title, sections));
  write_file_atomically(request.out_dir / "junit.xml", render_junit(request.title, result.verdicts));
  write_file_atomically(request.out_dir / "aggregate.csv", render_csv(agg));

  for (const auto& v : result.verdicts) result.failed += v.outcome != Outcome::pass;
  result.exit_code = run_exit_code(data, result.verdicts);
  result.html = request.out_dir / "report.html";
  result.plots_missing = plots.missing;
  result.summary = console_summary(data, agg, result.verdicts);
  return result;
}

}  // namespace rocebench::reports

#include "rocebench/reports/tables.hpp"

#include <algorithm>
#include <map>
#include <set>

#include <fmt/format.h>

#include "rocebench/reports/lossless_verdict.hpp"
#include "rocebench/reports/text.hpp"

namespace rocebench::reports {

namespace {

TableCell value_cell(const std::optional<double>& v, const std::string& missing) {
  if (v) return {number(*v), Mark::none};
  return {"missing" + (missing.empty() ? "" : " (" + missing + ")"), Mark::missing};
}

Mark outcome_mark(Outcome o) { return o == Outcome::pass ? Mark::good : o == Outcome::fail ? Mark::bad : Mark::missing; }

std::vector<std::filesystem::path> plots_named(const Plots* plots, const std::string& prefix) {
  std::vector<std::filesystem::path> out;
  if (!plots) return out;
  for (const auto& f : plots->files) {
    if (f.filename().string().rfind(prefix, 0) == 0) out.push_back(f);
  }
  return out;
}

Section verdict_section(const ReportInput& in) {
  Section s{"Verdicts", {}, {}, {}};
  std::size_t failed = 0;
  Table t{"", "", {"suite", "verdict", "outcome", "detail"}, {}};
  for (const auto& v : *in.verdicts) {
    failed += v.outcome != Outcome::pass;
    t.rows.push_back({{v.suite}, {v.name}, {to_string(v.outcome), outcome_mark(v.outcome)}, {v.message, Mark::words}});
  }
  if (in.verdicts->empty()) s.notes.push_back("No thresholds or baseline were given: nothing was judged.");
  else s.notes.push_back(fmt::format("{} of {} verdicts pass.", in.verdicts->size() - failed, in.verdicts->size()));
  if (!t.rows.empty()) s.tables.push_back(std::move(t));
  return s;
}

Section input_section(const ReportInput& in) {
  Section s{"Inputs", {}, {}, {}};
  s.notes.push_back(fmt::format("{} from {} file(s), {} run(s): {}.", record_counts(*in.agg), in.files->size(),
                                in.agg->runs.size(), fmt::join(in.agg->runs, ", ")));
  for (const auto& f : *in.files) s.notes.push_back("file: " + f);
  if (in.plots && !in.plots->missing.empty()) s.notes.push_back("Plots are missing: " + in.plots->missing + ".");
  if (!in.issues->empty()) {
    Table t{"Records skipped", "Each was reported and left out; the rest was used.", {"where", "problem"}, {}};
    for (const auto& i : *in.issues) t.rows.push_back({{i.file + ":" + std::to_string(i.line)}, {i.message, Mark::bad}});
    s.tables.push_back(std::move(t));
  }
  if (!in.agg->undeclared.empty()) {
    Table t{"Records no declaration covers", "A step kind declares the shape of its records in a shape.json beside its code.",
            {"what"}, {}};
    for (const auto& u : in.agg->undeclared) t.rows.push_back({{u, Mark::bad}});
    s.tables.push_back(std::move(t));
  }
  return s;
}

// Efficiency by world size, one column per series of a model, measured and predicted side by side
// (the predicted columns say so), and under it, in words, where each prediction loses its scaling at
// its largest world size and what would win it back.
void prediction_tables(const Aggregate& a, Section& s) {
  std::map<std::string, std::vector<const ScalingSeries*>> by_model;  // measured first, then predicted
  for (const auto& p : a.predicted) by_model[param_text(p.key, "model")];
  for (const auto& m : a.scaling) {
    const auto it = by_model.find(param_text(m.key, "model"));
    if (it != by_model.end() && !m.independent()) it->second.push_back(&m);
  }
  for (const auto& p : a.predicted) by_model[param_text(p.key, "model")].push_back(&p);
  for (const auto& [model, series] : by_model) {
    std::set<int> gpus;
    for (const ScalingSeries* x : series)
      for (const auto& p : x->points) gpus.insert(p.gpus);
    Table t{"Efficiency by world size: " + model,
            "Measured columns are runs; predicted ones are models.predict records (engine: predicted), never measurements.",
            {"GPUs"}, {}};
    for (const ScalingSeries* x : series) t.columns.push_back(x->line_label());
    for (int n : gpus) {
      std::vector<TableCell> row{{std::to_string(n)}};
      for (const ScalingSeries* x : series) {
        const ScalingPoint* p = x->at(n);
        if (!p || (!p->efficiency && !p->images_per_s)) row.push_back({"—"});
        else row.push_back(value_cell(p->efficiency, p->missing));
      }
      t.rows.push_back(std::move(row));
    }
    s.tables.push_back(std::move(t));
    Table lost{"Where scaling is lost: " + model, "Predicted at the largest world size of each prediction.", {"series", "in words"}, {}};
    for (const ScalingSeries* x : series) {
      for (const auto& p : x->points) {
        if (p.loss) lost.rows.push_back({{x->line_label()}, {scaling_loss_text(*p.loss), Mark::words}});
      }
    }
    if (!lost.rows.empty()) s.tables.push_back(std::move(lost));
  }
}

Section training_section(const ReportInput& in) {
  std::vector<std::filesystem::path> plots = plots_named(in.plots, "throughput_");
  for (auto& p : plots_named(in.plots, "speedup_")) plots.push_back(std::move(p));
  Section s{"Training throughput and scaling", {}, {}, plots};
  prediction_tables(*in.agg, s);
  std::vector<const ScalingSeries*> all;
  for (const auto& series : in.agg->scaling) all.push_back(&series);
  for (const auto& series : in.agg->predicted) all.push_back(&series);
  for (const ScalingSeries* each : all) {
    const ScalingSeries& series = *each;
    const std::string ranks = series.ranks();
    if (series.independent()) {
      Table t{series.label(), "Each rank trained alone on its own batch: throughput per rank, no speedup.",
              {ranks, "images/s (rank 0)"}, {}};
      for (const auto& p : series.points) t.rows.push_back({{std::to_string(p.gpus)}, value_cell(p.images_per_s, p.missing)});
      s.tables.push_back(std::move(t));
      continue;
    }
    const auto has = [&](auto member) {
      return std::any_of(series.points.begin(), series.points.end(), [&](const ScalingPoint& p) { return (p.*member).has_value(); });
    };
    const bool predicted = has(&ScalingPoint::predicted_speedup), exposed = has(&ScalingPoint::exposed_comm_ms);
    Table t{series.label(), "", {ranks, "images/s", "speedup", "efficiency", "ideal speedup"}, {}};
    if (predicted || exposed)
      t.note = "Exposed comm: how long a step's update waited for its gradients' reduction. Predicted: from one rank's "
               "compute timeline and an allreduce cost fitted in the same run.";
    if (series.predicted())  // its own note: the predicted-speedup column is models.scaling's, never shown here
      t.note = "Predicted, not measured (models.predict, engine: predicted): a compute timeline played on a fabric model. "
               "Exposed comm: how long a step's update waits for its gradients' reduction.";
    if (predicted) t.columns.push_back("predicted speedup");
    if (exposed) t.columns.push_back("exposed comm (ms)");
    if (series.base_gpus > 1) {
      t.note = fmt::format("No 1-rank value: speedup and efficiency are relative to {} {}. ", series.base_gpus, ranks) + t.note;
    }
    for (const auto& p : series.points) {
      std::vector<TableCell> row{{std::to_string(p.gpus)}, value_cell(p.images_per_s, p.missing), value_cell(p.speedup, p.missing),
                            value_cell(p.efficiency, p.missing), {p.ideal > 0 ? number(p.ideal) : "—"}};
      if (p.images_per_s && !p.alone_text().empty()) row[1].text += " (" + p.alone_text() + ")";
      // One rank alone is the base: nothing to predict, nothing to reduce.
      const bool alone = p.gpus == 1 && p.images_per_s;
      if (predicted) row.push_back(alone ? TableCell{"—"} : value_cell(p.predicted_speedup, p.missing));
      if (exposed) {
        TableCell cell = alone ? TableCell{"—"} : value_cell(p.exposed_comm_ms, p.missing);
        if (!alone && p.exposed_comm_ms && !p.waited_text().empty()) cell.text += " (" + p.waited_text() + ")";
        row.push_back(cell);
      }
      t.rows.push_back(std::move(row));
    }
    s.tables.push_back(std::move(t));
  }
  return s;
}

Section curves_section(const std::string& title, const std::vector<Curve>& curves, const std::vector<std::filesystem::path>& plots) {
  Section s{title, {}, {}, plots};
  for (const auto& c : curves) {
    if (!c.measured()) {
      s.notes.push_back(fmt::format("{}: not measured: {}", c.label(), c.why));
      continue;
    }
    Table t{c.label(), c.why.empty() ? "" : "Some ranks recorded no size: " + c.why,
            {c.x_name, "time (µs)", "algbw (GB/s)", "busbw (GB/s)", "#wrong"}, {}};
    for (const auto& p : c.points) {
      const bool wrong = p.wrong && *p.wrong != 0;
      t.rows.push_back({{c.x_name == "bytes" ? bytes_text(p.x) : number(p.x)}, value_cell(p.time_us, p.missing),
                        value_cell(p.algbw, p.missing), value_cell(p.busbw, p.missing),
                        {number(p.wrong), wrong ? Mark::bad : Mark::none}});
    }
    s.tables.push_back(std::move(t));
  }
  return s;
}

Section probe_section(const ReportInput& in) {
  Section s{"Probes: RoCE (verbs) and TCP side by side", {}, {}, plots_named(in.plots, "latency_")};
  const auto& probes = in.agg->probes;
  for (bool latency : {true, false}) {
    const std::vector<std::pair<std::string, std::string>> metrics =
        latency ? std::vector<std::pair<std::string, std::string>>{{"lat_us_p50", "p50 µs"}, {"lat_us_p99", "p99 µs"}, {"lat_us_p99_9", "p99.9 µs"}}
                : std::vector<std::pair<std::string, std::string>>{{"bw_avg_Gbps", "avg Gb/s"}, {"bw_peak_Gbps", "peak Gb/s"}, {"msg_rate_Mpps", "Mpps"}};
    Table t{latency ? "Latency" : "Bandwidth", "", {"test", "size", "host → peer"}, {}};
    for (const auto& src : probes.sources) {
      for (const auto& [m, label] : metrics) t.columns.push_back(src + " " + label);
    }
    for (const auto& row : probes.rows) {
      if ((row.test == "latency") != latency) continue;  // the probe variant its step declares
      std::vector<TableCell> cells{{row.test}, {bytes_text(row.bytes)}, {row.host + " → " + row.peer}};
      for (const auto& src : probes.sources) {
        const auto it = row.by_source.find(src);
        for (const auto& [m, label] : metrics) {
          std::optional<double> v;
          if (it != row.by_source.end()) {
            if (auto mv = it->second.find(m); mv != it->second.end()) v = mv->second;
          }
          cells.push_back(value_cell(v, it == row.by_source.end() ? "not measured" : ""));
        }
      }
      t.rows.push_back(std::move(cells));
    }
    if (!t.rows.empty()) s.tables.push_back(std::move(t));
  }
  for (const auto& line : probes.not_measured) s.notes.push_back("Not measured: " + line);
  return s;
}

Section pairs_section(const ReportInput& in) {
  Section s{"All pairs", {}, {}, plots_named(in.plots, "pairs_")};
  for (const auto& m : in.agg->pairs) {
    Table t{m.test + " (" + m.metric + ", source row → destination column)", "", {"src \\ dst"}, {}};
    for (const auto& h : m.hosts) t.columns.push_back(h);
    for (const auto& src : m.hosts) {
      std::vector<TableCell> row{{src}};
      for (const auto& dst : m.hosts) {
        const PairCell* cell = nullptr;
        if (auto r = m.cells.find(src); r != m.cells.end()) {
          if (auto c = r->second.find(dst); c != r->second.end()) cell = &c->second;
        }
        if (src == dst) row.push_back({"·"});
        else if (!cell) row.push_back({"missing", Mark::missing});
        else if (cell->flagged) row.push_back({number(cell->value) + " ✗ " + cell->reason, Mark::bad});
        else row.push_back({number(cell->value)});
      }
      t.rows.push_back(std::move(row));
    }
    if (!m.summary.empty()) t.note = (m.summary_failed ? "Hosts that stay bad: " : "Summary: ") + m.summary;
    s.tables.push_back(std::move(t));
  }
  return s;
}

// "ok: 6.1.0", "fail: [3, 4]", "skip: no RDMA device": what was seen, or why nothing was.
std::string check_text(const CheckCell& c) {
  const bool seen = !c.observed.empty() && c.observed != "null" && c.status != "skip" && c.status != "unverified";
  if (seen) return c.status + ": " + c.observed;
  return c.status + (c.reason.empty() ? "" : ": " + c.reason);
}

Section netcheck_section(const ReportInput& in) {
  const auto& nc = in.agg->netcheck;
  Section s{"Host configuration (netcheck)", {}, {}, {}};
  Table t{"Checks by host", "Cells show status: observed value. Rows marked 'differs' saw different values on different hosts.",
          {"check", "subject", "hosts differ"}, {}};
  for (const auto& h : nc.hosts) t.columns.push_back(h);
  Table fixes{"What to fix", "", {"host", "check", "subject", "expected", "observed", "hint"}, {}};
  for (const auto& row : nc.rows) {
    std::vector<TableCell> cells{{row.check}, {row.subject}, {row.differs ? "differs" : "", row.differs ? Mark::bad : Mark::none}};
    for (const auto& h : nc.hosts) {
      const auto it = row.by_host.find(h);
      if (it == row.by_host.end()) {
        cells.push_back({"missing", Mark::missing});
        continue;
      }
      const CheckCell& c = it->second;
      const bool bad = c.status == "fail" || c.status == "unverified";  // unverified is not a pass
      cells.push_back({check_text(c), bad ? Mark::bad : c.status == "ok" ? Mark::good : Mark::missing});
      if (bad || c.status == "warn") fixes.rows.push_back({{h}, {row.check}, {row.subject}, {c.expected}, {c.observed}, {c.hint}});
    }
    t.rows.push_back(std::move(cells));
  }
  s.tables.push_back(std::move(t));
  if (!fixes.rows.empty()) s.tables.push_back(std::move(fixes));
  return s;
}

// Each receiver's turn (goodput, fairness, its 100 ms tail, the senders that stalled) and each host's
// NIC counts per priority over the incast; the verdicts section judges them.
Section incast_section(const std::vector<json>& incast, const PfcPriorities& pfc) {
  Section s{"Lossless under load (incast)", {}, {}, {}};
  s.notes.push_back("Every host receives from all the others at once, in turn; each host's counters are read around every turn. "
                    "The lossless verdict per host is in the Verdicts section, with its evidence.");
  Table turns{"Receivers", "goodput per 100 ms: p1 (the stalls) and p50; a stalled sender's messages were given up after its turn",
              {"receiver", "transport", "goodput [Gb/s]", "of link", "fairness", "p1 100ms [Gb/s]", "p50 100ms [Gb/s]", "stalled senders"}, {}};
  std::map<std::string, std::map<int, PriorityCounts>> priorities;  // host -> what its NIC counted per priority, every turn
  auto metric_cell = [](const json& m, const char* name) -> TableCell {
    return m.contains(name) ? TableCell{number(m[name].get<double>())} : TableCell{"—", Mark::missing};
  };
  for (const json& r : incast) {
    const json& p = r["params"];
    const json metrics = r.value("metrics", json::object());
    if (!p.contains("role")) {
      std::vector<std::string> stalled;
      const json given_up = r.value("samples", json::object()).value("abandoned_messages", json::object());  // named: items() of a temporary would dangle
      for (const auto& [sender, left] : given_up.items()) {
        stalled.push_back(fmt::format("{} ({} messages)", sender, left.get<std::int64_t>()));
      }
      const bool low_tail =  // as the lossless verdict calls a stall
          metrics.value("interval_goodput_Gbps_p1", 1.0) < LosslessRule{}.stall_share * metrics.value("interval_goodput_Gbps_p50", 0.0);
      turns.rows.push_back({{p.value("receiver", "")}, {p.value("transport", "")}, metric_cell(metrics, "goodput_Gbps"),
                            metric_cell(metrics, "link_share"), metric_cell(metrics, "fairness_jain"),
                            {metrics.contains("interval_goodput_Gbps_p1") ? number(metrics["interval_goodput_Gbps_p1"].get<double>()) : "—",
                             low_tail ? Mark::bad : Mark::none},
                            metric_cell(metrics, "interval_goodput_Gbps_p50"),
                            {stalled.empty() ? "none" : fmt::format("{}", fmt::join(stalled, "\n")), stalled.empty() ? Mark::good : Mark::bad}});
      continue;
    }
    add_priority_counts(priorities[r.value("host", "")], metrics);
  }
  s.tables.push_back(std::move(turns));
  std::set<int> used;  // the priorities any host counted anything on
  for (const auto& [host, by_priority] : priorities) {
    for (const auto& [n, c] : by_priority) {
      if (c.bytes || c.paused_us || c.discards) used.insert(n);
    }
  }
  if (used.empty()) {
    s.notes.push_back("No host's NIC counted per priority (rxe and TCP do not): no host x priority table.");
    return s;
  }
  Table t{"Host x priority",
          "what each host's NIC counted on each priority over the incast, both ways: bytes, pause time, receive discards; "
          "\"no PFC\": RoCE bytes on a priority its host has no PFC on (netcheck), while it has PFC on another",
          {"host"}, {}};
  for (int n : used) t.columns.push_back(fmt::format("priority {}", n));
  for (const auto& [host, by_priority] : priorities) {
    std::vector<TableCell> row{{host}};
    const auto known = pfc.find(host);
    for (int n : used) {
      const PriorityCounts& c = by_priority.at(n);
      const bool no_pfc = known != pfc.end() && off_pfc(by_priority, n, known->second);
      std::vector<std::string> parts;
      if (c.bytes) parts.push_back(fmt::format("{} MB{}", number(static_cast<double>(c.bytes) / 1e6), no_pfc ? ", no PFC" : ""));
      if (c.paused_us) parts.push_back(fmt::format("paused {} ms", number(static_cast<double>(c.paused_us) / 1e3)));
      if (c.discards) parts.push_back(fmt::format("{} discarded", c.discards));
      row.push_back({parts.empty() ? "·" : fmt::format("{}", fmt::join(parts, "\n")), c.discards || no_pfc ? Mark::bad : Mark::none});
    }
    t.rows.push_back(std::move(row));
  }
  s.tables.push_back(std::move(t));
  return s;
}

Section trends_section(const ReportInput& in) {
  Section s{"Trends across runs", {}, {}, plots_named(in.plots, "trends")};
  s.notes.push_back(in.agg->runs_by_time ? "Runs are ordered by the time of their run record."
                                         : "Runs are in the order given: not every run has a run record with its time.");
  Table t{"", "", {"series", "metric"}, {}};
  for (std::size_t i = 0; i < in.agg->runs.size(); ++i) {
    const std::string& time = in.agg->run_times[i];
    t.columns.push_back(time.empty() ? in.agg->runs[i] : in.agg->runs[i] + " (" + time.substr(0, 16) + ")");
  }
  for (const auto& tr : in.agg->trends) {
    std::vector<TableCell> row{{tr.label}, {tr.metric}};
    for (const auto& v : tr.values) row.push_back(value_cell(v, "no record"));
    t.rows.push_back(std::move(row));
  }
  s.tables.push_back(std::move(t));
  return s;
}

}  // namespace

std::vector<Section> build_sections(const ReportInput& in) {
  const Aggregate& a = *in.agg;
  std::vector<Section> out{verdict_section(in), input_section(in)};
  if (!a.scaling.empty() || !a.predicted.empty()) out.push_back(training_section(in));
  if (!a.size_curves.empty()) {
    out.push_back(curves_section("Collectives: bus bandwidth against message size", a.size_curves, plots_named(in.plots, "busbw_size_")));
  }
  if (!a.world_curves.empty()) {
    out.push_back(curves_section("Collectives: bus bandwidth against ranks (largest size)", a.world_curves,
                                 plots_named(in.plots, "busbw_ranks_")));
  }
  if (!a.probes.rows.empty()) out.push_back(probe_section(in));
  if (!a.pairs.empty()) out.push_back(pairs_section(in));
  if (!a.netcheck.rows.empty()) out.push_back(netcheck_section(in));
  if (in.incast && !in.incast->empty()) out.push_back(incast_section(*in.incast, in.pfc ? *in.pfc : PfcPriorities{}));
  if (!a.trends.empty()) out.push_back(trends_section(in));
  return out;
}

}  // namespace rocebench::reports

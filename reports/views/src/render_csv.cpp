#include <fmt/format.h>

#include "rocebench/reports/tables.hpp"
#include "rocebench/reports/text.hpp"

namespace rocebench::reports {

namespace {

struct CsvWriter {
  std::string out = "section,series,x,metric,value,note\n";
  void row(const std::string& section, const std::string& series, double x, const std::string& metric,
           const std::optional<double>& value, const std::string& note) {
    out += fmt::format("{},{},{},{},{},{}\n", section, escape_csv(series), number(x), metric,
                       value ? fmt::format("{:.17g}", *value) : "", escape_csv(value ? "" : "missing: " + note));
  }
};

}  // namespace

std::string render_csv(const Aggregate& agg) {
  CsvWriter w;
  for (const auto& s : agg.scaling) {
    for (const auto& p : s.points) {
      w.row("training", s.label(), p.gpus, "images_per_s", p.images_per_s, p.missing);
      w.row("training", s.label(), p.gpus, "speedup", p.speedup, p.missing);
      w.row("training", s.label(), p.gpus, "efficiency", p.efficiency, p.missing);
    }
  }
  for (const auto* curves : {&agg.size_curves, &agg.world_curves}) {
    for (const auto& c : *curves) {
      const std::string section = "collectives_by_" + c.x_name;
      for (const auto& p : c.points) {
        w.row(section, c.label(), p.x, "time_us", p.time_us, p.missing);
        w.row(section, c.label(), p.x, "algbw_GBps", p.algbw, p.missing);
        w.row(section, c.label(), p.x, "busbw_GBps", p.busbw, p.missing);
      }
    }
  }
  for (const auto& r : agg.probes.rows) {
    for (const auto& [source, metrics] : r.by_source) {
      for (const auto& [m, v] : metrics) w.row("probes", r.test + " " + source + " " + r.host + "->" + r.peer, r.bytes, m, v, "");
    }
  }
  for (const auto& m : agg.pairs) {
    for (const auto& [src, row] : m.cells) {
      for (const auto& [dst, cell] : row) w.row("allpairs", m.test + " " + src + "->" + dst, 0, m.metric, cell.value, cell.reason);
    }
  }
  return w.out;
}

}  // namespace rocebench::reports

#include "rocebench/reports/thresholds.hpp"

#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "rocebench/common/located_json.hpp"
#include "embedded.hpp"
#include "rocebench/reports/shapes.hpp"
#include "rocebench/reports/text.hpp"

namespace rocebench::reports {

std::vector<Threshold> load_thresholds(const std::filesystem::path& file) {
  const LocatedJson doc = load_located(file);
  if (!doc.value.is_object()) doc.fail("", "expected a JSON object");
  if (!doc.value.contains("thresholds")) return {};
  // Validate only the thresholds, so a plan's other fields stay the harness's business.
  const auto errors = thresholds_schema().validate(json{{"thresholds", doc.value["thresholds"]}});
  if (!errors.empty()) doc.fail(errors.front().pointer, errors.front().message);
  std::vector<Threshold> out;
  for (const auto& t : doc.value["thresholds"]) {
    Threshold th;
    th.name = t["name"];
    th.step = t.value("step", std::string("models.train"));
    th.metric = t["metric"];
    th.op = t["op"];
    th.value = t["value"];
    th.where = t.value("where", json::object());
    if (t.contains("gpus")) th.gpus = t["gpus"].get<int>();
    th.of_link = t.contains("relative_to");
    if (t.contains("link_Gbps")) th.link_Gbps = t["link_Gbps"].get<double>();
    // The step's declaration (shapes.hpp) says what the metric is: a typo is an error, not a threshold
    // that never matches.
    const std::string at = "/thresholds/" + std::to_string(out.size());
    const StepShape* shape = declared_shapes().of(th.step);
    if (!shape) doc.fail(at + "/step", "'" + th.step + "' is not a step kind that declares its records (a shape.json)");
    const MetricShape* metric = shape->metric(th.metric);
    if (!metric) {
      std::string headlines;
      for (const auto& [name, m] : shape->metrics) {
        if (m.headline) headlines += (headlines.empty() ? "" : ", ") + name;
      }
      doc.fail(at + "/metric", fmt::format("'{}' is not a metric step {} declares (its headlines: {})", th.metric, th.step, headlines));
    }
    if (th.of_link) {
      // Gb/s per unit of the declared bandwidth units.
      static const std::map<std::string, double> per_Gbps{{"Gbps", 1.0}, {"GBps", 1.0 / 8}, {"MBps", 1e3 / 8}};
      const auto it = per_Gbps.find(metric->unit);
      if (it == per_Gbps.end()) {
        doc.fail(at + "/metric", fmt::format("\"relative_to\": \"link\" needs a bandwidth metric in Gbps, GBps or MBps, not '{}' ({})",
                                             th.metric, metric->unit));
      }
      th.per_Gbps = it->second;
    }
    out.push_back(std::move(th));
  }
  return out;
}

std::map<std::string, double> link_speeds(const json& run_record) {
  std::map<std::string, double> out;
  for (const auto& host : run_record.value("hosts", json::array())) {
    double fastest = 0;
    for (const auto& dev : host.value("netdevs", json::array())) {
      const auto speed = dev.find("speed_mbps");
      if (dev.value("name", "") == "lo" || dev.value("operstate", "up") != "up" || speed == dev.end() || !speed->is_number()) continue;
      fastest = std::max(fastest, speed->get<double>() / 1e3);
    }
    if (fastest > 0) out[host.value("hostname", "")] = fastest;
  }
  return out;
}

bool holds(double observed, const std::string& op, double limit) {
  if (op == ">=") return observed >= limit;
  if (op == ">") return observed > limit;
  if (op == "<=") return observed <= limit;
  if (op == "<") return observed < limit;
  return observed == limit;
}

namespace {

// The points a threshold looks at: a label, the value, or why there is none, and the limit it must
// hold (none when it depends on a link speed nobody recorded).
struct Point {
  std::string label;
  std::optional<double> value;
  std::string missing;
  std::optional<double> limit;
  double link_Gbps = 0;
};

// The speed of the link a record ran over: the slowest link among its hosts, which are the pair of
// a probe, or, for a job, every host of the run that holds one of its ranks.
class LinkSpeeds {
 public:
  explicit LinkSpeeds(const Dataset& d) : d_(d) {
    for (const auto& r : d.runs) {
      Run& run = runs_[r.value("run", "")];
      run.speeds = link_speeds(r);
      for (const auto& h : r.value("hosts", json::array())) {
        run.ranks.emplace_back(h.value("hostname", ""), h.value("ranks", std::vector<int>{}));
      }
    }
  }

  // Gb/s, or nullopt with `why` filled.
  std::optional<double> of(const Observation& o, std::string& why) const {
    const std::string& run_id = d_.names.str(o.run);
    const auto run = runs_.find(run_id);
    if (run == runs_.end()) {
      why = "run " + run_id + " has no run record to take link speeds from";
      return std::nullopt;
    }
    std::vector<std::string> hosts;
    const json& p = d_.params_of(o);
    if (p.contains("src") && p.contains("dst")) hosts = {param_text(p, "src"), param_text(p, "dst")};
    else if (p.contains("peer")) hosts = {d_.names.str(o.host), param_text(p, "peer")};
    else {
      for (const auto& [host, ranks] : run->second.ranks) {
        if (std::any_of(ranks.begin(), ranks.end(), [&](int r) { return r < o.world; })) hosts.push_back(host);
      }
    }
    std::optional<double> slowest;
    for (const auto& h : hosts) {
      const auto it = run->second.speeds.find(h);
      if (it == run->second.speeds.end()) {
        why = "link speed of " + h + " unknown (run " + run_id + " recorded no netdev speed for it; give link_Gbps)";
        return std::nullopt;
      }
      slowest = std::min(slowest.value_or(it->second), it->second);
    }
    if (!slowest) why = "no host of run " + run_id + " holds these ranks";
    return slowest;
  }

 private:
  struct Run {
    std::map<std::string, double> speeds;
    std::vector<std::pair<std::string, std::vector<int>>> ranks;
  };
  const Dataset& d_;
  std::map<std::string, Run> runs_;
};

std::vector<Point> scaling_points(const Threshold& t, const Aggregate& agg) {
  std::vector<Point> out;
  for (const auto& s : agg.scaling) {
    if (!matches(t.where, s.key)) continue;
    for (const auto& p : s.points) {
      if (t.gpus && p.gpus != *t.gpus) continue;
      const auto value = t.metric == "speedup" ? p.speedup : t.metric == "efficiency" ? p.efficiency : p.images_per_s;
      out.push_back({fmt::format("{} @ {} GPUs", s.label(), p.gpus), value,
                     p.missing.empty() ? "no 1-GPU or smaller base point" : p.missing, t.value});
    }
    if (t.gpus && !s.at(*t.gpus)) {
      out.push_back({fmt::format("{} @ {} GPUs", s.label(), *t.gpus), std::nullopt, "no record", t.value});
    }
  }
  return out;
}

std::vector<Point> record_points(const Threshold& t, const Dataset& data) {
  const std::uint32_t step = data.name_id(t.step);
  const std::uint32_t metric = data.name_id(t.metric);
  struct Group {
    Cell cell;
    std::optional<double> link_Gbps;  // the slowest link of the group's records
    std::string link_unknown;         // why one record's link speed is unknown
  };
  std::map<std::pair<std::uint32_t, int>, Group> groups;  // (params, world) -> values
  const LinkSpeeds links(data);
  for (const auto& o : data.results) {
    if (o.step != step) continue;
    const json& p = data.params_of(o);
    bool match = true;
    for (const auto& [k, v] : t.where.items()) {
      if (k == "world") match = match && v == o.world;
      else if (k == "host") match = match && v == data.names.str(o.host);
      else match = match && p.contains(k) && p[k] == v;
    }
    if (!match) continue;
    const bool good = o.status == Status::ok || o.status == Status::warn;
    const auto value = good && metric != kNoName ? o.metric(metric) : std::nullopt;
    if (good && !value) continue;  // a record about other metrics (another rank's, say)
    Group& g = groups[{o.params, o.world}];
    g.cell.add(value, o.reason == kNoName ? to_string(o.status) : data.names.str(o.reason));
    if (t.of_link && !t.link_Gbps && g.link_unknown.empty()) {
      const auto speed = links.of(o, g.link_unknown);
      if (speed) g.link_Gbps = std::min(g.link_Gbps.value_or(*speed), *speed);
    }
  }
  std::vector<Point> out;
  for (const auto& [key, g] : groups) {
    Point p{series_label(data.params[key.first], key.second), g.cell.median(), g.cell.missing_text(), t.value};
    if (t.of_link) {
      const auto link = t.link_Gbps ? t.link_Gbps : g.link_unknown.empty() ? g.link_Gbps : std::nullopt;
      p.limit = link ? std::optional<double>(t.value * *link * t.per_Gbps) : std::nullopt;
      p.link_Gbps = link.value_or(0);
      if (!link && p.value) p.missing = g.link_unknown;
    }
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace

std::vector<Verdict> judge(const std::vector<Threshold>& thresholds, const Dataset& data, const Aggregate& agg) {
  std::vector<Verdict> out;
  for (const auto& t : thresholds) {
    const StepShape* shape = declared_shapes().of(t.step);
    const bool scaling = shape && shape->view == "training" && (t.metric == "speedup" || t.metric == "efficiency" ||
                                                      (t.metric == "images_per_s" && t.gpus));
    const auto points = scaling ? scaling_points(t, agg) : record_points(t, data);
    Verdict v{"thresholds", t.name, Outcome::pass, ""};
    const std::string expected =
        !t.of_link     ? fmt::format("{} {} {:g}", t.metric, t.op, t.value)
        : t.link_Gbps ? fmt::format("{} {} {:g} × link ({:g} Gb/s)", t.metric, t.op, t.value, *t.link_Gbps)
                      : fmt::format("{} {} {:g} × link", t.metric, t.op, t.value);
    auto limit_text = [&](const Point& p) {
      return t.of_link ? fmt::format(" (limit {:.4g} = {:g} × {:g} Gb/s link)", *p.limit, t.value, p.link_Gbps) : "";
    };
    std::size_t failed = 0, missing = 0;
    std::string first_bad, first_missing;
    for (const auto& p : points) {
      if (!p.value || !p.limit) {
        ++missing;
        if (first_missing.empty()) first_missing = fmt::format("{}: missing ({})", p.label, p.missing);
      } else if (!holds(*p.value, t.op, *p.limit)) {
        if (failed++ == 0) first_bad = fmt::format("{}: {:.4g}{}", p.label, *p.value, limit_text(p));
      }
    }
    if (first_bad.empty()) first_bad = first_missing;
    if (points.empty()) {
      v.outcome = Outcome::missing;
      v.message = fmt::format("expected {}; no record matched step {} where {}", expected, t.step, t.where.dump());
    } else if (failed > 0) {
      v.outcome = Outcome::fail;
      v.message = fmt::format("expected {}; {} of {} points fail, e.g. {}", expected, failed, points.size(), first_bad);
    } else if (missing > 0) {
      v.outcome = Outcome::missing;
      v.message = fmt::format("expected {}; {} of {} points have no value, e.g. {}", expected, missing, points.size(), first_bad);
    } else {
      // The point closest to its limit (as a fraction of the limit, when limits differ by link).
      auto margin = [&](const Point& p) { return t.of_link ? *p.value / *p.limit : *p.value; };
      const Point* worst = &points.front();
      const bool higher_bound = t.op[0] == '>';
      for (const auto& p : points) {
        if (higher_bound ? margin(p) < margin(*worst) : margin(p) > margin(*worst)) worst = &p;
      }
      v.message = fmt::format("expected {}; all {} points hold (worst {:.4g}{})", expected, points.size(), *worst->value,
                              limit_text(*worst));
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace rocebench::reports

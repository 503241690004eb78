#include "rocebench/reports/thresholds.hpp"

#include <map>

#include <fmt/format.h>

#include "rocebench/common/located_json.hpp"
#include "rocebench/reports/embedded.hpp"

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
    out.push_back(std::move(th));
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

// The points a threshold looks at: a label, the value, or why there is none.
struct Point {
  std::string label;
  std::optional<double> value;
  std::string missing;
};

std::vector<Point> scaling_points(const Threshold& t, const Aggregate& agg) {
  std::vector<Point> out;
  for (const auto& s : agg.scaling) {
    if (!matches(t.where, s.key)) continue;
    for (const auto& p : s.points) {
      if (t.gpus && p.gpus != *t.gpus) continue;
      const auto value = t.metric == "speedup" ? p.speedup : t.metric == "efficiency" ? p.efficiency : p.images_per_s;
      out.push_back({fmt::format("{} @ {} GPUs", s.label(), p.gpus), value,
                     p.missing.empty() ? "no 1-GPU or smaller base point" : p.missing});
    }
    if (t.gpus && !s.at(*t.gpus)) out.push_back({fmt::format("{} @ {} GPUs", s.label(), *t.gpus), std::nullopt, "no record"});
  }
  return out;
}

std::vector<Point> record_points(const Threshold& t, const Dataset& data) {
  const std::uint32_t step = data.name_id(t.step);
  const std::uint32_t metric = data.name_id(t.metric);
  std::map<std::pair<std::uint32_t, int>, Cell> groups;  // (params, world) -> values
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
    groups[{o.params, o.world}].add(value, o.reason == kNoName ? to_string(o.status) : data.names.str(o.reason));
  }
  std::vector<Point> out;
  for (const auto& [key, cell] : groups) {
    std::string label;
    for (const auto& [k, v] : data.params[key.first].items()) label += (label.empty() ? "" : " ") + k + "=" + (v.is_string() ? v.get<std::string>() : v.dump());
    out.push_back({fmt::format("[{}] world={}", label, key.second), cell.median(), cell.missing_text()});
  }
  return out;
}

}  // namespace

std::vector<Verdict> judge(const std::vector<Threshold>& thresholds, const Dataset& data, const Aggregate& agg) {
  std::vector<Verdict> out;
  for (const auto& t : thresholds) {
    const bool scaling = t.step == "models.train" && (t.metric == "speedup" || t.metric == "efficiency" ||
                                                      (t.metric == "images_per_s" && t.gpus));
    const auto points = scaling ? scaling_points(t, agg) : record_points(t, data);
    Verdict v{"thresholds", t.name, Outcome::pass, ""};
    const std::string expected = fmt::format("{} {} {:g}", t.metric, t.op, t.value);
    std::size_t failed = 0, missing = 0;
    std::string first_bad;
    for (const auto& p : points) {
      if (!p.value) {
        ++missing;
        if (first_bad.empty()) first_bad = fmt::format("{}: missing ({})", p.label, p.missing);
      } else if (!holds(*p.value, t.op, t.value)) {
        if (failed++ == 0) first_bad = fmt::format("{}: {:.4g}", p.label, *p.value);
      }
    }
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
      double worst = *points.front().value;
      for (const auto& p : points) {
        const bool higher_bound = t.op[0] == '>';
        worst = higher_bound ? std::min(worst, *p.value) : std::max(worst, *p.value);
      }
      v.message = fmt::format("expected {}; all {} points hold (worst {:.4g})", expected, points.size(), worst);
    }
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace rocebench::reports

#include "rocebench/reports/shapes.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "rocebench/common/errors.hpp"
#include "rocebench/reports/dataset.hpp"
#include "embedded.hpp"

namespace rocebench::reports {

const char* to_string(Better b) {
  switch (b) {
    case Better::higher: return "higher";
    case Better::lower: return "lower";
    case Better::none: return "none";
    case Better::undeclared: return "undeclared";
  }
  return "undeclared";
}

const MetricShape* StepShape::metric(std::string_view name) const {
  const auto it = metrics.find(name);
  return it == metrics.end() ? nullptr : &it->second;
}

const Variant* StepShape::variant_of(const json& params) const {
  if (variant_param.empty()) return nullptr;
  const std::string value = param_text(params, variant_param);
  for (const auto& v : variants) {
    if (std::find(v.values.begin(), v.values.end(), value) != v.values.end()) return &v;
  }
  return nullptr;
}

std::string StepShape::sampled_of(const json& params) const {
  if (variant_param.empty()) return sampled;
  const Variant* v = variant_of(params);
  return v ? v->sampled : "";
}

namespace {

// Reads one file's declarations, failing with the file and the JSON pointer of what is wrong.
class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& at, const std::string& message) const { throw InputError(file_, 0, at, message); }

  std::string text(const json& o, const std::string& at, const char* key, bool required) const {
    const auto it = o.find(key);
    if (it == o.end()) {
      if (required) fail(at, fmt::format("missing \"{}\"", key));
      return "";
    }
    if (!it->is_string() || it->get_ref<const std::string&>().empty()) fail(at + "/" + key, "expected a non-empty string");
    return it->get<std::string>();
  }

  std::vector<std::string> texts(const json& o, const std::string& at, const char* key) const {
    std::vector<std::string> out;
    const auto it = o.find(key);
    if (it == o.end()) return out;
    if (!it->is_array()) fail(at + "/" + key, "expected an array of strings");
    for (std::size_t i = 0; i < it->size(); ++i) {
      if (!(*it)[i].is_string()) fail(fmt::format("{}/{}/{}", at, key, i), "expected a string");
      out.push_back((*it)[i].get<std::string>());
    }
    return out;
  }

  MetricShape metric(const json& m, const std::string& at) const {
    if (!m.is_object()) fail(at, "expected an object with \"unit\" and \"better\"");
    MetricShape out;
    out.unit = text(m, at, "unit", true);
    const std::string better = text(m, at, "better", true);
    if (better == "higher") out.better = Better::higher;
    else if (better == "lower") out.better = Better::lower;
    else if (better == "none") out.better = Better::none;
    else fail(at + "/better", "'" + better + "' is not higher, lower or none");
    out.headline = m.value("headline", false);
    const std::string samples = text(m, at, "samples", false);
    if (!samples.empty() && samples != "inverse of sampled") fail(at + "/samples", "'" + samples + "' is not \"inverse of sampled\"");
    out.inverse_of_sampled = !samples.empty();
    if (m.contains("count")) {
      if (!out.inverse_of_sampled) fail(at + "/count", "a count needs \"samples\": \"inverse of sampled\"");
      texts(m, at, "count");     // checked here, read with the step's sampled unit (step)
      out.rate = DeclaredRate{};
    }
    return out;
  }

  StepShape step(const json& d, const std::string& at) const {
    if (!d.is_object()) fail(at, "expected an object");
    StepShape s;
    s.steps = texts(d, at, "steps");
    if (s.steps.empty()) fail(at + "/steps", "names no step kind");
    s.series = texts(d, at, "series");
    s.x = text(d, at, "x", true);
    s.sampled = text(d, at, "sampled", false);
    s.view = text(d, at, "view", false);
    if (!s.view.empty() && s.view != "training" && s.view != "prediction" && s.view != "sweep" && s.view != "probe" &&
        s.view != "pairs") {
      fail(at + "/view", "'" + s.view + "' is not training, prediction, sweep, probe or pairs");
    }
    const auto metrics = d.find("metrics");
    if (metrics == d.end() || !metrics->is_object() || metrics->empty()) fail(at + "/metrics", "expected an object of metrics");
    for (const auto& [name, m] : metrics->items()) s.metrics.emplace(name, metric(m, at + "/metrics/" + name));
    auto declared = [&](const std::string& name, const std::string& where) {
      if (!name.empty() && !s.metric(name)) fail(where, "'" + name + "' is not one of the declared metrics");
    };
    declared(s.sampled, at + "/sampled");
    for (auto& [name, m] : s.metrics) {
      if (!m.rate) continue;
      if (s.sampled.empty() || !units_per_second(s.metric(s.sampled)->unit))
        fail(at + "/metrics/" + name + "/count", "a count needs a sampled metric that is a time (unit s, ms, us or ns)");
      m.rate = declared_rate(d, name);  // as the step that records the metric reads it
    }
    if (const auto v = d.find("variants"); v != d.end()) {
      if (!v->is_object()) fail(at + "/variants", "expected an object");
      s.variant_param = text(*v, at + "/variants", "param", true);
      const auto of = v->find("of");
      if (of == v->end() || !of->is_array() || of->empty()) fail(at + "/variants/of", "expected an array of variants");
      for (std::size_t i = 0; i < of->size(); ++i) {
        const json& body = (*of)[i];
        const std::string where = fmt::format("{}/variants/of/{}", at, i);
        if (!body.is_object()) fail(where, "expected an object");
        Variant variant{text(body, where, "name", true), texts(body, where, "values"), text(body, where, "headline", true),
                        text(body, where, "sampled", false)};
        declared(variant.headline, where + "/headline");
        declared(variant.sampled, where + "/sampled");
        s.variants.push_back(std::move(variant));
      }
    }
    return s;
  }

 private:
  std::string file_;
};

}  // namespace

Shapes::Shapes(const json& files) {
  for (const auto& [file, declarations] : files.items()) {
    const Reader read(file);
    if (!declarations.is_array()) read.fail("", "expected an array of step declarations");
    for (std::size_t i = 0; i < declarations.size(); ++i) {
      const std::string at = "/" + std::to_string(i);
      StepShape s = read.step(declarations[i], at);
      for (const auto& step : s.steps) {
        if (!by_step_.emplace(step, shapes_.size()).second) read.fail(at + "/steps", "step '" + step + "' is declared twice");
      }
      shapes_.push_back(std::move(s));
    }
  }
}

const StepShape* Shapes::of(std::string_view step) const {
  const auto it = by_step_.find(step);
  return it == by_step_.end() ? nullptr : &shapes_[it->second];
}

std::vector<const StepShape*> Shapes::with_view(std::string_view view) const {
  std::vector<const StepShape*> out;
  for (const auto& s : shapes_) {
    if (s.view == view) out.push_back(&s);
  }
  return out;
}

Better Shapes::better(std::string_view step, std::string_view metric) const {
  const StepShape* s = of(step);
  const MetricShape* m = s ? s->metric(metric) : nullptr;
  return m ? m->better : Better::undeclared;
}

const Shapes& declared_shapes() {
  static const Shapes shapes(json::parse(shape_declarations()));
  return shapes;
}

}  // namespace rocebench::reports

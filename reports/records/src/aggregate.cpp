#include "rocebench/reports/aggregate.hpp"

#include <algorithm>
#include <set>
#include <tuple>

#include <fmt/format.h>

#include "rocebench/common/stats.hpp"
#include "rocebench/reports/shapes.hpp"
#include "rocebench/reports/text.hpp"

namespace rocebench::reports {

void Cell::add(std::optional<double> value, const std::string& reason) {
  ++records;
  if (value) values.push_back(*value);
  else if (why_missing.empty()) why_missing = reason.empty() ? "no value recorded" : reason;
}

std::optional<double> Cell::median() const {
  if (values.empty()) return std::nullopt;
  std::vector<double> sorted = values;
  std::sort(sorted.begin(), sorted.end());
  return median_of_sorted(sorted);
}

std::string Cell::missing_text() const { return records == 0 ? "no record" : why_missing; }

bool matches(const json& where, const json& key) {
  for (const auto& [name, value] : where.items()) {
    const auto it = key.find(name);
    if (it == key.end() || *it != value) return false;
  }
  return true;
}

namespace {

std::string key_label(const json& key, const std::vector<std::string>& order) {
  std::string out;
  for (const auto& name : order) {
    const std::string v = param_text(key, name);
    if (v.empty()) continue;
    if (!out.empty()) out += " ";
    if (name == "batch") out += "batch " + v;
    else if (name == "world") out += v == "unknown" ? "ranks unknown" : v + " ranks";
    else if (name == "bytes") out += v + " B";
    else if (name == "inplace") out += v == "true" ? "in-place" : "out-of-place";
    else if (name == "bucket_mb") out += key[name] == 0 ? "one bucket after backward" : "buckets of " + v + " MiB";
    else if (name == "servers") out += v + (key[name] == 1 ? " server" : " servers");
    else if (name == "timeline") out += "timeline " + v;
    else if (name == "fabric") out += "on " + v;
    else if (name == "first_bucket_mb") out += "first bucket " + v + " MiB";
    else out += v;
  }
  return out;
}

// The params that identify a series of a view, as the step kinds shown there declare them (each
// view is one declaration today: the first one's).
const std::vector<std::string>& series_of_view(std::string_view view) {
  static const std::vector<std::string> none;
  const auto shapes = declared_shapes().with_view(view);
  return shapes.empty() ? none : shapes.front()->series;
}

// What identifies a training series: the model and how it was trained (the data-parallel ones add
// how gradients were averaged).
const std::vector<std::string>& training_key() { return series_of_view("training"); }

// A collective's series in labels: its declared params, then the ranks (and the size, for a curve
// over ranks).
std::vector<std::string> sweep_label_order() {
  std::vector<std::string> order = series_of_view("sweep");
  order.insert(order.end(), {"world", "bytes"});
  return order;
}

// A key made of the params that identify a series (absent params are left out).
json pick(const json& params, const std::vector<std::string>& names) {
  json key = json::object();
  for (const auto& n : names) {
    if (auto it = params.find(n); it != params.end()) key[n] = *it;
  }
  return key;
}

// Series of points (x -> metric -> Cell), grouped under families that share their expected x.
struct Group {
  json key;
  std::string family;
  std::map<double, std::map<std::string, Cell, std::less<>>> at;
  std::map<double, std::map<std::size_t, Cell>> headline_by_run;
  std::map<double, std::map<std::size_t, Cell>> predicted_by_run;  // training: predicted images/s, for its speedup
  std::map<double, std::vector<double>> samples;  // raw samples of the headline, where records kept them
  std::vector<std::string> order;  // the series params in label order, when not the training view's
  Cell unplaced;  // records without an x (a step skipped before its sweep began): the series' reason
};

class Grid {
 public:
  Group& group(const std::string& family, const json& key) {
    Group& g = groups_[family + "\n" + key.dump()];
    g.key = key;
    g.family = family;
    return g;
  }
  // Makes every group of a family hold every x seen in that family: a missing x stays empty.
  void expect_family_xs() {
    std::map<std::string, std::set<double>> xs;
    for (const auto& [id, g] : groups_) {
      for (const auto& [x, cells] : g.at) xs[g.family].insert(x);
    }
    for (auto& [id, g] : groups_) {
      for (double x : xs[g.family]) g.at[x];
    }
  }
  const std::map<std::string, Group>& groups() const { return groups_; }

 private:
  std::map<std::string, Group> groups_;
};

struct Names {
  std::uint32_t images = kNoName, step_p50 = kNoName, predicted_images = kNoName, exposed_comm = kNoName, waited_bucket = kNoName, buckets = kNoName, threads = kNoName, cpus = kNoName, time = kNoName, algbw = kNoName, busbw = kNoName, wrong = kNoName;
};

class Builder {
 public:
  explicit Builder(const Dataset& d) : d_(d) {
    n_.images = d.name_id("images_per_s");
    n_.step_p50 = d.name_id("step_time_ms_p50");
    n_.predicted_images = d.name_id("predicted_images_per_s");
    n_.exposed_comm = d.name_id("exposed_comm_ms");
    n_.waited_bucket = d.name_id("first_waited_bucket");
    n_.buckets = d.name_id("buckets");
    n_.threads = d.name_id("threads");
    n_.cpus = d.name_id("cpus");
    n_.time = d.name_id("time_us");
    n_.algbw = d.name_id("algbw_GBps");
    n_.busbw = d.name_id("busbw_GBps");
    n_.wrong = d.name_id("wrong");
    // What a prediction's what-if is read back from (scaling_loss_of).
    for (const char* m : {"step_time_ms", "efficiency", "nodes", "target_efficiency", "nic_Gbps_per_node", "needed_nic_Gbps_per_node",
                          "efficiency_unlimited_nic", "needed_bucket_mb", "best_bucket_mb", "best_bucket_efficiency"})
      loss_metrics_.emplace_back(m, d.name_id(m));
  }

  Aggregate build() {
    Aggregate a;
    a.records = d_.results.size() + d_.checks.size();
    for (const auto& o : d_.results) ++a.by_status[to_string(o.status)];
    for (const auto& c : d_.checks) ++a.by_status[c.record.value("status", "?")];
    order_runs(a);
    for (const auto& o : d_.results) route(o, run_index_.at(o.run));
    training_.expect_family_xs();
    predicted_.expect_family_xs();
    sizes_.expect_family_xs();
    probes_.expect_family_xs();
    a.scaling = scaling(training_);
    a.predicted = scaling(predicted_);
    a.size_curves = curves(sizes_, "bytes");
    a.world_curves = world_curves();
    a.probes = probe_table();
    a.pairs = pair_matrices();
    a.netcheck = netcheck();
    if (a.runs.size() > 1) a.trends = trends(a.runs.size());
    a.undeclared.assign(undeclared_.begin(), undeclared_.end());
    return a;
  }

 private:
  // Nightly runs may be given in any order (a shell glob sorts by name): trends follow the time of
  // each run's run record, when every run has one.
  void order_runs(Aggregate& a) {
    std::vector<std::uint32_t> ids;
    for (const auto& o : d_.results) {
      if (run_index_.try_emplace(o.run, ids.size()).second) ids.push_back(o.run);
    }
    std::map<std::string, std::string> time_of;
    for (const auto& r : d_.runs) time_of[r.value("run", "")] = r.value("time", "");
    std::vector<std::pair<std::optional<double>, std::uint32_t>> order;
    for (const auto id : ids) {
      const auto t = time_of.find(d_.names.str(id));
      order.emplace_back(t == time_of.end() ? std::nullopt : rfc3339_seconds(t->second), id);
    }
    a.runs_by_time = std::all_of(order.begin(), order.end(), [](const auto& o) { return o.first.has_value(); });
    if (a.runs_by_time) std::stable_sort(order.begin(), order.end(), [](const auto& x, const auto& y) { return *x.first < *y.first; });
    for (std::size_t i = 0; i < order.size(); ++i) {
      const std::string& run = d_.names.str(order[i].second);
      run_index_[order[i].second] = i;
      a.runs.push_back(run);
      const auto t = time_of.find(run);
      a.run_times.push_back(t == time_of.end() ? "" : t->second);
    }
  }

  std::string reason(const Observation& o) const {
    return o.reason == kNoName ? "status " + std::string(to_string(o.status)) : d_.names.str(o.reason);
  }
  std::optional<double> ok_metric(const Observation& o, std::uint32_t name) const {
    if (o.status != Status::ok && o.status != Status::warn) return std::nullopt;
    return name == kNoName ? std::nullopt : o.metric(name);
  }
  // The reason text is only built for a record without the value.
  void note(Cell& cell, const Observation& o, std::uint32_t metric) const {
    const auto value = ok_metric(o, metric);
    cell.add(value, value ? std::string() : reason(o));
  }
  void add(Group& g, double x, const Observation& o, std::size_t run, std::initializer_list<std::pair<std::string_view, std::uint32_t>> metrics,
           std::uint32_t headline) {
    auto& cells = g.at[x];
    for (const auto& [label, id] : metrics) {
      auto it = cells.find(label);
      if (it == cells.end()) it = cells.emplace(std::string(label), Cell()).first;
      note(it->second, o, id);
    }
    note(g.headline_by_run[x][run], o, headline);
  }

  // Where an observation goes. Computed once per distinct (step, params, world, host): building
  // keys is the costly part, and millions of records share a few thousand of them.
  enum class Kind { none, training, collective, probe, pairs };
  struct Target {
    Kind kind = Kind::none;
    Group* group = nullptr;
    double x = 0;
    const Variant* variant = nullptr;  // probe: the kind of measurement its params declare
    std::uint32_t headline = kNoName, sampled = kNoName;  // probe: the variant's metrics, by name id
    bool placed = true;  // the record names its x (bytes); a skip before the sweep does not
    const DeclaredRate* images_rate = nullptr;  // training: images/s of a step time, as declared
    bool predicted = false;  // training: a prediction, with its what-if
    std::vector<const Observation*>* by_world = nullptr;
  };

  const Target& target(const Observation& o) {
    const auto [it, inserted] = targets_.try_emplace({o.step, o.params, o.world, o.host});
    if (!inserted) return it->second;
    Target& t = it->second;
    const std::string& step = d_.names.str(o.step);
    const json& p = d_.params_of(o);
    const StepShape* shape = declared_shapes().of(step);
    if (!shape) {
      undeclared_.insert(fmt::format("step {}: no shape.json declares it, so no table shows its records", step));
      return t;
    }
    if (shape->view == "training") {
      t = {Kind::training,
           // Series of one model on one engine share the ranks they expect (a point measured for one
           // and not for another is missing there), except independent ranks, which make no curve.
           &training_.group(param_text(p, "model") + "\n" + param_text(p, "engine") +
                                (param_text(p, "mode") == "single" ? "\nsingle" : ""),
                            pick(p, shape->series)),
           static_cast<double>(o.world)};
      if (const MetricShape* images = shape->metric("images_per_s"); images && images->rate) t.images_rate = &*images->rate;
    } else if (shape->view == "prediction") {
      Group& g = predicted_.group(param_text(p, "model") + "\n" + param_text(p, "engine"), pick(p, shape->series));
      g.order = shape->series;
      t = {Kind::training, &g, static_cast<double>(o.world)};
      t.predicted = true;
    } else if (shape->view == "sweep") {
      const std::string op = step.substr(step.find('.') + 1);  // the step kind's name within its module
      json key = pick(p, shape->series);
      // Imported records whose output did not say how many ranks ran: never labelled or plotted as 1.
      const bool ranks_unknown = param_text(p, "ranks") == "unknown";
      key["world"] = ranks_unknown ? json("unknown") : json(o.world);
      t = {Kind::collective, &sizes_.group(op + "\n" + param_text(key, "world"), key), p.value(shape->x, 0.0)};
      t.placed = p.contains(shape->x);
      if (ranks_unknown) return t;
      key.erase("world");
      key["op"] = op;
      t.by_world = &by_world_[key.dump()];
    } else if (shape->view == "probe") {
      const Variant* variant = shape->variant_of(p);
      if (!variant) {
        undeclared_.insert(fmt::format("step {}: {} '{}' is none of the declared ones, so no table shows its records", step,
                                       shape->variant_param, param_text(p, shape->variant_param)));
        return t;
      }
      // Verbs tests name their operation (write_lat), TCP's do not (lat): the operation goes with the
      // source, so that RoCE and TCP at the same size sit in one row.
      const std::string test = param_text(p, "test");
      std::string op = test.substr(0, test.rfind('_') == std::string::npos ? 0 : test.rfind('_'));
      const std::string tool = param_text(p, "tool"), benchmark = param_text(p, "benchmark");  // osu_bw and osu_bibw stay apart
      const std::string source = param_text(p, "transport") + (op.empty() ? "" : " " + op) + (benchmark.empty() ? "" : " " + benchmark) +
                                 (tool.empty() ? "" : " (" + tool + ")");
      const json key = {{"test", variant->name}, {"host", d_.names.str(o.host)}, {"peer", param_text(p, "peer")}, {"source", source}};
      t = {Kind::probe, &probes_.group(variant->name, key), p.value(shape->x, 0.0)};
      t.variant = variant;
      t.headline = d_.name_id(variant->headline);
      t.sampled = variant->sampled.empty() ? kNoName : d_.name_id(variant->sampled);
      t.placed = p.contains(shape->x);
    } else if (shape->view == "pairs") {
      t.kind = Kind::pairs;
    }
    return t;
  }

  void route(const Observation& o, std::size_t run) {
    const Target& t = target(o);
    if (!t.placed) {
      t.group->unplaced.add(std::nullopt, reason(o));
      return;
    }
    switch (t.kind) {
      case Kind::training:
        // Every rank records its step times; the job's throughput is on rank 0's record.
        if (o.metric(n_.images) || (o.status != Status::ok && o.status != Status::warn)) {
          add(*t.group, t.x, o, run,
              {{"images_per_s", n_.images}, {"predicted_images_per_s", n_.predicted_images}, {"exposed_comm_ms", n_.exposed_comm},
               {"first_waited_bucket", n_.waited_bucket}, {"buckets", n_.buckets}, {"threads", n_.threads}, {"cpus", n_.cpus}},
              n_.images);
          note(t.group->predicted_by_run[t.x][run], o, n_.predicted_images);
          if (t.predicted) {
            auto& cells = t.group->at[t.x];
            for (const auto& [name, id] : loss_metrics_) note(cells[name], o, id);
          }
          // The one-rank point pooled from ranks trained alone in turn: its samples are their mean steps,
          // each one's images/s by the rate its step declares.
          if (t.x == 1 && o.samples.of == n_.step_p50 && o.samples.values.size() > 1 && t.images_rate) {
            const json& params = d_.params_of(o);
            const bool counted = t.images_rate->counted_by(params);
            for (double step_ms : o.samples.values)
              if (counted && step_ms > 0) t.group->samples[1].push_back(t.images_rate->of(params, step_ms));
          }
        }
        break;
      case Kind::collective:
        add(*t.group, t.x, o, run,
            {{"time_us", n_.time}, {"algbw_GBps", n_.algbw}, {"busbw_GBps", n_.busbw}, {"wrong", n_.wrong}}, n_.busbw);
        if (t.by_world) t.by_world->push_back(&o);
        break;
      case Kind::probe: {
        auto& cells = t.group->at[t.x];
        for (const auto& [id, value] : o.metrics) note(cells[d_.names.str(id)], o, id);
        if (o.metrics.empty()) cells[t.variant->headline].add(std::nullopt, reason(o));
        note(t.group->headline_by_run[t.x][run], o, t.headline);
        if (t.sampled != kNoName && o.samples.of == t.sampled && ok_metric(o, t.sampled)) {
          auto& raw = t.group->samples[t.x];
          raw.insert(raw.end(), o.samples.values.begin(), o.samples.values.end());
        }
        break;
      }
      case Kind::pairs:
        pairs_.push_back(&o);
        break;
      case Kind::none:
        break;
    }
  }

  using Cells = std::map<std::string, Cell, std::less<>>;
  static std::optional<double> value_of(const Cells& cells, const char* metric) {
    const auto it = cells.find(metric);
    return it == cells.end() ? std::nullopt : it->second.median();
  }
  static std::string missing_of(const Cells& cells, const char* metric) {
    const auto it = cells.find(metric);
    return it == cells.end() ? "no record" : it->second.missing_text();
  }

  std::vector<ScalingSeries> scaling(const Grid& grid) const {
    std::vector<ScalingSeries> out;
    for (const auto& [id, g] : grid.groups()) {
      ScalingSeries s;
      s.key = g.key;
      s.key_order = g.order;
      // Points run from the fewest GPUs up: the base is the first with a value, 1 GPU when there is one.
      for (const auto& [gpus, cells] : g.at) {
        if (value_of(cells, "images_per_s")) {
          s.base_gpus = static_cast<int>(gpus);
          break;
        }
      }
      const bool scales = s.base_gpus > 0 && !s.independent();
      for (const auto& [gpus, cells] : g.at) {
        ScalingPoint p;
        p.gpus = static_cast<int>(gpus);
        p.images_per_s = value_of(cells, "images_per_s");
        p.exposed_comm_ms = value_of(cells, "exposed_comm_ms");
        p.first_waited_bucket = value_of(cells, "first_waited_bucket");
        p.buckets = value_of(cells, "buckets");
        p.threads = value_of(cells, "threads");
        p.cpus = value_of(cells, "cpus");
        if (auto alone = g.samples.find(gpus); alone != g.samples.end()) p.ranks_alone = alone->second;
        if (scales) p.ideal = gpus / s.base_gpus;
        if (p.images_per_s && scales) speedup_of(g, p, s.base_gpus);
        if (!p.images_per_s) p.missing = missing_of(cells, "images_per_s");
        json loss_metrics = json::object();
        if (p.exposed_comm_ms) loss_metrics["exposed_comm_ms"] = *p.exposed_comm_ms;
        for (const auto& [name, name_id] : loss_metrics_) {
          if (const auto v = value_of(cells, name.c_str())) loss_metrics[name] = *v;
        }
        p.loss = scaling_loss_of(p.gpus, param_text(g.key, "sync"), loss_metrics);
        s.points.push_back(p);
      }
      out.push_back(std::move(s));
    }
    return out;
  }

  // The point's speedup and efficiency by scaling_over's rule: within each run over that run's base
  // point, then the median of the runs' (what compare and history make of the records' own).
  static void speedup_of(const Group& g, ScalingPoint& p, int base_gpus) {
    const auto runs = g.headline_by_run.find(p.gpus), base_runs = g.headline_by_run.find(base_gpus);
    if (runs == g.headline_by_run.end() || base_runs == g.headline_by_run.end()) return;
    const auto predicted_runs = g.predicted_by_run.find(p.gpus);
    std::vector<double> speedups, efficiencies, predicted;
    for (const auto& [run, cell] : runs->second) {
      const auto base_cell = base_runs->second.find(run);
      const auto x = cell.median(), base = base_cell == base_runs->second.end() ? std::nullopt : base_cell->second.median();
      if (!x || !base) continue;
      const Scaling scaling = scaling_over(*x, p.gpus, *base, base_gpus);
      speedups.push_back(scaling.speedup);
      efficiencies.push_back(scaling.efficiency);
      if (predicted_runs == g.predicted_by_run.end()) continue;
      const auto predicted_cell = predicted_runs->second.find(run);
      if (predicted_cell == predicted_runs->second.end()) continue;
      if (const auto x_predicted = predicted_cell->second.median())
        predicted.push_back(scaling_over(*x_predicted, p.gpus, *base, base_gpus).speedup);
    }
    if (speedups.empty()) {
      p.missing = fmt::format("no run measured both this point and the base point ({} rank{})", base_gpus, base_gpus == 1 ? "" : "s");
      return;
    }
    p.speedup = median_of(speedups);
    p.efficiency = median_of(efficiencies);
    if (!predicted.empty()) p.predicted_speedup = median_of(predicted);
  }

  static std::vector<Curve> curves(const Grid& grid, const std::string& x_name) {
    std::vector<Curve> out;
    for (const auto& [id, g] : grid.groups()) {
      Curve c;
      c.op = g.family.substr(0, g.family.find('\n'));
      c.key = g.key;
      c.x_name = x_name;
      for (const auto& [x, cells] : g.at) {
        CurvePoint p;
        p.x = x;
        p.time_us = value_of(cells, "time_us");
        p.algbw = value_of(cells, "algbw_GBps");
        p.busbw = value_of(cells, "busbw_GBps");
        p.wrong = value_of(cells, "wrong");
        if (!p.time_us && !p.busbw) p.missing = missing_of(cells, "busbw_GBps");
        c.points.push_back(p);
      }
      if (g.unplaced.records) c.why = g.unplaced.missing_text();
      if (!c.measured()) {
        if (c.why.empty() && !c.points.empty()) c.why = c.points.front().missing;
        c.points.clear();
      }
      out.push_back(std::move(c));
    }
    return out;
  }

  // Bandwidth against ranks, at the largest message size each family measured.
  std::vector<Curve> world_curves() {
    Grid grid;
    for (const auto& [family_key, observations] : by_world_) {
      double largest = 0;
      for (const Observation* o : observations) largest = std::max(largest, d_.params_of(*o).value("bytes", 0.0));
      json key = json::parse(family_key);
      const std::string op = key["op"];
      key.erase("op");
      key["bytes"] = largest;
      for (const Observation* o : observations) {
        if (d_.params_of(*o).value("bytes", 0.0) != largest) continue;
        add(grid.group(op, key), o->world, *o, 0,
            {{"time_us", n_.time}, {"algbw_GBps", n_.algbw}, {"busbw_GBps", n_.busbw}, {"wrong", n_.wrong}}, n_.busbw);
      }
    }
    grid.expect_family_xs();
    std::vector<Curve> out = curves(grid, "ranks");
    std::erase_if(out, [](const Curve& c) { return c.points.size() < 2; });
    return out;
  }

  ProbeTable probe_table() const {
    ProbeTable t;
    std::map<std::tuple<std::string, double, std::string, std::string>, ProbeRow> rows;
    std::set<std::string> sources;
    for (const auto& [id, g] : probes_.groups()) {
      const std::string source = g.key["source"];
      const bool measured = std::any_of(g.at.begin(), g.at.end(), [](const auto& x) {
        return std::any_of(x.second.begin(), x.second.end(), [](const auto& m) { return m.second.median().has_value(); });
      });
      if (!measured) {
        std::string why = g.unplaced.records ? g.unplaced.missing_text() : "";
        for (const auto& [x, cells] : g.at) {
          for (const auto& [m, cell] : cells) {
            if (why.empty() && cell.records) why = cell.missing_text();
          }
        }
        if (why.empty()) why = "no value recorded";
        t.not_measured.push_back(fmt::format("{} {} from {}: {}", source, g.key["test"].get<std::string>(),
                                             g.key["host"].get<std::string>(), why));
        continue;
      }
      sources.insert(source);
      for (const auto& [bytes, cells] : g.at) {
        ProbeRow& row = rows[{g.key["test"], bytes, g.key["host"], g.key["peer"]}];
        row.test = g.key["test"];
        row.host = g.key["host"];
        row.peer = g.key["peer"];
        row.bytes = bytes;
        auto& metrics = row.by_source[source];
        for (const auto& [metric, cell] : cells) {
          if (auto v = cell.median()) metrics[metric] = *v;
        }
        if (auto raw = g.samples.find(bytes); raw != g.samples.end() && !raw->second.empty()) row.samples[source] = raw->second;
      }
    }
    for (auto& [id, row] : rows) t.rows.push_back(std::move(row));
    t.sources.assign(sources.begin(), sources.end());
    // RoCE first, then TCP, so that the two sit side by side.
    std::stable_sort(t.sources.begin(), t.sources.end(), [](const std::string& a, const std::string& b) {
      return (a.rfind("verbs", 0) == 0) > (b.rfind("verbs", 0) == 0);
    });
    return t;
  }

  std::vector<PairMatrix> pair_matrices() const {
    std::map<std::string, PairMatrix> by_test;
    std::vector<const Observation*> summaries;
    for (const Observation* o : pairs_) {
      const json& p = d_.params_of(*o);
      if (p.value("summary", false)) {
        summaries.push_back(o);
        continue;
      }
      PairMatrix& m = by_test[param_text(p, "test")];
      m.test = param_text(p, "test");
      PairCell& cell = m.cells[param_text(p, "src")][param_text(p, "dst")];
      for (const auto& [metric, shape] : declared_shapes().of(d_.names.str(o->step))->metrics) {
        if (!shape.headline) continue;
        if (auto v = o->metric(d_.name_id(metric))) {
          cell.value = *v;
          m.metric = metric;
        }
      }
      cell.flagged = o->status != Status::ok;
      if (cell.flagged) {  // the matrix's row and column name the pair its reason begins with
        cell.reason = reason(*o);
        const std::string pair = param_text(p, "src") + " -> " + param_text(p, "dst") + ": ";
        if (cell.reason.starts_with(pair)) cell.reason.erase(0, pair.size());
      }
    }
    std::vector<PairMatrix> out;
    for (auto& [test, m] : by_test) {
      std::set<std::string> hosts;
      for (const auto& [src, row] : m.cells) {
        hosts.insert(src);
        for (const auto& [dst, cell] : row) hosts.insert(dst);
      }
      m.hosts.assign(hosts.begin(), hosts.end());
      for (const Observation* s : summaries) {
        const std::string t = param_text(d_.params_of(*s), "test");
        if (!t.empty() && t != test) continue;
        m.summary_failed = m.summary_failed || s->status != Status::ok;
        if (s->reason != kNoName) m.summary = d_.names.str(s->reason);
      }
      out.push_back(std::move(m));
    }
    return out;
  }

  NetcheckTable netcheck() const {
    NetcheckTable t;
    std::set<std::string> hosts;
    std::map<std::pair<std::string, std::string>, CheckRow> rows;
    auto text = [](const json& r, const char* key) {
      const auto it = r.find(key);
      return it == r.end() ? std::string() : it->is_string() ? it->get<std::string>() : it->dump();
    };
    for (const auto& c : d_.checks) {
      const json& r = c.record;
      const std::string host = r["host"];
      hosts.insert(host);
      CheckRow& row = rows[{r["check"], r["subject"]}];
      row.check = r["check"];
      row.subject = r["subject"];
      row.by_host[host] = {text(r, "status"), text(r, "observed"), text(r, "expected"), text(r, "hint"), text(r, "reason")};
    }
    for (auto& [id, row] : rows) {
      std::set<std::string> observed;
      for (const auto& [host, cell] : row.by_host) observed.insert(cell.observed);
      row.differs = observed.size() > 1;
      t.rows.push_back(std::move(row));
    }
    t.hosts.assign(hosts.begin(), hosts.end());
    return t;
  }

  // Headline metric per run: images/s at the most GPUs, busbw at the largest size, probe latency at
  // the smallest size and probe bandwidth at the largest.
  std::vector<Trend> trends(std::size_t runs) const {
    std::vector<Trend> out;
    auto collect = [&](const Grid& grid, const std::string& metric, const auto& label_of, bool largest_x) {
      for (const auto& [id, g] : grid.groups()) {
        if (g.headline_by_run.empty()) continue;
        const auto& [x, by_run] = largest_x ? *g.headline_by_run.rbegin() : *g.headline_by_run.begin();
        Trend t;
        t.label = label_of(g, x);
        t.metric = metric;
        t.values.resize(runs);
        std::size_t seen = 0;
        for (const auto& [run, cell] : by_run) {
          t.values[run] = cell.median();
          seen += cell.median().has_value();
        }
        if (seen > 1) out.push_back(std::move(t));
      }
    };
    collect(training_, "images_per_s", [](const Group& g, double x) {
      return "train " + key_label(g.key, training_key()) + " @ " + number(x) + " GPUs";
    }, true);
    collect(sizes_, "busbw_GBps", [](const Group& g, double x) {
      return g.family.substr(0, g.family.find('\n')) + " " +
             key_label(g.key, sweep_label_order()) + " @ " + bytes_text(x);
    }, true);
    for (const StepShape* shape : declared_shapes().with_view("probe")) {
      for (const Variant& v : shape->variants) {
        Grid subset;
        for (const auto& [id, g] : probes_.groups()) {
          if (g.family == v.name) subset.group(g.family, g.key) = g;
        }
        // A latency is judged at the smallest message, a bandwidth at the largest.
        collect(subset, v.headline, [](const Group& g, double x) {
          return "probe " + key_label(g.key, {"test", "source", "host", "peer"}) + " @ " + bytes_text(x);
        }, shape->metric(v.headline)->better == Better::higher);
      }
    }
    return out;
  }

  const Dataset& d_;
  Names n_;
  std::map<std::uint32_t, std::size_t> run_index_;
  std::map<std::tuple<std::uint32_t, std::uint32_t, int, std::uint32_t>, Target> targets_;
  Grid training_, predicted_, sizes_, probes_;
  std::vector<std::pair<std::string, std::uint32_t>> loss_metrics_;
  std::map<std::string, std::vector<const Observation*>> by_world_;
  std::vector<const Observation*> pairs_;
  std::set<std::string> undeclared_;  // what no declaration covers, one line each
};

}  // namespace

std::string ScalingSeries::label() const {
  return key_label(key, label_order());
}

bool ScalingSeries::predicted() const { return param_text(key, "engine") == "predicted"; }

std::string ScalingSeries::line_label() const {
  const std::string sync = param_text(key, "sync"), mode = param_text(key, "mode");
  std::string out = sync.empty() ? mode : sync;
  if (predicted()) return out + " on " + param_text(key, "fabric") + " (predicted)";
  const std::string transport = param_text(key, "transport");
  return out + (transport.empty() ? "" : " " + transport) + " (measured, " + param_text(key, "engine") + ")";
}

const std::vector<std::string>& ScalingSeries::label_order() const { return key_order.empty() ? training_key() : key_order; }

std::string ScalingPoint::waited_text() const {
  if (!first_waited_bucket || !buckets) return "";
  return fmt::format("the update waits from bucket {} of {}", number(*first_waited_bucket), number(*buckets));
}

std::string ScalingPoint::alone_text() const {
  if (ranks_alone.size() < 2) return "";
  const auto [slowest, fastest] = std::minmax_element(ranks_alone.begin(), ranks_alone.end());
  return fmt::format("{} ranks alone in turn: {} to {}", ranks_alone.size(), number(*slowest), number(*fastest));
}

bool ScalingSeries::independent() const { return param_text(key, "mode") == "single"; }

std::string ScalingSeries::ranks() const {
  const std::string engine = param_text(key, "engine");
  if (engine == "cpu") return "CPU ranks";
  if (engine == "replay") return "ranks (replayed timeline)";
  if (engine == "predicted") return "GPUs (predicted)";
  return "GPUs";
}

const ScalingPoint* ScalingSeries::at(int gpus) const {
  for (const auto& p : points) {
    if (p.gpus == gpus) return &p;
  }
  return nullptr;
}

bool Curve::measured() const {
  return std::any_of(points.begin(), points.end(), [](const CurvePoint& p) { return p.time_us || p.busbw; });
}

std::string Curve::label() const {
  return op + " " + key_label(key, sweep_label_order());
}

Aggregate aggregate(const Dataset& data) { return Builder(data).build(); }

std::string record_counts(const Aggregate& a) {
  std::vector<std::string> parts;
  auto remaining = a.by_status;
  for (const char* status : {"ok", "warn", "fail", "skip", "unverified", "error"}) {
    if (auto it = remaining.find(status); it != remaining.end()) {
      parts.push_back(fmt::format("{} {}", it->second, status));
      remaining.erase(it);
    }
  }
  for (const auto& [status, n] : remaining) parts.push_back(fmt::format("{} {}", n, status));
  return fmt::format("{} record{}{}", a.records, a.records == 1 ? "" : "s",
                     parts.empty() ? "" : fmt::format(" ({})", fmt::join(parts, ", ")));
}

}  // namespace rocebench::reports

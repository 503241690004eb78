#pragma once
// The aggregated view of a Dataset that every renderer draws from: training scaling, collective
// bandwidth curves, probes side by side, the all-pairs matrix, netcheck by host and trends across
// runs. An expected point without a record stays in the view as missing, with the reason.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "rocebench/common/scaling_loss.hpp"
#include "rocebench/reports/dataset.hpp"

namespace rocebench::reports {

// Values recorded for one point of a series; the point's value is their median.
struct Cell {
  std::vector<double> values;
  std::size_t records = 0;  // every record at the point, good or not
  std::string why_missing;  // the first reason of a record that had no value
  void add(std::optional<double> value, const std::string& reason);
  std::optional<double> median() const;
  // "no record" or the recorded reason, for a point without a value.
  std::string missing_text() const;
};

struct ScalingPoint {
  int gpus = 0;
  std::optional<double> images_per_s, speedup, efficiency;
  // Data-parallel training (models.scaling): the step predicted from one rank's timeline as a
  // speedup, and how long a step waited for its gradients' reduction.
  std::optional<double> predicted_speedup, exposed_comm_ms;
  // A prediction (models.predict) at its largest world size: where scaling is lost and what would
  // win it back, as its record states it.
  std::optional<ScalingLoss> loss;
  // Where the step waited: the first bucket still being reduced when backward ended, of how many.
  std::optional<double> first_waited_bucket, buckets;
  std::string waited_text() const;  // "bucket 3 of 5 on", or "" when no bucket made the update wait
  // models.train: the threads each rank computed with, of the CPUs it was given (its machine's, shared).
  std::optional<double> threads, cpus;
  // One rank's images/s pooled from several ranks trained alone in turn: each one's own.
  std::vector<double> ranks_alone;
  std::string alone_text() const;  // "4 ranks alone in turn: 459.2 to 582.0", or ""
  double ideal = 0;         // the ideal speedup, gpus / base_gpus
  // Why there is no value: of images/s, or, where only the speedup is missing, of that (no run
  // measured both this point and the base). Empty when there are both.
  std::string missing;
};

// Throughput against GPUs for one model and mode. Speedup S(N) = X(N) / X(base) and efficiency
// S(N) / (N / base), where base is 1 GPU or, when the series has no 1-GPU value, its smallest N, each
// run's over its own base point and the median over the runs (scaling_over in common/stats.hpp, the
// rule the models.scaling step records by too); only for training whose ranks worked together, never
// for independent ones.
struct ScalingSeries {
  json key;  // model, mode, engine, precision, batch; data parallel: sync, transport, bucket_mb, servers, timeline
  // The params in label order: its view's declaration (training, or prediction's with the fabric).
  std::vector<std::string> key_order;
  // Predicted (models.predict, engine "predicted"), never measured: kept apart in Aggregate::predicted.
  bool predicted() const;
  // How its line differs from the others of its model: "ring tcp (measured, cpu)", "ring on 25g-roce (predicted)".
  std::string line_label() const;
  // Ranks that each trained alone (models.train, mode "single"): no speedup is made of them.
  bool independent() const;
  // What its ranks are, as a heading: GPUs, CPU ranks, or ranks replaying a measured timeline.
  std::string ranks() const;
  int base_gpus = 0;  // 0 when the series has no value at all
  std::vector<ScalingPoint> points;
  std::string label() const;
  // The params of `key` that identify it, in the order its step kind declares them (key_order, or
  // training's when empty).
  const std::vector<std::string>& label_order() const;
  const ScalingPoint* at(int gpus) const;
};

struct CurvePoint {
  double x = 0;
  std::optional<double> time_us, algbw, busbw, wrong;
  std::string missing;
};

// One collective's bandwidth against message size (x = bytes, fixed world) or against ranks
// (x = world, fixed bytes).
struct Curve {
  std::string op;
  json key;  // algorithm, transport, dtype, inplace, tool, and world or bytes
  std::string x_name;  // "bytes" or "ranks"
  std::vector<CurvePoint> points;  // none when nothing was measured: `why` says why
  std::string why;  // the reason records without a size gave (a step skipped before its sweep), or ""
  bool measured() const;
  std::string label() const;
};

// One probe point. RoCE and TCP share a row: `test` is "latency" or "bandwidth", and the verbs
// operation (write, send, read) is part of the source.
struct ProbeRow {
  std::string test, host, peer;
  double bytes = 0;
  std::map<std::string, std::map<std::string, double>> by_source;  // "verbs write" / "tcp" / "verbs write (perftest)" -> metrics
  std::map<std::string, std::vector<double>> samples;  // latency: the raw samples records kept, by source
};

struct ProbeTable {
  std::vector<std::string> sources;  // columns, verbs before tcp
  std::vector<ProbeRow> rows;
  std::vector<std::string> not_measured;  // "verbs write latency from vm: no RDMA device", one per series
};

struct PairCell {
  std::optional<double> value;
  bool flagged = false;
  std::string reason;
};

struct PairMatrix {
  std::string test, metric;
  std::vector<std::string> hosts;
  std::map<std::string, std::map<std::string, PairCell>> cells;  // src -> dst -> cell
  bool summary_failed = false;
  std::string summary;  // the summary record's reason: which hosts stay bad
};

struct CheckCell {
  std::string status, observed, expected, hint, reason;
};

struct CheckRow {
  std::string check, subject;
  std::map<std::string, CheckCell> by_host;
  bool differs = false;  // hosts observed different values
};

struct NetcheckTable {
  std::vector<std::string> hosts;
  std::vector<CheckRow> rows;
};

// A headline metric across runs, in the order of Aggregate::runs.
struct Trend {
  std::string label, metric;
  std::vector<std::optional<double>> values;  // one per run; missing runs stay empty
};

struct Aggregate {
  // Run ids, by the time of their run record when every run has one, else in the order first seen.
  std::vector<std::string> runs;
  std::vector<std::string> run_times;  // the run record's time, "" without one
  bool runs_by_time = false;
  std::size_t records = 0;
  std::map<std::string, std::size_t> by_status;  // records (results and checks) by status: ok, skip, fail …
  std::vector<ScalingSeries> scaling;
  // Predictions (models.predict): the same series and points, apart from every measurement so that
  // no threshold, baseline or trend ever takes one for a measurement.
  std::vector<ScalingSeries> predicted;
  std::vector<Curve> size_curves, world_curves;
  ProbeTable probes;
  std::vector<PairMatrix> pairs;
  NetcheckTable netcheck;
  std::vector<Trend> trends;
  // Records no declaration covers (shapes.hpp), one line per step kind or undeclared variant: shown,
  // never silently left out.
  std::vector<std::string> undeclared;
};

Aggregate aggregate(const Dataset& data);

// "56 records (42 ok, 14 skip)": the records and how many of each status.
std::string record_counts(const Aggregate& a);

// Whether every key of `where` is in `key` with an equal value.
bool matches(const json& where, const json& key);

}  // namespace rocebench::reports

#pragma once
// A measured compute timeline: each node's forward and backward time and the update's, from
// `rocebench train --profile` (the record's samples.layers), on whatever machine measured it. The
// replay engine plays it back; the data-parallel predictor builds a step from it.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "rocebench/common/record.hpp"
#include "rocebench/models/engine.hpp"

namespace rocebench::models {

struct Timeline {
  std::string model;
  std::vector<LayerTime> nodes;  // node i at index i - 1 (the input takes no time), per step
  double update_ms = 0;
  // Where it was measured: kind "measured", host, engine, precision, batch, gpu (when there was one),
  // run; or how it was derived (derived.hpp: kind "derived", the device and its ratings).
  json source = json::object();

  double forward_ms() const;
  double backward_ms() const;
};

// The same shape at another speed: every node's forward and backward and the update times `factor`.
Timeline scaled(Timeline t, double factor);

// Per-step times from an engine's layer_times() taken before and after `steps` steps.
Timeline timeline_between(const Graph& graph, const std::vector<LayerTime>& before, const std::vector<LayerTime>& after,
                          int steps);

// samples.layers and samples.update_ms of a models.train record, and back.
json to_samples(const Graph& graph, const Timeline& t);
// Reads the first models.train record with samples.layers from a results file. Throws InputError
// naming the file, line and field when there is none, or when its model or nodes are not `graph`'s.
Timeline read_timeline(const std::filesystem::path& file, const Graph& graph);

// The timelines measured by this project and kept in the repository (models/timelines/NAME.jsonl,
// compiled in), by NAME.
std::vector<std::string> shipped_timelines();
// The shipped timelines of `graph`'s model, by name.
std::vector<std::string> shipped_timelines_of(const Graph& graph);
// A shipped timeline by name, else the results file of that path. Throws InputError listing the
// shipped ones when it is neither.
Timeline load_timeline(const std::string& name_or_file, const Graph& graph);

}  // namespace rocebench::models

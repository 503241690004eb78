#pragma once
// Published data-parallel scale-out results (models/published/NAME.json, schema
// published.schema.json; issue #42): each point predicted by `rocebench predict` from the source's
// one-GPU figure, the model's gradients and the stated fabric, and its error. What the source does not
// state is assumed in the file, in words.
#include <string>
#include <vector>

#include "rocebench/common/record.hpp"
#include "rocebench/models/fabric.hpp"

namespace rocebench::models {

struct PublishedPoint {
  int gpus = 1;
  double efficiency = 0;  // images/s a GPU over images/s a GPU at the series' base_gpus
};

struct PublishedSeries {
  std::string model, device, sync, assumed;
  int batch = 1, base_gpus = 1;
  double images_per_s_one_gpu = 0, bucket_mb = 25, first_bucket_mb = 1;
  std::vector<PublishedPoint> points;
  int line = 0;  // where the series starts in its file
};

struct PublishedTable {
  std::string name, file;
  json source;
  Fabric fabric;
  std::vector<PublishedSeries> series;
};

// The shipped tables (compiled in), by name.
std::vector<std::string> shipped_published();
// A shipped table by name, else the file of that path. InputError "FILE:LINE: field 'X': …" for
// anything the schema refuses; the fabric block is read as a fabric file ("FILE (fabric):LINE").
PublishedTable load_published(const std::string& name_or_file);

// One point, predicted.
struct PublishedError {
  std::string model, sync, timeline;
  int gpus = 1, base_gpus = 1;
  double published = 0, predicted = 0;  // efficiency against base_gpus
  double error_pct = 0;                 // 100 · (predicted − published) / published
  double predicted_step_ms = 0, predicted_exposed_ms = 0;
};
// Every point of `table`, predicted; InputError naming the file, series and field for a model, device
// or sync mode rocebench does not know, or a GPU count that is not whole nodes of the fabric.
std::vector<PublishedError> predict_published(const PublishedTable& table);
std::string published_report(const PublishedTable& table, const std::vector<PublishedError>& errors);

}  // namespace rocebench::models

#pragma once
// A float64 reference of the layer graph's forward pass, written naively from the definitions
// (torch semantics), for finite-difference gradient checks of the engines.
#include <cstdint>
#include <span>
#include <vector>

#include "rocebench/models/graph.hpp"

namespace rocebench::models::testing {

struct ReferenceBatch {
  std::vector<double> images;  // batch × C × H × W
  std::vector<int> labels;
  int batch = 1;
  std::uint64_t seed = 1;  // dropout masks, as the engine draws them
  std::uint64_t pass = 0;  // which forward pass of the engine this is
};

// Σ loss_weight · mean cross-entropy over the graph's loss nodes.
double reference_loss(const Graph& g, const std::vector<std::vector<double>>& params, const ReferenceBatch& in);

}  // namespace rocebench::models::testing

#pragma once
// A fabric calibrated from measured allreduce sweeps (`rocebench predict --fabric-from RUN,…`): α and
// β of the level the runs crossed, fitted by least squares to their collectives.allreduce records
// through the fabric model's own formulas (fabric.hpp), so the fitted values plug straight into it.
//
// The runs' ranks are taken as one a node (gpus_per_node 1: emulated hosts, or a cluster's hosts
// with one rank each), so what is fitted is the node level; the intra-node level is not measured by
// such runs, and no sync mode uses it at one GPU a node. One fit per collectives algorithm the
// records hold (ring, ps, rd); a sync mode without its own algorithm's records (hier and tree, which
// at one GPU a node are a ring and a tree over nodes) is played with the ring's fit.
#include <cstddef>
#include <string>
#include <vector>

#include "rocebench/common/record.hpp"
#include "rocebench/models/fabric.hpp"

namespace rocebench::models {

// One timed allreduce of a sweep, as the fit reads it.
struct AllreducePoint {
  std::string algorithm;  // collectives' algorithm: ring, ps, rd
  int ranks = 1;
  std::size_t bytes = 0;
  double time_us = 0;
  int servers = 1;  // ps: the server ranks
};

// The fit of one algorithm's points: the node level's α + β·bytes, and how well it explains them.
struct LevelFit {
  std::string algorithm;
  LevelCost node;
  bool alpha_clamped = false;  // the fit gave α < 0: α = 0
  int servers = 1;             // ps: the most servers of the points (a prediction's ps_servers)
  std::vector<AllreducePoint> points;
  std::vector<double> fitted_us;  // the model's time of each point with the fitted α, β
  double rms_relative = 0;        // sqrt(mean(((fitted - measured) / measured)^2))
};

// β by least squares of the model's time against each point's (the large sizes weigh most), then α
// with β held by least squares of the relative error (a 1 KiB point counts as much as a 1 GiB one).
// InputError beginning with `what` when α and β cannot both be
// identified: points at one world size only, one size only, or bytes that cost no time.
LevelFit fit_level(const std::string& algorithm, const std::vector<AllreducePoint>& points, const std::string& what);

struct FabricFit {
  std::vector<std::string> runs;  // as given
  std::string transport;          // the runs' transport (one)
  int most_ranks_per_host = 1;    // from the runs' run records (0: they do not say)
  std::vector<LevelFit> fits;     // ring first when present
  // The fabric a sync mode is played on: the fit of its own algorithm, else the ring's (else the first).
  Fabric fabric_for(SyncMode mode) const;
  // What a prediction records of it: runs, level, each fit with its points and residuals.
  json to_json() const;
};

// The ok collectives.allreduce records of our own algorithms (params.algorithm ring, ps or rd) as
// points; records of one rank (nothing to reduce) are left out.
std::vector<AllreducePoint> allreduce_points(const std::vector<json>& records);

// Fits from the points of `records`, grouped by algorithm. InputError beginning with `what` when
// there are none or an algorithm's are not enough (fit_level).
FabricFit fit_records(const std::vector<json>& records, const std::vector<std::string>& runs, const std::string& what);

// Reads each run (a results folder or its results.jsonl) and fits them; InputError naming `what`
// and the run for a run that cannot be read or holds no allreduce record.
FabricFit fit_runs(const std::vector<std::string>& runs, const std::string& what);

}  // namespace rocebench::models

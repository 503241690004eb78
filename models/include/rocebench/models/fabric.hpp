#pragma once
// A cluster's fabric as a model (models/fabrics/*.json, schema fabric.schema.json): GPUs a node, the
// link of a GPU inside its node, a node's NICs across nodes; and the time of one allreduce over it
// for each way of synchronising gradients, α + β·bytes per level and per step, in the manner of
// NCCL's own tuning model (src/graph/tuning.cc: a start-up cost per step and level, bytes over the
// level's bandwidth). What `rocebench predict` plays each bucket of a step with (data_parallel.hpp).
#include <cstddef>
#include <string>
#include <vector>

#include "rocebench/common/record.hpp"

namespace rocebench::models {

struct Fabric {
  std::string name;
  std::string file;  // where it was read: "models/fabrics/NAME.json" for a built-in, else the path
  int gpus_per_node = 1;
  // Inside a node: one GPU's link to the others, one direction, and a step's start-up cost.
  double intra_GBps = 0, intra_latency_us = 0, intra_share = 1;
  // Across nodes: one NIC's line rate, `rails` NICs a node, a step's start-up cost, the share of the
  // line rate a collective reaches, and the spine's oversubscription once a job spans more nodes
  // than a leaf holds.
  double nic_Gbps = 0, inter_latency_us = 0, inter_share = 1, spine_oversubscription = 1;
  int rails = 1, nodes_per_leaf = 1;
  int ps_servers = 1;
  json document;  // as read, every optional field with its default: what a prediction records as its input
};

// The built-in fabrics (models/fabrics/NAME.json, compiled in), by name.
std::vector<std::string> builtin_fabrics();
// A fabric from JSON text; `file` names it in errors. Unknown fields, wrong types and values out of
// range throw InputError "FILE:LINE: field 'X': …".
Fabric parse_fabric(const std::string& text, const std::string& file);
// A built-in by name, else the file of that path; InputError listing the built-ins when neither.
Fabric load_fabric(const std::string& name_or_file);

// How a bucket is averaged over the ranks.
enum class SyncMode {
  ring,  // flat ring through every rank: 2(n-1) steps of S/n, each as slow as the slowest link
  hier,  // reduce-scatter inside the node, ring across nodes on a node's share, allgather inside
  tree,  // NCCL's double binary tree: a chain inside the node, two binary trees across nodes
  ps,    // parameter server: every rank pushes shard k to server k, then pulls it back
  rd,    // recursive doubling: log2(n) exchanges of the whole buffer
};
std::string to_string(SyncMode mode);
const std::vector<SyncMode>& all_sync_modes();
// "ring,hier" -> modes, in order; InputError naming `what` (the flag or field) for an unknown one.
std::vector<SyncMode> parse_sync_modes(const std::string& list, const std::string& what);

// Where the ranks of a world size sit: up to gpus_per_node on one node, else whole nodes.
struct Placement {
  int ranks = 1, nodes = 1, per_node = 1;
};
// InputError naming `what` (the flag or field) for a world size above gpus_per_node that is not a
// multiple of it: a part of a node would be a second kind of node, which the model does not have.
Placement place(const Fabric& fabric, int ranks, const std::string& what);

// One level's cost of a step that moves `bytes` through it: α + β·bytes.
struct LevelCost {
  double alpha_ms = 0, beta_ms_per_byte = 0;
  double at(double bytes) const { return alpha_ms + beta_ms_per_byte * bytes; }
};
// A GPU's link inside its node.
LevelCost intra_cost(const Fabric& fabric);
// A node's NICs together (rails x nic_Gbps), with the spine's oversubscription when `nodes` span leaves.
LevelCost node_cost(const Fabric& fabric, int nodes);

// The time in ms of one allreduce of `bytes` on `placement`'s ranks (0 for one rank).
double allreduce_ms(const Fabric& fabric, SyncMode mode, const Placement& placement, std::size_t bytes);

}  // namespace rocebench::models

#pragma once
// The transport a plan step runs on, from the step's params (`transport`: tcp or verbs, and each
// one's options), and the loop over the step's world sizes: the pieces every step that moves data
// between ranks shares (collectives' sweeps, models' data-parallel training).
#include <functional>
#include <memory>
#include <vector>

#include "rocebench/common/options.hpp"
#include "rocebench/common/step.hpp"
#include "rocebench/transport/transport.hpp"

namespace rocebench::collectives {

// The family of options read only by our own transports and algorithms (TCP, verbs): the NCCL
// step takes none of them.
inline const std::string kOwnTransportsOnly = "own transports";

// The transport's options (transport, sockets_per_peer, spin_us, tcp_congestion, tcp_sndbuf, verbs).
const OptionTable& transport_options();

// The world sizes a step asks for (`world_sizes`; without it `fallback`, or when that is empty every
// rank of the run). Throws InputError naming the field when one asks for more ranks than the run has.
std::vector<int> step_world_sizes(const StepContext& ctx, std::vector<int> fallback = {});

// The params of a skip at k ranks, as the step's own records at k ranks would carry them, so that the
// skip lands in their series (models.scaling's identify it by model, mode, engine …, not by the plan's
// params).
using SkipParams = std::function<json(int k)>;

// Runs `body` on a mesh of the first k ranks, for each k of `sizes` (by default the step's world
// sizes); the ranks left out of a size wait at the barrier that closes it. Where a rank cannot make
// the mesh (no RDMA device), rank 0 records a skip with the reason for that size and `body` does
// not run; the skip's params are `skip_params(k)`, without it the step's params with its transport
// and `ranks` (what a collective's sweep records carry).
void for_each_world_size(StepContext& ctx, const std::vector<int>& sizes, const std::function<void(transport::Transport&)>& body,
                         const SkipParams& skip_params = {});
void for_each_world_size(StepContext& ctx, const std::function<void(transport::Transport&)>& body);

}  // namespace rocebench::collectives

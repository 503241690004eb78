#pragma once
// NCCL sweeps (allreduce, allgather, reduce_scatter, broadcast, alltoall), one rank per GPU, the
// ncclUniqueId passed through the rendezvous, CUDA events for timing. Built when NCCL is found;
// without NCCL or without a GPU every rank records `skip` with the reason.
#include "rocebench/common/step.hpp"

namespace rocebench::collectives {

StepKind nccl_step();

}  // namespace rocebench::collectives

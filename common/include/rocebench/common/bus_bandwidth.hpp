#pragma once
// nccl-tests' bus bandwidth (doc/PERFORMANCE.md): busbw = algbw x factor(collective, ranks), the
// bandwidth each link carries, which does not depend on the rank count. Declared once, for our own
// sweeps and for the records imported from nccl-tests and OSU.
#include <string_view>

namespace rocebench {

// 0 for a collective without a factor (or fewer than one rank).
inline double bus_factor(std::string_view collective, int ranks) {
  if (ranks < 1) return 0;
  const double n = ranks;
  if (collective == "allreduce") return 2 * (n - 1) / n;
  if (collective == "allgather" || collective == "reduce_scatter" || collective == "alltoall") return (n - 1) / n;
  if (collective == "broadcast" || collective == "reduce") return 1;
  return 0;
}

}  // namespace rocebench

#pragma once
// Collective algorithms, each written once against the Transport interface (transport/transport.hpp).
#include <cstddef>
#include <span>
#include <string>

#include "rocebench/collectives/dtype.hpp"
#include "rocebench/transport/transport.hpp"

namespace rocebench::collectives {

enum class Algorithm {
  ring,  // reduce-scatter then allgather, chunked: 2(n-1)/n of the buffer per rank, whatever n
  ps,    // parameter server: shards on S server ranks, workers push, servers sum, workers pull
  rd,    // recursive doubling: log2(n) exchanges of the whole buffer, for small messages
};
std::string to_string(Algorithm a);
Algorithm parse_algorithm(const std::string& name);

struct CollectiveOptions {
  std::size_t chunk_bytes = 1 << 20;  // ring pipelining unit (1 MiB measured best on loopback: fewer syscalls per byte)
  int servers = 1;                      // parameter server: S
};

// In place: `data` holds this rank's input and receives the result.
void allreduce(transport::Transport& t, Algorithm algorithm, void* data, std::size_t count, DataType dtype, ReduceOp op,
               const CollectiveOptions& options, const Deadline& deadline);

// The ring's halves (allreduce runs them fused, as one pass). Segment s of `data` is elements
// [count*s/n, count*(s+1)/n); rank r owns segment r.
// reduce_scatter: afterwards the owned segment holds the reduction of everyone's.
void ring_reduce_scatter(transport::Transport& t, void* data, std::size_t count, DataType dtype, ReduceOp op,
                         std::size_t chunk_bytes, const Deadline& deadline);
// allgather: every rank starts with its owned segment and ends with all of them.
void ring_allgather(transport::Transport& t, void* data, std::size_t count, DataType dtype, std::size_t chunk_bytes,
                    const Deadline& deadline);

// Refuses (InputError, on every rank) to go on when the ranks hold different values of `what` —
// a size, a dtype — which would otherwise end as garbled data or a deadline.
void require_same(transport::Transport& t, double value, const std::string& what, const Deadline& deadline);
// Its verdict, for any way of reducing across ranks: `range` is the max of {value, -value} over the ranks.
void refuse_unless_same(int rank, double value, std::span<const double, 2> range, const std::string& what);

// Segment boundaries as the ring uses them (element index where segment s starts; s = n gives count).
std::size_t segment_begin(std::size_t count, int segments, int s);

}  // namespace rocebench::collectives

// The Gloo peer of ci/bench/allreduce_vs_peers.sh: gloo::allreduce with its ring algorithm
// (reduce-scatter + allgather, pipelined in 1 MiB segments, as PyTorch's Gloo backend runs it) over
// Gloo's TCP transport, float32 sum in place, timed like mpi_allreduce (the slowest rank's loop of
// back-to-back operations, over the iterations) with nccl-tests' busbw, and the busbw of the fastest
// operation (the least of each iteration's slowest rank) and of the median one (the slowest rank's),
// as rocebench's samples.min and time_us_p50.
// Ranks meet through a FileStore in a folder they all see.
// Usage: gloo_allreduce RANK RANKS STORE_DIR ADDRESS MIN_BYTES MAX_BYTES FACTOR ITERS
// Prints on rank 0, per size, the line of peer_row.hpp.
#include <gloo/allreduce.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/transport/tcp/device.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

#include "peer_row.hpp"

namespace {

template <typename T>
void allreduce(const std::shared_ptr<gloo::Context>& context, std::vector<T>& data,
               void (*reduce)(void*, const void*, const void*, size_t)) {
  gloo::AllreduceOptions options(context);
  options.setAlgorithm(gloo::AllreduceOptions::Algorithm::RING);
  options.setOutput(data.data(), data.size());
  options.setReduceFunction(reduce);
  gloo::allreduce(options);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 9) {
    std::fprintf(stderr, "usage: gloo_allreduce RANK RANKS STORE_DIR ADDRESS MIN_BYTES MAX_BYTES FACTOR ITERS\n");
    return 2;
  }
  const int rank = std::atoi(argv[1]), ranks = std::atoi(argv[2]);
  const long min_bytes = std::atol(argv[5]), max_bytes = std::atol(argv[6]), factor = std::atol(argv[7]);
  const int iters = std::atoi(argv[8]);

  gloo::transport::tcp::attr attr;
  attr.hostname = argv[4];
  auto device = gloo::transport::tcp::CreateDevice(attr);
  gloo::rendezvous::FileStore store(argv[3]);
  auto context = std::make_shared<gloo::rendezvous::Context>(rank, ranks);
  context->setTimeout(std::chrono::seconds(120));
  context->connectFullMesh(store, device);

  for (long bytes = min_bytes; bytes <= max_bytes; bytes *= factor) {
    std::vector<float> data(static_cast<std::size_t>(bytes / 4), 1.0f);
    std::vector<double> loop{0, 0};   // this rank's timed operations, back to back; its median one
    std::vector<double> each(iters);  // each timed operation, then each one's slowest rank
    for (int i = -2; i < iters; ++i) {  // two warm-up iterations
      const auto t0 = std::chrono::steady_clock::now();
      allreduce(context, data, &gloo::sum<float>);
      const std::chrono::duration<double> took = std::chrono::steady_clock::now() - t0;
      if (i >= 0) loop[0] += each[i] = took.count();
    }
    loop[1] = median_op(each);
    allreduce(context, loop, &gloo::max<double>);
    allreduce(context, each, &gloo::max<double>);
    if (rank == 0) print_peer_row(bytes, ranks, loop[0], loop[1], each);
  }
  return 0;
}

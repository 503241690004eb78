// The Open MPI peer of ci/bench/allreduce_vs_peers.sh: MPI_Allreduce (float32 sum) timed the way
// rocebench's sweep and nccl-tests time it — each rank's loop of back-to-back operations, the slowest
// rank's loop over the iterations — with nccl-tests' busbw, and the busbw of the fastest operation
// (the least of each iteration's slowest rank) and of the median one (the slowest rank's), as
// rocebench's samples.min and time_us_p50.
// Usage: mpi_allreduce MIN_BYTES MAX_BYTES FACTOR ITERS
// Prints on rank 0, per size, the line of peer_row.hpp.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "peer_row.hpp"

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, ranks = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &ranks);
  if (argc != 5) {
    if (rank == 0) std::fprintf(stderr, "usage: mpi_allreduce MIN_BYTES MAX_BYTES FACTOR ITERS\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const long min_bytes = std::atol(argv[1]), max_bytes = std::atol(argv[2]);
  const long factor = std::atol(argv[3]);
  const int iters = std::atoi(argv[4]);
  for (long bytes = min_bytes; bytes <= max_bytes; bytes *= factor) {
    const long count = bytes / 4;
    std::vector<float> data(static_cast<std::size_t>(count), 1.0f);
    double loop[2] = {0, 0};  // this rank's timed operations, back to back; its median one
    std::vector<double> each(static_cast<std::size_t>(iters));  // each timed operation, then each one's slowest rank
    for (int i = -2; i < iters; ++i) {  // two warm-up iterations
      const double t0 = MPI_Wtime();
      MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      if (i >= 0) loop[0] += each[static_cast<std::size_t>(i)] = MPI_Wtime() - t0;
    }
    loop[1] = median_op(each);
    MPI_Allreduce(MPI_IN_PLACE, loop, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, each.data(), iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) print_peer_row(bytes, ranks, loop[0], loop[1], each);
  }
  MPI_Finalize();
  return 0;
}

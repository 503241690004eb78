// The Open MPI peer of ci/bench/allreduce_vs_peers.sh: MPI_Allreduce (float32 sum) timed the way
// rocebench's sweep and nccl-tests time it — each rank's loop of back-to-back operations, the slowest
// rank's loop over the iterations — with nccl-tests' busbw, and the busbw of the fastest operation
// and of the median one (each iteration's slowest rank, the least and the median over the iterations,
// as rocebench's samples.min and samples.median).
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
    double loop = 0;                                            // this rank's timed operations, back to back
    std::vector<double> each(static_cast<std::size_t>(iters));  // each timed operation, then each one's slowest rank
    for (int i = -2; i < iters; ++i) {  // two warm-up iterations
      const double t0 = MPI_Wtime();
      MPI_Allreduce(MPI_IN_PLACE, data.data(), static_cast<int>(count), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
      if (i >= 0) loop += each[static_cast<std::size_t>(i)] = MPI_Wtime() - t0;
    }
    MPI_Allreduce(MPI_IN_PLACE, &loop, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    MPI_Allreduce(MPI_IN_PLACE, each.data(), iters, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) print_peer_row(bytes, ranks, loop, each);
  }
  MPI_Finalize();
  return 0;
}

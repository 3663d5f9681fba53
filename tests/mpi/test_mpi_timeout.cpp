// A rank that never calls allreduce must not hang the others: with ARLAB_TIMEOUT_S=1 they
// fail within seconds with an Error naming the silent rank and the transport (ARLAB_TRANSPORT).
// Rank 2 stays silent. Waiting that long, a rank sleeps between polls after the first 10 ms
// (exec/idle_wait.hpp): the waiting thread must have used under a third of the wait's CPU time.
#include <mpi.h>

#include <cstdio>
#include <ctime>
#include <string>
#include <vector>

#include "arlab/arlab.hpp"

namespace {
double thread_cpu_s() {
  timespec t{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
}
}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int ok = 1;
  {
    arlab::Communicator comm(MPI_COMM_WORLD);
    if (comm.size() != 3) {
      std::fprintf(stderr, "run with 3 ranks\n");
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (comm.rank() != 2) {
      std::vector<float> x(16, 1.0f);
      const double t0 = MPI_Wtime(), cpu0 = thread_cpu_s();
      try {
        comm.allreduce(x.data(), x.data(), x.size(), arlab::DataType::Float32, arlab::ReduceOp::Sum,
                       arlab::Algorithm::Ring);
        ok = 0;
        std::printf("rank %d: allreduce returned without its peer\n", comm.rank());
      } catch (const arlab::Error& e) {
        const std::string m = e.what();
        const double waited = MPI_Wtime() - t0, cpu = thread_cpu_s() - cpu0;
        std::printf("rank %d after %.1f s (%.3f s of CPU time): %s\n", comm.rank(), waited, cpu, e.what());
        // Ring: rank 0 waits for its left neighbour 2; rank 1 waits for rank 0, which gave up.
        ok = e.code() == arlab::Error::Code::Timeout && waited < 30 && cpu < waited / 3 &&
             m.find("over " + arlab::to_string(*comm.options().transport)) != std::string::npos &&
             (comm.rank() != 0 || m.find("waiting for rank 2") != std::string::npos);
      }
    }
  }
  int all = 0;
  MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) std::printf(all ? "timeout test passed\n" : "timeout test FAILED\n");
  MPI_Finalize();
  return all ? 0 : 1;
}

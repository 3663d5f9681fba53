// arlab-async-bench: what allreduce_async costs and what it hides, against the blocking call
// in the same process.
//
//   mpirun -np 2 arlab-async-bench [-a ALGORITHM] [-n ITERS] [SIZE ...]   (default 8 64K 1M 16M)
//
// Per size (float sum, in place), each the average over ITERS calls, every call between
// barriers:
//   blocking  allreduce
//   async     allreduce_async then wait() at once: the hand-over to the progress thread and back
//   serial    host work of the blocking call's length, then the blocking call
//   overlap   allreduce_async, the same host work, wait()
// hidden = (serial - overlap) / blocking: the share of the all-reduce's time that ran behind the
// host work (1 = all of it). The host work competes with the progress thread for the cores:
// with more ranks than cores per rank, little can hide.
#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "arlab/arlab.hpp"

namespace {

using Clock = std::chrono::steady_clock;

double now_us() { return std::chrono::duration<double, std::micro>(Clock::now().time_since_epoch()).count(); }

bool idle_work = false;  // --idle: the work sleeps (a GPU computing) instead of spinning

void host_work(double us) {
  const double until = now_us() + us;
  if (idle_work) {
    std::this_thread::sleep_for(std::chrono::duration<double, std::micro>(us));
    return;
  }
  volatile unsigned sink = 0;
  while (now_us() < until) sink = sink + 1;
}

std::size_t parse_size(const std::string& s) {
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  const std::string unit = end ? end : "";
  const double scale = unit == "K" ? 1024.0 : unit == "M" ? 1048576.0 : unit == "G" ? 1073741824.0 : unit.empty() ? 1 : -1;
  if (end == s.c_str() || scale < 0 || v * scale < 4) {
    std::fprintf(stderr, "arlab-async-bench: bad size '%s' (bytes >= 4, K/M/G suffixes)\n", s.c_str());
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return static_cast<std::size_t>(v * scale);
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  arlab::Algorithm algorithm = arlab::Algorithm::Auto;
  int iters = 200;
  std::vector<std::size_t> sizes;
  try {
    for (int i = 1; i < argc; ++i) {
      const std::string a = argv[i];
      if (a == "--idle") {
        idle_work = true;
      } else if ((a == "-a" || a == "-n") && i + 1 < argc) {
        if (a == "-a") algorithm = arlab::algorithm_from_string(argv[++i]);
        else iters = std::max(1, std::atoi(argv[++i]));
      } else {
        sizes.push_back(parse_size(a));
      }
    }
  } catch (const arlab::Error& e) {
    if (rank == 0) std::fprintf(stderr, "arlab-async-bench: %s\n", e.what());
    MPI_Finalize();
    return 2;
  }
  if (sizes.empty()) sizes = {8, 64 << 10, 1 << 20, 16 << 20};
  int rc = 0;
  try {
    arlab::Communicator comm(MPI_COMM_WORLD);
    if (rank == 0)
      std::printf("# arlab-async-bench: %d ranks, %s, float sum in place, %d calls per line, MPI thread level %d\n"
                  "#      size  blocking(us)  async(us)  serial(us)  overlap(us)  hidden\n",
                  p, arlab::to_string(algorithm).c_str(), iters, provided);
    for (std::size_t bytes : sizes) {
      std::vector<float> x(bytes / sizeof(float), 1.0f);
      // mode 0 blocking, 1 async + wait, 2 work then blocking, 3 async + work + wait
      auto time = [&](int mode, double work_us) {
        double total = 0;
        for (int it = -5; it < iters; ++it) {
          MPI_Barrier(MPI_COMM_WORLD);
          const double t0 = now_us();
          if (mode == 0 || mode == 2) {
            if (mode == 2) host_work(work_us);
            comm.allreduce(x.data(), x.data(), x.size(), arlab::DataType::Float32, arlab::ReduceOp::Sum, algorithm);
          } else {
            arlab::Request r =
                comm.allreduce_async(x.data(), x.data(), x.size(), arlab::DataType::Float32, arlab::ReduceOp::Sum, algorithm);
            if (mode == 3) host_work(work_us);
            r.wait();
          }
          if (it >= 0) total += now_us() - t0;
        }
        double mine = total / iters, slowest = 0;  // the slowest rank's average
        MPI_Allreduce(&mine, &slowest, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        return slowest;
      };
      const double blocking = time(0, 0), async = time(1, 0);
      const double serial = time(2, blocking), overlap = time(3, blocking);
      if (rank == 0)
        std::printf("%11zu  %12.2f  %9.2f  %10.2f  %11.2f  %6.2f\n", bytes, blocking, async, serial, overlap,
                    (serial - overlap) / blocking);
    }
  } catch (const arlab::Error& e) {
    std::fprintf(stderr, "arlab-async-bench: rank %d: %s\n", rank, e.what());
    rc = 1;
  }
  MPI_Finalize();
  return rc;
}

// arlab-bench: all-reduce sweeps under mpirun, in the manner of nccl-tests' all_reduce_perf.
//
//   mpirun -np 4 arlab-bench -b 8 -e 64M -f 4 -a all -t all --json sweep.json --plot sweep.png
//
// main: the flags and ARLAB_BENCH_MIN_BUSBW, the sweep (sweep.hpp), and after MPI_Finalize
// bench/plot.py for --plot.

#include <arlab/arlab.hpp>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <optional>
#include <string>

#include "gradients.hpp"
#include "header.hpp"
#include "options.hpp"
#include "plot_runner.hpp"
#include "sweep.hpp"

namespace arlab::bench {
namespace {

// ARLAB_BENCH_MIN_BUSBW: a number of GB/s >= 0, or unset/empty.
std::optional<double> min_busbw_from_env(std::string* error) {
  const char* v = std::getenv("ARLAB_BENCH_MIN_BUSBW");
  if (v == nullptr || *v == '\0') return std::nullopt;
  char* end = nullptr;
  const double x = std::strtod(v, &end);
  if (*end != '\0' || !std::isfinite(x) || x < 0) {
    *error = std::string("bad value '") + v + "' for ARLAB_BENCH_MIN_BUSBW: expected a bus bandwidth in GB/s >= 0";
    return std::nullopt;
  }
  return x;
}

}  // namespace
}  // namespace arlab::bench

int main(int argc, char** argv) {
  using namespace arlab::bench;
  // --gradients uses allreduce_async, whose progress thread calls MPI beside this one.
  bool gradients = false;
  for (int i = 1; i < argc; ++i) gradients |= std::string(argv[i]).rfind("--gradients", 0) == 0;
  if (gradients) {
    int provided = 0;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  } else {
    MPI_Init(&argc, &argv);
  }
  const int rank = comm_rank(MPI_COMM_WORLD);

  int status = kExitOk;
  std::string json;  // rank 0: the file --plot draws
  bool draw = false;
  const ParseResult parsed = parse_options(argc, argv);
  std::string env_error;
  const std::optional<double> min_busbw = min_busbw_from_env(&env_error);
  if (parsed.status == ParseResult::Status::Help) {
    if (rank == 0) std::fputs(usage().c_str(), stdout);
  } else if (parsed.status == ParseResult::Status::Error || !env_error.empty()) {
    if (rank == 0)
      std::fprintf(stderr, "arlab-bench: %s\n", parsed.status == ParseResult::Status::Error ? parsed.message.c_str()
                                                                                            : env_error.c_str());
    status = kExitUsage;
  } else {
    // Memory the run could not get beyond its buffers (those fail cleanly, on every rank at
    // once): the rank says so and ends the job, since its peers may wait for it in a call.
    try {
      if (!parsed.options.gradients.empty()) {
        status = run_gradients(parsed.options, MPI_COMM_WORLD, quote_command(argc, argv));
      } else {
        Bench bench(parsed.options, MPI_COMM_WORLD, quote_command(argc, argv));
        status = bench.run(min_busbw);
        if (rank == 0) {
          json = bench.json_path();
          draw = !parsed.options.plot_path.empty() && bench.ran();
        }
      }
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "arlab-bench: rank %d ran out of memory (try a smaller -e, or fewer ranks per host)\n", rank);
      std::fflush(stderr);
      MPI_Abort(MPI_COMM_WORLD, kExitFailed);
    }
  }
  std::fflush(stdout);
  MPI_Finalize();

  // The plot runs after MPI_Finalize: no child process while MPI and the transports are up.
  if (draw) {
    const std::string& image = parsed.options.plot_path;
    const int rc = run_plotter(find_plotter(), json, image);
    if (rc != 0) {
      std::fprintf(stderr, "arlab-bench: --plot %s: plot.py failed (exit %d)\n", image.c_str(), rc);
      if (status == kExitOk) status = kExitFailed;
    } else if (!parsed.options.quiet) {
      std::printf("# plot: %s\n", image.c_str());
    }
  }
  if (!json.empty() && parsed.options.json_path.empty()) std::remove(json.c_str());  // the temporary one
  return status;
}

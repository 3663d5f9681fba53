// arlab-calibrate: measures this machine's links and compute through arlab's own executor,
// transport and CPU reducer, fits the cost model's alpha, beta and gamma by least squares, and
// writes them as a topology file for arlab-model and ARLAB_TOPOLOGY.
//
//   mpirun -np 2 arlab-calibrate -t mpi -o topology/local.yaml --name local
//
// What the cost walk charges, and so what is measured (docs/model.md, "arlab-calibrate"):
// a message costs alpha + bytes x beta of its link class, a reduction bytes x gamma. Every
// all-reduce step has a rank send and receive at once, so alpha and beta are fitted to
// *exchanges* (both directions busy) timed through the executor, its per-message overhead
// included; ping-pong and streams are printed beside them. gamma and the copy rate are fitted
// to the CpuReducer running on every rank at once, at cache-resident and larger sizes. Each is
// fitted in two regimes, split where a size's working set reaches the node's cache (sysfs, or
// --cache-bytes): a line in cache, and beyond it the same intercept with a bandwidth of its own.
// Nothing is fitted to all-reduce times.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "calibrate_options.hpp"
#include "cli.hpp"
#include "calibrate/run.hpp"
#include "calibrate_report.hpp"

namespace arlab::tool {
namespace {

// Before MPI_Init, the launcher's rank: only rank 0 prints --help and flag errors.
bool launcher_rank_zero() {
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"})
    if (const char* r = std::getenv(v)) return std::string(r) == "0";
  return true;
}

int run(const CalibrateOptions& o, int argc, char** argv) {
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  std::string command = "mpirun -np " + std::to_string(size) + " arlab-calibrate";
  for (int i = 1; i < argc; ++i) command += std::string(" ") + argv[i];
  // The file is written after the measurement: a path that cannot be written fails first.
  int writable = 1;
  std::string why;
  if (rank == 0 && o.output && !cli::can_write(*o.output, &why)) {
    std::fprintf(stderr, "arlab-calibrate: cannot write -o %s: %s\n", o.output->c_str(), why.c_str());
    writable = 0;
  }
  MPI_Bcast(&writable, 1, MPI_INT, 0, MPI_COMM_WORLD);
  if (!writable) return 2;
  CalibrateOptions settings = o;
  settings.timeout_s = *Options{}.resolved().timeout_s;  // ARLAB_TIMEOUT_S
  // Rank 0 prints each part as soon as it is measured.
  const Calibration c = calibrate(settings, MPI_COMM_WORLD, command, [rank](Stage stage, const Calibration& c) {
    if (rank != 0) return;
    if (stage == Stage::Started) print_header(stdout, c);
    if (stage == Stage::Link) print_link(stdout, c, c.inter ? *c.inter : *c.intra);
    if (stage == Stage::Compute) {
      print_compute(stdout, c);
      print_summary(stdout, c);
    }
    std::fflush(stdout);
  });
  if (rank != 0 || !o.output) return 0;
  std::ofstream file(*o.output);
  if (!(file << topology_yaml(c)) || !file.flush()) {
    std::fprintf(stderr, "arlab-calibrate: cannot write '%s'\n", o.output->c_str());
    return 1;
  }
  std::printf("# wrote %s\n", o.output->c_str());
  return 0;
}

}  // namespace
}  // namespace arlab::tool

int main(int argc, char** argv) {
  using arlab::tool::CalibrateParse;
  const CalibrateParse parsed = arlab::tool::parse_calibrate_options(argc, argv);
  if (parsed.status != CalibrateParse::Status::Run) {
    const bool help = parsed.status == CalibrateParse::Status::Help;
    if (arlab::tool::launcher_rank_zero()) {
      if (help) std::fputs(arlab::tool::calibrate_usage().c_str(), stdout);
      else std::fprintf(stderr, "arlab-calibrate: %s\n", parsed.message.c_str());
    }
    return help ? 0 : 2;
  }
  MPI_Init(&argc, &argv);
  int rank = 0, status = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  try {
    status = arlab::tool::run(parsed.options, argc, argv);
  } catch (const arlab::tool::CalibrateError& e) {
    if (rank == 0) std::fprintf(stderr, "arlab-calibrate: %s\n", e.message.c_str());
    status = e.status;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "arlab-calibrate: rank %d: %s\n", rank, e.what());
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  MPI_Finalize();
  return status;
}

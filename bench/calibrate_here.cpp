#include "calibrate_here.hpp"

#include <cstdio>
#include <cstdlib>

#include "calibrate_report.hpp"
#include "calibrate/run.hpp"
#include "model_setup.hpp"

namespace arlab::bench {

CalibratedHere calibrate_here(const BenchOptions& o, MPI_Comm world, const std::string& command) {
  tool::CalibrateOptions c;
  c.transport = o.transports.front();
  c.transport_name = to_string(c.transport);
  c.ranks_per_node = o.ranks_per_node;
  c.name = "calibrated by arlab-bench";
  // Every rank exchanges with a partner at once, as an all-reduce's steps run: with more ranks
  // than cores, ranks 0 and 1 alone would measure a machine the all-reduce never sees.
  c.all_pairs = true;
  c.timeout_s = *Options{}.resolved().timeout_s;
  const double t0 = MPI_Wtime();
  tool::Calibration fitted;
  try {
    fitted = tool::calibrate(c, world, command);
  } catch (const tool::CalibrateError& e) {
    throw Error(e.status == 2 ? Error::Code::InvalidArgument : Error::Code::Unavailable, "--calibrate: " + e.message);
  }
  CalibratedHere out;
  out.seconds = MPI_Wtime() - t0;

  // Rank 0's file for everyone: the fits agree, the host names in the comments may not.
  int rank = 0;
  MPI_Comm_rank(world, &rank);
  std::string yaml = rank == 0 ? tool::topology_yaml(fitted) : std::string();
  unsigned long long n = yaml.size();
  MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, world);
  yaml.resize(n);
  MPI_Bcast(yaml.data(), static_cast<int>(n), MPI_CHAR, 0, world);

  out.path = write_temporary_topology(yaml, "calibrated", "--calibrate");

  if (rank == 0) {
    char* text = nullptr;
    std::size_t size = 0;
    if (std::FILE* mem = open_memstream(&text, &size)) {
      tool::print_summary(mem, fitted);
      std::fclose(mem);
      out.summary.assign(text, size);
      if (out.summary.rfind("#\n", 0) == 0) out.summary.erase(0, 2);  // the header ends in its own "#"
      std::free(text);
    }
  }
  return out;
}

}  // namespace arlab::bench

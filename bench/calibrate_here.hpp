// arlab-bench --calibrate: the cost model's machine measured in this launch, just before the
// sweep, by arlab-calibrate's own measurement (src/calibrate/run.hpp, as with --all-pairs)
// over the first -t transport; the pred column and auto then use it. On a machine whose speed drifts between
// launches (a shared virtual machine), a calibration from another launch may describe another
// machine; one made in the same launch describes this one.
#pragma once

#include <mpi.h>

#include <cstdio>
#include <string>

#include "options.hpp"

namespace arlab::bench {

struct CalibratedHere {
  std::string path;     // a temporary topology file (each rank its own): remove when loaded
  std::string summary;  // the fitted numbers, '#'-prefixed lines for the header (rank 0)
  double seconds = 0;   // how long the measurement took
};

// Collective over `world`. Throws arlab::Error (InvalidArgument for what the user can fix:
// fewer than 2 ranks, a --ranks-per-node that does not divide them).
CalibratedHere calibrate_here(const BenchOptions& o, MPI_Comm world, const std::string& command);

}  // namespace arlab::bench

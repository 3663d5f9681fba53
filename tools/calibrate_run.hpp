// arlab-calibrate's measurement, as a function: every rank measures the links and the
// compute through arlab's own executor, transport and CPU reducer, and fits them
// (calibrate_topology.hpp). arlab-calibrate writes the result as a topology file; arlab-bench
// --calibrate uses it for its own model, measured in the same launch as its sweep.
#pragma once

#include <mpi.h>

#include <cstdio>
#include <string>

#include "calibrate_options.hpp"
#include "calibrate_topology.hpp"

namespace arlab::tool {

// An error every rank meets alike (a bad rank count, a transport this build lacks): the
// status to exit with (2: usage) and one line.
struct CalibrateError {
  int status;
  std::string message;
};

// Collective over `world` (at least 2 ranks). `command` is how the run was launched, for the
// file's header. Rank 0 prints the measured tables and fits to `out` when it is not null.
// Throws CalibrateError; other errors (a transport failure) as arlab::Error.
Calibration calibrate(const CalibrateOptions& o, MPI_Comm world, const std::string& command, std::FILE* out);

}  // namespace arlab::tool

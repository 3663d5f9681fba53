// The calibration, as a function: every rank measures the links and the compute through
// arlab's own executor, transport and CPU reducer, and fits them (calibration.hpp).
// arlab-calibrate writes the result as a topology file; arlab-bench --calibrate uses it for its
// own model, measured in the same launch as its sweep; a communicator's self-calibration
// (self_calibration.hpp) caches it for the machine.
#pragma once

#include <mpi.h>

#include <functional>
#include <string>

#include "calibrate/calibration.hpp"

namespace arlab::calib {

// An error every rank meets alike (a bad rank count, a transport this build lacks): the
// status to exit with (2: usage) and one line.
struct CalibrateError {
  int status;
  std::string message;
};

// This host's name ("unknown" when it has none); its CPU model and the cores this process may
// use ("AMD EPYC 9B14, 2 cores"); the time now as "2026-12-03 19:02 UTC".
std::string host_name();
std::string cpu_text();
std::string utc_now();

// What has been measured so far, as it is measured: the header (nothing measured yet), each
// link, then the compute. Called on every rank.
enum class Stage { Started, Link, Compute };
using Observer = std::function<void(Stage, const Calibration&)>;

// Collective over `world` (at least 2 ranks). `command` is how the run was launched, for the
// file's header. Throws CalibrateError; other errors (a transport failure) as arlab::Error.
Calibration calibrate(const Settings& o, MPI_Comm world, const std::string& command, const Observer& observe = {});

}  // namespace arlab::calib

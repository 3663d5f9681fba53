#include "model/machine.hpp"

namespace arlab::detail {

Machine Machine::uniform(double alpha_us, double beta, double gamma) {
  Machine m;
  m.name = "uniform";
  m.intra = m.inter = LinkCost{alpha_us, beta};
  m.reduce_us_per_byte = gamma;
  m.copy_us_per_byte = gamma;
  return m;
}

// Fitted by hand to arlab-bench runs on the development machine (2 cores, Open MPI 4.1 over
// shared memory, 2 ranks; docs/performance.md). alpha: the 8-byte recursive-doubling time (one
// exchange, 0.2-0.3 us) plus the executor's own overhead. beta and gamma: from the 16-64 MiB
// Rabenseifner and recursive-doubling times, whose difference isolates the reduction: the copy
// through shared memory runs at ~5 GB/s, the float sum at ~5 GB/s of output once buffers
// exceed the caches. arlab-calibrate (a later tool) replaces these by a least-squares fit.
Machine Machine::local_default() {
  Machine m;
  m.name = "one shared-memory node (built-in defaults)";
  m.intra = m.inter = LinkCost{0.5, 1.0 / 5000.0};
  m.reduce_us_per_byte = 1.0 / 5000.0;
  m.copy_us_per_byte = 1.0 / 9000.0;
  return m;
}

}  // namespace arlab::detail

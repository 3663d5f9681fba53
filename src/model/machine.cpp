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
// shared memory, 2 ranks; docs/performance.md): alpha from the 8-byte recursive-doubling time
// (one exchange, ~0.5 us); beta from large-message point-to-point time, where the copy through
// shared memory runs at ~2 GB/s; gamma from the CPU reducer's float sum on buffers larger than
// the caches (~5 GB/s of output). arlab-calibrate (a later tool) replaces these by a fit.
Machine Machine::local_default() {
  Machine m;
  m.name = "one shared-memory node (built-in defaults)";
  m.intra = m.inter = LinkCost{0.5, 1.0 / 2000.0};
  m.reduce_us_per_byte = 1.0 / 5000.0;
  m.copy_us_per_byte = 1.0 / 9000.0;
  return m;
}

}  // namespace arlab::detail

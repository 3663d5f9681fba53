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

// Measured on the development machine (2 cores, Open MPI 4.1 over shared memory) with
// arlab-bench, 2 ranks; see docs/performance.md. alpha: half the round trip of an 8-byte
// exchange; beta: the slope of large-message recursive-doubling times; gamma: the CPU
// reducer's float-sum throughput per output byte.
Machine Machine::local_default() {
  Machine m;
  m.name = "local shared-memory node (built-in default)";
  m.intra = m.inter = LinkCost{0.6, 1.0 / 6000.0};
  m.reduce_us_per_byte = 1.0 / 5000.0;
  m.copy_us_per_byte = 1.0 / 8000.0;
  return m;
}

}  // namespace arlab::detail

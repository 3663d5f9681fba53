#include "model/machine.hpp"

#include "arlab/arlab.hpp"

namespace arlab::detail {

int Machine::ranks() const {
  if (!rank_to_node.empty()) return static_cast<int>(rank_to_node.size());
  return ranks_per_node > 0 ? nodes * ranks_per_node : 0;
}

int Machine::node_of(int rank) const {
  if (!rank_to_node.empty())
    return rank >= 0 && static_cast<std::size_t>(rank) < rank_to_node.size() ? rank_to_node[rank] : -1 - rank;
  return ranks_per_node > 0 ? rank / ranks_per_node : 0;
}

std::vector<int> Machine::placement(int p) const {
  if (!rank_to_node.empty() && static_cast<std::size_t>(p) != rank_to_node.size())
    throw Error(Error::Code::InvalidArgument,
                "machine '" + name + "' (" + source + ") places " + std::to_string(rank_to_node.size()) +
                    " ranks with rank_to_node, but " + std::to_string(p) + " ranks were asked for");
  std::vector<int> node(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) node[r] = node_of(r);
  return node;
}

Machine Machine::uniform(double alpha_us, double beta, double gamma) {
  Machine m;
  m.name = "uniform";
  m.source = "built-in";
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
// exceed the caches. topology/local.yaml holds the same numbers; arlab-calibrate (a later
// tool) replaces them by a least-squares fit.
Machine Machine::local_default() {
  Machine m;
  m.name = "one shared-memory node (built-in defaults)";
  m.source = "built-in";
  m.intra = m.inter = LinkCost{0.5, 1.0 / 5000.0};
  m.reduce_us_per_byte = 1.0 / 5000.0;
  m.copy_us_per_byte = 1.0 / 9000.0;
  return m;
}

}  // namespace arlab::detail

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

// The numbers of topology/local.yaml: arlab-calibrate's least-squares fit on the development
// machine (2 cores, Open MPI 4.1 over shared memory, 2 ranks) of exchanges through the executor
// and of the CPU reducer's float sum and copy; docs/model.md, "arlab-calibrate". After
// recalibrating, copy the file's numbers here (Topology.LocalFileEqualsTheBuiltInDefaults holds
// the two equal). 1e-3 / bandwidth in GB/s is microseconds per byte.
Machine Machine::local_default() {
  Machine m;
  m.name = "one shared-memory node (built-in defaults)";
  m.source = "built-in";
  m.intra = m.inter = LinkCost{0.2757, 1e-3 / 8.896};
  m.reduce_us_per_byte = 1e-3 / 21.85;
  m.copy_us_per_byte = 1e-3 / 102.4;
  return m;
}

}  // namespace arlab::detail

// A machine as the cost model sees it: link classes with a latency (alpha) and an inverse
// bandwidth (beta), and the cost of reducing or copying a byte (gamma).
#pragma once

#include <string>

namespace arlab::detail {

struct LinkCost {
  double alpha_us = 0;           // per message
  double us_per_byte = 0;        // beta: 1 / bandwidth
};

struct Machine {
  std::string name;
  int ranks_per_node = 0;        // consecutive ranks share a node; 0: all ranks on one node
  LinkCost intra, inter;
  double reduce_us_per_byte = 0; // gamma: per byte of output of a reduction
  double copy_us_per_byte = 0;   // per byte copied locally

  const LinkCost& link(int a, int b) const {
    return ranks_per_node > 0 && a / ranks_per_node != b / ranks_per_node ? inter : intra;
  }

  // Every link alike: the machine of the textbook closed forms.
  static Machine uniform(double alpha_us, double beta_us_per_byte, double gamma_us_per_byte);
  // One shared-memory node, ranks talking through MPI: the built-in default until a topology
  // file is given. See machine.cpp for where the numbers come from.
  static Machine local_default();
};

}  // namespace arlab::detail

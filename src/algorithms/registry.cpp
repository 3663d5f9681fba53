#include "algorithms/registry.hpp"

namespace arlab::detail {

namespace {
constexpr AlgorithmInfo kTable[] = {
    {Algorithm::Ring, "ring", "reduce-scatter then allgather around a ring, pipelined in chunks",
     build_ring},
    {Algorithm::Tree, "tree", "double binary tree: reduce up, broadcast down, half the data per tree, pipelined",
     build_tree},
    {Algorithm::RecursiveDoubling, "recursive-doubling",
     "log p exchanges of the whole vector with partners at distance 1, 2, 4, ...", build_recursive_doubling},
    {Algorithm::Rabenseifner, "rabenseifner",
     "reduce-scatter by recursive halving, allgather by recursive doubling", build_rabenseifner},
    {Algorithm::Hierarchical, "hierarchical",
     "reduce-scatter inside each node, a flat all-reduce of each rank's block across the nodes, allgather inside",
     build_hierarchical},
};
}  // namespace

std::span<const AlgorithmInfo> schedule_algorithm_table() { return kTable; }

const AlgorithmInfo* find_schedule_algorithm(Algorithm id) {
  for (const auto& info : kTable)
    if (info.id == id) return &info;
  return nullptr;
}

}  // namespace arlab::detail

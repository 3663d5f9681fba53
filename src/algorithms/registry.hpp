// The algorithms that are schedules: name, one-line description and builder.
#pragma once

#include <span>

#include "arlab/arlab.hpp"
#include "schedule/schedule.hpp"

namespace arlab::detail {

struct AlgorithmInfo {
  Algorithm id;
  const char* name;
  const char* description;
  Schedule (*build)(const Shape&);
};

Schedule build_ring(const Shape&);
// One half of the ring: the reduce-scatter alone leaves rank r holding block (r + 1) % p
// reduced (Blocks of count into p); the allgather alone starts from exactly that.
enum class RingPhases { ReduceScatter, Allgather, Both };
Schedule build_ring_phases(const Shape&, RingPhases);
Schedule build_tree(const Shape&);
Schedule build_recursive_doubling(const Shape&);
Schedule build_rabenseifner(const Shape&);
// Shape::rank_to_node (or ranks_per_node) gives the nodes, Shape::inter the algorithm among them.
Schedule build_hierarchical(const Shape&);

// The schedule a call runs: `algo`'s for the whole shape, or, when Shape::segments() > 1, its
// schedule for each segment, one after another (algorithms/segmented.cpp). The executor, the
// validator and the cost walk all take their schedules from here.
Schedule build_schedule(const AlgorithmInfo& algo, const Shape& shape);

std::span<const AlgorithmInfo> schedule_algorithm_table();
// nullptr when `id` is not a schedule algorithm (Auto, Mpi, Nccl).
const AlgorithmInfo* find_schedule_algorithm(Algorithm id);

}  // namespace arlab::detail

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
Schedule build_tree(const Shape&);
Schedule build_recursive_doubling(const Shape&);
Schedule build_rabenseifner(const Shape&);

std::span<const AlgorithmInfo> schedule_algorithm_table();
// nullptr when `id` is not a schedule algorithm (Auto, Mpi, Nccl, Hierarchical).
const AlgorithmInfo* find_schedule_algorithm(Algorithm id);

}  // namespace arlab::detail

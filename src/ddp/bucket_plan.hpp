// Which gradients go into which bucket (include/arlab/ddp.hpp): a pure function, so that the
// assignment is tested without MPI.
#pragma once

#include <cstddef>
#include <vector>

#include "arlab/arlab.hpp"

namespace arlab::detail {

struct GradientShape {
  std::size_t count;
  DataType type;
};

// Buckets of the gradients taken in `order` (indices into `gradients`): consecutive ones share
// a bucket while it stays within its cap (first_cap for the first bucket, cap for the others)
// and of one data type; a gradient larger than the cap has a bucket of its own. Every index
// of `order` lands in exactly one bucket, in that order.
std::vector<std::vector<std::size_t>> assign_buckets(const std::vector<GradientShape>& gradients,
                                                     const std::vector<std::size_t>& order, std::size_t first_cap,
                                                     std::size_t cap);

}  // namespace arlab::detail

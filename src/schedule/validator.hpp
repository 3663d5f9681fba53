// The symbolic validator: runs all ranks' schedules without data. Every element carries the
// set of ranks whose contributions it holds (a 64-bit mask, so p <= 64). It proves that every
// send meets a receive of the same size, that the schedules cannot deadlock, that no buffer
// is changed while a send of it is in flight, that no contribution is added twice, and that
// every output element ends up holding every rank exactly once.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "schedule/schedule.hpp"

namespace arlab::detail {

struct AlgorithmInfo;

// Runs one ordering of the ranks' schedules (ready steps are taken in an order drawn from
// `seed`, so a missing dependency shows up as a wrong or doubled sum). Returns "" when every
// check holds, else the first failure in words.
std::string validate(const std::vector<Schedule>& ranks, std::size_t count, bool in_place,
                     std::uint64_t seed = 1);

// Builds every rank's schedule of `algo` for `shape` (its rank field is ignored) and validates
// it in place and out of place, with `orders` different step orderings each.
std::string validate_algorithm(const AlgorithmInfo& algo, Shape shape, int orders = 2);

}  // namespace arlab::detail

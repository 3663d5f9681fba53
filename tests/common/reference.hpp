// Test helper: each rank's input and the exact all-reduce result, in every type. The data are
// small integers (for Prod only 1 and 2), exact in every type, so any order of reduction gives
// the same bits; the reference reduces rank 0's data with every other rank's, in rank order.
#pragma once

#include <cstddef>
#include <vector>

#include "arlab/arlab.hpp"
#include "common/store.hpp"
#include "reduce/reducer.hpp"

namespace arlab::test {

inline double value(int rank, std::size_t i, ReduceOp op) {
  if (op == ReduceOp::Prod) return (i + static_cast<std::size_t>(rank)) % 5 == 0 ? 2 : 1;
  return static_cast<double>((i * 7 + static_cast<std::size_t>(rank) * 3) % 11) + 1;
}

inline std::vector<std::byte> fill(DataType type, std::size_t count, int rank, ReduceOp op) {
  const std::size_t e = size_of(type);
  std::vector<std::byte> v(count * e);
  for (std::size_t i = 0; i < count; ++i) store(type, v.data() + i * e, value(rank, i, op));
  return v;
}

inline std::vector<std::byte> reference(DataType type, std::size_t count, int p, ReduceOp op) {
  auto acc = fill(type, count, 0, op);
  const ReduceOp run = op == ReduceOp::Avg ? ReduceOp::Sum : op;
  for (int r = 1; r < p; ++r) {
    auto other = fill(type, count, r, op);
    detail::cpu_reduce(run, type, acc.data(), other.data(), acc.data(), count);
  }
  if (op == ReduceOp::Avg) detail::cpu_divide(type, acc.data(), count, p);
  return acc;
}

}  // namespace arlab::test

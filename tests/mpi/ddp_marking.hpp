// How the bucketer tests mark gradients ready, as a backward pass does: host work and the
// program's own MPI between the marks, in an order of each rank's own.
#pragma once

#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <random>
#include <vector>

#include "arlab/ddp.hpp"

namespace arlab::test {

// Marks the gradients in `order`, with host work before each and an MPI_Allreduce on the
// world before every gradient whose index is a multiple of `mpi_every` (every rank makes the
// same MPI calls, at points of its own in the order).
inline void mark_in_order(GradientBucketer& sync, const std::vector<std::size_t>& order, std::size_t mpi_every = 5) {
  for (std::size_t i : order) {
    volatile double sink = 0;
    for (int w = 0; w < 2000; ++w) sink = sink + std::sqrt(static_cast<double>(w));
    int one = 1, sum = 0;
    if (i % mpi_every == 0) MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    sync.mark_ready(i);
  }
}

// Every gradient in an order of this rank's own (so a bucket starts before a given
// MPI_Allreduce on one rank and after it on another: it must never wait there for another).
inline void backward(GradientBucketer& sync, std::size_t n, unsigned seed, std::size_t mpi_every = 5) {
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = n - 1 - i;
  std::mt19937 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  mark_in_order(sync, order, mpi_every);
}

// 0, 1, ..., n - 1: the order of registration (forward).
inline std::vector<std::size_t> forward_order(std::size_t n) {
  std::vector<std::size_t> order(n);
  for (std::size_t i = 0; i < n; ++i) order[i] = i;
  return order;
}

}  // namespace arlab::test

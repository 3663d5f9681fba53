// arlab-bench: one timed loop (a section of a table line) on all ranks.
//
//   fill the send buffer (in place: the receive buffer) with this rank's pattern (-D: its host
//         copy, then copied to the device buffer)
//   -w calls untimed
//   -n calls, each between barriers: MPI_Barrier, t0, allreduce, t1; unless --reuse-input, the
//         input is written anew before each barrier, as a training step's new gradients are.
//         A call's time: with one clock (every rank on one host) from the last rank's t0 to the
//         last rank's t1, so the ranks' uneven exits from the barrier do not count; across
//         hosts, the slowest rank's t1 - t0.
//   -c 1: one more call on fresh data (out of place: the receive buffer first poisoned), then
//         every element of the result checked, and out of place the send buffer too
// Rank 0 gets every call's time and reports their average, min and max.
// With --rounds the sweep runs such a loop per round and combines them (combine_rounds).
#pragma once

#include <arlab/arlab.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "agree.hpp"
#include "call_buffers.hpp"
#include "check.hpp"
#include "results.hpp"

namespace arlab::bench {

struct Call {
  Algorithm algorithm = Algorithm::Auto;
  std::size_t count = 0;
  DataType dtype = DataType::Float32;
  ReduceOp op = ReduceOp::Sum;
  bool in_place = false;
};

// Without -n: at least 20 timed calls per section, and as many more as fill 1 ms, at most 1000
// (short calls: one stray interruption of a 20-call loop of 1 us calls doubles its average).
constexpr double kFillMs = 1.0;
constexpr int kMaxAutoIters = 1000;

struct Loop {
  int iters = 20, warmup = 5;
  bool check = true;
  bool fresh_input = false;  // rewrite the input before every timed call (untimed)
  bool one_clock = false;    // every rank on one host: their steady clocks are one clock
  // > 0: iters is the least; the warm-up calls' time sets how many more fill fill_ms of calls
  // (at most max_iters), the same count on every rank.
  double fill_ms = 0;
  int max_iters = kMaxAutoIters;
};

struct Outcome {
  std::optional<Section> section;   // every rank; the times are rank 0's
  std::optional<Failure> failure;   // agreed: the same on every rank
  std::string first_wrong;          // "on rank 1, index 5: got 3, expected 4" (every rank)
};

// Collective over `world`. The send side is only used out of place; both hold the largest size.
// With device buffers the checker's writes reach the call's buffers, and its results come back,
// by untimed copies.
Outcome measure(MPI_Comm world, Communicator& comm, const Checker& checker, const Call& call, const Loop& loop,
                const CallBuffers& buffers);

// The median of rounds' times: the middle one, the mean of the two middle ones for an even count.
double median_round(std::vector<double> times);

// One section from the rounds of a line (rank 0's times): the median round's average
// (median_round), the min and max over every call, and the wrong count of the round that was
// checked (the last).
Section combine_rounds(const std::vector<Section>& rounds, std::size_t bytes, int nranks);

}  // namespace arlab::bench

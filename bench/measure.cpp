#include "measure.hpp"

#include <algorithm>
#include <cmath>
#include <chrono>
#include <cstdint>
#include <utility>
#include <vector>

namespace arlab::bench {
namespace {

// Seconds on the steady clock: CLOCK_MONOTONIC, one clock for every process of a host.
double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

}  // namespace

Outcome measure(MPI_Comm world, Communicator& comm, const Checker& checker, const Call& c, const Loop& loop,
                const CallBuffers& b) {
  const int rank = comm_rank(world), nranks = comm_size(world);
  void* recv = b.call(Side::Recv);
  const void* send = c.in_place ? recv : b.call(Side::Send);
  const Side input = c.in_place ? Side::Recv : Side::Send;
  const std::size_t bytes = c.count * size_of(c.dtype);
  auto once = [&] { comm.allreduce(send, recv, c.count, c.dtype, c.op, c.algorithm); };
  auto fill_input = [&] {
    checker.fill(b.host(input), c.count);
    b.to_call(input, bytes);
  };
  Outcome out;

  fill_input();
  double warm_s = 0;  // the warm-up calls after the first, this rank's time
  out.failure = agree(world, guarded([&] {
                        for (int i = 0; i < loop.warmup; ++i) {
                          const double t0 = now_s();
                          once();
                          if (i > 0) warm_s += now_s() - t0;
                        }
                      }));
  if (out.failure) return out;
  int iters = loop.iters;
  if (loop.fill_ms > 0) {  // enough calls to fill fill_ms, by the slowest rank's warm-up
    double per_call = loop.warmup > 1 ? warm_s / (loop.warmup - 1) : 0, slowest = 0;
    MPI_Allreduce(&per_call, &slowest, 1, MPI_DOUBLE, MPI_MAX, world);
    const double fill = slowest > 0 ? loop.fill_ms * 1e-3 / slowest : loop.max_iters;
    iters = static_cast<int>(std::clamp<double>(std::ceil(fill), loop.iters, std::max(loop.iters, loop.max_iters)));
  }

  // A rank whose call fails keeps joining the barriers, so every rank makes the same
  // collective calls; the others fail too (a timeout) and all agree below.
  std::vector<double> start(static_cast<std::size_t>(iters), 0.0), end(start.size(), 0.0);
  std::optional<Failure> failed;
  for (std::size_t i = 0; i < start.size(); ++i) {
    if (loop.fresh_input && !failed) fill_input();
    MPI_Barrier(world);
    if (failed) continue;
    start[i] = now_s();
    failed = guarded(once);
    end[i] = now_s();
  }
  if ((out.failure = agree(world, failed))) return out;
  // Per call: one clock, the last entry to the last exit; else the slowest rank's duration.
  std::vector<double> time(start.size(), 0.0);
  if (loop.one_clock) {
    std::vector<double> last_start(start.size(), 0.0), last_end(start.size(), 0.0);
    MPI_Reduce(start.data(), last_start.data(), iters, MPI_DOUBLE, MPI_MAX, 0, world);
    MPI_Reduce(end.data(), last_end.data(), iters, MPI_DOUBLE, MPI_MAX, 0, world);
    for (std::size_t i = 0; i < time.size(); ++i) time[i] = last_end[i] - last_start[i];
  } else {
    std::vector<double> mine(start.size(), 0.0);
    for (std::size_t i = 0; i < mine.size(); ++i) mine[i] = end[i] - start[i];
    MPI_Reduce(mine.data(), time.data(), iters, MPI_DOUBLE, MPI_MAX, 0, world);
  }

  Section s;
  if (rank == 0) {
    double sum = 0;
    for (double t : time) sum += t;
    s.iters = iters;
    s.time_us = sum / iters * 1e6;
    s.min_us = *std::min_element(time.begin(), time.end()) * 1e6;
    s.max_us = *std::max_element(time.begin(), time.end()) * 1e6;
    s.algbw_GBps = algbw_GBps(c.count * size_of(c.dtype), s.time_us);
    s.busbw_GBps = busbw_GBps(s.algbw_GBps, nranks);
  }

  if (loop.check) {
    fill_input();
    if (!c.in_place) {
      checker.poison(b.host(Side::Recv), c.count);  // a result left over from the timed calls cannot pass
      b.to_call(Side::Recv, bytes);
    }
    if ((out.failure = agree(world, guarded(once)))) return out;
    b.to_host(Side::Recv, bytes);
    if (!c.in_place) b.to_host(Side::Send, bytes);
    Mismatch first;
    std::uint64_t mine = checker.count_wrong(b.host(Side::Recv), c.count, &first), wrong = 0;
    std::optional<std::string> where;
    if (mine > 0) where = "index " + std::to_string(first.index) + ": got " + first.got + ", expected " + first.expected;
    if (!c.in_place) {
      const std::uint64_t changed = checker.count_changed(b.host(Side::Send), c.count);
      if (changed > 0 && !where) where = std::to_string(changed) + " elements of the send buffer changed";
      mine += changed;
    }
    MPI_Allreduce(&mine, &wrong, 1, MPI_UINT64_T, MPI_SUM, world);
    s.wrong = wrong;
    if (wrong > 0) {
      if (auto agreed = agree_text(world, where))
        out.first_wrong = "on rank " + std::to_string(agreed->first) + ", " + agreed->second;
    }
  }
  out.section = s;
  return out;
}

double median_round(std::vector<double> times) {
  std::sort(times.begin(), times.end());
  const std::size_t mid = times.size() / 2;
  return times.size() % 2 ? times[mid] : (times[mid - 1] + times[mid]) / 2;
}

Section combine_rounds(const std::vector<Section>& rounds, std::size_t bytes, int nranks) {
  std::vector<double> times, states;
  Section s = rounds.back();
  for (const Section& r : rounds) {
    times.push_back(r.time_us);
    states.push_back(r.state_probe_us);
    s.min_us = std::min(s.min_us, r.min_us);
    s.max_us = std::max(s.max_us, r.max_us);
  }
  s.time_us = median_round(std::move(times));
  s.state_probe_us = median_round(std::move(states));
  s.algbw_GBps = algbw_GBps(bytes, s.time_us);
  s.busbw_GBps = busbw_GBps(s.algbw_GBps, nranks);
  return s;
}

}  // namespace arlab::bench

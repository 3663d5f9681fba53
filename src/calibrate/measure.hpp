// arlab-calibrate's measurements. Links are timed through arlab's own Executor on the chosen
// Transport, running small hand-built schedules (not all-reduces): so a message costs what it
// costs inside an all-reduce, executor bookkeeping and the transport's per-message work
// included. Compute is timed with the CpuReducer the executor uses.
//
// Every rank calls every function in the same order: ranks outside the measured pair run
// empty programs (transports that number runs stay in step) and all join the collectives that
// agree on iteration counts and gather times. A time is the median over samples of the slowest
// rank's time, divided by the units in one sample; valid on every rank. Samples are taken in
// rounds, one of every size per round, so that a burst of load on a shared machine spoils one
// sample of many sizes rather than every sample of one.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <functional>
#include <utility>
#include <vector>

#include "exec/executor.hpp"
#include "reduce/reducer.hpp"
#include "transport/transport.hpp"

namespace arlab::calib {

using Runnable = std::function<void()>;

// Waits for `req`, sleeping between tests once it has waited a while, so that a rank with
// nothing to do in a probe (every rank but the pair measured) leaves its core to those that
// run it. Where ranks outnumber cores (the emulated 2 x 2 cluster: 4 ranks on 2 cores), the
// idle ranks spinning in MPI_Allreduce, even yielding, took the measured pair's cores, and
// Open MPI's TCP path moved the pair's 4 MiB exchange at half the link's rate (66 ms against
// 35) through whole launches: 13 of 48 exchanges ran at the full rate, against 45 of 48 with
// the idle ranks sleeping (four launches each, alternating; docs/hierarchical.md).
// `spins` tests first, then a sleep of 20 us between tests.
void wait_leaving_the_core(MPI_Request& req, int spins = 100);

// One thing to time: prepare(k) does k units' worth of work `units_per_k` times over.
struct Probe {
  std::function<Runnable(std::size_t)> prepare;
  double units_per_k = 1;
  std::size_t max_k = 1;
};

struct Timing {
  double sample_ms = 20;  // iterations per sample are chosen to last about this long
  int samples = 5;
  // Samples of a probe whose one run outlasts sample_ms (its sample is then that one run: a
  // long, steadier measurement); 0: `samples`.
  int long_samples = 0;
};

class LinkBench {
 public:
  // Buffers hold `max_bytes` (send side) and as much again (receive side) per rank.
  LinkBench(detail::Transport& transport, MPI_Comm control, Timing timing, std::size_t max_bytes,
            double timeout_s);

  struct Sweep {
    std::vector<double> pingpong_us;  // one way: half of a round trip a -> b -> a
    std::vector<double> exchange_us;  // a and b send each other the bytes at once, per exchange
  };
  // With `all_pairs`, every rank runs the pattern with its pair at once: pairs are ranks r and
  // r + (b - a) for r in even blocks of b - a ranks (r and r + 1 for b - a = 1), a rank without
  // a pair idles; the time is still the slowest rank's.
  // Without `pingpong`, exchanges only (pingpong_us stays empty).
  Sweep sweep(int a, int b, const std::vector<std::size_t>& sizes, bool all_pairs = false, bool pingpong = true);
  // The exchange of `bytes` between a and b alone, and with every pair at once (all_pairs):
  // the two probes in the same rounds, so that a change of the machine's pace meets both.
  std::pair<double, double> alone_and_together(int a, int b, std::size_t bytes);

  // One exchange per executor run, each run after a barrier and timed from the last rank's
  // entry to the last rank's exit (with `one_clock`, every rank on one host; else the slowest
  // rank's own time), as arlab-bench times an all-reduce; the send buffer written anew before
  // each (untimed), as a caller writes its input, and the receive buffer one the peer has not
  // read. The median over the runs, per size.
  std::vector<double> exchange_calls(int a, int b, const std::vector<std::size_t>& sizes, bool all_pairs = false,
                                     bool one_clock = true);

  struct Stream {
    double one_way_GBps = 0;    // a -> b
    double both_ways_GBps = 0;  // a -> b and b -> a at once, per direction
  };
  // `count` messages of `chunk` bytes posted at once.
  Stream stream(int a, int b, std::size_t chunk, std::size_t count);

  // What it costs to write bytes a peer has just read: one exchange of `bytes` per call,
  // followed by the reduction sent + received, written over the bytes just sent (in place, as
  // recursive doubling does in place: over shared memory the peer's CPU has just copied them
  // out, so they sit in its cache) or over the bytes just received (aside); before each call the
  // rank writes its send buffer anew, untimed. The medians of the slowest rank's call times;
  // the difference is the write-back cost (LinkCost::writeback). Later: two exchanges (x, then
  // another buffer w), then the reduction written over x, which the peer read an exchange
  // before (as the ring's allgather receives over what its reduce-scatter sent), or aside
  // (LinkCost::writeback_later).
  struct Writeback {
    std::vector<double> in_place_us, aside_us, later_us, later_aside_us;
  };
  Writeback writeback(int a, int b, const std::vector<std::size_t>& sizes, bool all_pairs = false);

 private:
  enum class Pattern {
    PingPong,
    Exchange,
    Stream,
    StreamBothWays,
    ReduceInPlace,
    ReduceAside,
    ReduceLater,
    ReduceLaterAside
  };
  detail::Schedule schedule(Pattern, int a, int b, std::size_t bytes, std::size_t k, bool all_pairs = false) const;
  Probe probe(Pattern, int a, int b, std::size_t bytes, bool all_pairs);  // chains of k rounds
  void run(const detail::Program& program, std::size_t bytes_used);
  // One run of `program` timed alone: the first `rewritten` bytes of the send buffer written
  // anew (untimed, pattern i), a barrier (a rank with no `peer`, -1, waits in it sleeping),
  // then the run; its entry and exit times in us.
  std::pair<double, double> timed_call(const detail::Program& program, std::size_t bytes_used, std::size_t rewritten,
                                       int i, int peer);
  // This rank's peer in a call of the pair (a, b) (with all_pairs every rank's pair); -1: none.
  int peer_in(int a, int b, bool all_pairs) const;
  // How many rounds of calls, each timed alone, fit `budget_us` at `round_us` a round (at most
  // `most`): at least 10, or where one call (`call_us`) outlasts a sample, as many as a
  // probe's long samples (Timing::long_samples, else samples).
  int calls_within(double budget_us, double round_us, double call_us, int most) const;

  detail::Transport& transport_;
  detail::CpuReducer reducer_;
  detail::Executor executor_;
  MPI_Comm control_;
  Timing timing_;
  double timeout_s_;
  std::vector<std::byte> send_, recv_;
};

// Float sum and copy on every rank at once, as an all-reduce runs them: us per call.
class ComputeBench {
 public:
  ComputeBench(MPI_Comm control, Timing timing, std::size_t max_bytes);
  struct Sweep {
    std::vector<double> reduce_us;  // out = a + b, three distinct buffers, `bytes` of output
    std::vector<double> copy_us;
  };
  // Without `copies`, the reductions only (copy_us stays empty).
  Sweep sweep(const std::vector<std::size_t>& sizes, bool copies = true);

 private:
  detail::CpuReducer reducer_;
  MPI_Comm control_;
  Timing timing_;
  std::vector<float> a_, b_, out_;
};

// Each probe's median time per unit (per k of prepare(k), over units_per_k), sampled as
// measure.cpp says: the slowest rank's time, in rounds over the probes; the same on every rank.
std::vector<double> median_us(MPI_Comm comm, Timing timing, const std::vector<Probe>& probes);

// How many samples to take of a probe whose one run took `run_us` (the slowest rank's, so the
// same on every rank): timing.samples, or timing.long_samples (at most as many) where that run
// alone outlasts a sample.
int samples_for(const Timing& timing, double run_us);

// The sizes up to 1 MiB (at least the first) measured with `sweep`, then each larger one
// whose exchange, at the time per byte of the largest measured so far, would take at most
// `max_ms`, one at a time, in order, stopping at the first that would not. `measured` gets the
// sizes measured. Each rank must see the same times (LinkBench's are the slowest rank's), so
// that all measure the same sizes.
LinkBench::Sweep sweep_within_time(const std::function<LinkBench::Sweep(const std::vector<std::size_t>&)>& sweep,
                                   const std::vector<std::size_t>& sizes, double max_ms,
                                   std::vector<std::size_t>& measured);

}  // namespace arlab::calib

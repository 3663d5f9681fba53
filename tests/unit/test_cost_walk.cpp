// The cost walk must reproduce the textbook closed forms on a uniform network
// (Thakur, Rabenseifner, Gropp 2005) when pipelining is off; on a machine with a beyond-cache
// regime, with the rates of the regime the call's working set falls in.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>

#include "algorithms/registry.hpp"
#include "closed_forms.hpp"
#include "model/cost_walk.hpp"

namespace arlab::detail {
namespace {

constexpr double kAlpha = 2.0, kBeta = 1e-3, kGamma = 2.5e-4;  // us, us/B, us/B

double closed_form(Algorithm a, int p, double n) { return test::closed_form(a, p, n, {kAlpha, kBeta, kGamma}); }

double walk(Algorithm a, int p, std::size_t count) {
  Shape s;
  s.nranks = p;
  s.count = count;
  s.elem_size = 4;
  s.chunk_bytes = 0;  // pipelining off
  return predict(*find_schedule_algorithm(a), s, Machine::uniform(kAlpha, kBeta, kGamma)).total_us;
}

TEST(CostWalk, MatchesClosedForms) {
  for (Algorithm a : {Algorithm::Ring, Algorithm::RecursiveDoubling, Algorithm::Rabenseifner})
    for (int p = 2; p <= 64; ++p) {
      const std::size_t count = 720720 * 4;  // divisible by 1..16 and large enough for rounding
      const double n = static_cast<double>(count) * 4;
      const double expected = closed_form(a, p, n), got = walk(a, p, count);
      EXPECT_NEAR(got, expected, 0.01 * expected) << to_string(a) << " p=" << p;
    }
}

TEST(CostWalk, BreakdownAddsUp) {
  Shape s;
  s.nranks = 8;
  s.count = 1 << 20;
  const Cost c = predict(*find_schedule_algorithm(Algorithm::Ring), s, Machine::uniform(kAlpha, kBeta, kGamma));
  EXPECT_NEAR(c.latency_us + c.bandwidth_us + c.reduce_us, c.total_us, 1e-6 * c.total_us);
  EXPECT_GT(c.latency_us, 0);
  EXPECT_GT(c.reduce_us, 0);
}

TEST(CostWalk, PipeliningHelpsTheTreeAtLargeSizes) {
  Shape s;
  s.nranks = 16;
  s.count = 16 << 20;
  s.elem_size = 4;
  const Machine m = Machine::uniform(kAlpha, kBeta, kGamma);
  s.chunk_bytes = 0;
  const double flat = predict(*find_schedule_algorithm(Algorithm::Tree), s, m).total_us;
  s.chunk_bytes = 256 << 10;
  const double piped = predict(*find_schedule_algorithm(Algorithm::Tree), s, m).total_us;
  EXPECT_LT(piped, 0.75 * flat);
}

TEST(CostWalk, LatencyBoundAtSmallSizes) {
  // 8 bytes on 64 ranks: recursive doubling (6 steps) beats the ring (126 steps).
  EXPECT_LT(walk(Algorithm::RecursiveDoubling, 64, 2), walk(Algorithm::Ring, 64, 2));
  // 64 MiB: the ring beats recursive doubling, whose every step moves the whole vector.
  EXPECT_LT(walk(Algorithm::Ring, 64, 16 << 20), walk(Algorithm::RecursiveDoubling, 64, 16 << 20));
}

// ---- Two regimes: in cache and beyond it ----------------------------------------------

// The uniform machine, with links 4x and reductions 3x slower once a call's working set
// reaches `cache` bytes.
Machine cached(double cache) {
  Machine m = Machine::uniform(kAlpha, kBeta, kGamma);
  m.cache_bytes = cache;
  m.beyond_cache = {4 * kBeta, 4 * kBeta, 3 * kGamma, 3 * kGamma};
  return m;
}

Shape unpipelined(int p, std::size_t count) {
  Shape s;
  s.nranks = p;
  s.count = count;
  s.elem_size = 4;
  s.chunk_bytes = 0;
  return s;
}

std::vector<Schedule> schedules(Algorithm a, Shape s) {
  std::vector<Schedule> out;
  for (int r = 0; r < s.nranks; ++r) {
    s.rank = r;
    out.push_back(find_schedule_algorithm(a)->build(s));
  }
  return out;
}

TEST(CostWalk, WorkingSetIsInputOutputAndScratchOfANodesRanks) {
  // Recursive doubling on 2 ranks: each rank has its input, output and a count of scratch.
  const std::size_t count = 1000;
  const auto rd = schedules(Algorithm::RecursiveDoubling, unpipelined(2, count));
  ASSERT_EQ(rd[0].scratch_count, count);
  Machine one_node = Machine::uniform(kAlpha, kBeta, kGamma), two_nodes = one_node;
  two_nodes.ranks_per_node = 1;
  EXPECT_EQ(working_set_bytes(rd, one_node, count, 4), 2 * 3 * count * 4.0);  // both ranks share the cache
  EXPECT_EQ(working_set_bytes(rd, two_nodes, count, 4), 3 * count * 4.0);    // each node its own
}

TEST(CostWalk, BeyondTheCacheTheSlowerRatesApply) {
  const test::Uniform fast{kAlpha, kBeta, kGamma}, slow{kAlpha, 4 * kBeta, 3 * kGamma};
  const double cache = 1 << 20;
  for (Algorithm a : {Algorithm::Ring, Algorithm::RecursiveDoubling, Algorithm::Rabenseifner})
    for (int p : {2, 3, 4, 8}) {
      // 32 KiB per rank: working sets of at most 8 ranks x 3 x 32 KiB, in the 1 MiB cache;
      // 11.5 MB per rank, beyond it.
      const std::size_t small = 8192, large = 720720 * 4;
      const auto walk_on = [&](std::size_t count) {
        return predict(*find_schedule_algorithm(a), unpipelined(p, count), cached(cache)).total_us;
      };
      const double in = test::closed_form(a, p, small * 4.0, fast), out = test::closed_form(a, p, large * 4.0, slow);
      EXPECT_NEAR(walk_on(small), in, 0.01 * in) << to_string(a) << " p=" << p;
      EXPECT_NEAR(walk_on(large), out, 0.01 * out) << to_string(a) << " p=" << p;
    }
}

TEST(CostWalk, TheRegimeChangesWhereTheWorkingSetReachesTheCache) {
  const Shape s = unpipelined(4, 1 << 16);
  const AlgorithmInfo& ring = *find_schedule_algorithm(Algorithm::Ring);
  const double ws = working_set_bytes(schedules(Algorithm::Ring, s), cached(0), s.count, s.elem_size, /*in_place=*/true);
  const double in_cache = predict(ring, s, Machine::uniform(kAlpha, kBeta, kGamma)).total_us;
  const double beyond = predict(ring, s, cached(0).at_working_set(0)).total_us;  // no cache: one regime
  EXPECT_EQ(beyond, in_cache);
  EXPECT_EQ(predict(ring, s, cached(ws + 1)).total_us, in_cache);
  Machine slow = Machine::uniform(kAlpha, 4 * kBeta, 3 * kGamma);
  EXPECT_EQ(predict(ring, s, cached(ws)).total_us, predict(ring, s, slow).total_us);
  EXPECT_GT(predict(ring, s, cached(ws)).total_us, 3 * in_cache);
}

TEST(CostWalk, AtWorkingSetKeepsARateWithoutItsOwnBeyondCacheFigure) {
  Machine m = Machine::uniform(kAlpha, kBeta, kGamma);
  m.inter = {5.0, 2 * kBeta};
  m.cache_bytes = 100;
  m.beyond_cache.reduce_us_per_byte = 3 * kGamma;  // only the reduction slows down
  const Machine below = m.at_working_set(99), above = m.at_working_set(100);
  EXPECT_EQ(below.reduce_us_per_byte, kGamma);
  EXPECT_EQ(above.reduce_us_per_byte, 3 * kGamma);
  for (const Machine* x : {&below, &above}) {
    EXPECT_EQ(x->intra.us_per_byte, kBeta);
    EXPECT_EQ(x->inter.us_per_byte, 2 * kBeta);
    EXPECT_EQ(x->inter.alpha_us, 5.0);
    EXPECT_EQ(x->copy_us_per_byte, kGamma);
    EXPECT_EQ(x->cache_bytes, 0);  // one regime: applying it again changes nothing
  }
}

// ---- A protocol switch: messages above rendezvous_bytes pay another alpha --------------------

TEST(CostWalk, MessagesAboveTheRendezvousThresholdPayItsAlpha) {
  const double alpha_rndv = 7.0;
  Machine m = Machine::uniform(kAlpha, kBeta, kGamma);
  m.intra.rendezvous_bytes = m.inter.rendezvous_bytes = 4096;
  m.intra.alpha_us_rendezvous = m.inter.alpha_us_rendezvous = alpha_rndv;
  const AlgorithmInfo& rd = *find_schedule_algorithm(Algorithm::RecursiveDoubling);
  for (int p : {2, 4, 8}) {
    // Recursive doubling sends the whole vector every step: 4096 B eager, 4100 B rendezvous.
    const test::Uniform eager{kAlpha, kBeta, kGamma}, rndv{alpha_rndv, kBeta, kGamma};
    const double below = test::closed_form(Algorithm::RecursiveDoubling, p, 4096, eager),
                 above = test::closed_form(Algorithm::RecursiveDoubling, p, 4100, rndv);
    EXPECT_NEAR(predict(rd, unpipelined(p, 1024), m).total_us, below, 0.01 * below) << p;
    EXPECT_NEAR(predict(rd, unpipelined(p, 1025), m).total_us, above, 0.01 * above) << p;
    const Cost c = predict(rd, unpipelined(p, 1025), m);
    EXPECT_NEAR(c.latency_us, std::log2(p) * alpha_rndv, 1e-9) << p;
  }
}

// ---- Links whose bytes a CPU copies (shared memory) ---------------------------------------

TEST(CostWalk, ACpuCopiedReceiveOccupiesTheReceiversComputeUnit) {
  // gamma = beta, so that overlapping receives with reductions halves the reduce-scatter.
  Machine dma = Machine::uniform(kAlpha, kBeta, kBeta), cpu = dma;
  cpu.intra.cpu_copies = cpu.inter.cpu_copies = true;
  Shape s = unpipelined(2, 1 << 20);
  s.chunk_bytes = 64 << 10;  // pipelined: 64 chunks per half
  const AlgorithmInfo& ring = *find_schedule_algorithm(Algorithm::Ring);
  const double n = 4.0 * (1 << 20);
  // DMA: the ports bound it, n beta plus a chunk's pipeline fill; the CPU copies every received
  // byte (n) and reduces half of them: at least n beta + n/2 gamma on one unit.
  const double t_dma = predict(ring, s, dma).total_us, t_cpu = predict(ring, s, cpu).total_us;
  EXPECT_LT(t_dma, 1.1 * n * kBeta);
  EXPECT_GE(t_cpu, 1.5 * n * kBeta);
  EXPECT_LT(t_cpu, 1.6 * n * kBeta);
  const Cost c = predict(ring, s, cpu);
  EXPECT_NEAR(c.latency_us + c.bandwidth_us + c.reduce_us, c.total_us, 1e-6 * c.total_us);
}

TEST(CostWalk, OnACpuCopiedLinkEveryPipelinedChunkPaysItsLatency) {
  // A 2-rank ring in K chunks per half: each rank receives 2K messages. With DMA the latency is
  // in flight and overlaps the next chunk; with CPU copies it is the receiver's work, once per
  // chunk (LogGP's o), so K chunks cost 2K alpha more than with alpha = 0.
  const AlgorithmInfo& ring = *find_schedule_algorithm(Algorithm::Ring);
  Shape s = unpipelined(2, 1 << 20);
  s.chunk_bytes = 64 << 10;
  const double k = 4.0 * (1 << 20) / 2 / (64 << 10);  // 32 chunks per half
  const auto machine = [](double alpha, bool cpu) {
    Machine m = Machine::uniform(alpha, kBeta, kGamma);
    m.intra.cpu_copies = m.inter.cpu_copies = cpu;
    return m;
  };
  const double cpu_extra = predict(ring, s, machine(kAlpha, true)).total_us - predict(ring, s, machine(0, true)).total_us;
  const double dma_extra = predict(ring, s, machine(kAlpha, false)).total_us - predict(ring, s, machine(0, false)).total_us;
  EXPECT_NEAR(cpu_extra, 2 * k * kAlpha, 0.01 * 2 * k * kAlpha);
  EXPECT_LT(dma_extra, 4 * kAlpha);
  // Unpipelined (one message per half), both pay the same two alphas.
  const Shape flat = unpipelined(2, 1 << 20);
  EXPECT_NEAR(predict(ring, flat, machine(kAlpha, true)).latency_us, 2 * kAlpha, 1e-9);
  EXPECT_NEAR(predict(ring, flat, machine(kAlpha, false)).latency_us, 2 * kAlpha, 1e-9);
}

TEST(CostWalk, OnACpuCopiedLinkSeveralReceiversCopyFromOneSenderAtOnce) {
  // The tree's interior ranks send to two children and a parent. Over DMA one send port streams
  // those one after another; over shared memory each receiver's CPU pulls its own copy, so they
  // overlap. Everything else alike (no latency, reductions nearly free), the CPU-copied tree is
  // faster, and a rank's receives still take turns (the ring, one message per step, is not).
  Machine dma = Machine::uniform(0, kBeta, kBeta * 1e-6), cpu = dma;
  cpu.intra.cpu_copies = cpu.inter.cpu_copies = true;
  const Shape s = unpipelined(8, 1 << 18);
  const AlgorithmInfo& tree = *find_schedule_algorithm(Algorithm::Tree);
  const AlgorithmInfo& ring = *find_schedule_algorithm(Algorithm::Ring);
  const double t_dma = predict(tree, s, dma).total_us, t_cpu = predict(tree, s, cpu).total_us;
  EXPECT_LT(t_cpu, 0.85 * t_dma);  // 4 n beta against 5 n beta
  EXPECT_NEAR(predict(ring, s, cpu).total_us, predict(ring, s, dma).total_us, 0.01 * predict(ring, s, dma).total_us);
}

TEST(CostWalk, TheCallOverheadIsAddedOncePerCall) {
  Machine m = Machine::uniform(kAlpha, kBeta, kGamma);
  const Shape s = unpipelined(8, 4096);
  for (const auto& info : schedule_algorithm_table()) {
    const Cost without = predict(info, s, m);
    m.call_us = 0.75;
    const Cost with = predict(info, s, m);
    m.call_us = 0;
    EXPECT_NEAR(with.total_us - without.total_us, 0.75, 1e-9) << info.name;
    EXPECT_NEAR(with.latency_us - without.latency_us, 0.75, 1e-9) << info.name;
    EXPECT_DOUBLE_EQ(with.bandwidth_us, without.bandwidth_us) << info.name;
    EXPECT_DOUBLE_EQ(with.reduce_us, without.reduce_us) << info.name;
  }
}

TEST(CostWalk, CpuCopiesChangeNothingWhereNothingOverlaps) {
  // Unpipelined, every step's reduction waits for its receive anyway: the closed forms hold.
  Machine cpu = Machine::uniform(kAlpha, kBeta, kGamma);
  cpu.intra.cpu_copies = cpu.inter.cpu_copies = true;
  for (Algorithm a : {Algorithm::Ring, Algorithm::RecursiveDoubling, Algorithm::Rabenseifner})
    for (int p : {2, 3, 4, 8}) {
      const std::size_t count = 720720;
      const double expected = closed_form(a, p, count * 4.0);
      EXPECT_NEAR(predict(*find_schedule_algorithm(a), unpipelined(p, count), cpu).total_us, expected,
                  0.01 * expected)
          << to_string(a) << " p=" << p;
    }
}

}  // namespace
}  // namespace arlab::detail

namespace arlab::detail {
namespace {

// A write (receive, reduction, copy) over bytes that a peer on the node has read since the rank
// last wrote them pays the link's write-back per byte; calls repeat, so out of place what the
// peer read of the output or scratch in the last call counts too.
Machine with_writeback(Machine m) {
  m.intra.writeback = m.inter.writeback = {{1024, 2e-4}, {1 << 20, 1e-4}};
  m.intra.writeback_later = m.inter.writeback_later = {{1024, 1e-4}, {1 << 20, 3e-5}};
  return m;
}

// Recursive doubling: each step's reduction writes over the buffer the step has just sent.
TEST(CostWalk, RecursiveDoublingPaysTheWriteBackOnEveryReductionOverWhatItSent) {
  const Machine m = Machine::uniform(kAlpha, kBeta, kGamma), wb = with_writeback(m);
  const AlgorithmInfo& rd = *find_schedule_algorithm(Algorithm::RecursiveDoubling);
  for (int p : {2, 3, 4, 5, 8})
    for (bool in_place : {true, false}) {
      const Shape s = unpipelined(p, 262144);  // 1 MiB of floats
      const double extra = predict(rd, s, wb, in_place).total_us - predict(rd, s, m, in_place).total_us;
      // log2 p steps of the whole buffer (a non-power of two folds first: the folded ranks'
      // reductions and the final copy back add more); out of place the first step reduces
      // into the output, which no peer has read (the input it sent, the caller writes anew).
      const int steps = std::bit_width(static_cast<unsigned>(p)) - 1;
      const double per_step = 1048576 * 1e-4;
      const std::string what = "p=" + std::to_string(p) + (in_place ? " in place" : " out of place");
      if ((p & (p - 1)) == 0)
        EXPECT_NEAR(extra, (in_place ? steps : steps - 1) * per_step, 1e-6 * per_step) << what;
      else  // at least the power-of-two part's steps; in place every one of them
        EXPECT_GE(extra, (in_place ? steps : steps - 1) * per_step * (1 - 1e-9)) << what;
      EXPECT_LE(extra, (steps + 2) * per_step * (1 + 1e-9)) << what;  // and the fold's two at most
    }
}

// The ring on 2 ranks: the allgather receives into the half the reduce-scatter sent (in place),
// a step later; out of place the reduce-scatter's reduction writes the output half that the
// allgather sent in the last call. Either way half the buffer, once, at the later rate.
TEST(CostWalk, TheRingPaysForWritingWhatItsPeerReadEarlierOrInTheLastCall) {
  const Machine m = Machine::uniform(kAlpha, kBeta, kGamma), wb = with_writeback(m);
  const AlgorithmInfo& ring = *find_schedule_algorithm(Algorithm::Ring);
  const Shape s = unpipelined(2, 262144);
  const double half = 524288, expected = half * wb.intra.writeback_later_us_per_byte(half);
  for (bool in_place : {true, false})
    EXPECT_NEAR(predict(ring, s, wb, in_place).total_us - predict(ring, s, m, in_place).total_us, expected,
                1e-6 * expected)
        << (in_place ? "in place" : "out of place");
  // Pipelined in 64 KiB chunks: each chunk written pays at its distance, the bytes the rank
  // sent between: the rest of the reduce-scatter's half and the allgather's chunks before it,
  // half the buffer for every chunk.
  Shape chunked = s;
  chunked.chunk_bytes = 64 << 10;
  EXPECT_NEAR(predict(ring, chunked, wb, true).total_us - predict(ring, chunked, m, true).total_us, expected,
              1e-6 * expected);
  // The distance, not the size written: with the later table keyed at 64 KiB only, and a
  // different value at half the buffer, the chunks pay the latter.
  Machine far = wb;
  far.intra.writeback_later = {{65536, 1e-4}, {524288, 1e-5}};
  EXPECT_NEAR(predict(ring, chunked, far, true).total_us - predict(ring, chunked, m, true).total_us, half * 1e-5,
              1e-6 * half * 1e-5);
}

// Beyond the cache the call's own traffic has pushed out what a peer read before its last
// exchange: the ring (later writes only) pays nothing there, recursive doubling in place (a
// write right after the send) still pays.
TEST(CostWalk, BeyondTheCacheOnlyTheWriteRightAfterTheSendPays) {
  Machine big = Machine::uniform(kAlpha, kBeta, kGamma);
  big.cache_bytes = 1 << 20;
  big.beyond_cache = {2 * kBeta, 2 * kBeta, 2 * kGamma, 2 * kGamma};
  const Machine big_wb = with_writeback(big);
  const Shape s = unpipelined(2, 262144);  // 1 MiB per buffer: beyond the 1 MiB cache
  const AlgorithmInfo &ring = *find_schedule_algorithm(Algorithm::Ring),
                      &rd = *find_schedule_algorithm(Algorithm::RecursiveDoubling);
  for (bool in_place : {true, false})
    EXPECT_EQ(predict(ring, s, big_wb, in_place).total_us, predict(ring, s, big, in_place).total_us) << in_place;
  EXPECT_NEAR(predict(rd, s, big_wb, true).total_us - predict(rd, s, big, true).total_us, 1048576 * 1e-4, 1e-6);
}

// A segmented call is larger than the cache (its segments fit): what the peer read in the last
// call is gone, and out of place the ring writes nothing a peer read in this one; in place its
// allgathers still write over what their reduce-scatters sent, segment by segment.
TEST(CostWalk, ASegmentedCallPaysOnlyForWhatThePeerReadInThisCall) {
  Machine m = Machine::uniform(kAlpha, kBeta, kGamma);
  m.cache_bytes = 16 << 20;  // two segments of both ranks fit, the whole call does not
  m.beyond_cache = {2 * kBeta, 2 * kBeta, 2 * kGamma, 2 * kGamma};
  m.intra.cpu_copies = m.inter.cpu_copies = true;  // shared memory: a receive holds the CPU, no reduction hides
  const Machine wb = with_writeback(m);
  Shape s = unpipelined(2, 4 << 20);  // 16 MiB of floats in 16 segments of 1 MiB
  s.segment_bytes = 1 << 20;
  ASSERT_EQ(s.segments(), 16u);
  const AlgorithmInfo& ring = *find_schedule_algorithm(Algorithm::Ring);
  EXPECT_EQ(predict(ring, s, wb, false).total_us, predict(ring, s, m, false).total_us);
  EXPECT_GT(predict(ring, s, wb, true).total_us, predict(ring, s, m, true).total_us);
  // Unsegmented and in the cache, the same out-of-place ring pays for the last call's reads.
  const Shape small = unpipelined(2, 65536);
  EXPECT_GT(predict(ring, small, wb, false).total_us, predict(ring, small, m, false).total_us);
}

// Only a peer on the same node leaves the bytes in a cache the writer must take them back from.
TEST(CostWalk, NoWriteBackAcrossNodes) {
  Machine nodes = Machine::uniform(kAlpha, kBeta, kGamma);
  nodes.ranks_per_node = 1;
  const Machine nodes_wb = with_writeback(nodes);
  for (const auto& info : schedule_algorithm_table()) {
    if (info.id == Algorithm::Hierarchical) continue;
    for (int p : {2, 3, 4})
      for (bool in_place : {true, false}) {
        const Shape s = unpipelined(p, 262144);
        EXPECT_EQ(predict(info, s, nodes_wb, in_place).total_us, predict(info, s, nodes, in_place).total_us)
            << info.name << " p=" << p << (in_place ? " in place" : " out of place");
      }
  }
}

TEST(CostWalk, TheWriteBackIsInterpolatedInLogBytesAndHeldBeyondItsEnds) {
  LinkCost l;
  EXPECT_EQ(l.writeback_us_per_byte(4096), 0);  // no table: nothing
  l.writeback = {{8192, 8e-5}, {131072, 4e-5}, {2097152, 0}};
  EXPECT_DOUBLE_EQ(l.writeback_us_per_byte(1), 8e-5);
  EXPECT_DOUBLE_EQ(l.writeback_us_per_byte(8192), 8e-5);
  EXPECT_NEAR(l.writeback_us_per_byte(32768), 6e-5, 1e-12);  // halfway in log(bytes)
  EXPECT_DOUBLE_EQ(l.writeback_us_per_byte(131072), 4e-5);
  EXPECT_NEAR(l.writeback_us_per_byte(524288), 2e-5, 1e-12);
  EXPECT_DOUBLE_EQ(l.writeback_us_per_byte(1e9), 0);
}

}  // namespace
}  // namespace arlab::detail

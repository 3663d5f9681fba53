// Segmented runs (algorithms/segmented.cpp): when a call is cut, the schedule of segments is
// still a correct all-reduce (symbolically and on loopback threads, exactly), a segment waits
// for the one two before it and no more, and the cost walk charges the segments' rates and
// the buffers' one pass through memory.
#include <gtest/gtest.h>

#include <cstring>

#include "algorithms/registry.hpp"
#include "common/loopback_ranks.hpp"
#include "common/reference.hpp"
#include "core/engine.hpp"
#include "model/cost_walk.hpp"
#include "schedule/program.hpp"
#include "schedule/validator.hpp"

namespace arlab::detail {
namespace {

Shape cut(int p, std::size_t count, std::size_t elem, std::size_t segment_bytes) {
  Shape s;
  s.nranks = p;
  s.count = count;
  s.elem_size = elem;
  s.chunk_bytes = 2 * elem;  // pipelined inside each segment too
  s.segment_bytes = segment_bytes;
  return s;
}

TEST(Segmented, OnlyACallOfSixteenSegmentsOrMoreIsCut) {
  EXPECT_EQ(cut(4, 16 * 256, 4, 1024).segments(), 16u);
  EXPECT_EQ(cut(4, 16 * 256 - 1, 4, 1024).segments(), 1u);  // 15.99 segments: whole
  EXPECT_EQ(cut(4, 16 * 256 + 1, 4, 1024).segments(), 17u);  // the last one short
  EXPECT_EQ(cut(4, 1 << 20, 4, 0).segments(), 1u);          // 0: never
  EXPECT_EQ(cut(1, 1 << 20, 4, 1024).segments(), 1u);       // one rank: nothing to cut
  // Never finer than a pipelining chunk per rank: 8 ranks x 256 B chunks make 2 KiB segments.
  Shape chunked = cut(8, 16 * 512, 4, 1024);
  chunked.chunk_bytes = 256;
  EXPECT_EQ(chunked.segments(), 16u);
  chunked.count = 16 * 512 - 1;
  EXPECT_EQ(chunked.segments(), 1u);
  // Segments smaller than an element: one element each, never an empty one.
  Shape tiny = cut(2, 20, 8, 4), one = cut(2, 1, 8, 0);
  tiny.chunk_bytes = one.chunk_bytes = 0;
  EXPECT_EQ(build_schedule(*find_schedule_algorithm(Algorithm::Ring), tiny).steps.size(),
            20 * build_schedule(*find_schedule_algorithm(Algorithm::Ring), one).steps.size());
}

TEST(Segmented, EveryAlgorithmStaysACorrectAllreduce) {
  for (const AlgorithmInfo& algo : schedule_algorithm_table())
    for (int p = 2; p <= 7; ++p)
      for (std::size_t count : {std::size_t{261}, std::size_t{1001}})
        for (std::size_t elem : {std::size_t{4}, std::size_t{8}}) {
          Shape s = cut(p, count, elem, 64);  // 16 or 8 elements a segment: 17 to 126 segments
          s.ranks_per_node = 2;               // hierarchical: nodes of 2 (the last of 1 for odd p)
          ASSERT_GE(s.segments(), 16u);
          EXPECT_EQ(validate_algorithm(algo, s, 4), "") << algo.name << " p=" << p << " count " << count;
        }
}

// Step i of the schedule lies in segment segment_of[i]; the steps each step waits for, directly
// or not, as a bit set.
std::vector<std::vector<bool>> ancestors(const Schedule& s) {
  std::vector<std::vector<bool>> before(s.steps.size(), std::vector<bool>(s.steps.size(), false));
  for (std::size_t i = 0; i < s.steps.size(); ++i)
    for (auto d : s.steps[i].deps) {
      before[i][d] = true;
      for (std::size_t j = 0; j < d; ++j) before[i][j] = before[i][j] || before[d][j];
    }
  return before;
}

TEST(Segmented, ASegmentStartsAfterAllTwoOrMoreBeforeItAndBesideThePreviousOne) {
  for (Algorithm a : {Algorithm::Ring, Algorithm::Tree, Algorithm::RecursiveDoubling, Algorithm::Rabenseifner})
    for (int p : {2, 3, 4}) {
      const AlgorithmInfo& algo = *find_schedule_algorithm(a);
      const Shape s = cut(p, 16 * 8 + 3, 4, 32);  // 17 segments of 8 or 7 floats
      const std::size_t parts = s.segments();
      for (int r = 0; r < p; ++r) {
        Shape one = s;
        one.rank = r;
        const Schedule whole = build_schedule(algo, one);
        // Which segment each step is in: the pieces, built alone, in order.
        std::vector<std::size_t> segment_of;
        const Blocks blocks{s.count, parts};
        for (std::size_t k = 0; k < parts; ++k) {
          Shape piece = one;
          piece.count = blocks.size(k);
          piece.segment_bytes = 0;
          segment_of.insert(segment_of.end(), algo.build(piece).steps.size(), k);
        }
        ASSERT_EQ(segment_of.size(), whole.steps.size());
        const auto before = ancestors(whole);
        bool overlaps = false;  // some step of segment k may run before all of segment k-1 is done
        for (std::size_t i = 0; i < whole.steps.size(); ++i)
          for (std::size_t j = 0; j < i; ++j) {
            if (segment_of[j] + 2 <= segment_of[i])
              ASSERT_TRUE(before[i][j]) << algo.name << " p=" << p << " rank " << r << ": step " << i
                                        << " of segment " << segment_of[i] << " may run before step " << j
                                        << " of segment " << segment_of[j];
            if (segment_of[j] + 1 == segment_of[i] && !before[i][j]) overlaps = true;
          }
        EXPECT_TRUE(overlaps) << algo.name << " p=" << p << ": segments run strictly one at a time";
        // Two halves of scratch, each a piece's.
        EXPECT_EQ(whole.scratch_count % 2, 0u);
      }
    }
}

TEST(Segmented, CutCallsAreExactOnLoopbackForEveryAlgorithmTypeAndOp) {
  // Machine::local_default(): the description a communicator without MPI walks.
  const DataType types[] = {DataType::Int8, DataType::Int64, DataType::Float16, DataType::BFloat16,
                            DataType::Float32, DataType::Float64};
  const ReduceOp ops[] = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max, ReduceOp::Avg};
  Options o = test::loopback_options(16);
  o.segment_bytes = 128;  // 16 x 128 B: calls of 2 KiB and more are cut (16 B chunks x 5 ranks < 128)
  for (int p : {2, 3, 5}) {
    std::vector<std::string> failures(p);
    test::on_threads(p, o, [&](Engine& engine, int rank) {
      for (Algorithm a : {Algorithm::Ring, Algorithm::Tree, Algorithm::RecursiveDoubling, Algorithm::Rabenseifner,
                          Algorithm::Auto})
        for (DataType type : types)
          for (ReduceOp op : ops)
            for (std::size_t count : {std::size_t{2049}, std::size_t{4099}})  // 16-128 segments, the last short
              for (bool in_place : {true, false}) {
                auto send = test::fill(type, count, rank, op);
                std::vector<std::byte> recv(send.size(), std::byte{0x5a});
                void* out = in_place ? send.data() : recv.data();
                engine.allreduce(send.data(), out, count, type, op, a);
                const auto want = test::reference(type, count, p, op);
                if (std::memcmp(out, want.data(), want.size()) != 0 && failures[rank].empty())
                  failures[rank] = to_string(a) + " " + to_string(type) + " " + to_string(op) + " count " +
                                   std::to_string(count) + (in_place ? " in place" : " out of place");
              }
      // What Auto walks is what runs: the plan's predictions are the cut schedules'.
      if (rank == 0) {
        const Shape s = cut(p, 4099, 4, 128);
        for (const auto& c : engine.plan(4099, DataType::Float32).candidates) {
          Shape same = s;
          same.chunk_bytes = 16;
          EXPECT_DOUBLE_EQ(c.predicted_us,
                           predict(*find_schedule_algorithm(c.algorithm), same, Machine::local_default(), false).total_us)
              << to_string(c.algorithm) << " p=" << p;
        }
      }
    });
    for (int r = 0; r < p; ++r) EXPECT_EQ(failures[r], "") << "p=" << p << " rank " << r;
  }
}

TEST(Segmented, TheWalkChargesTheSegmentsRatesAndOnePassThroughMemory) {
  // A machine whose cache holds a few segments but not the call.
  const double alpha = 2, beta = 1e-3, gamma = 2.5e-4, copy = 1e-4, copy_beyond = 4e-4;
  Machine m = Machine::uniform(alpha, beta, gamma);
  m.copy_us_per_byte = copy;
  m.cache_bytes = 1 << 20;
  m.beyond_cache = {4 * beta, 4 * beta, 3 * gamma, copy_beyond};
  Machine in_cache = m;
  in_cache.cache_bytes = 0;  // one regime: the in-cache rates at every size
  const AlgorithmInfo& ring = *find_schedule_algorithm(Algorithm::Ring);
  for (bool in_place : {true, false}) {
    Shape s = cut(2, 1 << 20, 4, 16 << 10);  // 4 MiB per rank in 256 segments of 16 KiB
    s.chunk_bytes = 0;
    const double bytes = static_cast<double>(s.count * s.elem_size);
    const Cost segmented = predict(ring, s, m, in_place);
    const Cost walked = predict(ring, s, in_cache, in_place);  // the same schedule at in-cache rates
    EXPECT_NEAR(segmented.total_us - walked.total_us, bytes * (copy_beyond - copy), 1e-6 * walked.total_us);
    EXPECT_NEAR(segmented.reduce_us - walked.reduce_us, bytes * (copy_beyond - copy), 1e-6 * walked.total_us);
    s.segment_bytes = 0;
    EXPECT_GT(predict(ring, s, m, in_place).total_us, segmented.total_us) << "whole, beyond the cache";
  }
}

}  // namespace
}  // namespace arlab::detail

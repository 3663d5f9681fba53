// Every algorithm's schedules, validated symbolically for p = 1..64 and awkward counts.
#include <gtest/gtest.h>

#include <sstream>

#include "algorithms/registry.hpp"
#include "algorithms/tree.hpp"
#include "schedule/printer.hpp"
#include "schedule/validator.hpp"

namespace arlab::detail {
namespace {

class ValidatorTest : public ::testing::TestWithParam<Algorithm> {};

TEST_P(ValidatorTest, AllRankCountsAndCounts) {
  const AlgorithmInfo& algo = *find_schedule_algorithm(GetParam());
  for (int p = 1; p <= 64; ++p) {
    const std::size_t pp = static_cast<std::size_t>(p);
    for (std::size_t count : {std::size_t{0}, std::size_t{1}, pp - 1, pp, pp + 1, std::size_t{1000},
                              std::size_t{65539}}) {
      Shape shape;
      shape.nranks = p;
      shape.count = count;
      shape.elem_size = 4;
      shape.chunk_bytes = 64 * 1024;  // pipelined: 65539 floats are several chunks
      ASSERT_EQ(validate_algorithm(algo, shape, 1), "");
    }
  }
}

TEST_P(ValidatorTest, SmallChunksManyOrders) {
  // Tiny chunks make many independent pipelines; many orderings hunt for missing dependencies.
  const AlgorithmInfo& algo = *find_schedule_algorithm(GetParam());
  for (int p : {2, 3, 4, 5, 7, 8, 12}) {
    Shape shape;
    shape.nranks = p;
    shape.count = 517;
    shape.elem_size = 8;
    shape.chunk_bytes = 64;  // 8 elements a chunk
    ASSERT_EQ(validate_algorithm(algo, shape, 16), "");
  }
}

TEST_P(ValidatorTest, AcrossNodesInPiecesManyOrders) {
  // Nodes of 1-3 ranks (the last one short where they do not divide p): the messages across
  // nodes go in chunk-sized pieces (Shape::pieces_to), those within a node whole, all exact.
  const AlgorithmInfo& algo = *find_schedule_algorithm(GetParam());
  for (int per_node : {1, 2, 3})
    for (int p : {2, 3, 4, 5, 6, 7, 8}) {
      const std::size_t pp = static_cast<std::size_t>(p);
      for (std::size_t count : {std::size_t{0}, std::size_t{1}, pp - 1, pp + 1, std::size_t{517}}) {
        Shape shape;
        shape.nranks = p;
        shape.count = count;
        shape.elem_size = 8;
        shape.chunk_bytes = 64;  // 8 elements a piece
        shape.ranks_per_node = per_node;
        ASSERT_EQ(validate_algorithm(algo, shape, 8), "") << per_node << " per node, p " << p << ", count " << count;
      }
    }
}

TEST(Pieces, OnlyMessagesAcrossNodesAreCut) {
  // 4 ranks, 2 per node: rank 0's partner within the node is 1, across it 2. The largest
  // message to each, in elements, and how many went there.
  for (Algorithm a : {Algorithm::RecursiveDoubling, Algorithm::Rabenseifner}) {
    Shape shape;
    shape.nranks = 4;
    shape.count = 1000;
    shape.elem_size = 8;
    shape.chunk_bytes = 64;  // 8 elements a piece
    shape.ranks_per_node = 2;
    const Schedule sched = find_schedule_algorithm(a)->build(shape);
    std::size_t largest[4] = {}, sends[4] = {};
    for (const Step& step : sched.steps)
      if (step.kind == StepKind::Send) {
        largest[step.peer] = std::max(largest[step.peer], step.src.count);
        ++sends[step.peer];
      }
    EXPECT_EQ(largest[2], 8u) << to_string(a);  // across: pieces
    EXPECT_GT(sends[2], 60u) << to_string(a);
    EXPECT_GE(largest[1], 250u) << to_string(a);  // within: whole
    EXPECT_LE(sends[1], 2u) << to_string(a);
    shape.ranks_per_node = 0;  // one node: nothing cut
    for (const Step& step : find_schedule_algorithm(a)->build(shape).steps)
      if (step.kind == StepKind::Send && step.peer == 2) EXPECT_GE(step.src.count, 250u) << to_string(a);
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, ValidatorTest,
                         ::testing::Values(Algorithm::Ring, Algorithm::Tree,
                                           Algorithm::RecursiveDoubling, Algorithm::Rabenseifner),
                         [](const auto& info) {
                           std::string n = to_string(info.param);
                           for (auto& c : n) if (c == '-') c = '_';
                           return n;
                         });

// The validator must catch broken schedules, or its passes mean nothing.
Schedule two_rank_exchange(int rank, bool with_dependency, bool reduce_twice) {
  ScheduleBuilder b;
  const int peer = 1 - rank;
  const auto sent = b.send(peer, out_region(0, 4));
  const auto got = b.recv(peer, tmp_region(0, 4));
  ScheduleBuilder::Deps deps = {got};
  if (with_dependency) deps.push_back(sent);
  const auto red = b.reduce(out_region(0, 4), tmp_region(0, 4), deps);
  if (reduce_twice) b.reduce(out_region(0, 4), tmp_region(0, 4), {red});
  return b.finish();
}

TEST(Validator, AcceptsCorrectExchange) {
  EXPECT_EQ(validate({two_rank_exchange(0, true, false), two_rank_exchange(1, true, false)}, 4, true), "");
}

TEST(Validator, CatchesDoubleContribution) {
  const auto err = validate({two_rank_exchange(0, true, true), two_rank_exchange(1, true, true)}, 4, true);
  EXPECT_NE(err.find("twice"), std::string::npos) << err;
}

TEST(Validator, CatchesWriteDuringSend) {
  // Without the send as a dependency the reduction may overwrite data still being sent.
  bool caught = false;
  for (std::uint64_t seed = 1; seed < 64 && !caught; ++seed) {
    const auto err = validate({two_rank_exchange(0, false, false), two_rank_exchange(1, false, false)}, 4,
                              true, seed);
    caught = err.find("changed while the send was in flight") != std::string::npos;
  }
  EXPECT_TRUE(caught);
}

TEST(Validator, CatchesSizeMismatchAndDeadlock) {
  ScheduleBuilder a, b;
  a.send(1, out_region(0, 4));
  b.recv(0, tmp_region(0, 3));
  EXPECT_NE(validate({a.finish(), b.finish()}, 4, true).find("expects 3"), std::string::npos);

  ScheduleBuilder c, d;  // each waits for the other's message before sending its own
  c.send(1, out_region(0, 1), {c.recv(1, tmp_region(0, 1))});
  d.send(0, out_region(0, 1), {d.recv(0, tmp_region(0, 1))});
  EXPECT_NE(validate({c.finish(), d.finish()}, 1, true).find("deadlock"), std::string::npos);
}

TEST(Validator, CatchesMissingContribution) {
  ScheduleBuilder a, b;  // rank 0 sends, rank 1 overwrites instead of reducing
  a.send(1, out_region(0, 2));
  b.recv(0, out_region(0, 2));
  EXPECT_NE(validate({a.finish(), b.finish()}, 2, true).find("holds ranks"), std::string::npos);
}

TEST(DoubleTree, LinksAreConsistentAndEveryRankReachesTheRoot) {
  for (int p = 1; p <= 130; ++p)
    for (int t = 0; t < 2; ++t) {
      int roots = 0;
      for (int r = 0; r < p; ++r) {
        const TreeLinks l = double_tree_links(p, r, t);
        if (l.parent < 0) ++roots;
        else {
          const TreeLinks up = double_tree_links(p, l.parent, t);
          EXPECT_TRUE(up.children[0] == r || up.children[1] == r) << "p=" << p << " r=" << r;
        }
        int hops = 0;
        for (int at = r; double_tree_links(p, at, t).parent >= 0; at = double_tree_links(p, at, t).parent)
          ASSERT_LT(++hops, p) << "cycle at p=" << p;
      }
      EXPECT_EQ(roots, 1) << "p=" << p;
    }
}

TEST(DoubleTree, NoRankIsInteriorInBothTrees) {
  for (int p = 2; p <= 130; ++p)
    for (int r = 0; r < p; ++r) {
      auto interior = [&](int t) { return double_tree_links(p, r, t).children[0] >= 0; };
      // The shifted tree (odd p) leaves one rank interior in both, as in NCCL.
      if (p % 2 == 0) EXPECT_FALSE(interior(0) && interior(1)) << "p=" << p << " r=" << r;
    }
}

TEST(Printer, DrawsSteps) {
  Shape shape;
  shape.nranks = 4;
  shape.count = 8;
  std::ostringstream out;
  print_schedule(out, build_ring(shape), 0);
  EXPECT_NE(out.str().find("send   out[0..2) -> r1"), std::string::npos) << out.str();
  EXPECT_NE(out.str().find("reduce out[6..8) = out[6..8) + tmp[6..8)"), std::string::npos) << out.str();
}

}  // namespace
}  // namespace arlab::detail

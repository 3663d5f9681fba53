// Hierarchical all-reduce: its schedules validated symbolically for nodes of 1, 2 and 3 ranks,
// uneven nodes (the leader variant), nodes that are not blocks of ranks, every inter-node
// algorithm, counts below the rank count and odd; exact over loopback threads; and what the
// cost walk says of it on a machine whose nodes are joined by a slow link.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "algorithms/registry.hpp"
#include "common/loopback_ranks.hpp"
#include "common/reference.hpp"
#include "model/cost_walk.hpp"
#include "schedule/validator.hpp"

namespace arlab::detail {
namespace {

const AlgorithmInfo& hierarchical() { return *find_schedule_algorithm(Algorithm::Hierarchical); }

constexpr Algorithm kFlat[] = {Algorithm::Ring, Algorithm::Tree, Algorithm::RecursiveDoubling, Algorithm::Rabenseifner};

std::string where(const Shape& s) {
  std::string nodes;
  for (int n : s.rank_to_node) nodes += std::to_string(n);
  return "p " + std::to_string(s.nranks) + " per node " + std::to_string(s.ranks_per_node) + " nodes [" + nodes +
         "] count " + std::to_string(s.count) + " inter " + to_string(s.inter);
}

TEST(Hierarchical, ValidForEveryNodeSizeInterAlgorithmAndCount) {
  for (int p = 1; p <= 9; ++p)
    for (int k : {1, 2, 3, 4})
      for (Algorithm inter : kFlat) {
        const std::size_t pp = static_cast<std::size_t>(p);
        for (std::size_t count : {std::size_t{0}, std::size_t{1}, pp - 1, pp + 1, std::size_t{1001}}) {
          Shape s;
          s.nranks = p;
          s.ranks_per_node = k;  // p % k != 0: a smaller last node, the leader variant
          s.count = count;
          s.elem_size = 4;
          s.chunk_bytes = 256;  // 64 floats a chunk: the levels' pipelines have several chunks
          s.inter = inter;
          ASSERT_EQ(validate_algorithm(hierarchical(), s, 3), "") << where(s);
        }
      }
}

TEST(Hierarchical, ValidWhenTheNodesAreNotBlocksOfRanks) {
  // Round-robin placement (mpirun --map-by node), and nodes of 3, 1 and 2 ranks in any order.
  for (const std::vector<int>& nodes : {std::vector<int>{0, 1, 0, 1}, std::vector<int>{0, 1, 2, 0, 1, 2},
                                        std::vector<int>{2, 0, 0, 1, 0, 2}, std::vector<int>{1, 0}})
    for (Algorithm inter : kFlat) {
      Shape s;
      s.nranks = static_cast<int>(nodes.size());
      s.rank_to_node = nodes;
      s.count = 517;
      s.elem_size = 8;
      s.chunk_bytes = 64;
      s.inter = inter;
      ASSERT_EQ(validate_algorithm(hierarchical(), s, 8), "") << where(s);
    }
}

TEST(Hierarchical, ExactOverLoopbackForEveryTypeAndOp) {
  for (int p : {2, 3, 4, 5, 6})
    for (int k : {1, 2, 3}) {
      Options o = arlab::test::loopback_options(1024);
      o.ranks_per_node = k;
      arlab::test::on_threads(p, o, [&](Engine& engine, int rank) {
        ASSERT_EQ(engine.nodes()[static_cast<std::size_t>(rank)], rank / k);
        for (auto [type, op] : {std::pair{DataType::Float32, ReduceOp::Sum}, std::pair{DataType::Int32, ReduceOp::Prod},
                                std::pair{DataType::BFloat16, ReduceOp::Avg}, std::pair{DataType::Float64, ReduceOp::Max}})
          for (std::size_t count : {std::size_t{1}, static_cast<std::size_t>(p) - 1, std::size_t{4099}})
            for (bool in_place : {true, false}) {
              if (count == 0) continue;
              const auto input = arlab::test::fill(type, count, rank, op);
              std::vector<std::byte> send = input, recv(input.size());
              void* out = in_place ? send.data() : recv.data();
              engine.allreduce(send.data(), out, count, type, op, Algorithm::Hierarchical);
              std::vector<std::byte> got(static_cast<std::byte*>(out), static_cast<std::byte*>(out) + input.size());
              ASSERT_EQ(got, arlab::test::reference(type, count, p, op))
                  << "p " << p << " k " << k << " " << to_string(type) << " " << to_string(op) << " count " << count
                  << (in_place ? " in place" : " out of place");
              if (!in_place) ASSERT_EQ(send, input) << "the send buffer changed";
            }
      });
    }
}

// Two nodes of four ranks joined by a link 20x slower than the one inside them: at 16 MiB
// hierarchical moves about n bytes each way through each node's link where the flat ring
// moves 1.75n through one rank's port, so the walk puts it well ahead; with one link class
// everywhere it has nothing to gain.
TEST(Hierarchical, TheWalkPrefersItAcrossASlowLinkAndNotOnAUniformMachine) {
  Machine m = Machine::uniform(1.0, 1e-3 / 50, 1e-3 / 20);
  m.ranks_per_node = 4;
  m.nodes = 2;
  Machine slow = m;
  slow.inter.alpha_us = 10;
  slow.inter.us_per_byte = 1e-3 / 2.5;
  Shape s;
  s.nranks = 8;
  s.count = std::size_t{4} << 20;
  s.elem_size = 4;
  const double ring_slow = predict(*find_schedule_algorithm(Algorithm::Ring), s, slow).total_us;
  Cost h;
  const Algorithm inter = choose_inter(s, slow, true, &h);
  EXPECT_LT(h.total_us, 0.75 * ring_slow) << "inter " << to_string(inter);
  EXPECT_GT(h.inter_us, 0.5 * h.total_us) << "the inter-node level decides";
  EXPECT_DOUBLE_EQ(predict(hierarchical(), s, slow).total_us, h.total_us);  // Auto inter: the same pick
  const double ring_uniform = predict(*find_schedule_algorithm(Algorithm::Ring), s, m).total_us;
  EXPECT_GE(predict(hierarchical(), s, m).total_us, 0.95 * ring_uniform);
}

// One port per node (shared_by: node): the two ranks of a node that send across at once take
// turns, so recursive doubling's cross-node step (both ranks send the whole vector) takes twice
// as long, hierarchical's inter level (each rank a half) as long as one rank sending the whole,
// and the flat ring (one rank per node borders the other node) is unchanged.
TEST(Hierarchical, ANodesSharedPortSerialisesItsRanksCrossNodeMessages) {
  Machine own = Machine::uniform(0, 1e-3 / 50, 0);
  own.ranks_per_node = 2;
  own.nodes = 2;
  own.inter.us_per_byte = 1e-3 / 0.125;  // 1 Gbit/s
  Machine nic = own;
  nic.inter.shared_by_node = true;
  Shape s;
  s.nranks = 4;
  s.count = std::size_t{4} << 20;  // 16 MiB
  s.elem_size = 4;
  s.chunk_bytes = 0;
  auto cost = [&](Algorithm a, const Machine& m) { return predict(*find_schedule_algorithm(a), s, m); };
  const double n_us = 16.0 * (1 << 20) * nic.inter.us_per_byte;  // the whole vector through one port
  EXPECT_NEAR(cost(Algorithm::RecursiveDoubling, own).inter_us, n_us, 0.02 * n_us);
  EXPECT_NEAR(cost(Algorithm::RecursiveDoubling, nic).inter_us, 2 * n_us, 0.02 * n_us);
  s.inter = Algorithm::Ring;
  EXPECT_NEAR(cost(Algorithm::Hierarchical, own).inter_us, n_us / 2, 0.02 * n_us);
  EXPECT_NEAR(cost(Algorithm::Hierarchical, nic).inter_us, n_us, 0.02 * n_us);
  EXPECT_NEAR(cost(Algorithm::Ring, nic).total_us, cost(Algorithm::Ring, own).total_us,
              0.01 * cost(Algorithm::Ring, own).total_us);
}

}  // namespace
}  // namespace arlab::detail

// The cost walk must reproduce the textbook closed forms on a uniform network
// (Thakur, Rabenseifner, Gropp 2005) when pipelining is off.
#include <gtest/gtest.h>

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

}  // namespace
}  // namespace arlab::detail

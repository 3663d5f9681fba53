// arlab-bench's data: a correct result passes; a missing, doubled, misplaced or foreign
// contribution, a poisoned buffer and a touched send buffer do not.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "check.hpp"

namespace arlab::bench {
namespace {

// Every rank's float data for `count` elements, as the bench fills them.
std::vector<std::vector<float>> contributions(int nranks, std::size_t count) {
  std::vector<std::vector<float>> data(static_cast<std::size_t>(nranks), std::vector<float>(count));
  for (int r = 0; r < nranks; ++r) Checker(DataType::Float32, ReduceOp::Sum, r, nranks).fill(data[r].data(), count);
  return data;
}

std::vector<float> sum(const std::vector<std::vector<float>>& data) {
  std::vector<float> out(data[0].size(), 0.0f);
  for (const auto& d : data)
    for (std::size_t i = 0; i < out.size(); ++i) out[i] += d[i];
  return out;
}

TEST(BenchCheck, CorrectSumPasses) {
  for (int p : {1, 2, 3, 5, 8, 64}) {
    const std::size_t n = 5000;
    const std::vector<float> result = sum(contributions(p, n));
    const Checker c(DataType::Float32, ReduceOp::Sum, 0, p);
    EXPECT_EQ(c.count_wrong(result.data(), n, nullptr), 0u) << p << " ranks";
  }
}

TEST(BenchCheck, DoubledContributionIsSeen) {
  const int p = 4;
  const std::size_t n = 4096;
  const auto data = contributions(p, n);
  const Checker c(DataType::Float32, ReduceOp::Sum, 0, p);
  for (int r = 0; r < p; ++r) {
    std::vector<float> result = sum(data);
    for (std::size_t i = 1000; i < 1100; ++i) result[i] += data[r][i];  // rank r counted twice
    EXPECT_EQ(c.count_wrong(result.data(), n, nullptr), 100u) << "rank " << r;
  }
}

TEST(BenchCheck, MissingOrForeignContributionIsSeen) {
  const int p = 4;
  const std::size_t n = 4096;
  auto data = contributions(p, n);
  const Checker c(DataType::Float32, ReduceOp::Sum, 0, p);
  std::vector<float> result = sum(data);
  for (std::size_t i = 0; i < 512; ++i) result[i] -= data[3][i];  // rank 3's first chunk missing
  EXPECT_EQ(c.count_wrong(result.data(), n, nullptr), 512u);
  for (int other : {0, 1, 3}) {
    auto swapped = data;
    swapped[2] = data[other];  // rank 2's chunk came from another rank
    result = sum(swapped);
    EXPECT_GT(c.count_wrong(result.data(), n, nullptr), 256u) << "rank 2 sent rank " << other << "'s data";
  }
}

TEST(BenchCheck, MisplacedChunkIsSeenAtEveryPowerOfTwoShift) {
  const int p = 2;
  const std::size_t n = std::size_t{1} << 18;
  const auto data = contributions(p, n);
  const Checker c(DataType::Float32, ReduceOp::Sum, 0, p);
  for (std::size_t shift = 1; shift <= n / 4; shift *= 2) {
    std::vector<float> result = sum(data);
    // Rank 1's chunk [0, 64) lands `shift` elements further on.
    for (std::size_t i = 0; i < 64; ++i) result[i + shift] = data[0][i + shift] + data[1][i];
    EXPECT_GT(c.count_wrong(result.data(), n, nullptr), 32u) << "shift " << shift;
  }
}

TEST(BenchCheck, EveryTypeAndOpOnOneRank) {
  for (DataType t : {DataType::Int8, DataType::UInt8, DataType::Int32, DataType::UInt32, DataType::Int64,
                     DataType::UInt64, DataType::Float16, DataType::BFloat16, DataType::Float32, DataType::Float64}) {
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max, ReduceOp::Avg}) {
      const std::size_t n = 3000;
      std::vector<unsigned char> buf(n * size_of(t));
      const Checker c(t, op, 0, 1);  // one rank: the result is the rank's own data
      c.fill(buf.data(), n);
      EXPECT_EQ(c.count_wrong(buf.data(), n, nullptr), 0u) << to_string(t) << " " << to_string(op);
      EXPECT_EQ(c.count_changed(buf.data(), n), 0u);
      c.poison(buf.data(), n);
      Mismatch first;
      EXPECT_EQ(c.count_wrong(buf.data(), n, &first), n) << to_string(t) << " " << to_string(op);
      EXPECT_EQ(first.index, 0u);
      EXPECT_EQ(c.count_changed(buf.data(), n), n);
    }
  }
}

TEST(BenchCheck, NoTwoRanksShareAPattern) {
  const std::size_t n = Checker::kPeriod;
  const auto data = contributions(64, n);
  for (int a = 0; a < 64; ++a)
    for (int b = a + 1; b < 64; ++b) EXPECT_NE(data[a], data[b]) << a << " " << b;
}

}  // namespace
}  // namespace arlab::bench

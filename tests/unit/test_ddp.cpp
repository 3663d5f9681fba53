// Gradient buckets without MPI: which gradient goes where, and the compression hooks' round trip.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

#include "arlab/ddp.hpp"
#include "ddp/bucket_plan.hpp"
#include "reduce/half.hpp"
#include "reduce/reducer.hpp"

namespace arlab::detail {
namespace {

std::vector<std::size_t> reversed(std::size_t n) {
  std::vector<std::size_t> o;
  for (std::size_t i = n; i-- > 0;) o.push_back(i);
  return o;
}

TEST(BucketPlan, ReverseOrderFirstCapAndCap) {
  // 4-byte floats: 100, 200, 300, 400, 500 elements = 400..2000 bytes.
  std::vector<GradientShape> g;
  for (std::size_t n : {100, 200, 300, 400, 500}) g.push_back({n, DataType::Float32});
  // First bucket up to 2000 B (gradient 4 alone fits exactly), then 2800 B.
  const auto b = assign_buckets(g, reversed(5), 2000, 2800);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0], (std::vector<std::size_t>{4}));
  EXPECT_EQ(b[1], (std::vector<std::size_t>{3, 2}));  // 1600 + 1200 = 2800
  EXPECT_EQ(b[2], (std::vector<std::size_t>{1, 0}));  // 800 more would pass 2800
}

TEST(BucketPlan, EveryGradientOnceInOrderWithinCaps) {
  std::vector<GradientShape> g;
  for (std::size_t i = 0; i < 200; ++i) g.push_back({(i * 37) % 1000 + 1, i % 7 == 0 ? DataType::Float64 : DataType::Float32});
  const auto order = reversed(g.size());
  for (std::size_t cap : {64, 1000, 4096, 1 << 20}) {
    const auto b = assign_buckets(g, order, cap / 2, cap);
    std::vector<std::size_t> seen;
    for (std::size_t k = 0; k < b.size(); ++k) {
      ASSERT_FALSE(b[k].empty());
      std::size_t bytes = 0;
      for (std::size_t i : b[k]) {
        EXPECT_EQ(g[i].type, g[b[k].front()].type) << "one type per bucket";
        bytes += g[i].count * size_of(g[i].type);
        seen.push_back(i);
      }
      if (b[k].size() > 1) EXPECT_LE(bytes, k == 0 ? cap / 2 : cap) << "bucket " << k;
    }
    EXPECT_EQ(seen, order) << "cap " << cap;
  }
}

TEST(BucketPlan, AGradientLargerThanABucketHasItsOwn) {
  std::vector<GradientShape> g = {{10, DataType::Float32}, {10000, DataType::Float32}, {10, DataType::Float32}};
  const auto b = assign_buckets(g, reversed(3), 100, 100);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[1], (std::vector<std::size_t>{1}));
}

TEST(BucketPlan, ATypeChangeStartsABucket) {
  std::vector<GradientShape> g = {{4, DataType::Float32}, {4, DataType::Float16}, {4, DataType::Float32}};
  EXPECT_EQ(assign_buckets(g, reversed(3), 1 << 20, 1 << 20).size(), 3u);
}

// Two ranks' buckets through the hook, the sum made in the wire type as the all-reduce would.
std::vector<float> through_hook(CommunicationHook& hook, std::vector<float> a, std::vector<float> b, ReduceOp op) {
  const HookPayload pa = hook.before(0, a.data(), a.size(), DataType::Float32, op, 2);
  EXPECT_EQ(pa.op, ReduceOp::Sum);
  std::vector<std::uint16_t> wa(static_cast<std::uint16_t*>(pa.data), static_cast<std::uint16_t*>(pa.data) + a.size());
  const HookPayload pb = hook.before(1, b.data(), b.size(), DataType::Float32, op, 2);
  auto* wb = static_cast<std::uint16_t*>(pb.data);
  cpu_reduce(ReduceOp::Sum, pa.type, wa.data(), wb, wb, a.size());  // rank b's all-reduce result
  hook.after(1, b.data(), b.size(), DataType::Float32, op, 2);
  return b;
}

TEST(CompressionHook, Fp16AndBf16AverageWithinTheirPrecision) {
  std::vector<float> a(1000), b(1000);
  for (std::size_t i = 0; i < a.size(); ++i) {
    a[i] = std::sin(static_cast<float>(i)) * 3.0f;
    b[i] = std::cos(static_cast<float>(i) * 0.7f) * 0.01f;
  }
  for (int which = 0; which < 2; ++which) {
    const auto hook = which == 0 ? make_fp16_compression_hook() : make_bf16_compression_hook();
    const double tolerance = which == 0 ? 1.0 / 1024 : 1.0 / 128;
    const auto got = through_hook(*hook, a, b, ReduceOp::Avg);
    double worst = 0;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const double want = (static_cast<double>(a[i]) + b[i]) / 2;
      worst = std::max(worst, std::abs(got[i] - want) / std::max(std::abs(want), 1e-2));
    }
    EXPECT_LT(worst, tolerance) << hook->name();
    EXPECT_GT(worst, 0) << hook->name() << ": no rounding at all (not compressed?)";
  }
}

TEST(CompressionHook, BulkCastsEqualTheScalarConversions) {
  // F16C / AVX2 blocks and the scalar tail against half.hpp, special values included.
  std::vector<float> in;
  for (int i = 0; i < 1100; ++i) in.push_back(std::ldexp(std::sin(static_cast<float>(i)) * 1.7f, i % 40 - 25));
  for (float v : {0.0f, -0.0f, 65504.0f, 65520.0f, 1e-8f, -1e-5f, 3.0e38f, INFINITY, -INFINITY, NAN}) in.push_back(v);
  for (std::size_t n : {std::size_t{0}, std::size_t{1}, std::size_t{255}, std::size_t{256}, std::size_t{257}, in.size()})
    for (float scale : {1.0f, 0.25f, 1.0f / 3}) {
      std::vector<std::uint16_t> h(n), b(n);
      cpu_floats_to_16bit(DataType::Float16, in.data(), h.data(), n, scale);
      cpu_floats_to_16bit(DataType::BFloat16, in.data(), b.data(), n, scale);
      std::vector<float> back_h(n), back_b(n);
      cpu_16bit_to_floats(DataType::Float16, h.data(), back_h.data(), n);
      cpu_16bit_to_floats(DataType::BFloat16, b.data(), back_b.data(), n);
      for (std::size_t i = 0; i < n; ++i) {
        ASSERT_EQ(h[i], float_to_half_bits(in[i] * scale)) << "n " << n << " i " << i << " x " << in[i];
        ASSERT_EQ(b[i], float_to_bfloat16_bits(in[i] * scale)) << "n " << n << " i " << i;
        const float wh = half_bits_to_float(h[i]), wb = bfloat16_bits_to_float(b[i]);
        ASSERT_TRUE(std::memcmp(&back_h[i], &wh, 4) == 0 && std::memcmp(&back_b[i], &wb, 4) == 0) << i;
      }
    }
  EXPECT_THROW(cpu_floats_to_16bit(DataType::Float32, in.data(), nullptr, 0), Error);
}

TEST(CompressionHook, OtherTypesAndOpsPassThrough) {
  auto hook = make_fp16_compression_hook();
  std::int32_t x[3] = {1, 2, 3};
  const HookPayload p = hook->before(0, x, 3, DataType::Int32, ReduceOp::Avg, 2);
  EXPECT_EQ(p.data, x);
  EXPECT_EQ(p.type, DataType::Int32);
  EXPECT_EQ(p.op, ReduceOp::Avg);
  float y[2] = {1, 2};
  EXPECT_EQ(hook->before(0, y, 2, DataType::Float32, ReduceOp::Max, 2).data, y);
}

}  // namespace
}  // namespace arlab::detail

// The CUDA kernels' index arithmetic (kernels/index_map.hpp), on the CPU: every thread of
// representative launches enumerated, for every element size, count 0..257 and misalignment
// 0..15 bytes. Each element must be touched exactly once, and every vector access must be at a
// 16-byte boundary of every pointer.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <vector>

#include "kernels/index_map.hpp"

namespace {

using arlab::kernels::for_thread;
using arlab::kernels::grid_shape;
using arlab::kernels::kVectorBytes;
using arlab::kernels::LaunchShape;
using arlab::kernels::vector_split;
using arlab::kernels::VectorSplit;
using arlab::kernels::work_items;

constexpr std::uintptr_t kBase = 0x7f0000001000;  // 4 KiB aligned, as cudaMalloc's are (256 B)

// Runs the threads of a grid of `threads` that have work (every thread up to one past the work
// items, and the last one: beyond the work items a thread's loops are empty), counting the
// touches per element; fails on an unaligned vector.
std::vector<int> touches(const VectorSplit& s, const std::vector<std::uintptr_t>& at, std::size_t elem,
                         std::size_t threads) {
  std::vector<int> count(s.n, 0);
  auto run = [&](std::size_t t) {
    for_thread(
        s, t, threads, [&](std::size_t i) { ++count.at(i); },
        [&](std::size_t v) {
          const std::size_t first = s.body_begin() + v * s.lanes;
          for (std::uintptr_t p : at)
            if (p) EXPECT_EQ((p + first * elem) % kVectorBytes, 0u) << "vector " << v << " unaligned";
          for (std::size_t k = 0; k < s.lanes; ++k) ++count.at(first + k);
        });
  };
  const std::size_t enumerated = std::min(threads, work_items(s) + 1);
  for (std::size_t t = 0; t < enumerated; ++t) run(t);
  if (enumerated < threads) run(threads - 1);
  return count;
}

TEST(KernelIndex, EveryElementOnceForEveryCountMisalignmentAndShape) {
  const std::vector<std::size_t> shapes{1, 7, 32, 3 * 64, 132 * 8 * 256};  // threads in the grid
  for (std::size_t elem : {1, 2, 4, 8}) {
    for (std::uintptr_t mis = 0; mis < kVectorBytes; ++mis) {
      // Three pointers at the same misalignment (a, b, out), and out at another one.
      for (bool same : {true, false}) {
        const std::vector<std::uintptr_t> at{kBase + mis, kBase + 4096 + mis, kBase + 8192 + (same ? mis : (mis + elem) % 16)};
        for (std::size_t n = 0; n <= 257; ++n) {
          const VectorSplit s = vector_split(at.data(), static_cast<int>(at.size()), n, elem);
          SCOPED_TRACE(testing::Message() << "elem " << elem << ", misalignment " << mis << (same ? "" : " (out apart)")
                                          << ", n " << n);
          ASSERT_EQ(s.head + s.vectors * s.lanes + s.tail, n);
          ASSERT_EQ(s.lanes, kVectorBytes / elem);
          if (!same || mis % elem != 0) ASSERT_EQ(s.vectors, 0u) << "no common boundary, yet a vector body";
          if (same && mis % elem == 0 && n >= (kVectorBytes - mis) % 16 / elem + 2 * s.lanes)
            ASSERT_GT(s.vectors, 0u) << "a common boundary and room for vectors, yet none";
          ASSERT_LT(s.tail, s.vectors > 0 ? s.lanes : n + 1);
          for (std::size_t threads : shapes) {
            const auto count = touches(s, at, elem, threads);
            for (std::size_t i = 0; i < n; ++i) ASSERT_EQ(count[i], 1) << "element " << i << ", " << threads << " threads";
          }
        }
      }
    }
  }
}

TEST(KernelIndex, NullPointersAreIgnoredAndAlignedOnesVectoriseFromTheStart) {
  const std::uintptr_t at[] = {kBase, kBase + 256, 0};  // a and out; no second output
  const VectorSplit s = vector_split(at, 3, 1000, 4);
  EXPECT_EQ(s.head, 0u);
  EXPECT_EQ(s.lanes, 4u);
  EXPECT_EQ(s.vectors, 250u);
  EXPECT_EQ(s.tail, 0u);
  const std::uintptr_t none[] = {0, 0};
  EXPECT_EQ(vector_split(none, 2, 10, 4).head, 10u);  // nothing to align to: all scalar
  // 4 bytes past a boundary: 3 floats of head, then vectors.
  const std::uintptr_t off[] = {kBase + 4, kBase + 20};
  const VectorSplit o = vector_split(off, 2, 100, 4);
  EXPECT_EQ(o.head, 3u);
  EXPECT_EQ(o.vectors, 24u);
  EXPECT_EQ(o.tail, 1u);
}

TEST(KernelIndex, GridShapeFillsTheDeviceAndStridesTheRest) {
  // 132 SMs (an H100/H200 SXM): at most 8 blocks each, then grid-strided.
  const LaunchShape big = grid_shape(std::size_t{1} << 26, 132);
  EXPECT_EQ(big.blocks, 132u * 8);
  EXPECT_EQ(big.threads_per_block, 256u);
  const LaunchShape small = grid_shape(1000, 132);
  EXPECT_EQ(small.blocks, 4u);  // ceil(1000 / 256)
  EXPECT_EQ(grid_shape(0, 132).blocks, 1u);
  EXPECT_EQ(grid_shape(10, 0).blocks, 1u);  // an unknown SM count still launches
  const std::uintptr_t at[] = {kBase};
  const VectorSplit s = vector_split(at, 1, 1027, 4);  // 256 vectors, 3 tail scalars
  EXPECT_EQ(work_items(s), 256u);
}

}  // namespace

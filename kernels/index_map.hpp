// Which thread of a kernel launch touches which elements: the index arithmetic of every
// elementwise kernel in kernels/, as plain functions so that the CPU tests can enumerate every
// thread of a launch and check that each element is touched exactly once.
//
//   elements  0 ........ head-1 | head .......................... head + vectors*lanes - 1 | ... n-1
//             scalar head        | vector body: 16-byte loads and stores, `lanes` per vector  | scalar tail
//
// The body needs every pointer of the kernel (inputs and outputs) at a 16-byte boundary at the
// same element, so the split is made from all of them at once: the head is the elements
// before the first pointer reaches a 16-byte boundary, and it must bring all of them there
// together (the same address modulo 16, and that a whole number of elements away from the
// boundary). Otherwise, and for counts too small to hold one vector, every element is scalar
// (head = n). Each part is grid-strided: thread t of T takes scalars t, t + T, ... of the head
// and of the tail, and vectors t, t + T, ... of the body, so any launch shape covers any count.
#pragma once

#include <cstddef>
#include <cstdint>

#include "reduce/half.hpp"  // ARLAB_HD

namespace arlab::kernels {

inline constexpr std::size_t kVectorBytes = 16;

struct VectorSplit {
  std::size_t head = 0;     // scalar elements before the body
  std::size_t vectors = 0;  // 16-byte vectors in the body
  std::size_t lanes = 1;    // elements per vector (16 / element size)
  std::size_t tail = 0;     // scalar elements after the body
  std::size_t n = 0;

  ARLAB_HD constexpr std::size_t body_begin() const noexcept { return head; }
  ARLAB_HD constexpr std::size_t tail_begin() const noexcept { return head + vectors * lanes; }
};

// The split for n elements of elem_size bytes (1, 2, 4, 8 or 16) at the addresses in
// `addresses[0..count)` (every pointer the kernel reads or writes; null entries are ignored).
ARLAB_HD constexpr VectorSplit vector_split(const std::uintptr_t* addresses, int count, std::size_t n,
                                            std::size_t elem_size) noexcept {
  VectorSplit s;
  s.n = n;
  s.lanes = elem_size <= kVectorBytes ? kVectorBytes / elem_size : 1;
  s.head = n;  // all scalar unless the pointers allow a body
  if (elem_size == 0 || elem_size > kVectorBytes || kVectorBytes % elem_size != 0) return s;
  std::uintptr_t misalignment = kVectorBytes;  // none seen yet
  for (int i = 0; i < count; ++i) {
    if (addresses[i] == 0) continue;
    const std::uintptr_t m = addresses[i] % kVectorBytes;
    if (misalignment == kVectorBytes)
      misalignment = m;
    else if (m != misalignment)
      return s;  // the pointers never reach a boundary together
  }
  if (misalignment == kVectorBytes) return s;  // no pointers
  const std::uintptr_t gap = (kVectorBytes - misalignment) % kVectorBytes;  // bytes to the boundary
  if (gap % elem_size != 0) return s;  // a boundary falls inside an element
  const std::size_t head = gap / elem_size;
  if (head >= n) return s;
  s.head = head;
  s.vectors = (n - head) / s.lanes;
  s.tail = n - s.tail_begin();
  return s;
}

// Thread `thread` of `threads` (the whole grid, flattened): scalar(i) for each element i it
// owns in the head and the tail, vector(v) for each vector v it owns in the body (elements
// body_begin() + v * lanes .. + lanes - 1). The kernels and the CPU tests both call this.
template <class Scalar, class Vector>
ARLAB_HD void for_thread(const VectorSplit& s, std::size_t thread, std::size_t threads, Scalar&& scalar,
                         Vector&& vector) {
  for (std::size_t i = thread; i < s.head; i += threads) scalar(i);
  for (std::size_t v = thread; v < s.vectors; v += threads) vector(v);
  const std::size_t t0 = s.tail_begin();
  for (std::size_t i = thread; i < s.tail; i += threads) scalar(t0 + i);
}

// A launch: blocks x threads_per_block threads. grid_shape sizes it for `work` items (vectors
// plus scalars) on a device of `sm_count` multiprocessors: enough blocks for one item per
// thread, at most blocks_per_sm per multiprocessor (the rest are grid-strided), at least one.
struct LaunchShape {
  unsigned blocks = 1;
  unsigned threads_per_block = 256;
};

ARLAB_HD constexpr LaunchShape grid_shape(std::size_t work, int sm_count, unsigned threads_per_block = 256,
                                          unsigned blocks_per_sm = 8) noexcept {
  LaunchShape l;
  l.threads_per_block = threads_per_block;
  const std::size_t wanted = (work + threads_per_block - 1) / threads_per_block;
  const std::size_t most = static_cast<std::size_t>(sm_count > 0 ? sm_count : 1) * blocks_per_sm;
  const std::size_t blocks = wanted < most ? wanted : most;
  l.blocks = static_cast<unsigned>(blocks > 0 ? blocks : 1);
  return l;
}

// The work items of a split: what grid_shape sizes the launch for.
ARLAB_HD constexpr std::size_t work_items(const VectorSplit& s) noexcept {
  const std::size_t scalars = s.head > s.tail ? s.head : s.tail;
  return s.vectors > scalars ? s.vectors : scalars;
}

}  // namespace arlab::kernels

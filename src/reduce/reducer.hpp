// Reducer: elementwise reduction and copy on host or device memory. The executor never
// calls arithmetic directly, so a device reducer can enqueue kernels and complete later.
#pragma once

#include <cstddef>
#include <cstdint>

#include "arlab/arlab.hpp"

namespace arlab::detail {

class Reducer {
 public:
  using Event = std::uint64_t;
  static constexpr Event kDone = 0;

  virtual ~Reducer() = default;
  // out[i] = a[i] (op) b[i] for n elements; out may alias a or b. Avg reduces as Sum.
  virtual Event reduce(ReduceOp op, DataType type, const void* a, const void* b, void* out,
                       std::size_t n) = 0;
  virtual Event copy(const void* src, void* dst, std::size_t bytes) = 0;
  // data[i] /= divisor (the last step of Avg).
  virtual Event divide(DataType type, void* data, std::size_t n, int divisor) = 0;
  // True once the work behind `event` has finished.
  virtual bool done(Event event) = 0;
};

// Synchronous CPU implementation of the arithmetic, usable on its own (tests, MPI user ops).
void cpu_reduce(ReduceOp op, DataType type, const void* a, const void* b, void* out, std::size_t n);
void cpu_divide(DataType type, void* data, std::size_t n, int divisor);
// float -> half or bfloat16 (`type`) of in[i] * scale, rounded to nearest even, and back
// (exact): the same values as half.hpp's conversions, through F16C or AVX2 where the CPU has
// them (the compression hooks' casts).
void cpu_floats_to_16bit(DataType type, const float* in, std::uint16_t* out, std::size_t n, float scale = 1.0f);
void cpu_16bit_to_floats(DataType type, const std::uint16_t* in, float* out, std::size_t n);

class CpuReducer final : public Reducer {
 public:
  Event reduce(ReduceOp op, DataType type, const void* a, const void* b, void* out,
               std::size_t n) override;
  Event copy(const void* src, void* dst, std::size_t bytes) override;
  Event divide(DataType type, void* data, std::size_t n, int divisor) override;
  bool done(Event) override { return true; }
};

}  // namespace arlab::detail

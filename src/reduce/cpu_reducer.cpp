// The CPU reducer: out[i] = a[i] (op) b[i] and data[i] /= divisor on host memory.
//
// Buffers hold elements of the given type, so they are aligned to its size (as any C++
// array of it is); they need no further (vector) alignment.
//
// Each call dispatches once on (type, op) to a loop instantiated for that pair; the arithmetic
// is the functors of elementwise.hpp, shared with the CUDA kernels. Native types (integers,
// float, double) run a plain elementwise loop over restrict-qualified pointers, which GCC
// vectorises. Because the interface lets `out` alias `a` or `b` (exactly, as in an in-place
// all-reduce), the aliasing cases get their own loops over two pointers rather than a
// restrict that would be a lie. Full blocks of kBlock elements have a constant trip count,
// which GCC vectorises even under -O2's cheap cost model; the tail loop vectorises at -O3.
// (On baseline x86-64, 64-bit integer Prod/Min/Max stay scalar: SSE2 lacks the instructions.)
//
// Half and bfloat16 go through float in blocks of kBlock elements on the stack: convert the
// block in, reduce it in float, round it back. The conversions are branch-free (half.hpp),
// so all four steps vectorise; half's use F16C where the CPU has it. No heap allocation.
//
// Avg reduces as Sum; cpu_divide does the final division (divide_element, elementwise.hpp),
// float and the 16-bit types in float where that rounds the same (divide_as).
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include "reduce/dispatch.hpp"
#include "reduce/elementwise.hpp"
#include "reduce/reducer.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#include <cpuid.h>
#endif

namespace arlab::detail {
namespace {

constexpr std::size_t kBlock = 256;  // elements per block (and per stack scratch array)

// ---- native types ----------------------------------------------------------------------

// out[i] = a[i] op b[i]; out overlaps neither input (a == b is fine: both are only read).
template <class T, class Op>
void reduce_apart(const T* __restrict a, const T* __restrict b, T* __restrict out,
                  std::size_t n) {
  const Op op;
  std::size_t i = 0;
  for (; i + kBlock <= n; i += kBlock)
    for (std::size_t j = 0; j < kBlock; ++j) out[i + j] = op(a[i + j], b[i + j]);
  for (; i < n; ++i) out[i] = op(a[i], b[i]);
}

// io[i] = io[i] op x[i] (kIoFirst) or x[i] op io[i]: out is one of the inputs.
template <class T, class Op, bool kIoFirst>
void reduce_into(T* __restrict io, const T* __restrict x, std::size_t n) {
  const Op op;
  std::size_t i = 0;
  for (; i + kBlock <= n; i += kBlock)
    for (std::size_t j = 0; j < kBlock; ++j)
      io[i + j] = kIoFirst ? op(io[i + j], x[i + j]) : op(x[i + j], io[i + j]);
  for (; i < n; ++i) io[i] = kIoFirst ? op(io[i], x[i]) : op(x[i], io[i]);
}

// io[i] = io[i] op io[i]: all three pointers are the same.
template <class T, class Op>
void reduce_self(T* io, std::size_t n) {
  const Op op;
  for (std::size_t i = 0; i < n; ++i) io[i] = op(io[i], io[i]);
}

template <class T, class Op>
void reduce_native(const T* a, const T* b, T* out, std::size_t n) {
  if (out == a && out == b) return reduce_self<T, Op>(out, n);
  if (out == a) return reduce_into<T, Op, true>(out, b, n);
  if (out == b) return reduce_into<T, Op, false>(out, a, n);
  reduce_apart<T, Op>(a, b, out, n);
}

// ---- 16-bit floating types (through float) ---------------------------------------------

// One block of exactly kBlock elements (a constant trip count, so GCC vectorises even at
// -O2). Both inputs are read before out is written, so out may alias a or b.
// x86-64 with F16C (every x86 CPU since 2012): half <-> float in one instruction per 8 lanes,
// the same values as half.hpp's bit manipulation (exact in, round to nearest even out, NaNs
// quieted with their top payload bits), which on baseline x86-64 (SSE2) costs about 2 ns an
// element. Chosen once at run time; elsewhere the portable code runs.
#if defined(__x86_64__) && defined(__GNUC__)
#define ARLAB_CPU_F16C 1
__attribute__((target("avx,f16c"))) void halves_to_floats(const std::uint16_t* in, float* out) {
  for (std::size_t j = 0; j < kBlock; j += 8)
    _mm256_storeu_ps(out + j, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + j))));
}
__attribute__((target("avx,f16c"))) void floats_to_halves(const float* in, std::uint16_t* out) {
  for (std::size_t j = 0; j < kBlock; j += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + j),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + j), _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}
// CPUID and XGETBV directly (GCC knows __builtin_cpu_supports("f16c"), clang 14 does not):
// a feature counts only where the OS also saves the YMM registers (OSXSAVE, XCR0 bits 1-2).
bool os_saves_ymm() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE) || !(c & bit_AVX)) return false;
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (lo & 0x6u) == 0x6u;
}
bool have_f16c() {
  static const bool yes = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return os_saves_ymm() && __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C);
  }();
  return yes;
}
// bfloat16's conversions are shifts and selects, but baseline SSE2 has no 32 -> 16-bit pack;
// the same code compiled for AVX2 runs 8 lanes with one.
__attribute__((target("avx2"))) void bfloat16s_to_floats(const std::uint16_t* in, float* out) {
  for (std::size_t j = 0; j < kBlock; ++j) out[j] = bfloat16_bits_to_float(in[j]);
}
__attribute__((target("avx2"))) void floats_to_bfloat16s(const float* in, std::uint16_t* out) {
  for (std::size_t j = 0; j < kBlock; ++j) out[j] = float_to_bfloat16_bits(in[j]);
}
bool have_avx2() {
  static const bool yes = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return os_saves_ymm() && __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & bit_AVX2);
  }();
  return yes;
}
#endif

// A block of 16-bit values into float, and back (round to nearest even).
template <class T>
void load_block(const std::uint16_t* in, float* out) {
#ifdef ARLAB_CPU_F16C
  if constexpr (std::is_same_v<T, Half>) {
    if (have_f16c()) return halves_to_floats(in, out);
  } else {
    if (have_avx2()) return bfloat16s_to_floats(in, out);
  }
#endif
  for (std::size_t j = 0; j < kBlock; ++j) out[j] = Element<T>::load(T{in[j]});
}
template <class T>
void store_block(const float* in, std::uint16_t* out) {
#ifdef ARLAB_CPU_F16C
  if constexpr (std::is_same_v<T, Half>) {
    if (have_f16c()) return floats_to_halves(in, out);
  } else {
    if (have_avx2()) return floats_to_bfloat16s(in, out);
  }
#endif
  for (std::size_t j = 0; j < kBlock; ++j) out[j] = Element<T>::store(in[j]).bits;
}

template <class T, class Op>
void reduce_16bit_block(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* out) {
  float fa[kBlock];
  float fb[kBlock];
  load_block<T>(a, fa);
  load_block<T>(b, fb);
  for (std::size_t j = 0; j < kBlock; ++j) fa[j] = Op::apply(fa[j], fb[j]);
  store_block<T>(fa, out);
}

// Runs block(in, out) over n 16-bit values in blocks of kBlock, the tail through a zero-padded
// block on the stack. `in` may be `out`.
template <class Block>
void over_16bit_blocks(std::uint16_t* data, std::size_t n, Block block) {
  std::size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) block(data + i);
  if (i == n) return;
  std::uint16_t t[kBlock] = {};
  std::memcpy(t, data + i, (n - i) * sizeof(std::uint16_t));
  block(t);
  std::memcpy(data + i, t, (n - i) * sizeof(std::uint16_t));
}

template <class T, class Op>
void reduce_16bit(const std::uint16_t* a, const std::uint16_t* b, std::uint16_t* out,
                  std::size_t n) {
  std::size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) reduce_16bit_block<T, Op>(a + i, b + i, out + i);
  if (i == n) return;
  // The tail goes through a zero-padded block on the stack.
  const std::size_t bytes = (n - i) * sizeof(std::uint16_t);
  std::uint16_t ta[kBlock] = {};
  std::uint16_t tb[kBlock] = {};
  std::memcpy(ta, a + i, bytes);
  std::memcpy(tb, b + i, bytes);
  reduce_16bit_block<T, Op>(ta, tb, ta);
  std::memcpy(out + i, ta, bytes);
}

template <class T, class Op>
void reduce_as(const void* a, const void* b, void* out, std::size_t n) {
  if constexpr (kComputedNatively<T>) {
    reduce_native<T, Op>(static_cast<const T*>(a), static_cast<const T*>(b),
                         static_cast<T*>(out), n);
  } else {
    reduce_16bit<T, Op>(static_cast<const std::uint16_t*>(a),
                        static_cast<const std::uint16_t*>(b), static_cast<std::uint16_t*>(out),
                        n);
  }
}

// ---- division (the last step of Avg): divide_element, elementwise.hpp ------------------

template <class T>
void divide_as(DataType type, void* data, std::size_t n, int divisor) {
  if constexpr (std::is_integral_v<T> && !std::is_signed_v<T>) {
    if (divisor < 0)
      throw Error(Error::Code::InvalidArgument, "cpu_divide: divisor " + std::to_string(divisor) +
                                                    " is negative for unsigned type " + to_string(type));
  }
  if constexpr (kComputedNatively<T>) {
    T* p = static_cast<T*>(data);
    if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
      if (divisor == -1) {  // apart, so the common loop has no branch
        for (std::size_t i = 0; i < n; ++i) p[i] = divide_element(p[i], -1);
        return;
      }
    }
    if constexpr (std::is_same_v<T, float>) {
      // Dividing in float rounds the quotient once, as divide_element's division in double
      // then rounded to float does (53 >= 2 x 24 + 2 bits: innocuous double rounding), for any
      // divisor a float holds exactly; twice the lanes of double.
      if (std::llabs(divisor) <= (1LL << 24)) {
        const float d = static_cast<float>(divisor);
        for (std::size_t i = 0; i < n; ++i) p[i] = p[i] / d;
        return;
      }
    }
    for (std::size_t i = 0; i < n; ++i) p[i] = divide_element(p[i], divisor);
  } else {  // Half, BFloat16
    auto* p = static_cast<std::uint16_t*>(data);
    // A divisor the 16-bit type holds exactly (|d| < 2^11 for half, 2^8 for bfloat16: any rank
    // count a job has of them): the quotient rounded to float and then to 16 bits is the
    // quotient rounded once, as float's 24 bits are at least twice the type's plus 2 (double
    // rounding of a division is innocuous then: Figueroa 1995), so the block divides in float,
    // vectorised. Larger divisors take divide_element's exact route through double.
    constexpr long long kExact = std::is_same_v<T, Half> ? 1 << 11 : 1 << 8;
    if (std::llabs(divisor) < kExact) {
      const float d = static_cast<float>(divisor);
      over_16bit_blocks(p, n, [&](std::uint16_t* block) {
        float f[kBlock];
        load_block<T>(block, f);
        for (std::size_t j = 0; j < kBlock; ++j) f[j] = f[j] / d;
        store_block<T>(f, block);
      });
      return;
    }
    for (std::size_t i = 0; i < n; ++i) p[i] = divide_element(T{p[i]}, divisor).bits;
  }
}

}  // namespace

void cpu_reduce(ReduceOp op, DataType type, const void* a, const void* b, void* out,
                std::size_t n) {
  visit_type(type, "cpu_reduce", [&](auto tag) {
    visit_op(op, "cpu_reduce", [&](auto functor) { reduce_as<decltype(tag), decltype(functor)>(a, b, out, n); });
  });
}

void cpu_divide(DataType type, void* data, std::size_t n, int divisor) {
  visit_type(type, "cpu_divide", [&](auto tag) {
    if (divisor == 0) throw Error(Error::Code::InvalidArgument, "cpu_divide: divisor is 0");
    divide_as<decltype(tag)>(type, data, n, divisor);
  });
}

namespace {
template <class T>
void narrow_as(const float* in, std::uint16_t* out, std::size_t n, float scale) {
  std::size_t i = 0;
  float block[kBlock];
  for (; i + kBlock <= n; i += kBlock) {
    for (std::size_t j = 0; j < kBlock; ++j) block[j] = in[i + j] * scale;
    store_block<T>(block, out + i);
  }
  for (; i < n; ++i) out[i] = Element<T>::store(in[i] * scale).bits;
}
template <class T>
void widen_as(const std::uint16_t* in, float* out, std::size_t n) {
  std::size_t i = 0;
  for (; i + kBlock <= n; i += kBlock) load_block<T>(in + i, out + i);
  for (; i < n; ++i) out[i] = Element<T>::load(T{in[i]});
}
void check_16bit(DataType type, const char* what) {
  if (type != DataType::Float16 && type != DataType::BFloat16)
    throw Error(Error::Code::InvalidArgument, std::string(what) + ": " + to_string(type) + " is not a 16-bit float");
}
}  // namespace

void cpu_floats_to_16bit(DataType type, const float* in, std::uint16_t* out, std::size_t n, float scale) {
  check_16bit(type, "cpu_floats_to_16bit");
  if (type == DataType::Float16) narrow_as<Half>(in, out, n, scale);
  else narrow_as<BFloat16>(in, out, n, scale);
}

void cpu_16bit_to_floats(DataType type, const std::uint16_t* in, float* out, std::size_t n) {
  check_16bit(type, "cpu_16bit_to_floats");
  if (type == DataType::Float16) widen_as<Half>(in, out, n);
  else widen_as<BFloat16>(in, out, n);
}

Reducer::Event CpuReducer::reduce(ReduceOp op, DataType type, const void* a, const void* b,
                                  void* out, std::size_t n) {
  cpu_reduce(op, type, a, b, out, n);
  return kDone;
}

Reducer::Event CpuReducer::copy(const void* src, void* dst, std::size_t bytes) {
  if (bytes != 0 && src != dst) std::memcpy(dst, src, bytes);
  return kDone;
}

Reducer::Event CpuReducer::divide(DataType type, void* data, std::size_t n, int divisor) {
  cpu_divide(type, data, n, divisor);
  return kDone;
}

}  // namespace arlab::detail

// Element functors: the arithmetic of one reduction step, out = a (op) b, for every type.
//
// Shared by the CPU reducer and the CUDA kernels (every function is ARLAB_HD), so both give
// bit-identical results. The rules, which arlab.hpp promises for every op on every type:
//   - Integers wrap on overflow, as in two's complement. Sum and Prod are computed in an
//     unsigned type (at least `unsigned int`, so no promotion to a signed int can overflow)
//     and converted back, which C++20 defines as modular.
//   - float and double use IEEE arithmetic in their own precision.
//   - Half and BFloat16 are loaded into float, computed there, and rounded to nearest even
//     on store (correctly rounded for one operation; see half.hpp; on the device through
//     cuda_fp16.h / cuda_bf16.h, below, the same bits except for NaN payloads).
//   - Min and Max on floating types are the IEEE 754-2019 minimum/maximum: if either
//     operand is NaN the result is a (quiet) NaN, and -0 < +0. Both choices keep the ops
//     commutative (up to which payload survives when both operands are NaN), so every rank
//     of an all-reduce gets the same bits whatever order an algorithm combines them in.
//   - Avg is reduced as Sum; the division by the number of ranks is a separate step
//     (divide_element below). Integers truncate toward zero (MIN / -1 wraps to MIN, as two's
//     complement negation does). Floats are correctly rounded for any |divisor| < 2^27 (any
//     real rank count): float and double divide in double (for float, the quotient's rounding
//     to double cannot mislead the rounding to float); half and bfloat16 divide in double and
//     go to float by round-to-odd, so that the final rounding to 16 bits is as if done once.
//
// Functors take and return the storage type (int8_t ... double, Half, BFloat16); apply()
// works on the compute type (float for the 16-bit formats).
#pragma once

#include <cstdint>
#include <type_traits>

#include "reduce/half.hpp"

#ifdef __CUDACC__
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#endif

// constexpr in host code only: the device's conversions are intrinsics.
#ifdef __CUDA_ARCH__
#define ARLAB_HOST_CONSTEXPR
#else
#define ARLAB_HOST_CONSTEXPR constexpr
#endif

namespace arlab::detail {

// Storage of the 16-bit floating formats: the raw bits, see half.hpp.
struct Half {
  std::uint16_t bits;
};
struct BFloat16 {
  std::uint16_t bits;
};
static_assert(sizeof(Half) == 2 && sizeof(BFloat16) == 2);

// How a stored element is loaded into its compute type and stored back.
template <class T>
struct Element {
  using Compute = T;
  ARLAB_HD static constexpr Compute load(T v) noexcept { return v; }
  ARLAB_HD static constexpr T store(Compute v) noexcept { return v; }
};
// On the device the 16-bit formats convert through cuda_fp16.h / cuda_bf16.h: one cvt each
// (round to nearest even, subnormals and overflow as IEEE says) where half.hpp's bit
// manipulation costs some 20 integer operations, more than a memory-bound kernel can hide.
// Both give the same bits for every non-NaN value (CudaHeaders.*, tests/gpu/test_kernels.cpp,
// check the headers' host versions against half.hpp on the CPU); a NaN stays a NaN, though
// its payload may differ between the two.
template <>
struct Element<Half> {
  using Compute = float;
  ARLAB_HD static ARLAB_HOST_CONSTEXPR float load(Half v) noexcept {
#ifdef __CUDA_ARCH__
    return __half2float(__ushort_as_half(v.bits));
#else
    return half_bits_to_float(v.bits);
#endif
  }
  ARLAB_HD static ARLAB_HOST_CONSTEXPR Half store(float v) noexcept {
#ifdef __CUDA_ARCH__
    return Half{__half_as_ushort(__float2half_rn(v))};
#else
    return Half{float_to_half_bits(v)};
#endif
  }
};
template <>
struct Element<BFloat16> {
  using Compute = float;
  ARLAB_HD static ARLAB_HOST_CONSTEXPR float load(BFloat16 v) noexcept {
#ifdef __CUDA_ARCH__
    return __bfloat162float(__ushort_as_bfloat16(v.bits));
#else
    return bfloat16_bits_to_float(v.bits);
#endif
  }
  ARLAB_HD static ARLAB_HOST_CONSTEXPR BFloat16 store(float v) noexcept {
#ifdef __CUDA_ARCH__
    return BFloat16{__bfloat16_as_ushort(__float2bfloat16_rn(v))};
#else
    return BFloat16{float_to_bfloat16_bits(v)};
#endif
  }
};

// True when T is computed in itself (integers, float, double): plain loops vectorise.
template <class T>
inline constexpr bool kComputedNatively = std::is_same_v<typename Element<T>::Compute, T>;

// The unsigned type in which integer T wraps: never narrower than unsigned int.
template <class T>
using WrapType = std::conditional_t<(sizeof(T) < sizeof(unsigned)), unsigned, std::make_unsigned_t<T>>;

// The unsigned integer with the bits of floating type F.
template <class F>
using FloatBits = std::conditional_t<sizeof(F) == 4, std::uint32_t, std::uint64_t>;

// Base of the functors: load, Derived::apply in the compute type, store.
template <class Derived>
struct ElementOp {
  template <class T>
  ARLAB_HD constexpr T operator()(T a, T b) const noexcept {
    return Element<T>::store(Derived::apply(Element<T>::load(a), Element<T>::load(b)));
  }
};

struct SumOp : ElementOp<SumOp> {
  template <class T>
  ARLAB_HD static constexpr T apply(T a, T b) noexcept {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<WrapType<T>>(a) + static_cast<WrapType<T>>(b));
    } else {
      return a + b;
    }
  }
};

struct ProdOp : ElementOp<ProdOp> {
  template <class T>
  ARLAB_HD static constexpr T apply(T a, T b) noexcept {
    if constexpr (std::is_integral_v<T>) {
      return static_cast<T>(static_cast<WrapType<T>>(a) * static_cast<WrapType<T>>(b));
    } else {
      return a * b;
    }
  }
};

// IEEE 754-2019 minimum (kMin) or maximum of floats. Only selects between precomputed
// values, with no arithmetic in an arm, so GCC if-converts and vectorises it (even for
// double on plain SSE2).
template <bool kMin, class F>
ARLAB_HD constexpr F float_min_max(F a, F b) noexcept {
  using Bits = FloatBits<F>;
  constexpr Bits kQuiet = Bits{1} << (sizeof(F) == 4 ? 22 : 51);  // top fraction bit
  const Bits ua = bit_cast_hd<Bits>(a);
  const Bits ub = bit_cast_hd<Bits>(b);
  // Equal operands differ at most in the sign of zero: OR prefers -0, AND prefers +0.
  const F equal = bit_cast_hd<F>(kMin ? (ua | ub) : (ua & ub));
  const F quiet_a = bit_cast_hd<F>(ua | kQuiet);
  const F quiet_b = bit_cast_hd<F>(ub | kQuiet);
  F r = (kMin ? b < a : a < b) ? b : a;
  r = a == b ? equal : r;
  r = b != b ? quiet_b : r;  // a NaN operand gives a quiet NaN (a's if both are NaN)
  r = a != a ? quiet_a : r;
  return r;
}

struct MinOp : ElementOp<MinOp> {
  template <class T>
  ARLAB_HD static constexpr T apply(T a, T b) noexcept {
    if constexpr (std::is_integral_v<T>) {
      return b < a ? b : a;
    } else {
      return float_min_max<true>(a, b);
    }
  }
};

struct MaxOp : ElementOp<MaxOp> {
  template <class T>
  ARLAB_HD static constexpr T apply(T a, T b) noexcept {
    if constexpr (std::is_integral_v<T>) {
      return a < b ? b : a;
    } else {
      return float_min_max<false>(a, b);
    }
  }
};

// q rounded to float by round-to-odd: truncate, and set the last bit if inexact. A later
// round-to-nearest to fewer bits then gives the same result as rounding q directly.
ARLAB_HD inline float float_round_to_odd(double q) noexcept {
  const float f = static_cast<float>(q);
  if (static_cast<double>(f) == q || q != q) return f;
  std::uint32_t bits = bit_cast_hd<std::uint32_t>(f);
  const double af = f < 0 ? -static_cast<double>(f) : static_cast<double>(f), aq = q < 0 ? -q : q;
  if (af > aq) --bits;  // rounded away from zero: step back toward it
  return bit_cast_hd<float>(bits | 1u);
}

// One element of the last step of Avg: v / divisor. For unsigned T the caller has checked
// that divisor > 0 (cpu_divide and the CUDA launcher throw for a negative one).
template <class T>
ARLAB_HD T divide_element(T v, int divisor) noexcept {
  if constexpr (std::is_integral_v<T> && std::is_signed_v<T>) {
    if (divisor == -1) return static_cast<T>(WrapType<T>{0} - static_cast<WrapType<T>>(v));  // MIN / -1
    return static_cast<T>(static_cast<std::int64_t>(v) / divisor);
  } else if constexpr (std::is_integral_v<T>) {
    return static_cast<T>(static_cast<std::uint64_t>(v) / static_cast<std::uint64_t>(divisor));
  } else if constexpr (kComputedNatively<T>) {  // float, double
    return static_cast<T>(static_cast<double>(v) / divisor);
  } else {  // Half, BFloat16
    return Element<T>::store(float_round_to_odd(static_cast<double>(Element<T>::load(v)) / divisor));
  }
}

}  // namespace arlab::detail

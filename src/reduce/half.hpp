// 16-bit floating-point formats, stored as raw bits in a std::uint16_t.
//
// IEEE 754 binary16 ("half": 1 sign, 5 exponent, 10 fraction bits) and bfloat16 (1 sign,
// 8 exponent, 7 fraction bits: the top half of a float). Arithmetic on these types is done in
// float and rounded back, which gives the correctly rounded result for one +, *, min or max
// (float has more than 2p+2 bits for both formats, so the double rounding is innocuous).
//
// The conversions are straight-line bit manipulation (so loops of them vectorise), plus two
// float operations for half subnormals: an add that does their rounding and an exact
// multiply, neither of which produces a float subnormal. They give the same bits on the
// host, on the device, in constant expressions and under FTZ/DAZ (the default
// round-to-nearest mode is assumed; do not build this with -ffast-math, whose
// finite-math assumption breaks NaN handling here and in elementwise.hpp):
//   - float -> 16 bits rounds to nearest, ties to even, producing subnormals and infinities
//     as IEEE 754 says (values at or beyond the last midpoint overflow to infinity);
//   - 16 bits -> float is exact;
//   - a NaN stays a NaN and comes out quiet (the top fraction bit set), keeping the sign and
//     as much of the payload as fits.
// Every function is ARLAB_HD so the CUDA kernels can use the very same code.
#pragma once

#include <cstdint>
#include <cstring>

#ifndef ARLAB_HD
#if defined(__CUDACC__)
#define ARLAB_HD __host__ __device__
#else
#define ARLAB_HD
#endif
#endif

#if defined(__has_builtin)
#if __has_builtin(__builtin_bit_cast)
#define ARLAB_HAVE_BUILTIN_BIT_CAST 1
#endif
#endif

namespace arlab::detail {

// std::bit_cast for trivially copyable types of the same size, usable in device code.
template <class To, class From>
ARLAB_HD constexpr To bit_cast_hd(const From& from) noexcept {
  static_assert(sizeof(To) == sizeof(From), "bit_cast_hd: sizes differ");
#ifdef ARLAB_HAVE_BUILTIN_BIT_CAST
  return __builtin_bit_cast(To, from);
#else
  To to{};
  std::memcpy(&to, &from, sizeof(To));  // not constexpr, but correct everywhere
  return to;
#endif
}

// c ? x : y on unsigned integers, written with masks. GCC does not if-convert a ?: whose
// arm holds a float operation that may trap (the default -ftrapping-math), and then cannot
// vectorise the loop; the masks keep the code straight-line.
template <class U>
ARLAB_HD constexpr U bit_select(bool c, U x, U y) noexcept {
  const U mask = U{0} - static_cast<U>(c);
  return static_cast<U>((x & mask) | (y & ~mask));
}

// ---- IEEE binary16 ---------------------------------------------------------------------

ARLAB_HD constexpr std::uint16_t float_to_half_bits(float value) noexcept {
  const std::uint32_t x = bit_cast_hd<std::uint32_t>(value);
  const std::uint32_t sign = (x >> 16) & 0x8000u;
  const std::uint32_t abs = x & 0x7fffffffu;
  // Every case is computed and the right one selected, so loops of conversions vectorise.
  // Normal half (2^-14 <= |x| < 65520): drop 13 fraction bits, ties to even; a carry into
  // the exponent is right, up to 65520 (the midpoint above 65504) becoming infinity.
  const std::uint32_t normal = (abs + 0x0fffu + ((abs >> 13) & 1u) - 0x38000000u) >> 13;
  // Subnormal half (|x| < 2^-14): adding 0.5 (ulp 2^-24) rounds |x| to a multiple of 2^-24,
  // ties to even; the low bits of the sum are then the half's bits (1024 = smallest normal).
  // No operand or result is a float subnormal except |x| itself, which rounds to 0 even if
  // DAZ flushes it, so this is exact under FTZ/DAZ too (round-to-nearest mode assumed).
  const std::uint32_t subnormal = bit_cast_hd<std::uint32_t>(bit_cast_hd<float>(abs) + 0.5f) -
                                  0x3f000000u;
  const std::uint32_t nan = 0x7e00u | ((abs >> 13) & 0x3ffu);  // quiet, top payload bits
  std::uint32_t bits = bit_select(abs < 0x38800000u, subnormal, normal);
  bits = bit_select(abs >= 0x477ff000u, 0x7c00u, bits);  // overflow (and infinity) -> infinity
  bits = bit_select(abs > 0x7f800000u, nan, bits);
  return static_cast<std::uint16_t>(sign | bits);
}

ARLAB_HD constexpr float half_bits_to_float(std::uint16_t h) noexcept {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exponent = (h >> 10) & 0x1fu;
  const std::uint32_t fraction = h & 0x3ffu;
  // Normal: rebias the exponent 15 -> 127.
  const std::uint32_t normal = ((exponent + 112u) << 23) | (fraction << 13);
  // Subnormal (or zero): fraction * 2^-24, exact, and a normal float (no FTZ/DAZ concern).
  const std::uint32_t subnormal =
      bit_cast_hd<std::uint32_t>(static_cast<float>(static_cast<int>(fraction)) * 0x1p-24f);
  // Infinity, or NaN made quiet.
  const std::uint32_t special = 0x7f800000u | (fraction << 13) | (fraction != 0 ? 0x400000u : 0u);
  std::uint32_t bits = bit_select(exponent == 0, subnormal, normal);
  bits = bit_select(exponent == 0x1fu, special, bits);
  return bit_cast_hd<float>(sign | bits);
}

// ---- bfloat16 --------------------------------------------------------------------------

ARLAB_HD constexpr std::uint16_t float_to_bfloat16_bits(float value) noexcept {
  const std::uint32_t x = bit_cast_hd<std::uint32_t>(value);
  // Drop 16 bits, ties to even. A carry out of the fraction bumps the exponent, which is
  // exactly right, including subnormal -> normal and largest finite -> infinity. A NaN is
  // quieted, keeping its sign and top payload bits. Both computed and one selected, so that
  // loops of conversions vectorise.
  const std::uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;
  const std::uint32_t nan = (x >> 16) | 0x40u;
  return static_cast<std::uint16_t>(bit_select((x & 0x7fffffffu) > 0x7f800000u, nan, rounded));
}

ARLAB_HD constexpr float bfloat16_bits_to_float(std::uint16_t b) noexcept {
  const std::uint32_t x = static_cast<std::uint32_t>(b) << 16;
  // A NaN made quiet, branch-free as above.
  return bit_cast_hd<float>(bit_select((x & 0x7fffffffu) > 0x7f800000u, x | 0x400000u, x));
}

}  // namespace arlab::detail

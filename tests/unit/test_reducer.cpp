// Unit tests of the CPU reducer (src/reduce): cpu_reduce, cpu_divide, CpuReducer, and the
// 16-bit float conversions of half.hpp.
//
// Every expected value is computed here, independently of the code under test: integers in
// 128-bit arithmetic and then wrapped to the element width; floating types decoded from their
// bits by a generic IEEE decoder into long double, combined there, and rounded to the target
// format by a generic round-to-nearest-even (frexp / nearbyint / ldexp). Long double has 64
// significand bits, enough that its own rounding cannot mislead the second one for half,
// bfloat16 and float; double test data keep short significands so their sums and products
// are exact in long double. Buffers are offset from each other by odd numbers of elements
// and guarded, so the tests also exercise vector loops on unaligned data and catch writes
// past the end.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "reduce/dispatch.hpp"
#include "reduce/half.hpp"
#include "reduce/reducer.hpp"

namespace {

using arlab::DataType;
using arlab::ReduceOp;
using arlab::detail::bfloat16_bits_to_float;
using arlab::detail::cpu_divide;
using arlab::detail::cpu_reduce;
using arlab::detail::CpuReducer;
using arlab::detail::float_to_bfloat16_bits;
using arlab::detail::float_to_half_bits;
using arlab::detail::half_bits_to_float;

__extension__ typedef __int128 I128;
__extension__ typedef unsigned __int128 U128;

static_assert(std::endian::native == std::endian::little, "the tests pack elements little-endian");

// ---- types and their encodings ---------------------------------------------------------

struct TypeInfo {
  DataType type;
  const char* name;
  std::size_t size;
  bool is_float;
  bool is_signed;  // integers only
  int exp_bits;    // floats only
  int frac_bits;   // floats only
};

const TypeInfo kTypes[] = {
    {DataType::Int8, "int8", 1, false, true, 0, 0},
    {DataType::UInt8, "uint8", 1, false, false, 0, 0},
    {DataType::Int32, "int32", 4, false, true, 0, 0},
    {DataType::UInt32, "uint32", 4, false, false, 0, 0},
    {DataType::Int64, "int64", 8, false, true, 0, 0},
    {DataType::UInt64, "uint64", 8, false, false, 0, 0},
    {DataType::Float16, "half", 2, true, true, 5, 10},
    {DataType::BFloat16, "bfloat16", 2, true, true, 8, 7},
    {DataType::Float32, "float", 4, true, true, 8, 23},
    {DataType::Float64, "double", 8, true, true, 11, 52},
};
constexpr int kNumTypes = sizeof(kTypes) / sizeof(kTypes[0]);

const TypeInfo& info(DataType type) {
  for (const auto& t : kTypes)
    if (t.type == type) return t;
  throw std::logic_error("no such type");
}

std::uint64_t mask_of(std::size_t size) {
  return size == 8 ? ~std::uint64_t{0} : (std::uint64_t{1} << (8 * size)) - 1;
}

const TypeInfo& kHalf = kTypes[6];
const TypeInfo& kBf16 = kTypes[7];
const TypeInfo& kFloat = kTypes[8];
const TypeInfo& kDouble = kTypes[9];

// Element i of a packed little-endian buffer, zero-extended.
std::uint64_t get(const unsigned char* p, std::size_t i, std::size_t size) {
  std::uint64_t v = 0;
  std::memcpy(&v, p + i * size, size);
  return v;
}
void put(unsigned char* p, std::size_t i, std::size_t size, std::uint64_t v) {
  std::memcpy(p + i * size, &v, size);
}

// ---- independent reference arithmetic --------------------------------------------------

int bias_of(const TypeInfo& t) { return (1 << (t.exp_bits - 1)) - 1; }

// The value of IEEE bits in any binary format, exactly, as long double.
long double decode(std::uint64_t bits, const TypeInfo& t) {
  const std::uint64_t frac = bits & ((std::uint64_t{1} << t.frac_bits) - 1);
  const std::uint64_t exp = (bits >> t.frac_bits) & ((std::uint64_t{1} << t.exp_bits) - 1);
  const bool negative = (bits >> (t.exp_bits + t.frac_bits)) & 1;
  long double v;
  if (exp == (std::uint64_t{1} << t.exp_bits) - 1)
    v = frac != 0 ? std::numeric_limits<long double>::quiet_NaN()
                  : std::numeric_limits<long double>::infinity();
  else if (exp == 0)
    v = std::ldexp(static_cast<long double>(frac), 1 - bias_of(t) - t.frac_bits);
  else
    v = std::ldexp(static_cast<long double>(frac | (std::uint64_t{1} << t.frac_bits)),
                   static_cast<int>(exp) - bias_of(t) - t.frac_bits);
  return negative ? -v : v;
}

bool is_nan_bits(std::uint64_t bits, const TypeInfo& t) {
  const std::uint64_t exp = (bits >> t.frac_bits) & ((std::uint64_t{1} << t.exp_bits) - 1);
  const std::uint64_t frac = bits & ((std::uint64_t{1} << t.frac_bits) - 1);
  return exp == (std::uint64_t{1} << t.exp_bits) - 1 && frac != 0;
}
bool is_quiet_nan_bits(std::uint64_t bits, const TypeInfo& t) {
  return is_nan_bits(bits, t) && ((bits >> (t.frac_bits - 1)) & 1);
}

// x rounded to nearest, ties to even, in format t (subnormals, overflow to infinity).
long double round_to(long double x, const TypeInfo& t) {
  if (std::isnan(x) || std::isinf(x) || x == 0) return x;
  const int p = t.frac_bits + 1;
  const int emin = 1 - bias_of(t);
  const int emax = bias_of(t);
  int e = 0;
  std::frexp(x, &e);                                    // 2^(e-1) <= |x| < 2^e
  const int quantum = std::max(e - 1, emin) - (p - 1);  // exponent of the last kept bit
  const long double r = std::ldexp(std::nearbyint(std::ldexp(x, -quantum)), quantum);
  if (std::fabs(r) >= std::ldexp(1.0L, emax + 1))
    return std::copysign(std::numeric_limits<long double>::infinity(), x);
  return r;
}

struct Expected {
  bool nan = false;
  long double value = 0;   // floats
  std::uint64_t bits = 0;  // integers (masked)
};

I128 decode_int(std::uint64_t bits, const TypeInfo& t) {
  if (!t.is_signed) return static_cast<I128>(bits);
  const int shift = 64 - 8 * static_cast<int>(t.size);
  return static_cast<I128>(static_cast<std::int64_t>(bits << shift) >> shift);
}

Expected reference(ReduceOp op, std::uint64_t a_bits, std::uint64_t b_bits, const TypeInfo& t) {
  Expected e;
  if (!t.is_float) {
    const I128 a = decode_int(a_bits, t);
    const I128 b = decode_int(b_bits, t);
    U128 r = 0;
    switch (op) {
      case ReduceOp::Sum:
      case ReduceOp::Avg: r = static_cast<U128>(a + b); break;
      case ReduceOp::Prod:  // unsigned 64-bit products need the unsigned 128-bit type
        r = t.is_signed ? static_cast<U128>(a * b) : static_cast<U128>(a) * static_cast<U128>(b);
        break;
      case ReduceOp::Min: r = static_cast<U128>(std::min(a, b)); break;
      case ReduceOp::Max: r = static_cast<U128>(std::max(a, b)); break;
    }
    e.bits = static_cast<std::uint64_t>(r) & mask_of(t.size);
    return e;
  }
  const long double a = decode(a_bits, t);
  const long double b = decode(b_bits, t);
  if (std::isnan(a) || std::isnan(b)) return Expected{true, 0, 0};
  long double r = 0;
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg: r = a + b; break;
    case ReduceOp::Prod: r = a * b; break;
    case ReduceOp::Min: r = a < b ? a : b < a ? b : (std::signbit(a) ? a : b); break;
    case ReduceOp::Max: r = a > b ? a : b > a ? b : (std::signbit(a) ? b : a); break;
  }
  if (std::isnan(r)) return Expected{true, 0, 0};  // inf - inf, 0 * inf
  e.value = round_to(r, t);
  return e;
}

// Empty when `got` is what `want` says, else a description.
std::string mismatch(const Expected& want, std::uint64_t got, const TypeInfo& t) {
  if (!t.is_float) {
    if (got == want.bits) return {};
    return "got bits " + std::to_string(got) + ", want " + std::to_string(want.bits);
  }
  const long double v = decode(got, t);
  if (want.nan) {
    if (is_quiet_nan_bits(got, t)) return {};
    return "want a quiet NaN, got bits " + std::to_string(got);
  }
  if (!std::isnan(v) && v == want.value && std::signbit(v) == std::signbit(want.value))
    return {};
  char buf[160];
  std::snprintf(buf, sizeof buf, "got %.25Lg (bits %llu), want %.25Lg", v,
                static_cast<unsigned long long>(got), want.value);
  return buf;
}

// ---- test data -------------------------------------------------------------------------

std::vector<std::uint64_t> specials(const TypeInfo& t) {
  switch (t.type) {
    case DataType::Float16:
      return {0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFE00, 0x7BFF,
              0xFBFF, 0x0001, 0x8001, 0x0003, 0x03FF, 0x0400, 0x3C00, 0xBC00, 0x3800};
    case DataType::BFloat16:
      return {0x0000, 0x8000, 0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0x7F7F, 0xFF7F,
              0x0001, 0x8001, 0x0003, 0x007F, 0x0080, 0x3F80, 0xBF80, 0x3F00};
    case DataType::Float32:
      return {0x00000000, 0x80000000, 0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001,
              0x7F7FFFFF, 0xFF7FFFFF, 0x00000001, 0x80000001, 0x00000003, 0x00800000,
              0x3F800000, 0xBF800000, 0x3F000000};
    case DataType::Float64:  // short significands only: see the file comment
      return {0x0000000000000000, 0x8000000000000000, 0x7FF0000000000000, 0xFFF0000000000000,
              0x7FF8000000000000, 0x7FF0000000000001, 0x7FE0000000000000, 0x7FE8000000000000,
              0xFFE0000000000000, 0x0010000000000000, 0x0000000000000001, 0x0000000000000003,
              0x0000000000004000, 0x3FF0000000000000, 0xBFF0000000000000, 0x3FE0000000000000};
    default: {
      const std::uint64_t m = mask_of(t.size);
      const std::uint64_t top = std::uint64_t{1} << (8 * t.size - 1);
      return {0, 1, m, top, top - 1, top + 1, m - 1, 2, m & static_cast<std::uint64_t>(-2)};
    }
  }
}

// n values of type t: specials, small numbers, values near 1, and random bit patterns.
std::vector<std::uint64_t> make_values(const TypeInfo& t, std::size_t n, std::mt19937_64& rng) {
  const auto special = specials(t);
  std::vector<std::uint64_t> v(n);
  for (auto& x : v) {
    const std::uint64_t r = rng();
    const int kind = static_cast<int>(r % 8);
    if (kind == 0) {
      x = special[(r >> 8) % special.size()];
    } else if (!t.is_float) {  // small signed values, or any bits
      x = kind <= 2 ? static_cast<std::uint64_t>(static_cast<std::int64_t>((r >> 8) % 201) - 100)
                    : rng();
      x &= mask_of(t.size);
    } else if (t.type == DataType::Float64) {  // k * 2^e, |k| < 2^21, |e| <= 20
      const auto k = static_cast<std::int64_t>((r >> 8) % (1u << 21)) * ((r >> 40) & 1 ? -1 : 1);
      const double d = std::ldexp(static_cast<double>(k), static_cast<int>((r >> 42) % 41) - 20);
      std::memcpy(&x, &d, 8);
    } else if (kind <= 3) {  // near 1: biased exponent within 2 of the bias, any fraction
      const std::uint64_t exp = static_cast<std::uint64_t>(bias_of(t) - 2) + (r >> 8) % 5;
      const std::uint64_t frac = rng() & ((std::uint64_t{1} << t.frac_bits) - 1);
      const std::uint64_t sign = ((r >> 20) & 1) << (t.exp_bits + t.frac_bits);
      x = sign | (exp << t.frac_bits) | frac;
    } else {
      x = rng() & mask_of(t.size);
    }
  }
  return v;
}

std::vector<unsigned char> pack(const std::vector<std::uint64_t>& v, std::size_t size) {
  std::vector<unsigned char> p(v.size() * size);
  for (std::size_t i = 0; i < v.size(); ++i) put(p.data(), i, size, v[i]);
  return p;
}

// ---- the matrix: every type x op x length, every aliasing mode -------------------------

struct MatrixParam {
  int type_index;
  ReduceOp op;
  std::size_t n;
};

const char* op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum: return "sum";
    case ReduceOp::Prod: return "prod";
    case ReduceOp::Min: return "min";
    case ReduceOp::Max: return "max";
    case ReduceOp::Avg: return "avg";
  }
  return "?";
}

class ReduceMatrix : public ::testing::TestWithParam<std::tuple<int, ReduceOp, std::size_t>> {};

// Where the output goes relative to the inputs.
enum class Mode { Apart, OutIsA, OutIsB, AllSame };

TEST_P(ReduceMatrix, MatchesReference) {
  const int type_index = std::get<0>(GetParam());  // (no structured binding: the lambda
  const ReduceOp op = std::get<1>(GetParam());       // below captures n, which older clang
  const std::size_t n = std::get<2>(GetParam());     // rejects)
  const TypeInfo& t = kTypes[type_index];
  std::mt19937_64 rng(1000003u * static_cast<unsigned>(type_index) +
                      7919u * static_cast<unsigned>(op) + n);
  const auto a_vals = make_values(t, n, rng);
  const auto b_vals = make_values(t, n, rng);
  constexpr std::size_t kPad = 8;          // guard elements on each side
  constexpr unsigned char kGuard = 0xA5;

  for (Mode mode : {Mode::Apart, Mode::OutIsA, Mode::OutIsB, Mode::AllSame}) {
    SCOPED_TRACE("mode " + std::to_string(static_cast<int>(mode)));
    // Three separately guarded regions, offset by different numbers of elements (so not
    // all vector-aligned, but each aligned to its element, as the reducer requires).
    std::vector<unsigned char> mem(3 * (n + 2 * kPad + 2) * t.size + 64, kGuard);
    const std::size_t misalign = (64 - reinterpret_cast<std::uintptr_t>(mem.data()) % 64) % 64;
    auto region = [&](std::size_t k) {
      return mem.data() + misalign + (k * (n + 2 * kPad + 2) + kPad + k) * t.size;
    };
    unsigned char* a = region(0);
    unsigned char* b = region(1);
    unsigned char* out = region(2);
    const auto pa = pack(a_vals, t.size);
    const auto pb = pack(mode == Mode::AllSame ? a_vals : b_vals, t.size);
    if (n != 0) {
      std::memcpy(a, pa.data(), pa.size());
      std::memcpy(b, pb.data(), pb.size());
    }
    const void* in_a = a;
    const void* in_b = b;
    void* dst = out;
    if (mode == Mode::OutIsA) dst = a;
    if (mode == Mode::OutIsB) dst = b;
    if (mode == Mode::AllSame) in_a = in_b = dst = a;
    const std::vector<unsigned char> before = mem;

    cpu_reduce(op, t.type, in_a, in_b, dst, n);

    int failures = 0;
    const auto* res = static_cast<const unsigned char*>(dst);
    for (std::size_t i = 0; i < n && failures < 8; ++i) {
      const std::uint64_t x = a_vals[i];
      const std::uint64_t y = mode == Mode::AllSame ? a_vals[i] : b_vals[i];
      const std::string why = mismatch(reference(op, x, y, t), get(res, i, t.size), t);
      if (!why.empty()) {
        ++failures;
        ADD_FAILURE() << t.name << " " << op_name(op) << " element " << i << " of " << n
                      << ": a bits " << x << ", b bits " << y << ": " << why;
      }
    }
    // Nothing outside the destination's n elements changed.
    const std::size_t lo = static_cast<std::size_t>(res - mem.data());
    const std::size_t hi = lo + n * t.size;
    for (std::size_t k = 0; k < mem.size(); ++k) {
      const bool inside = k >= lo && k < hi;
      if (!inside && mem[k] != before[k]) {
        ADD_FAILURE() << "byte " << k << " outside the output changed";
        break;
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(
    AllTypesOpsLengths, ReduceMatrix,
    ::testing::Combine(::testing::Range(0, kNumTypes),
                       ::testing::Values(ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min,
                                         ReduceOp::Max, ReduceOp::Avg),
                       ::testing::Values(std::size_t{0}, std::size_t{1}, std::size_t{7},
                                         std::size_t{300}, std::size_t{1000},
                                         std::size_t{1003})),
    [](const auto& p) {
      return std::string(kTypes[std::get<0>(p.param)].name) + "_" + op_name(std::get<1>(p.param)) +
             "_n" + std::to_string(std::get<2>(p.param));
    });

// ---- known values, by hand -------------------------------------------------------------

// One element through cpu_reduce.
template <class T>
T reduce1(ReduceOp op, DataType type, T a, T b) {
  T out{};
  cpu_reduce(op, type, &a, &b, &out, 1);
  return out;
}

std::uint16_t reduce16(ReduceOp op, DataType type, std::uint16_t a, std::uint16_t b) {
  return reduce1<std::uint16_t>(op, type, a, b);
}

TEST(ReduceIntegers, WrapOnOverflow) {
  using L8 = std::numeric_limits<std::int8_t>;
  EXPECT_EQ(reduce1<std::int8_t>(ReduceOp::Sum, DataType::Int8, 127, 1), -128);
  EXPECT_EQ(reduce1<std::int8_t>(ReduceOp::Sum, DataType::Int8, -128, -1), 127);
  EXPECT_EQ(reduce1<std::int8_t>(ReduceOp::Prod, DataType::Int8, 100, 3), 44);  // 300 - 256
  EXPECT_EQ(reduce1<std::int8_t>(ReduceOp::Prod, DataType::Int8, L8::min(), -1), L8::min());
  EXPECT_EQ(reduce1<std::int8_t>(ReduceOp::Prod, DataType::Int8, -7, 5), -35);
  EXPECT_EQ(reduce1<std::uint8_t>(ReduceOp::Sum, DataType::UInt8, 255, 1), 0);
  EXPECT_EQ(reduce1<std::uint8_t>(ReduceOp::Prod, DataType::UInt8, 16, 16), 0);
  EXPECT_EQ(reduce1<std::uint8_t>(ReduceOp::Prod, DataType::UInt8, 255, 255), 1);
  using L32 = std::numeric_limits<std::int32_t>;
  EXPECT_EQ(reduce1<std::int32_t>(ReduceOp::Sum, DataType::Int32, L32::max(), 1), L32::min());
  EXPECT_EQ(reduce1<std::int32_t>(ReduceOp::Sum, DataType::Int32, L32::min(), -1), L32::max());
  EXPECT_EQ(reduce1<std::int32_t>(ReduceOp::Prod, DataType::Int32, 65536, 65536), 0);
  EXPECT_EQ(reduce1<std::int32_t>(ReduceOp::Prod, DataType::Int32, L32::min(), -1), L32::min());
  EXPECT_EQ(reduce1<std::int32_t>(ReduceOp::Prod, DataType::Int32, 46341, 46341),
            -2147479015);  // 2147488281 - 2^32
  EXPECT_EQ(reduce1<std::uint32_t>(ReduceOp::Sum, DataType::UInt32, 0xFFFFFFFFu, 2), 1u);
  using L64 = std::numeric_limits<std::int64_t>;
  EXPECT_EQ(reduce1<std::int64_t>(ReduceOp::Sum, DataType::Int64, L64::max(), 1), L64::min());
  EXPECT_EQ(reduce1<std::int64_t>(ReduceOp::Prod, DataType::Int64, L64::min(), -1), L64::min());
  EXPECT_EQ(reduce1<std::uint64_t>(ReduceOp::Prod, DataType::UInt64, ~0ull, ~0ull), 1u);
  EXPECT_EQ(reduce1<std::int32_t>(ReduceOp::Min, DataType::Int32, -5, 3), -5);
  EXPECT_EQ(reduce1<std::int32_t>(ReduceOp::Max, DataType::Int32, -5, 3), 3);
  EXPECT_EQ(reduce1<std::uint32_t>(ReduceOp::Max, DataType::UInt32, 0x80000000u, 1), 0x80000000u);
  EXPECT_EQ(reduce1<std::int8_t>(ReduceOp::Avg, DataType::Int8, 100, 100), -56);  // Avg sums
}

TEST(ReduceFloats, MinMaxSignedZeroAndNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const float snan = std::bit_cast<float>(0x7F800001u);
  for (auto [a, b] : {std::pair{-0.0f, 0.0f}, std::pair{0.0f, -0.0f}}) {
    EXPECT_EQ(std::bit_cast<std::uint32_t>(reduce1(ReduceOp::Min, DataType::Float32, a, b)),
              0x80000000u);
    EXPECT_EQ(std::bit_cast<std::uint32_t>(reduce1(ReduceOp::Max, DataType::Float32, a, b)), 0u);
  }
  for (auto [a, b] : {std::pair{nan, 1.0f}, std::pair{1.0f, nan}, std::pair{snan, 1.0f},
                      std::pair{-1.0f, snan}, std::pair{nan, nan}}) {
    for (ReduceOp op : {ReduceOp::Min, ReduceOp::Max, ReduceOp::Sum, ReduceOp::Prod}) {
      const float r = reduce1(op, DataType::Float32, a, b);
      EXPECT_TRUE(std::isnan(r)) << op_name(op);
      EXPECT_TRUE(is_quiet_nan_bits(std::bit_cast<std::uint32_t>(r), kFloat)) << op_name(op);
    }
  }
  const double dn = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(std::bit_cast<std::uint64_t>(reduce1(ReduceOp::Min, DataType::Float64, 0.0, -0.0)),
            0x8000000000000000u);
  EXPECT_EQ(std::bit_cast<std::uint64_t>(reduce1(ReduceOp::Max, DataType::Float64, -0.0, 0.0)),
            0u);
  EXPECT_TRUE(std::isnan(reduce1(ReduceOp::Min, DataType::Float64, 2.0, dn)));
  EXPECT_TRUE(std::isnan(reduce1(ReduceOp::Max, DataType::Float64, dn, 2.0)));
  EXPECT_EQ(reduce1<double>(ReduceOp::Min, DataType::Float64, -INFINITY, 1.0), -INFINITY);
  EXPECT_EQ(reduce1(ReduceOp::Max, DataType::Float32, -INFINITY, -FLT_MAX), -FLT_MAX);
  // 16-bit formats: the same rules.
  for (DataType type : {DataType::Float16, DataType::BFloat16}) {
    const std::uint16_t qnan = type == DataType::Float16 ? 0x7E00 : 0x7FC0;
    const std::uint16_t one = type == DataType::Float16 ? 0x3C00 : 0x3F80;
    EXPECT_EQ(reduce16(ReduceOp::Min, type, 0x8000, 0x0000), 0x8000);
    EXPECT_EQ(reduce16(ReduceOp::Min, type, 0x0000, 0x8000), 0x8000);
    EXPECT_EQ(reduce16(ReduceOp::Max, type, 0x8000, 0x0000), 0x0000);
    EXPECT_EQ(reduce16(ReduceOp::Max, type, 0x0000, 0x8000), 0x0000);
    EXPECT_TRUE(is_quiet_nan_bits(reduce16(ReduceOp::Min, type, qnan, one), info(type)));
    EXPECT_TRUE(is_quiet_nan_bits(reduce16(ReduceOp::Max, type, one, qnan), info(type)));
  }
}

// Min and Max give the same bits in either operand order (for non-NaN operands), so every
// rank of an all-reduce agrees whatever order its algorithm combined the values in.
TEST(ReduceFloats, MinMaxCommutative) {
  std::mt19937_64 rng(42);
  for (const TypeInfo& t : {kHalf, kBf16, kFloat, kDouble}) {
    auto a = make_values(t, 2000, rng);
    auto b = make_values(t, 2000, rng);
    for (std::size_t i = 0; i < a.size(); i += 3) b[i] = a[i] ^ (std::uint64_t{1} << (8 * t.size - 1));
    for (ReduceOp op : {ReduceOp::Min, ReduceOp::Max}) {
      auto pa = pack(a, t.size), pb = pack(b, t.size);
      std::vector<unsigned char> ab(pa.size()), ba(pa.size());
      cpu_reduce(op, t.type, pa.data(), pb.data(), ab.data(), a.size());
      cpu_reduce(op, t.type, pb.data(), pa.data(), ba.data(), a.size());
      for (std::size_t i = 0; i < a.size(); ++i) {
        if (is_nan_bits(a[i], t) || is_nan_bits(b[i], t)) continue;
        ASSERT_EQ(get(ab.data(), i, t.size), get(ba.data(), i, t.size))
            << t.name << " " << op_name(op) << " " << a[i] << " " << b[i];
      }
    }
  }
}

struct Case16 {
  ReduceOp op;
  std::uint16_t a, b, want;
};

TEST(ReduceHalf, KnownBitPatterns) {
  const Case16 cases[] = {
      // 1 + 2^-11 is the midpoint of 1 (even) and 1 + 2^-10: ties to even gives 1.
      {ReduceOp::Sum, 0x3C00, 0x1000, 0x3C00},
      // 1 + 3 * 2^-11 is the midpoint of 1 + 2^-10 (odd) and 1 + 2^-9 (even).
      {ReduceOp::Sum, 0x3C01, 0x1000, 0x3C02},
      {ReduceOp::Sum, 0x3C00, 0x3C00, 0x4000},  // 1 + 1 = 2
      {ReduceOp::Sum, 0x3C00, 0xBC00, 0x0000},  // 1 - 1 = +0
      {ReduceOp::Sum, 0x8000, 0x8000, 0x8000},  // -0 + -0 = -0
      // 65504 (largest) + 16 = 65520, the midpoint to 65536: rounds to even, infinity.
      {ReduceOp::Sum, 0x7BFF, 0x4C00, 0x7C00},
      {ReduceOp::Sum, 0x7BFF, 0x4800, 0x7BFF},  // 65504 + 8 = 65512: below the midpoint
      {ReduceOp::Sum, 0xFBFF, 0xCC00, 0xFC00},  // and the same negative: -infinity
      {ReduceOp::Prod, 0x7BFF, 0x4000, 0x7C00},  // 65504 * 2 overflows
      // Subnormals: 0x0001 is 2^-24.
      {ReduceOp::Sum, 0x0001, 0x0001, 0x0002},
      {ReduceOp::Sum, 0x03FF, 0x0001, 0x0400},   // largest subnormal + 2^-24 = smallest normal
      {ReduceOp::Sum, 0x0400, 0x8001, 0x03FF},   // and back
      {ReduceOp::Prod, 0x0001, 0x3800, 0x0000},  // 2^-25: ties to even, 0
      {ReduceOp::Prod, 0x0003, 0x3800, 0x0002},  // 1.5 * 2^-24: ties to even, 2 * 2^-24
      {ReduceOp::Prod, 0x0005, 0x3800, 0x0002},  // 2.5 * 2^-24: ties to even, 2 * 2^-24
      {ReduceOp::Prod, 0x0001, 0xB800, 0x8000},  // -2^-25: -0
      {ReduceOp::Prod, 0x0400, 0x3400, 0x0100},  // 2^-14 * 2^-2 = 2^-16 (subnormal 256)
      {ReduceOp::Prod, 0x3C01, 0x3C01, 0x3C02},  // (1 + 2^-10)^2 = 1 + 2^-9 + 2^-20
      {ReduceOp::Sum, 0x7C00, 0x7C00, 0x7C00},
      {ReduceOp::Sum, 0x7C00, 0xBC00, 0x7C00},
      {ReduceOp::Min, 0xFC00, 0x3C00, 0xFC00},
      {ReduceOp::Max, 0xFC00, 0x7BFF, 0x7BFF},
  };
  for (const auto& c : cases)
    EXPECT_EQ(reduce16(c.op, DataType::Float16, c.a, c.b), c.want)
        << op_name(c.op) << " " << std::hex << c.a << " " << c.b;
  // NaN propagation: a NaN operand, inf - inf, 0 * inf; always quiet.
  const std::uint16_t nan_cases[][3] = {{0x7E00, 0x3C00, 0}, {0x3C00, 0x7C01, 0},
                                        {0x7C00, 0xFC00, 0}, {0xFE00, 0x0000, 1},
                                        {0x7C00, 0x0000, 1}};
  for (const auto& c : nan_cases) {
    const ReduceOp op = c[2] != 0 ? ReduceOp::Prod : ReduceOp::Sum;
    EXPECT_TRUE(is_quiet_nan_bits(reduce16(op, DataType::Float16, c[0], c[1]), kHalf))
        << std::hex << c[0] << " " << c[1];
  }
}

TEST(ReduceBFloat16, KnownBitPatterns) {
  const Case16 cases[] = {
      // 0x3B80 is 2^-8, half an ulp of 1 (0x3F80).
      {ReduceOp::Sum, 0x3F80, 0x3B80, 0x3F80},  // midpoint, ties to even
      {ReduceOp::Sum, 0x3F81, 0x3B80, 0x3F82},  // midpoint above an odd value
      // 0x7F7F is (2 - 2^-7) * 2^127, the largest; 0x7B00 is 2^119, half its ulp.
      {ReduceOp::Sum, 0x7F7F, 0x7B00, 0x7F80},  // midpoint to 2^128: rounds to even, inf
      {ReduceOp::Sum, 0x7F7E, 0x7B00, 0x7F7E},  // midpoint above an even value: stays
      {ReduceOp::Sum, 0x7F7F, 0x7F7F, 0x7F80},
      {ReduceOp::Sum, 0x0001, 0x0001, 0x0002},   // 0x0001 is 2^-133
      {ReduceOp::Sum, 0x007F, 0x0001, 0x0080},   // largest subnormal + 1 = smallest normal
      {ReduceOp::Prod, 0x0001, 0x3F00, 0x0000},  // 2^-134: ties to even, 0
      {ReduceOp::Prod, 0x0003, 0x3F00, 0x0002},  // 1.5 * 2^-133: ties to even
      {ReduceOp::Prod, 0x0001, 0xBF00, 0x8000},
      {ReduceOp::Prod, 0x4040, 0x4040, 0x4110},  // 3 * 3 = 9
      {ReduceOp::Sum, 0xFF80, 0xFF80, 0xFF80},
  };
  for (const auto& c : cases)
    EXPECT_EQ(reduce16(c.op, DataType::BFloat16, c.a, c.b), c.want)
        << op_name(c.op) << " " << std::hex << c.a << " " << c.b;
  EXPECT_TRUE(is_quiet_nan_bits(reduce16(ReduceOp::Sum, DataType::BFloat16, 0x7F80, 0xFF80), kBf16));
  EXPECT_TRUE(is_quiet_nan_bits(reduce16(ReduceOp::Prod, DataType::BFloat16, 0x7F81, 0x3F80), kBf16));
}

// ---- conversions -----------------------------------------------------------------------

std::uint32_t fbits(float f) { return std::bit_cast<std::uint32_t>(f); }
float from_bits(std::uint32_t b) { return std::bit_cast<float>(b); }

TEST(HalfConversion, KnownValues) {
  EXPECT_EQ(float_to_half_bits(1.0f), 0x3C00);
  EXPECT_EQ(float_to_half_bits(-2.0f), 0xC000);
  EXPECT_EQ(float_to_half_bits(1.0f + 0x1p-11f), 0x3C00);            // tie, to even
  EXPECT_EQ(float_to_half_bits(1.0f + 3 * 0x1p-11f), 0x3C02);        // tie, to even
  EXPECT_EQ(float_to_half_bits(1.0f + 0x1p-11f + 0x1p-20f), 0x3C01);  // above the tie
  EXPECT_EQ(float_to_half_bits(65504.0f), 0x7BFF);
  EXPECT_EQ(float_to_half_bits(65519.996f), 0x7BFF);
  EXPECT_EQ(float_to_half_bits(65520.0f), 0x7C00);
  EXPECT_EQ(float_to_half_bits(-65520.0f), 0xFC00);
  EXPECT_EQ(float_to_half_bits(1e10f), 0x7C00);
  EXPECT_EQ(float_to_half_bits(FLT_MAX), 0x7C00);
  EXPECT_EQ(float_to_half_bits(INFINITY), 0x7C00);
  EXPECT_EQ(float_to_half_bits(-INFINITY), 0xFC00);
  EXPECT_EQ(float_to_half_bits(0x1p-14f), 0x0400);                   // smallest normal
  EXPECT_EQ(float_to_half_bits(0x1p-24f), 0x0001);                   // smallest subnormal
  EXPECT_EQ(float_to_half_bits(0x1p-25f), 0x0000);                   // tie, to even (0)
  EXPECT_EQ(float_to_half_bits(std::nextafter(0x1p-25f, 1.0f)), 0x0001);
  EXPECT_EQ(float_to_half_bits(3 * 0x1p-25f), 0x0002);               // 1.5 ulp: to even
  EXPECT_EQ(float_to_half_bits(5 * 0x1p-25f), 0x0002);               // 2.5 ulp: to even
  EXPECT_EQ(float_to_half_bits(1023.5f * 0x1p-24f), 0x0400);         // tie, to even (normal)
  EXPECT_EQ(float_to_half_bits(1022.5f * 0x1p-24f), 0x03FE);
  EXPECT_EQ(float_to_half_bits(-0.0f), 0x8000);
  EXPECT_EQ(float_to_half_bits(0x1p-149f), 0x0000);                  // float subnormal
  EXPECT_EQ(float_to_half_bits(-0x1p-149f), 0x8000);
  EXPECT_EQ(float_to_half_bits(from_bits(0x7FC00000)), 0x7E00);
  EXPECT_EQ(float_to_half_bits(from_bits(0x7F800001)), 0x7E00);      // signalling: quieted
  EXPECT_EQ(float_to_half_bits(from_bits(0xFFC00000)), 0xFE00);      // sign kept
  EXPECT_EQ(float_to_half_bits(from_bits(0x7FFFE000)), 0x7FFF);      // payload kept

  EXPECT_EQ(half_bits_to_float(0x3C00), 1.0f);
  EXPECT_EQ(half_bits_to_float(0x0001), 0x1p-24f);
  EXPECT_EQ(half_bits_to_float(0x03FF), 1023 * 0x1p-24f);
  EXPECT_EQ(half_bits_to_float(0x8001), -0x1p-24f);
  EXPECT_EQ(half_bits_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(half_bits_to_float(0x7C00), INFINITY);
  EXPECT_EQ(half_bits_to_float(0xFC00), -INFINITY);
  EXPECT_EQ(fbits(half_bits_to_float(0x8000)), 0x80000000u);
  EXPECT_EQ(fbits(half_bits_to_float(0x7E00)), 0x7FC00000u);
  EXPECT_EQ(fbits(half_bits_to_float(0x7C01)), 0x7FC02000u);  // signalling: quieted
  EXPECT_EQ(fbits(half_bits_to_float(0xFE01)), 0xFFC02000u);

  static_assert(float_to_half_bits(1.0f) == 0x3C00);  // usable in constant expressions
  static_assert(half_bits_to_float(0x0001) == 0x1p-24f);
}

TEST(BFloat16Conversion, KnownValues) {
  EXPECT_EQ(float_to_bfloat16_bits(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bfloat16_bits(from_bits(0x3F808000)), 0x3F80);  // tie, to even
  EXPECT_EQ(float_to_bfloat16_bits(from_bits(0x3F818000)), 0x3F82);  // tie, to even
  EXPECT_EQ(float_to_bfloat16_bits(from_bits(0x3F808001)), 0x3F81);
  EXPECT_EQ(float_to_bfloat16_bits(from_bits(0x3F807FFF)), 0x3F80);
  EXPECT_EQ(float_to_bfloat16_bits(FLT_MAX), 0x7F80);                // rounds up to inf
  EXPECT_EQ(float_to_bfloat16_bits(from_bits(0x7F7F7FFF)), 0x7F7F);
  EXPECT_EQ(float_to_bfloat16_bits(from_bits(0x7F7F8000)), 0x7F80);  // tie above odd: inf
  EXPECT_EQ(float_to_bfloat16_bits(-FLT_MAX), 0xFF80);
  EXPECT_EQ(float_to_bfloat16_bits(from_bits(0x00008000)), 0x0000);  // subnormal tie
  EXPECT_EQ(float_to_bfloat16_bits(from_bits(0x00018000)), 0x0002);
  EXPECT_EQ(float_to_bfloat16_bits(from_bits(0x007FFFFF)), 0x0080);  // to smallest normal
  EXPECT_EQ(float_to_bfloat16_bits(INFINITY), 0x7F80);
  EXPECT_EQ(float_to_bfloat16_bits(from_bits(0x7F800001)), 0x7FC0);  // signalling: quieted
  EXPECT_EQ(float_to_bfloat16_bits(from_bits(0xFF800001)), 0xFFC0);
  EXPECT_EQ(float_to_bfloat16_bits(from_bits(0x7FFFFFFF)), 0x7FFF);  // no carry out of NaN
  EXPECT_EQ(bfloat16_bits_to_float(0x3F80), 1.0f);
  EXPECT_EQ(bfloat16_bits_to_float(0x0001), 0x1p-133f);
  EXPECT_EQ(fbits(bfloat16_bits_to_float(0x7F81)), 0x7FC10000u);  // signalling: quieted
  static_assert(float_to_bfloat16_bits(1.0f) == 0x3F80);
}

// Every 16-bit pattern converts to float exactly and back to itself; NaNs stay NaN (quiet,
// same sign, quiet ones bit-identical).
void round_trip_all(const TypeInfo& t, float (*to_float)(std::uint16_t),
                    std::uint16_t (*from_float)(float)) {
  for (std::uint32_t h = 0; h <= 0xFFFF; ++h) {
    const auto bits = static_cast<std::uint16_t>(h);
    const float f = to_float(bits);
    const std::uint16_t back = from_float(f);
    if (is_nan_bits(bits, t)) {
      ASSERT_TRUE(std::isnan(f)) << std::hex << h;
      ASSERT_TRUE(is_quiet_nan_bits(fbits(f), kFloat)) << std::hex << h;
      ASSERT_TRUE(is_quiet_nan_bits(back, t)) << std::hex << h;
      ASSERT_EQ(back & 0x8000, bits & 0x8000) << std::hex << h;
      if (is_quiet_nan_bits(bits, t)) {
        ASSERT_EQ(back, bits) << std::hex << h;
      }
    } else {
      ASSERT_EQ(static_cast<long double>(f), decode(bits, t)) << std::hex << h;
      ASSERT_EQ(std::signbit(f), (bits & 0x8000) != 0) << std::hex << h;
      ASSERT_EQ(back, bits) << std::hex << h;
    }
  }
}

TEST(HalfConversion, RoundTripAll65536) {
  round_trip_all(kHalf, half_bits_to_float, float_to_half_bits);
}
TEST(BFloat16Conversion, RoundTripAll65536) {
  round_trip_all(kBf16, bfloat16_bits_to_float, float_to_bfloat16_bits);
}

// At every midpoint between neighbouring finite values (and just either side of it), for
// both signs, the rounding is to nearest and ties to even. The midpoint above the largest
// finite value rounds to infinity.
void midpoints_all(const TypeInfo& t, std::uint16_t (*from_float)(float)) {
  const std::uint16_t inf = t.type == DataType::Float16 ? 0x7C00 : 0x7F80;
  for (std::uint16_t lo = 0; lo < inf; ++lo) {
    const auto hi = static_cast<std::uint16_t>(lo + 1);
    const long double mid = (decode(lo, t) + (hi == inf ? std::ldexp(1.0L, bias_of(t) + 1)
                                                        : decode(hi, t))) / 2;
    const auto m = static_cast<float>(mid);
    ASSERT_EQ(static_cast<long double>(m), mid) << "midpoint not exact in float";
    const std::uint16_t even = (lo & 1) == 0 ? lo : hi;
    for (std::uint16_t sign : {std::uint16_t{0}, std::uint16_t{0x8000}}) {
      const float s = sign ? -1.0f : 1.0f;
      ASSERT_EQ(from_float(s * m), even | sign) << std::hex << lo;
      ASSERT_EQ(from_float(s * std::nextafter(m, 0.0f)), lo | sign) << std::hex << lo;
      ASSERT_EQ(from_float(s * std::nextafter(m, INFINITY)), hi | sign) << std::hex << lo;
    }
  }
}

TEST(HalfConversion, EveryMidpointRoundsToEven) { midpoints_all(kHalf, float_to_half_bits); }
TEST(BFloat16Conversion, EveryMidpointRoundsToEven) {
  midpoints_all(kBf16, float_to_bfloat16_bits);
}

// Random floats (all exponents, subnormals, NaN, infinities) against the reference rounding.
TEST(HalfConversion, RandomFloatsMatchReference) {
  std::mt19937_64 rng(7);
  for (int i = 0; i < 1'000'000; ++i) {
    std::uint32_t x = static_cast<std::uint32_t>(rng());
    if (i % 2) x = (x & 0x807FFFFFu) | ((100u + x % 50u) << 23);  // the half's range
    const float f = from_bits(x);
    for (const TypeInfo* t : {&kHalf, &kBf16}) {
      const std::uint16_t got =
          t == &kHalf ? float_to_half_bits(f) : float_to_bfloat16_bits(f);
      const Expected want{std::isnan(f), std::isnan(f) ? 0 : round_to(f, *t), 0};
      const std::string why = mismatch(want, got, *t);
      ASSERT_TRUE(why.empty()) << t->name << " from float bits " << std::hex << x << ": " << why;
    }
  }
}

// ---- division (Avg) --------------------------------------------------------------------

TEST(Divide, IntegersTruncateTowardZero) {
  using L32 = std::numeric_limits<std::int32_t>;
  std::vector<std::int32_t> v = {-7, 7, -1, 1, -8, 8, L32::min(), L32::max(), 0};
  cpu_divide(DataType::Int32, v.data(), v.size(), 2);
  EXPECT_EQ(v, (std::vector<std::int32_t>{-3, 3, 0, 0, -4, 4, -1073741824, 1073741823, 0}));
  v = {-7, 7, L32::min(), L32::max()};
  cpu_divide(DataType::Int32, v.data(), v.size(), -2);
  EXPECT_EQ(v, (std::vector<std::int32_t>{3, -3, 1073741824, -1073741823}));
  v = {5, -5, L32::min()};
  cpu_divide(DataType::Int32, v.data(), v.size(), -1);  // MIN / -1 wraps to MIN
  EXPECT_EQ(v, (std::vector<std::int32_t>{-5, 5, L32::min()}));

  std::vector<std::int8_t> b = {-128, 127, -5, 5};
  cpu_divide(DataType::Int8, b.data(), b.size(), 4);
  EXPECT_EQ(b, (std::vector<std::int8_t>{-32, 31, -1, 1}));
  b = {-128, 127, -5};
  cpu_divide(DataType::Int8, b.data(), b.size(), -1);
  EXPECT_EQ(b, (std::vector<std::int8_t>{-128, -127, 5}));
  b = {-128, 127};
  cpu_divide(DataType::Int8, b.data(), b.size(), 1000);
  EXPECT_EQ(b, (std::vector<std::int8_t>{0, 0}));

  using L64 = std::numeric_limits<std::int64_t>;
  std::vector<std::int64_t> w = {L64::min(), L64::max(), -10};
  cpu_divide(DataType::Int64, w.data(), w.size(), 3);
  EXPECT_EQ(w, (std::vector<std::int64_t>{-3074457345618258602, 3074457345618258602, -3}));
  w = {L64::min()};
  cpu_divide(DataType::Int64, w.data(), w.size(), -1);
  EXPECT_EQ(w[0], L64::min());

  std::vector<std::uint8_t> u8 = {255, 3};
  cpu_divide(DataType::UInt8, u8.data(), u8.size(), 4);
  EXPECT_EQ(u8, (std::vector<std::uint8_t>{63, 0}));
  std::vector<std::uint64_t> u64 = {~0ull};
  cpu_divide(DataType::UInt64, u64.data(), u64.size(), 3);
  EXPECT_EQ(u64[0], 6148914691236517205ull);
}

TEST(Divide, AvgOfTwoRanks) {  // what the executor does: reduce as Sum, then divide
  std::vector<std::int32_t> a = {-7, 3, -1, 100}, b = {2, 4, 0, -1};
  cpu_reduce(ReduceOp::Avg, DataType::Int32, a.data(), b.data(), a.data(), a.size());
  cpu_divide(DataType::Int32, a.data(), a.size(), 2);
  EXPECT_EQ(a, (std::vector<std::int32_t>{-2, 3, 0, 49}));
  std::vector<std::uint16_t> h = {0x3C00, 0xC000}, k = {0x4000, 0x3C00};  // {1, -2} + {2, 1}
  cpu_reduce(ReduceOp::Avg, DataType::Float16, h.data(), k.data(), h.data(), h.size());
  cpu_divide(DataType::Float16, h.data(), h.size(), 2);
  EXPECT_EQ(h, (std::vector<std::uint16_t>{0x3E00, 0xB800}));  // {1.5, -0.5}
}

// Quotients within a float rounding of a 16-bit midpoint, found by search: rounding
// x / d to float first (round to nearest) and then to 16 bits would round these wrongly.
TEST(Divide, SixteenBitQuotientsAreRoundedOnce) {
  std::uint16_t h[] = {0x3956, 0x4D56};
  cpu_divide(DataType::Float16, h, 2, 8195);
  EXPECT_EQ(h[0], 0x0555);
  EXPECT_EQ(h[1], 0x1955);
  std::uint16_t b[] = {0x0881, 0x0B01};
  cpu_divide(DataType::BFloat16, b, 2, 65791);
  EXPECT_EQ(b[0], 0x0081);
  EXPECT_EQ(b[1], 0x0301);
}

TEST(Divide, MatchesReferenceForEveryType) {
  std::mt19937_64 rng(99);
  for (const TypeInfo& t : kTypes) {
    for (int d : {1, 2, 3, 4, 7, 10, 1000, 65536, -1, -3, INT_MAX, INT_MIN}) {
      if (!t.is_float && !t.is_signed && d < 0) continue;
      if (t.is_float && (d == INT_MAX || d == INT_MIN)) continue;  // see cpu_reducer.cpp
      const auto vals = make_values(t, 1003, rng);
      auto buf = pack(vals, t.size);
      cpu_divide(t.type, buf.data(), vals.size(), d);
      for (std::size_t i = 0; i < vals.size(); ++i) {
        Expected want;
        if (!t.is_float) {
          const I128 x = decode_int(vals[i], t);
          want.bits = static_cast<std::uint64_t>(static_cast<U128>(x / d)) & mask_of(t.size);
        } else if (t.type == DataType::Float64) {
          double x;
          std::memcpy(&x, &vals[i], 8);
          want.nan = std::isnan(x);
          want.value = x / d;
        } else {
          const long double x = decode(vals[i], t);
          want.nan = std::isnan(x);
          want.value = want.nan ? 0 : round_to(x / d, t);
        }
        const std::string why = mismatch(want, get(buf.data(), i, t.size), t);
        ASSERT_TRUE(why.empty()) << t.name << " bits " << vals[i] << " / " << d << ": " << why;
      }
    }
  }
}

// ---- errors and the Reducer interface --------------------------------------------------

template <class F>
void expect_invalid_argument(F&& f, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << "no exception; expected one naming " << needle;
  } catch (const arlab::Error& e) {
    EXPECT_EQ(e.code(), arlab::Error::Code::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
  }
}

TEST(ReduceErrors, UnknownEnumValuesThrow) {
  float a[4] = {1, 2, 3, 4}, b[4] = {1, 2, 3, 4}, out[4];
  expect_invalid_argument(
      [&] { cpu_reduce(static_cast<ReduceOp>(42), DataType::Float32, a, b, out, 4); }, "42");
  expect_invalid_argument(
      [&] { cpu_reduce(ReduceOp::Sum, static_cast<DataType>(99), a, b, out, 4); }, "99");
  expect_invalid_argument(
      [&] { cpu_reduce(static_cast<ReduceOp>(-3), DataType::Int8, nullptr, nullptr, nullptr, 0); },
      "-3");
  expect_invalid_argument([&] { cpu_divide(static_cast<DataType>(10), a, 4, 2); }, "10");
  expect_invalid_argument([&] { cpu_divide(DataType::Float32, a, 4, 0); }, "divisor");
  expect_invalid_argument([&] { cpu_divide(DataType::UInt32, a, 4, -2); }, "-2");
  CpuReducer reducer;
  expect_invalid_argument(
      [&] { reducer.reduce(static_cast<ReduceOp>(5), DataType::Float32, a, b, out, 4); }, "5");
  EXPECT_EQ(a[0], 1.0f);  // nothing touched
}

TEST(ReduceErrors, ZeroElementsTouchNothing) {
  for (const TypeInfo& t : kTypes)
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max, ReduceOp::Avg})
      EXPECT_NO_THROW(cpu_reduce(op, t.type, nullptr, nullptr, nullptr, 0)) << t.name;
  EXPECT_NO_THROW(cpu_divide(DataType::Float16, nullptr, 0, 3));
}

TEST(CpuReducerTest, ImplementsTheInterface) {
  CpuReducer reducer;
  arlab::detail::Reducer& r = reducer;
  std::vector<double> a = {1, 2, 3}, b = {10, 20, 30}, out(3);
  auto ev = r.reduce(ReduceOp::Sum, DataType::Float64, a.data(), b.data(), out.data(), 3);
  EXPECT_TRUE(r.done(ev));
  EXPECT_EQ(out, (std::vector<double>{11, 22, 33}));
  ev = r.divide(DataType::Float64, out.data(), 3, 2);
  EXPECT_TRUE(r.done(ev));
  EXPECT_EQ(out, (std::vector<double>{5.5, 11, 16.5}));
  std::vector<unsigned char> src(1003), dst(1003, 0);
  for (std::size_t i = 0; i < src.size(); ++i) src[i] = static_cast<unsigned char>(i * 7);
  EXPECT_TRUE(r.done(r.copy(src.data(), dst.data(), src.size())));
  EXPECT_EQ(src, dst);
  EXPECT_TRUE(r.done(r.copy(dst.data(), dst.data(), dst.size())));  // onto itself
  EXPECT_TRUE(r.done(r.copy(nullptr, nullptr, 0)));
  EXPECT_EQ(src, dst);
}

// Whether a stored element is a NaN (false for integers).
template <class T>
bool element_is_nan(T v) {
  if constexpr (std::is_integral_v<T>) {
    return false;
  } else {
    const auto f = arlab::detail::Element<T>::load(v);
    return f != f;
  }
}

// The element functors (elementwise.hpp), which the CUDA kernels compile, against the CPU
// reducer, which on x86 takes its own vectorised paths (F16C for half, say): for every type
// and op, element by element on random bits (so NaNs, infinities and subnormals come too),
// the functor's result is cpu_reduce's, bit for bit. Only where both operands are NaNs may the
// payload differ (which one an add keeps depends on the instruction's operand order; IEEE 754
// leaves it open). So what the CPU tests show of the CPU reducer's arithmetic holds for the
// functors the GPU runs.
TEST(ElementFunctors, EqualTheCpuReducerForEveryTypeAndOp) {
  std::mt19937_64 rng(2026);
  for (DataType type : {DataType::Int8, DataType::UInt8, DataType::Int32, DataType::UInt32, DataType::Int64,
                        DataType::UInt64, DataType::Float16, DataType::BFloat16, DataType::Float32, DataType::Float64})
    for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max, ReduceOp::Avg}) {
      const std::size_t n = 4099, bytes = n * arlab::size_of(type);
      std::vector<unsigned char> a(bytes), b(bytes), want(bytes);
      for (auto* v : {&a, &b})
        for (auto& x : *v) x = static_cast<unsigned char>(rng());
      arlab::detail::cpu_reduce(op, type, a.data(), b.data(), want.data(), n);
      std::size_t both_nan = 0;
      arlab::detail::visit_type(type, "test", [&](auto tag) {
        using T = decltype(tag);
        arlab::detail::visit_op(op, "test", [&](auto functor) {
          for (std::size_t i = 0; i < n; ++i) {
            T x, y, w;
            std::memcpy(&x, a.data() + i * sizeof(T), sizeof(T));
            std::memcpy(&y, b.data() + i * sizeof(T), sizeof(T));
            std::memcpy(&w, want.data() + i * sizeof(T), sizeof(T));
            const T r = functor(x, y);
            if (element_is_nan(x) && element_is_nan(y)) {
              ++both_nan;
              ASSERT_TRUE(element_is_nan(r) && element_is_nan(w)) << to_string(type) << " " << to_string(op) << " " << i;
            } else {
              ASSERT_EQ(std::memcmp(&r, &w, sizeof(T)), 0) << to_string(type) << " " << to_string(op) << ": element " << i;
            }
          }
        });
      });
      if (type == DataType::Float16) EXPECT_GT(both_nan, 0u);  // the case came up (1 in 1024 pairs)
    }
}

}  // namespace

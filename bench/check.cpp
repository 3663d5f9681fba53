#include "check.hpp"

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <type_traits>

#include "reduce/dispatch.hpp"  // the library's element types, type switch and conversions (header-only)

namespace arlab::bench {

namespace {

using detail::BFloat16;
using detail::Half;

template <class T>
constexpr bool kIsFloating = std::is_floating_point_v<T> || std::is_same_v<T, Half> ||
                             std::is_same_v<T, BFloat16>;

// Significand bits (with the implicit one) of each floating type.
template <class T>
constexpr int kDigits = std::numeric_limits<T>::digits;
template <>
constexpr int kDigits<Half> = 11;
template <>
constexpr int kDigits<BFloat16> = 8;

template <class T>
double to_double(T v) {
  if constexpr (std::is_same_v<T, Half>) {
    return detail::half_bits_to_float(v.bits);
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return detail::bfloat16_bits_to_float(v.bits);
  } else {
    return static_cast<double>(v);
  }
}

// Only for floating T (integer results are built with integer arithmetic).
template <class T>
T from_double(double d) {
  if constexpr (std::is_same_v<T, Half>) {
    return Half{detail::float_to_half_bits(static_cast<float>(d))};
  } else if constexpr (std::is_same_v<T, BFloat16>) {
    return BFloat16{detail::float_to_bfloat16_bits(static_cast<float>(d))};
  } else {
    return static_cast<T>(d);
  }
}

template <class T>
std::string format(T v) {
  char buf[64];
  if constexpr (kIsFloating<T>) {
    std::snprintf(buf, sizeof buf, "%.17g", to_double(v));
  } else if constexpr (std::is_signed_v<T>) {
    std::snprintf(buf, sizeof buf, "%lld", static_cast<long long>(v));
  } else {
    std::snprintf(buf, sizeof buf, "%llu", static_cast<unsigned long long>(v));
  }
  return buf;
}

std::uint64_t mix(std::uint64_t x) {  // splitmix64's finaliser
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ULL;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// The value rank r holds at index i (only i mod kPeriod matters).
int element_value(ReduceOp op, int r, std::size_t i) {
  const std::uint64_t j = i % Checker::kPeriod;
  const int base = static_cast<int>(mix((static_cast<std::uint64_t>(r) << 32) + j + 0x9e3779b97f4a7c15ULL) % 9);
  if (op == ReduceOp::Prod) return base < 2 ? 2 : 1;
  return 1 + base;
}

template <class T>
T reduce_expected(ReduceOp op, int nranks, std::size_t j) {
  if constexpr (std::is_integral_v<T>) {
    using U = std::make_unsigned_t<T>;
    std::uint64_t sum = 0, prod = 1;  // wrap modulo 2^64, then to the type's width
    T lo = std::numeric_limits<T>::max(), hi = std::numeric_limits<T>::lowest();
    for (int r = 0; r < nranks; ++r) {
      const int v = element_value(op, r, j);
      sum += static_cast<std::uint64_t>(v);
      prod *= static_cast<std::uint64_t>(v);
      lo = std::min(lo, static_cast<T>(v));
      hi = std::max(hi, static_cast<T>(v));
    }
    const T wrapped_sum = static_cast<T>(static_cast<U>(sum));
    switch (op) {
      case ReduceOp::Sum: return wrapped_sum;
      case ReduceOp::Prod: return static_cast<T>(static_cast<U>(prod));
      case ReduceOp::Min: return lo;
      case ReduceOp::Max: return hi;
      case ReduceOp::Avg:
        if constexpr (std::is_signed_v<T>) {
          return static_cast<T>(static_cast<long long>(wrapped_sum) / nranks);  // truncates toward 0
        } else {
          return static_cast<T>(static_cast<unsigned long long>(wrapped_sum) / static_cast<unsigned>(nranks));
        }
    }
    return T{};
  } else {
    double sum = 0, prod = 1;  // exact: small integers and powers of two
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (int r = 0; r < nranks; ++r) {
      const double v = element_value(op, r, j);
      sum += v;
      prod *= v;
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    switch (op) {
      case ReduceOp::Sum: return from_double<T>(sum);
      case ReduceOp::Prod: return from_double<T>(prod);
      case ReduceOp::Min: return from_double<T>(lo);
      case ReduceOp::Max: return from_double<T>(hi);
      case ReduceOp::Avg: return from_double<T>(sum / nranks);
    }
    return T{};
  }
}

// How far a correct floating result may be from the expected one: zero while every partial
// sum is an exact integer (`largest`, the largest sum at any index, bounds them all); past that,
// a rounding per addition in any order; for avg one or two more roundings (the division, or a
// multiplication by 1/ranks).
template <class T>
double tolerance(ReduceOp op, int nranks, double largest, double expected) {
  if constexpr (!kIsFloating<T>) {
    return 0;
  } else {
    if (op != ReduceOp::Sum && op != ReduceOp::Avg) return 0;
    const double eps = std::ldexp(1.0, 1 - kDigits<T>);
    const double mag = std::abs(expected);
    double tol = 0;
    if (largest > std::ldexp(1.0, kDigits<T>)) tol += (nranks - 1) * eps * mag;  // inexact sums
    if (op == ReduceOp::Avg) tol += 2 * eps * mag;
    return tol;
  }
}

template <class T>
T make_value(int v) {
  if constexpr (kIsFloating<T>) {
    return from_double<T>(v);
  } else {
    return static_cast<T>(v);
  }
}

template <class T>
bool same(const T& a, const T& b) {
  if constexpr (std::is_same_v<T, Half> || std::is_same_v<T, BFloat16>) {
    return a.bits == b.bits;
  } else {
    return a == b;
  }
}

}  // namespace

Checker::Checker(DataType type, ReduceOp op, int rank, int nranks)
    : type_(type),
      pattern_(kPeriod * size_of(type)),
      expected_(kPeriod * size_of(type)),
      tolerance_(kPeriod, 0.0) {
  double largest = 0;
  for (std::size_t j = 0; j < kPeriod; ++j) {
    double sum = 0;
    for (int r = 0; r < nranks; ++r) sum += element_value(op, r, j);
    largest = std::max(largest, sum);
  }
  detail::visit_type(type, "arlab-bench checker", [&](auto tag) {
    using T = decltype(tag);
    static_assert(std::is_trivially_copyable_v<T>);
    for (std::size_t j = 0; j < kPeriod; ++j) {
      const T mine = make_value<T>(element_value(op, rank, j));
      const T want = reduce_expected<T>(op, nranks, j);
      std::memcpy(pattern_.data() + j * sizeof(T), &mine, sizeof(T));
      std::memcpy(expected_.data() + j * sizeof(T), &want, sizeof(T));
      if constexpr (kIsFloating<T>) tolerance_[j] = tolerance<T>(op, nranks, largest, to_double(want));
    }
  });
}

void Checker::fill(void* buf, std::size_t count) const {
  const std::size_t elem = size_of(type_);
  auto* out = static_cast<unsigned char*>(buf);
  for (std::size_t i = 0; i < count; i += kPeriod) {
    const std::size_t n = std::min(kPeriod, count - i);
    std::memcpy(out + i * elem, pattern_.data(), n * elem);
  }
}

void Checker::poison(void* buf, std::size_t count) const {
  const std::size_t elem = size_of(type_);
  std::vector<unsigned char> inverted(expected_);
  for (unsigned char& b : inverted) b = static_cast<unsigned char>(~b);
  auto* out = static_cast<unsigned char*>(buf);
  for (std::size_t i = 0; i < count; i += kPeriod) {
    const std::size_t n = std::min(kPeriod, count - i);
    std::memcpy(out + i * elem, inverted.data(), n * elem);
  }
}

std::size_t Checker::count_wrong(const void* buf, std::size_t count, Mismatch* first) const {
  return detail::visit_type(type_, "arlab-bench checker", [&](auto tag) -> std::size_t {
    using T = decltype(tag);
    T want[kPeriod];
    double want_d[kPeriod];
    std::memcpy(want, expected_.data(), sizeof want);
    for (std::size_t j = 0; j < kPeriod; ++j) want_d[j] = to_double(want[j]);
    const auto* got = static_cast<const unsigned char*>(buf);
    std::size_t wrong = 0;
    for (std::size_t i = 0, j = 0; i < count; ++i) {
      T v;
      std::memcpy(&v, got + i * sizeof(T), sizeof(T));
      bool ok = same(v, want[j]);
      if constexpr (kIsFloating<T>) {
        if (!ok && tolerance_[j] > 0) ok = std::abs(to_double(v) - want_d[j]) <= tolerance_[j];
      }
      if (!ok) {
        if (wrong == 0 && first) *first = Mismatch{i, format(v), format(want[j])};
        ++wrong;
      }
      if (++j == kPeriod) j = 0;
    }
    return wrong;
  });
}

std::size_t Checker::count_changed(const void* buf, std::size_t count) const {
  const std::size_t elem = size_of(type_);
  const auto* got = static_cast<const unsigned char*>(buf);
  std::size_t changed = 0;
  for (std::size_t i = 0; i < count; i += kPeriod) {
    const std::size_t n = std::min(kPeriod, count - i);
    if (std::memcmp(got + i * elem, pattern_.data(), n * elem) == 0) continue;
    for (std::size_t k = 0; k < n; ++k)
      changed += std::memcmp(got + (i + k) * elem, pattern_.data() + k * elem, elem) != 0;
  }
  return changed;
}

}  // namespace arlab::bench

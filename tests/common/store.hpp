// Test helper: write a small integer-valued double as one element of any arlab type.
#pragma once

#include <cstdint>
#include <cstring>

#include "arlab/arlab.hpp"
#include "reduce/half.hpp"

namespace arlab::test {

inline void store(DataType type, void* at, double v) {
  auto put = [at](auto x) { std::memcpy(at, &x, sizeof x); };
  switch (type) {
    case DataType::Int8: put(static_cast<std::int8_t>(v)); break;
    case DataType::UInt8: put(static_cast<std::uint8_t>(v)); break;
    case DataType::Int32: put(static_cast<std::int32_t>(v)); break;
    case DataType::UInt32: put(static_cast<std::uint32_t>(v)); break;
    case DataType::Int64: put(static_cast<std::int64_t>(v)); break;
    case DataType::UInt64: put(static_cast<std::uint64_t>(v)); break;
    case DataType::Float16: put(detail::float_to_half_bits(static_cast<float>(v))); break;
    case DataType::BFloat16: put(detail::float_to_bfloat16_bits(static_cast<float>(v))); break;
    case DataType::Float32: put(static_cast<float>(v)); break;
    case DataType::Float64: put(v); break;
  }
}

}  // namespace arlab::test

// From the API's run-time DataType and ReduceOp to the element types and functors of
// elementwise.hpp: one switch each, shared by the CPU reducer and the CUDA kernels' launcher.
#pragma once

#include <cstdint>
#include <string>

#include "arlab/arlab.hpp"
#include "reduce/elementwise.hpp"

namespace arlab::detail {

[[noreturn]] inline void throw_unknown(const char* where, const char* what, int value, const char* valid) {
  throw Error(Error::Code::InvalidArgument, std::string(where) + ": unknown " + what + " value " +
                                                std::to_string(value) + " (valid: " + valid + ")");
}

// Calls f(T{}) with the storage type of `type`.
template <class F>
decltype(auto) visit_type(DataType type, const char* where, F&& f) {
  switch (type) {
    case DataType::Int8: return f(std::int8_t{});
    case DataType::UInt8: return f(std::uint8_t{});
    case DataType::Int32: return f(std::int32_t{});
    case DataType::UInt32: return f(std::uint32_t{});
    case DataType::Int64: return f(std::int64_t{});
    case DataType::UInt64: return f(std::uint64_t{});
    case DataType::Float16: return f(Half{});
    case DataType::BFloat16: return f(BFloat16{});
    case DataType::Float32: return f(float{});
    case DataType::Float64: return f(double{});
  }
  throw_unknown(where, "DataType", static_cast<int>(type),
                "0..9: Int8, UInt8, Int32, UInt32, Int64, UInt64, Float16, BFloat16, Float32, Float64");
}

// Calls f(Op{}) with the functor of `op`; Avg reduces as Sum.
template <class F>
decltype(auto) visit_op(ReduceOp op, const char* where, F&& f) {
  switch (op) {
    case ReduceOp::Sum:
    case ReduceOp::Avg: return f(SumOp{});
    case ReduceOp::Prod: return f(ProdOp{});
    case ReduceOp::Min: return f(MinOp{});
    case ReduceOp::Max: return f(MaxOp{});
  }
  throw_unknown(where, "ReduceOp", static_cast<int>(op), "0..4: Sum, Prod, Min, Max, Avg");
}

}  // namespace arlab::detail

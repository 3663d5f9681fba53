// Names, sizes and parsing of the public enums.
#include <algorithm>
#include <array>
#include <utility>

#include "algorithms/registry.hpp"
#include "arlab/arlab.hpp"

namespace arlab {

Error::Error(Code code, const std::string& message) : std::runtime_error(message), code_(code) {}

const char* version() { return ARLAB_VERSION; }

namespace {

template <typename E, std::size_t N>
using Names = std::array<std::pair<E, const char*>, N>;

constexpr Names<DataType, 10> kTypes = {{{DataType::Int8, "int8"},
                                         {DataType::UInt8, "uint8"},
                                         {DataType::Int32, "int32"},
                                         {DataType::UInt32, "uint32"},
                                         {DataType::Int64, "int64"},
                                         {DataType::UInt64, "uint64"},
                                         {DataType::Float16, "half"},
                                         {DataType::BFloat16, "bfloat16"},
                                         {DataType::Float32, "float"},
                                         {DataType::Float64, "double"}}};
constexpr Names<DataType, 6> kTypeAliases = {{{DataType::Float16, "float16"},
                                              {DataType::Float16, "fp16"},
                                              {DataType::BFloat16, "bf16"},
                                              {DataType::Float32, "float32"},
                                              {DataType::Float64, "float64"},
                                              {DataType::Int32, "int"}}};
constexpr Names<ReduceOp, 5> kOps = {{{ReduceOp::Sum, "sum"},
                                      {ReduceOp::Prod, "prod"},
                                      {ReduceOp::Min, "min"},
                                      {ReduceOp::Max, "max"},
                                      {ReduceOp::Avg, "avg"}}};
constexpr Names<Algorithm, 8> kAlgos = {{{Algorithm::Auto, "auto"},
                                         {Algorithm::Ring, "ring"},
                                         {Algorithm::Tree, "tree"},
                                         {Algorithm::RecursiveDoubling, "recursive-doubling"},
                                         {Algorithm::Rabenseifner, "rabenseifner"},
                                         {Algorithm::Hierarchical, "hierarchical"},
                                         {Algorithm::Mpi, "mpi"},
                                         {Algorithm::Nccl, "nccl"}}};
constexpr Names<Algorithm, 2> kAlgoAliases = {{{Algorithm::RecursiveDoubling, "rd"},
                                               {Algorithm::Rabenseifner, "rab"}}};
constexpr Names<TransportKind, 3> kTransports = {{{TransportKind::Mpi, "mpi"},
                                                  {TransportKind::Ucx, "ucx"},
                                                  {TransportKind::UcxRma, "ucx-rma"}}};
constexpr Names<TransportKind, 0> kNoAliases = {};

template <typename E, std::size_t N>
std::string name_of(const Names<E, N>& names, E value, const char* what) {
  for (const auto& [v, name] : names)
    if (v == value) return name;
  return "<invalid " + std::string(what) + " " + std::to_string(static_cast<int>(value)) + ">";
}

template <typename E, std::size_t N, std::size_t M>
E parse(const Names<E, N>& names, const Names<E, M>& aliases, const std::string& text,
        const char* what) {
  std::string lower = text;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  for (const auto& [v, name] : names)
    if (lower == name) return v;
  for (const auto& [v, name] : aliases)
    if (lower == name) return v;
  std::string valid;
  for (const auto& [v, name] : names) valid += (valid.empty() ? "" : ", ") + std::string(name);
  for (const auto& [v, name] : aliases) valid += ", " + std::string(name);
  throw Error(Error::Code::InvalidArgument,
              "unknown " + std::string(what) + " '" + text + "'; valid: " + valid);
}

}  // namespace

std::size_t size_of(DataType t) {
  switch (t) {
    case DataType::Int8: case DataType::UInt8: return 1;
    case DataType::Float16: case DataType::BFloat16: return 2;
    case DataType::Int32: case DataType::UInt32: case DataType::Float32: return 4;
    case DataType::Int64: case DataType::UInt64: case DataType::Float64: return 8;
  }
  throw Error(Error::Code::InvalidArgument,
              "unknown data type value " + std::to_string(static_cast<int>(t)));
}

std::string to_string(DataType v) { return name_of(kTypes, v, "data type"); }
std::string to_string(ReduceOp v) { return name_of(kOps, v, "reduce op"); }
std::string to_string(Algorithm v) { return name_of(kAlgos, v, "algorithm"); }
std::string to_string(TransportKind v) { return name_of(kTransports, v, "transport"); }

DataType datatype_from_string(const std::string& s) { return parse(kTypes, kTypeAliases, s, "data type"); }
ReduceOp reduce_op_from_string(const std::string& s) {
  return parse(kOps, Names<ReduceOp, 0>{}, s, "reduce op");
}
Algorithm algorithm_from_string(const std::string& s) { return parse(kAlgos, kAlgoAliases, s, "algorithm"); }
TransportKind transport_from_string(const std::string& s) {
  return parse(kTransports, kNoAliases, s, "transport");
}

const std::vector<Algorithm>& schedule_algorithms() {
  static const std::vector<Algorithm> all = [] {
    std::vector<Algorithm> v;
    for (const auto& info : detail::schedule_algorithm_table()) v.push_back(info.id);
    return v;
  }();
  return all;
}

}  // namespace arlab

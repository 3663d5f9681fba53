// arlab-bench command line: the flags (nccl-tests style), their defaults, and the size sweep.
#pragma once

#include <arlab/arlab.hpp>

#include <cstddef>
#include <string>
#include <vector>

namespace arlab::bench {

struct BenchOptions {
  std::size_t min_bytes = 8;                  // -b
  std::size_t max_bytes = std::size_t{64} << 20;  // -e
  std::size_t factor = 2;                     // -f
  std::vector<Algorithm> algorithms;          // -a, "all" expanded, duplicates removed
  DataType dtype = DataType::Float32;         // -d
  ReduceOp op = ReduceOp::Sum;                // -o
  int iters = 20;                             // -n
  int warmup = 5;                             // -w
  bool check = true;                          // -c
  std::vector<TransportKind> transports{TransportKind::Mpi};  // -t
  bool inplace = false;                       // -z
  std::string json_path;                      // --json
};

struct ParseResult {
  enum class Status { Run, Help, Error };
  Status status = Status::Run;
  BenchOptions options;
  std::string message;  // for Error: one line, without the trailing newline
};

// Pure: same argv gives the same result on every rank, so no rank needs to talk to decide.
ParseResult parse_options(int argc, const char* const* argv);

// The --help text, every flag with its default.
std::string usage();

// The message sizes in bytes: min, min*f, ... <= max, each rounded down to a multiple of the
// element size; sizes that round to zero elements and repeats are dropped.
std::vector<std::size_t> sweep_sizes(const BenchOptions&);

// "all" for -a: the schedule algorithms, then the MPI_Allreduce baseline, then Auto.
std::vector<Algorithm> all_algorithms();

}  // namespace arlab::bench

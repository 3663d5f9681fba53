// arlab-bench command line: the flags (nccl-tests style), their defaults, and the size sweep.
#pragma once

#include <arlab/arlab.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace arlab::bench {

struct BenchOptions {
  std::size_t min_bytes = 8;                      // -b
  std::size_t max_bytes = std::size_t{64} << 20;  // -e
  std::size_t factor = 2;                         // -f; 0 when -i gives a fixed step
  std::size_t step = 0;                           // -i; 0 when -f multiplies
  std::vector<Algorithm> algorithms;              // -a, "all" expanded, duplicates removed
  bool all_algorithms = false;                    // -a all: drop the ones this build lacks quietly
  std::vector<DataType> dtypes{DataType::Float32};  // -d
  std::vector<ReduceOp> ops{ReduceOp::Sum};         // -o
  int iters = 20;                                 // -n: timed calls per section
  bool iters_given = false;                       // -n given: exactly that many; else at least 20 and
                                                  // enough for kFillMs, at most kMaxAutoIters
  int warmup = 5;                                 // -w
  int rounds = 1;                                 // --rounds
  bool fresh_input = true;                        // off with --reuse-input
  bool calibrate = false;                         // --calibrate
  bool device = false;                            // -D: device buffers
  bool check = true;                              // -c
  std::vector<TransportKind> transports{TransportKind::Mpi};  // -t
  bool out_of_place = true;                       // -z 0: both sections; -z 1: in place only
  bool in_place = true;
  int ranks_per_node = 0;                         // --ranks-per-node; 0: not given
  std::optional<std::string> topology;            // --topology
  std::string json_path, csv_path, plot_path;     // --json, --csv, --plot ("" = none)
  bool quiet = false;                             // -q
  bool progress = false;                          // --progress
  std::string gradients;                          // --gradients MODEL ("" = the sweep)
};

struct ParseResult {
  enum class Status { Run, Help, Error };
  Status status = Status::Run;
  BenchOptions options;
  std::string message;  // for Error: one line, without the trailing newline
};

// Same argv, same result on every rank, so no rank needs to talk to decide. (-t all asks
// transport_available(), which is fixed by the build.)
ParseResult parse_options(int argc, const char* const* argv);

// The --help text, every flag with its default.
std::string usage();

// The message sizes in bytes for elements of `elem_size` bytes: min, then min*f (or min+i)
// while <= max, each rounded down to a multiple of the element size; sizes that round to zero
// elements and repeats are dropped.
std::vector<std::size_t> sweep_sizes(const BenchOptions&, std::size_t elem_size);

// The most sizes one sweep may have (-i 8 from 8 B to 64 MiB would be 8 million).
constexpr std::size_t kMaxSizes = 10000;

// "all" for -a: the schedule algorithms (hierarchical among them), the mpi and nccl baselines, then auto.
// The bench drops the ones this build lacks before it starts.
std::vector<Algorithm> all_algorithms();

}  // namespace arlab::bench

// arlab-model command line: the flags, their defaults, --help, and the list of sizes.
#pragma once

#include "cli.hpp"

#include <arlab/arlab.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace arlab::tool {

// The most ranks arlab-model walks (--ranks, or a file's nodes x ranks_per_node), and the
// smallest chunk (--chunk, unless 0).
constexpr int kMaxModelRanks = 4096;
constexpr std::size_t kMinChunk = 1024;

struct ModelOptions {
  std::string topology;                               // --topology (required)
  int ranks = 0;                                      // --ranks; 0: nodes x ranks_per_node
  std::size_t min_bytes = 8;                          // --sizes MIN:MAX[:FACTOR]
  std::size_t max_bytes = std::size_t{1} << 30;
  std::size_t factor = 4;
  std::vector<Algorithm> algorithms;                  // --algorithms; empty: every schedule algorithm
  bool algorithms_given = false;                      // --algorithms given (else hierarchical only with several nodes)
  std::size_t chunk_bytes = std::size_t{256} << 10;   // --chunk, as ARLAB_CHUNK_BYTES
  std::size_t segment_bytes = std::size_t{1} << 20;   // --segment, as ARLAB_SEGMENT_BYTES
  bool explain = false;                               // --explain
  std::optional<std::string> json;                    // --json FILE, or "-" for stdout
};

struct ParseResult {
  enum class Status { Run, Help, Error };
  Status status = Status::Run;
  ModelOptions options;
  std::string message;  // for Error: one line naming the flag and what it accepts
};

ParseResult parse_options(int argc, const char* const* argv);

// The --help text: every flag with its default.
std::string usage();

// The message sizes in bytes: MIN, MIN*FACTOR, ... <= MAX, rounded down to whole floats;
// sizes of zero elements and repeats are dropped.
std::vector<std::size_t> sweep_sizes(const ModelOptions&);

// 8 -> "8 B", 4096 -> "4 KiB", 38304 -> "37.4 KiB", 1 << 30 -> "1 GiB".
using cli::human_bytes;

}  // namespace arlab::tool

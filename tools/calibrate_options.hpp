// arlab-calibrate command line: the flags, their defaults, --help, and the list of sizes.
#pragma once

#include <arlab/arlab.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace arlab::tool {

struct CalibrateOptions {
  TransportKind transport = TransportKind::Mpi;  // -t, --transport
  std::string transport_name = "mpi";
  std::optional<std::string> output;             // -o, --output: the topology file to write
  int ranks_per_node = 0;                        // --ranks-per-node; 0: every rank on one node
  std::size_t min_bytes = 8;                     // --sizes MIN:MAX[:FACTOR]
  std::size_t max_bytes = std::size_t{64} << 20;
  std::size_t factor = 4;
  std::string name;                              // --name; "": the host name
  std::optional<std::size_t> cache_bytes;        // --cache-bytes; none: the node's cache from sysfs
  bool quick = false;                            // --quick: few sizes, short samples
  bool all_pairs = false;                        // --all-pairs: every rank exchanges with its pair at once
  double sample_ms = 20;                         // target length of one timed sample
  int samples = 5;                               // timed samples per size (the median is kept)
};

struct CalibrateParse {
  enum class Status { Run, Help, Error };
  Status status = Status::Run;
  CalibrateOptions options;
  std::string message;  // for Error: one line naming the flag and what it accepts
};

CalibrateParse parse_calibrate_options(int argc, const char* const* argv);

// The --help text: every flag with its default.
std::string calibrate_usage();

// MIN, MIN*FACTOR, ... <= MAX; with `multiple` > 1, rounded down to multiples of it, zeros and
// repeats dropped.
std::vector<std::size_t> calibrate_sizes(const CalibrateOptions&, std::size_t multiple = 1);

// 8 -> "8 B", 4096 -> "4 KiB", 1 << 26 -> "64 MiB".
std::string size_text(double bytes);

}  // namespace arlab::tool

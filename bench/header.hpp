// arlab-bench header: what ran, where, how it was timed, and the exact command line.
#pragma once

#include <cstdio>
#include <string>
#include <vector>

#include "results.hpp"

namespace arlab::bench {

struct HeaderExtras {
  std::string sizes;                 // "8B to 64MiB, factor 4 (13 sizes)"
  std::string sections;              // "out-of-place and in-place (-z 0)"
  std::string model_note;            // what --ranks-per-node did, or ""
  std::string settings;              // "chunk 256KiB, timeout 300 s"
  std::vector<std::string> notes;    // skipped transports, algorithms this build lacks, ...
  double memcpy_GBps = 0;            // 0: not measured
};

void print_header(std::FILE*, const RunInfo&, const HeaderExtras&);

// The command line, each word shell-quoted where it needs it.
std::string quote_command(int argc, const char* const* argv);

}  // namespace arlab::bench

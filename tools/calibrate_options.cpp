#include "calibrate_options.hpp"

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <sstream>
#include <string_view>

#include "cli.hpp"
#include "core/environment.hpp"

namespace arlab::tool {
namespace {


constexpr cli::Flag kFlags[] = {
    {"--transport", "-t", "NAME", "transport to measure: mpi, ucx or ucx-rma", "mpi"},
    {"--output", "-o", "FILE", "write the fitted machine to FILE as a topology file (docs/model.md)",
     "none: print only"},
    {"--ranks-per-node", nullptr, "K",
     "consecutive ranks form nodes of K ranks; measures the inter-node link when there are several nodes",
     "every rank on one node"},
    {"--sizes", nullptr, "MIN:MAX[:FACTOR]",
     "message and buffer sizes in bytes from MIN to MAX, times FACTOR (integer >= 2) per step; K, M, G "
     "suffixes are powers of 1024",
     "8:64M:4; with --quick 8:256K:8"},
    {"--name", nullptr, "NAME", "the machine's name in the topology file", "the host name"},
    {"--cache-bytes", nullptr, "SIZE",
     "a node's cache in bytes (K, M, G suffixes): sizes whose working set reaches it are fitted as the "
     "beyond-cache regime; 0: one regime",
     "the last-level cache from /sys/devices/system/cpu"},
    {"--all-pairs", nullptr, nullptr,
     "measure each link with every rank in a pair at once (r and r+1 within a node, r and r+K across), as "
     "an all-reduce's steps run when there are more ranks than two; the right calibration for more ranks "
     "than cores",
     "off: ranks 0 and 1 (or 0 and K) only, the others idle"},
    {"--quick", nullptr, nullptr, "short run for tests: 1 ms samples, 3 per size, sizes 8:256K:8",
     "off: 20 ms samples, 5 per size"},
    {"--help", "-h", nullptr, "print this help and exit", nullptr},
};

using cli::BadArgument;
using cli::bad_value;
using detail::parse_size;

void parse_sizes(CalibrateOptions& o, std::string_view flag, const std::string& v) {
  constexpr const char* kExpected =
      "MIN:MAX[:FACTOR] with 1 <= MIN < MAX <= 1G, sizes in bytes (K, M, G suffixes) and an integer FACTOR "
      ">= 2, e.g. 8:64M:4";
  const cli::SizeRange r = cli::parse_range(flag, v, 4, kExpected);
  if (r.min_bytes >= r.max_bytes || r.max_bytes > (std::size_t{1} << 30)) bad_value(flag, v, kExpected);
  if (r.min_bytes * r.factor > r.max_bytes)
    bad_value(flag, v, std::string(kExpected) + " (at least two sizes: MIN x FACTOR <= MAX)");
  o.min_bytes = r.min_bytes;
  o.max_bytes = r.max_bytes;
  o.factor = r.factor;
}

void apply(CalibrateOptions& o, const cli::Flag& f, const std::string& v, bool& sizes_given) {
  const std::string_view flag = f.name;
  if (flag == "--transport") {
    if (v == "mpi") o.transport = TransportKind::Mpi;
    else if (v == "ucx") o.transport = TransportKind::Ucx;
    else if (v == "ucx-rma") o.transport = TransportKind::UcxRma;
    else bad_value(flag, v, "mpi, ucx or ucx-rma");
    o.transport_name = v;
  } else if (flag == "--output") {
    if (v.empty()) bad_value(flag, v, "a file name");
    o.output = v;
  } else if (flag == "--ranks-per-node") {
    int n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc{} || end != v.data() + v.size() || n < 1 || n > (1 << 24))
      bad_value(flag, v, "an integer from 1 to 16777216");
    o.ranks_per_node = n;
  } else if (flag == "--sizes") {
    parse_sizes(o, flag, v);
    sizes_given = true;
  } else if (flag == "--name") {
    if (v.empty() || v.find_first_of("\n\"\\") != std::string::npos)
      bad_value(flag, v, "a non-empty name without newlines, quotes or backslashes");
    o.name = v;
  } else if (flag == "--cache-bytes") {
    const auto n = parse_size(v);
    if (!n) bad_value(flag, v, "a size in bytes (K, M, G suffixes), 0 for one regime");
    o.cache_bytes = *n;
  } else if (flag == "--quick") {
    o.quick = true;
  } else if (flag == "--all-pairs") {
    o.all_pairs = true;
  }
}


}  // namespace

CalibrateParse parse_calibrate_options(int argc, const char* const* argv) {
  CalibrateParse r;
  bool sizes_given = false;
  try {
    const bool run = cli::walk(argc, argv, kFlags,
                               [&](const cli::Flag& f, const std::string& v) { apply(r.options, f, v, sizes_given); });
    if (!run) {
      r.status = CalibrateParse::Status::Help;
      return r;
    }
    if (r.options.quick) {
      r.options.sample_ms = 1;
      r.options.samples = 3;
      if (!sizes_given) {
        r.options.max_bytes = std::size_t{256} << 10;
        r.options.factor = 8;
      }
    }
  } catch (const BadArgument& e) {
    r.status = CalibrateParse::Status::Error;
    r.message = e.message;
  }
  return r;
}

std::string calibrate_usage() {
  std::string out =
      "usage: mpirun -np P arlab-calibrate [-t mpi|ucx|ucx-rma] [-o FILE] [--ranks-per-node K]\n"
      "                                    [--sizes MIN:MAX[:FACTOR]] [--name NAME] [--cache-bytes SIZE]\n"
      "                                    [--all-pairs] [--quick]\n"
      "\n"
      "Measures, through arlab's own executor and transport, the latency and bandwidth of each link\n"
      "class present (ranks 0 and 1 within a node; ranks 0 and K across nodes): ping-pong, exchange\n"
      "(both directions at once, as every all-reduce step runs) and 256 KiB streams; and, on every\n"
      "rank at once, the CPU reducer's float sum and local copy. Fits alpha + bytes x beta to the\n"
      "exchange times and bytes x gamma to the reduction times by least squares (relative error,\n"
      "every size alike) in two regimes: sizes whose working set fits in the node's cache, and a\n"
      "second bandwidth beyond it. Prints each fit with its residuals, and with -o writes a topology\n"
      "file that arlab-model and ARLAB_TOPOLOGY accept. Never fits to all-reduce times.\n"
      "\n";
  out += cli::flag_table(kFlags, 30);
  out += "\nExit status: 0 on success, 1 when a measurement or the writing of the output file fails, 2 on a bad\n"
         "flag or an output file that cannot be written (checked before measuring).\n";
  return out;
}

}  // namespace arlab::tool

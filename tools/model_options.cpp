#include "model_options.hpp"

#include <algorithm>
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

constexpr std::size_t kElem = sizeof(float);


constexpr cli::Flag kFlags[] = {
    {"--topology", nullptr, "FILE", "topology file (YAML) describing the machine, see docs/model.md; required", nullptr},
    {"--ranks", nullptr, "P",
     "number of ranks, 1..4096 (the walk's time grows as P^2: 1024 ranks about 1 s a size, 4096 about 20 s)",
     "nodes x ranks_per_node from the file"},
    {"--sizes", nullptr, "MIN:MAX[:FACTOR]",
     "message sizes in bytes from MIN to MAX, times FACTOR (integer >= 2) per step; K, M, G "
     "suffixes are powers of 1024; float elements",
     "8:1G:4"},
    {"--algorithms", nullptr, "LIST",
     "comma list of ring, tree, recursive-doubling (rd), rabenseifner (rab), hierarchical, or all "
     "(hierarchical by default only where the file has several nodes)",
     "all"},
    {"--chunk", nullptr, "SIZE",
     "pipelining unit of ring and tree in bytes, as ARLAB_CHUNK_BYTES; 0: none, else at least 1K", "256K"},
    {"--segment", nullptr, "SIZE",
     "calls of 16 or more segments of SIZE bytes run one segment after another, as ARLAB_SEGMENT_BYTES "
     "(not where the topology's links are not copied by CPUs); 0: never",
     "1M"},
    {"--explain", nullptr, nullptr, "print each algorithm's latency/bandwidth/reduction breakdown and which term decides",
     "off"},
    {"--json", nullptr, "FILE|-", "write one record per size and algorithm to FILE; '-': to stdout, instead of the table",
     "none"},
    {"--help", "-h", nullptr, "print this help and exit", nullptr},
};

using cli::BadArgument;
using cli::bad_value;
using detail::parse_size;

void parse_sizes(ModelOptions& o, std::string_view flag, const std::string& v) {
  constexpr const char* kExpected =
      "MIN:MAX[:FACTOR] with MIN <= MAX, sizes in bytes (K, M, G suffixes) and an integer FACTOR >= 2, "
      "e.g. 8:1G:4";
  const cli::SizeRange r = cli::parse_range(flag, v, o.factor, kExpected);
  o.min_bytes = r.min_bytes;
  o.max_bytes = r.max_bytes;
  o.factor = r.factor;
}

void parse_algorithms(ModelOptions& o, std::string_view flag, const std::string& v) {
  constexpr const char* kExpected =
      "a comma list of ring, tree, recursive-doubling (rd), rabenseifner (rab), hierarchical, or all";
  o.algorithms.clear();
  std::istringstream in(v);
  std::string name;
  bool any = false;
  while (std::getline(in, name, ',')) {
    any = true;
    std::vector<Algorithm> add;
    if (name == "all") {
      add = schedule_algorithms();
    } else {
      try {
        add.push_back(algorithm_from_string(name));
      } catch (const Error&) {
        bad_value(flag, v, kExpected);
      }
      const auto& valid = schedule_algorithms();
      if (std::find(valid.begin(), valid.end(), add.back()) == valid.end()) bad_value(flag, v, kExpected);
    }
    for (Algorithm a : add)
      if (std::find(o.algorithms.begin(), o.algorithms.end(), a) == o.algorithms.end()) o.algorithms.push_back(a);
  }
  if (!any || v.back() == ',') bad_value(flag, v, kExpected);
}

void apply(ModelOptions& o, const cli::Flag& f, const std::string& v) {
  const std::string_view flag = f.name;
  if (flag == "--topology") {
    if (v.empty()) bad_value(flag, v, "a file name");
    o.topology = v;
  } else if (flag == "--ranks") {
    int n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc{} || end != v.data() + v.size() || n < 1 || n > kMaxModelRanks)
      bad_value(flag, v, "an integer from 1 to " + std::to_string(kMaxModelRanks));
    o.ranks = n;
  } else if (flag == "--sizes") {
    parse_sizes(o, flag, v);
  } else if (flag == "--algorithms") {
    parse_algorithms(o, flag, v);
    o.algorithms_given = true;
  } else if (flag == "--chunk") {
    const auto n = parse_size(v);
    // Smaller chunks cut a large call into millions of steps, more than the walk's memory holds.
    if (!n || (*n > 0 && *n < kMinChunk)) bad_value(flag, v, "0, or a size in bytes of at least 1K, such as 64K or 1M");
    o.chunk_bytes = *n;
  } else if (flag == "--segment") {
    const auto n = parse_size(v);
    if (!n) bad_value(flag, v, "a size in bytes such as 0, 512K or 1M");
    o.segment_bytes = *n;
  } else if (flag == "--explain") {
    o.explain = true;
  } else if (flag == "--json") {
    if (v.empty()) bad_value(flag, v, "a file name, or - for stdout");
    o.json = v;
  }
}


}  // namespace

ParseResult parse_options(int argc, const char* const* argv) {
  ParseResult r;
  try {
    const bool run = cli::walk(argc, argv, kFlags, [&](const cli::Flag& f, const std::string& v) { apply(r.options, f, v); });
    if (!run) {
      r.status = ParseResult::Status::Help;
      return r;
    }
    if (r.options.topology.empty()) throw BadArgument{"--topology FILE is required; see --help"};
    if (r.options.algorithms.empty()) r.options.algorithms = schedule_algorithms();
    if (sweep_sizes(r.options).empty())
      throw BadArgument{"--sizes " + std::to_string(r.options.min_bytes) + ":" + std::to_string(r.options.max_bytes) +
                        " holds no whole float (4 bytes)"};
  } catch (const BadArgument& e) {
    r.status = ParseResult::Status::Error;
    r.message = e.message;
  }
  return r;
}

std::string usage() {
  std::string out =
      "usage: arlab-model --topology FILE [--ranks P] [--sizes MIN:MAX[:FACTOR]] [--algorithms LIST]\n"
      "                   [--chunk SIZE] [--segment SIZE] [--explain] [--json FILE|-]\n"
      "\n"
      "Predicts, by walking each algorithm's schedule on the machine a topology file describes, the\n"
      "time and bus bandwidth (bytes / time x 2(p-1)/p) of an all-reduce of float elements, marks\n"
      "the fastest algorithm at each size, and lists the sizes where the fastest one changes.\n"
      "Runs as a plain program; no MPI launch.\n"
      "\n";
  out += cli::flag_table(kFlags, 26);
  out += "\nPredictions are of in-place calls (send == recv).\n"
         "Exit status: 0 on success, 1 when the topology file cannot be used, 2 on a bad flag or a --json\n"
         "file that cannot be written.\n";
  return out;
}

std::vector<std::size_t> sweep_sizes(const ModelOptions& o) {
  return cli::geometric_sizes({o.min_bytes, o.max_bytes, o.factor}, kElem);
}


}  // namespace arlab::tool

#include "model_options.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <sstream>
#include <string_view>

#include "core/environment.hpp"

namespace arlab::tool {
namespace {

constexpr int kMaxRanks = 65536;
constexpr std::size_t kElem = sizeof(float);

struct Flag {
  const char* name;
  const char* metavar;  // nullptr: takes no value
  const char* help;
  const char* default_text;
};

constexpr Flag kFlags[] = {
    {"--topology", "FILE", "topology file (YAML) describing the machine, see docs/model.md; required", nullptr},
    {"--ranks", "P", "number of ranks, 1..65536", "nodes x ranks_per_node from the file"},
    {"--sizes", "MIN:MAX[:FACTOR]",
     "message sizes in bytes from MIN to MAX, times FACTOR (integer >= 2) per step; K, M, G "
     "suffixes are powers of 1024; float elements",
     "8:1G:4"},
    {"--algorithms", "LIST",
     "comma list of ring, tree, recursive-doubling (rd), rabenseifner (rab), or all", "all"},
    {"--chunk", "SIZE", "pipelining unit of ring and tree in bytes, as ARLAB_CHUNK_BYTES; 0: none", "256K"},
    {"--explain", nullptr, "print each algorithm's latency/bandwidth/reduction breakdown and which term decides",
     "off"},
    {"--json", "FILE|-", "write one record per size and algorithm to FILE; '-': to stdout, instead of the table",
     "none"},
    {"--help", nullptr, "print this help and exit", nullptr},
};

struct BadArgument {
  std::string message;
};

[[noreturn]] void bad_value(std::string_view flag, std::string_view value, std::string_view expected) {
  throw BadArgument{"bad value '" + std::string(value) + "' for " + std::string(flag) + ": expected " +
                    std::string(expected)};
}

using detail::parse_size;  // "8", "64K", "1M", "2G" (powers of 1024, either case)

void parse_sizes(ModelOptions& o, std::string_view flag, const std::string& v) {
  constexpr const char* kExpected =
      "MIN:MAX[:FACTOR] with MIN <= MAX, sizes in bytes (K, M, G suffixes) and an integer FACTOR >= 2, "
      "e.g. 8:1G:4";
  std::vector<std::string> parts;
  std::istringstream in(v);
  for (std::string part; std::getline(in, part, ':');) parts.push_back(part);
  if (parts.size() < 2 || parts.size() > 3 || v.back() == ':') bad_value(flag, v, kExpected);
  const auto lo = parse_size(parts[0]), hi = parse_size(parts[1]);
  if (!lo || !hi || *lo > *hi || *lo == 0) bad_value(flag, v, kExpected);
  std::size_t factor = o.factor;
  if (parts.size() == 3) {
    unsigned long long f = 0;
    auto [end, ec] = std::from_chars(parts[2].data(), parts[2].data() + parts[2].size(), f);
    if (ec != std::errc{} || end != parts[2].data() + parts[2].size() || f < 2 || f > (1u << 20))
      bad_value(flag, v, kExpected);
    factor = static_cast<std::size_t>(f);
  }
  o.min_bytes = *lo;
  o.max_bytes = *hi;
  o.factor = factor;
}

void parse_algorithms(ModelOptions& o, std::string_view flag, const std::string& v) {
  constexpr const char* kExpected = "a comma list of ring, tree, recursive-doubling (rd), rabenseifner (rab), or all";
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

void apply(ModelOptions& o, const Flag& f, const std::string& v) {
  const std::string_view flag = f.name;
  if (flag == "--topology") {
    if (v.empty()) bad_value(flag, v, "a file name");
    o.topology = v;
  } else if (flag == "--ranks") {
    int n = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc{} || end != v.data() + v.size() || n < 1 || n > kMaxRanks)
      bad_value(flag, v, "an integer from 1 to " + std::to_string(kMaxRanks));
    o.ranks = n;
  } else if (flag == "--sizes") {
    parse_sizes(o, flag, v);
  } else if (flag == "--algorithms") {
    parse_algorithms(o, flag, v);
  } else if (flag == "--chunk") {
    const auto n = parse_size(v);
    if (!n) bad_value(flag, v, "a size in bytes such as 0, 64K or 1M");
    o.chunk_bytes = *n;
  } else if (flag == "--explain") {
    o.explain = true;
  } else if (flag == "--json") {
    if (v.empty()) bad_value(flag, v, "a file name, or - for stdout");
    o.json = v;
  }
}

std::string flag_names() {
  std::string out;
  for (const Flag& f : kFlags) out += (out.empty() ? "" : ", ") + std::string(f.name);
  return out;
}

}  // namespace

ParseResult parse_options(int argc, const char* const* argv) {
  ParseResult r;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string arg = argv[i];
      std::string value;
      bool inline_value = false;
      if (const auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg.resize(eq);
        inline_value = true;
      }
      if (arg == "-h") arg = "--help";
      const Flag* flag = nullptr;
      for (const Flag& f : kFlags)
        if (arg == f.name) flag = &f;
      if (!flag) throw BadArgument{"unknown argument '" + std::string(argv[i]) + "'; flags: " + flag_names()};
      if (arg == "--help") {
        r.status = ParseResult::Status::Help;
        return r;
      }
      if (!flag->metavar) {
        if (inline_value) throw BadArgument{arg + " takes no value"};
        apply(r.options, *flag, "");
        continue;
      }
      if (!inline_value) {
        if (i + 1 >= argc)
          throw BadArgument{arg + " needs a value: " + flag->metavar + " (" + flag->help + ")"};
        value = argv[++i];
      }
      apply(r.options, *flag, value);
    }
    if (r.options.topology.empty()) throw BadArgument{"--topology FILE is required; see --help"};
    if (r.options.algorithms.empty()) r.options.algorithms = schedule_algorithms();
  } catch (const BadArgument& e) {
    r.status = ParseResult::Status::Error;
    r.message = e.message;
  }
  return r;
}

std::string usage() {
  std::string out =
      "usage: arlab-model --topology FILE [--ranks P] [--sizes MIN:MAX[:FACTOR]] [--algorithms LIST]\n"
      "                   [--chunk SIZE] [--explain] [--json FILE|-]\n"
      "\n"
      "Predicts, by walking each algorithm's schedule on the machine a topology file describes, the\n"
      "time and bus bandwidth (bytes / time x 2(p-1)/p) of an all-reduce of float elements, marks\n"
      "the fastest algorithm at each size, and lists the sizes where the fastest one changes.\n"
      "Runs as a plain program; no MPI launch.\n"
      "\n";
  for (const Flag& f : kFlags) {
    std::string head = "  ";
    head.append(f.name);
    if (f.metavar) head.append(" ").append(f.metavar);
    if (head.size() < 26) head.resize(26, ' ');
    else head.append("\n").append(26, ' ');
    out.append(head).append(f.help);
    if (f.default_text) out += " (default: " + std::string(f.default_text) + ")";
    out += "\n";
  }
  out += "\nExit status: 0 on success, 1 when the topology file cannot be used, 2 on a bad flag.\n";
  return out;
}

std::vector<std::size_t> sweep_sizes(const ModelOptions& o) {
  std::vector<std::size_t> out;
  for (std::size_t b = o.min_bytes; b <= o.max_bytes; b *= o.factor) {
    const std::size_t bytes = b / kElem * kElem;
    if (bytes > 0 && (out.empty() || out.back() != bytes)) out.push_back(bytes);
    if (b > std::numeric_limits<std::size_t>::max() / o.factor) break;
  }
  return out;
}

std::string human_bytes(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0 || std::fabs(bytes - std::round(bytes)) < 0.05)
    std::snprintf(buf, sizeof buf, "%.0f %s", bytes, kUnits[u]);
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", bytes, kUnits[u]);
  return buf;
}

}  // namespace arlab::tool

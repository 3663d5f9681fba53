#include "options.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>
#include <string_view>

namespace arlab::bench {
namespace {

// Every value of each enum, in declaration order, for "expected one of ..." messages.
constexpr DataType kDataTypes[] = {DataType::Int8,    DataType::UInt8,  DataType::Int32,
                                   DataType::UInt32,  DataType::Int64,  DataType::UInt64,
                                   DataType::Float16, DataType::BFloat16, DataType::Float32,
                                   DataType::Float64};
constexpr ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max,
                             ReduceOp::Avg};
constexpr Algorithm kAlgorithms[] = {Algorithm::Auto,         Algorithm::Ring,
                                     Algorithm::Tree,         Algorithm::RecursiveDoubling,
                                     Algorithm::Rabenseifner, Algorithm::Hierarchical,
                                     Algorithm::Mpi,          Algorithm::Nccl};
constexpr TransportKind kTransports[] = {TransportKind::Mpi, TransportKind::Ucx,
                                         TransportKind::UcxRma};

template <class Enum, std::size_t N>
std::string names_of(const Enum (&values)[N], std::string_view extra = {}) {
  std::string out;
  for (Enum v : values) {
    if (!out.empty()) out += ", ";
    out += to_string(v);
  }
  if (!extra.empty()) out += ", " + std::string(extra);
  return out;
}

// Thrown inside the parser only; becomes ParseResult::Status::Error.
struct BadArgument {
  std::string message;
};

[[noreturn]] void bad_value(std::string_view flag, std::string_view value, std::string_view expected) {
  throw BadArgument{"bad value '" + std::string(value) + "' for " + std::string(flag) + ": expected " +
                    std::string(expected)};
}

std::vector<std::string> split_commas(const std::string& s) {
  std::vector<std::string> out;
  std::string item;
  std::istringstream in(s);
  while (std::getline(in, item, ',')) out.push_back(item);
  if (!s.empty() && s.back() == ',') out.emplace_back();
  if (s.empty()) out.emplace_back();
  return out;
}

// "8", "64K", "1M", "2G" (powers of 1024, either case).
std::optional<std::size_t> parse_size(std::string_view s) {
  std::uint64_t mult = 1;
  if (!s.empty()) {
    switch (s.back()) {
      case 'k': case 'K': mult = std::uint64_t{1} << 10; break;
      case 'm': case 'M': mult = std::uint64_t{1} << 20; break;
      case 'g': case 'G': mult = std::uint64_t{1} << 30; break;
      default: break;
    }
    if (mult != 1) s.remove_suffix(1);
  }
  std::uint64_t n = 0;
  if (s.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  if (n > std::numeric_limits<std::size_t>::max() / mult) return std::nullopt;
  return static_cast<std::size_t>(n * mult);
}

std::optional<long long> parse_int(std::string_view s) {
  long long n = 0;
  if (s.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  return n;
}

int parse_bounded(std::string_view flag, std::string_view v, long long lo, long long hi,
                  std::string_view expected) {
  auto n = parse_int(v);
  if (!n || *n < lo || *n > hi) bad_value(flag, v, expected);
  return static_cast<int>(*n);
}

bool parse_bool(std::string_view flag, std::string_view v) {
  if (v == "0") return false;
  if (v == "1") return true;
  bad_value(flag, v, "0 or 1");
}

// Calls the library parser but reports with our own list of valid names, so the message has
// one fixed shape whatever the library's wording.
template <class Enum, std::size_t N, class Parse>
Enum parse_enum(std::string_view flag, const std::string& v, const Enum (&values)[N], Parse parse,
                std::string_view extra = {}) {
  try {
    return parse(v);
  } catch (const Error&) {
    bad_value(flag, v, "one of " + names_of(values, extra));
  }
}

template <class T>
void push_unique(std::vector<T>& list, T v) {
  if (std::find(list.begin(), list.end(), v) == list.end()) list.push_back(v);
}

struct Flag {
  char short_name;          // 0: long only
  const char* long_name;
  const char* metavar;      // nullptr: takes no value
  const char* help;
  const char* default_text;
};

constexpr Flag kFlags[] = {
    {'b', "minbytes", "SIZE", "smallest message size in bytes; K, M, G suffixes are powers of 1024", "8"},
    {'e', "maxbytes", "SIZE", "largest message size in bytes", "64M"},
    {'f', "stepfactor", "N", "multiply the size by N (integer >= 2) between steps", "2"},
    {'a', "algorithms", "LIST",
     "comma list of algorithms (auto, ring, tree, recursive-doubling|rd, rabenseifner|rab, "
     "hierarchical, mpi, nccl); 'all' = every schedule algorithm, the mpi baseline and auto",
     "all"},
    {'d', "datatype", "TYPE",
     "int8, uint8, int32, uint32, int64, uint64, half, bfloat16, float, double", "float"},
    {'o', "op", "OP", "sum, prod, min, max, avg", "sum"},
    {'n', "iters", "N", "timed iterations per size and algorithm", "20"},
    {'w', "warmup_iters", "N", "untimed iterations before timing", "5"},
    {'c', "check", "0|1", "run once more outside the timed loop and count wrong elements", "1"},
    {'t', "transport", "LIST", "comma list of transports (mpi, ucx, ucx-rma) or 'all'; one "
     "communicator each", "mpi"},
    {'z', "inplace", "[0|1]", "1 (or the bare flag): in place, send == recv; 0: out of place", "0"},
    {0, "json", "FILE", "also write every row as a JSON array of records to FILE (rank 0)", "none"},
    {'h', "help", nullptr, "print this help and exit", nullptr},
};

const Flag* find_short(char c) {
  for (const Flag& f : kFlags)
    if (f.short_name == c) return &f;
  return nullptr;
}

const Flag* find_long(std::string_view name) {
  for (const Flag& f : kFlags)
    if (name == f.long_name) return &f;
  return nullptr;
}

void apply(BenchOptions& o, const Flag& f, std::string_view shown, const std::string& v,
           bool& algorithms_given) {
  switch (f.short_name) {
    case 'b':
    case 'e': {
      auto n = parse_size(v);
      if (!n) bad_value(shown, v, "a size in bytes such as 8, 64K, 1M or 2G");
      (f.short_name == 'b' ? o.min_bytes : o.max_bytes) = *n;
      return;
    }
    case 'f':
      o.factor = static_cast<std::size_t>(
          parse_bounded(shown, v, 2, 1 << 20, "an integer >= 2"));
      return;
    case 'a': {
      algorithms_given = true;
      o.algorithms.clear();
      for (const std::string& name : split_commas(v)) {
        if (name == "all") {
          for (Algorithm a : all_algorithms()) push_unique(o.algorithms, a);
        } else {
          push_unique(o.algorithms, parse_enum(shown, name, kAlgorithms, algorithm_from_string, "all"));
        }
      }
      return;
    }
    case 'd':
      o.dtype = parse_enum(shown, v, kDataTypes, datatype_from_string);
      return;
    case 'o':
      o.op = parse_enum(shown, v, kOps, reduce_op_from_string);
      return;
    case 'n':
      o.iters = parse_bounded(shown, v, 1, std::numeric_limits<int>::max(), "an integer >= 1");
      return;
    case 'w':
      o.warmup = parse_bounded(shown, v, 0, std::numeric_limits<int>::max(), "an integer >= 0");
      return;
    case 'c':
      o.check = parse_bool(shown, v);
      return;
    case 't':
      o.transports.clear();
      for (const std::string& name : split_commas(v)) {
        if (name == "all") {
          for (TransportKind t : kTransports) push_unique(o.transports, t);
        } else {
          push_unique(o.transports, parse_enum(shown, name, kTransports, transport_from_string, "all"));
        }
      }
      return;
    case 'z':
      o.inplace = parse_bool(shown, v);
      return;
    case 0:  // --json
      if (v.empty()) bad_value(shown, v, "a file name");
      o.json_path = v;
      return;
    default:
      return;
  }
}

}  // namespace

std::vector<Algorithm> all_algorithms() {
  std::vector<Algorithm> out;
  for (Algorithm a : schedule_algorithms()) push_unique(out, a);
  push_unique(out, Algorithm::Mpi);
  push_unique(out, Algorithm::Auto);
  return out;
}

ParseResult parse_options(int argc, const char* const* argv) {
  ParseResult result;
  BenchOptions& o = result.options;
  bool algorithms_given = false;
  try {
    for (int i = 1; i < argc; ++i) {
      std::string_view arg = argv[i];
      const Flag* flag = nullptr;
      std::string shown;                // the flag as the user wrote it, for messages
      std::optional<std::string> value; // attached value: -b8, --minbytes=8
      if (arg.size() >= 3 && arg.substr(0, 2) == "--") {
        std::string_view name = arg.substr(2);
        if (auto eq = name.find('='); eq != std::string_view::npos) {
          value = std::string(name.substr(eq + 1));
          name = name.substr(0, eq);
        }
        flag = find_long(name);
        shown = "--" + std::string(name);
      } else if (arg.size() >= 2 && arg[0] == '-' && arg[1] != '-') {
        flag = find_short(arg[1]);
        shown = std::string(arg.substr(0, 2));
        if (arg.size() > 2) value = std::string(arg.substr(arg[2] == '=' ? 3 : 2));
      }
      if (flag == nullptr) throw BadArgument{"unknown option '" + std::string(arg) + "' (see --help)"};
      if (flag->metavar == nullptr) {  // --help
        if (value) throw BadArgument{shown + " takes no value"};
        result.status = ParseResult::Status::Help;
        return result;
      }
      if (!value) {
        bool next_exists = i + 1 < argc;
        if (flag->short_name == 'z') {
          // Optional value: "-z" alone means in place; "-z 0" / "-z 1" are explicit.
          std::string_view next = next_exists ? argv[i + 1] : "";
          if (!next.empty() && next[0] != '-') {
            value = std::string(next);
            ++i;
          } else {
            value = "1";
          }
        } else {
          if (!next_exists) throw BadArgument{"missing value for " + shown + " (" + flag->metavar + ")"};
          value = argv[++i];
        }
      }
      apply(o, *flag, shown, *value, algorithms_given);
    }
    if (!algorithms_given) o.algorithms = all_algorithms();
    if (o.min_bytes > o.max_bytes) {
      throw BadArgument{"bad value: -b " + std::to_string(o.min_bytes) + " is larger than -e " +
                        std::to_string(o.max_bytes)};
    }
    if (o.algorithms.empty()) throw BadArgument{"no algorithm to run (-a)"};
    if (o.transports.empty()) throw BadArgument{"no transport to run (-t)"};
  } catch (const BadArgument& e) {
    result.status = ParseResult::Status::Error;
    result.message = e.message;
  }
  return result;
}

std::string usage() {
  constexpr std::size_t kIndent = 28;
  std::ostringstream out;
  out << "usage: mpirun -np P arlab-bench [options]\n"
         "Times arlab all-reduce over a range of message sizes for several algorithms, like\n"
         "nccl-tests' all_reduce_perf. Rank 0 prints one row per size and algorithm.\n\n"
         "options:\n";
  for (const Flag& f : kFlags) {
    std::string left = "  ";
    left += f.short_name ? std::string("-") + f.short_name + ", " : std::string("    ");
    left += std::string("--") + f.long_name;
    if (f.metavar) left += std::string(" ") + f.metavar;
    out << left;
    if (left.size() < kIndent) {
      out << std::string(kIndent - left.size(), ' ');
    } else {
      out << "\n" << std::string(kIndent, ' ');
    }
    std::string help = f.help;
    if (f.default_text) help += std::string(" (default: ") + f.default_text + ")";
    // Wrap at word boundaries to 80 columns.
    std::istringstream words(help);
    std::string word;
    std::size_t column = kIndent;
    bool first = true;
    while (words >> word) {
      if (!first && column + 1 + word.size() > 80) {
        out << "\n" << std::string(kIndent, ' ');
        column = kIndent;
        first = true;
      }
      if (!first) {
        out << ' ';
        ++column;
      }
      out << word;
      column += word.size();
      first = false;
    }
    out << "\n";
  }
  out << "\nExit status: 0 all rows correct, 1 wrong values or a failed algorithm, 2 bad arguments.\n";
  return out.str();
}

std::vector<std::size_t> sweep_sizes(const BenchOptions& o) {
  const std::size_t elem = size_of(o.dtype);
  std::vector<std::size_t> out;
  for (std::size_t s = o.min_bytes; s <= o.max_bytes;) {
    std::size_t rounded = s / elem * elem;
    if (rounded > 0 && (out.empty() || out.back() != rounded)) out.push_back(rounded);
    if (s == 0) {
      s = 1;  // -b 0: continue from one byte
      continue;
    }
    if (s > o.max_bytes / o.factor) break;
    s *= o.factor;
  }
  return out;
}

}  // namespace arlab::bench

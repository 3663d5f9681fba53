#include "options.hpp"

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <limits>
#include <sstream>
#include <string_view>

#include "core/environment.hpp"

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
  for (Enum v : values) out += (out.empty() ? "" : ", ") + to_string(v);
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
  if (s.empty() || s.back() == ',') out.emplace_back();  // "" and "a," name an empty item
  return out;
}

using detail::parse_size;  // "8", "64K", "1M", "2G" (powers of 1024, either case)

int parse_bounded(std::string_view flag, std::string_view v, long long lo, long long hi,
                  std::string_view expected) {
  long long n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (v.empty() || ec != std::errc{} || end != v.data() + v.size() || n < lo || n > hi)
    bad_value(flag, v, expected);
  return static_cast<int>(n);
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

// A comma list of names or "all" (which adds `all` in order) into a list without repeats.
template <class Enum, std::size_t N, class Parse>
std::vector<Enum> parse_list(std::string_view flag, const std::string& v, const Enum (&values)[N],
                             Parse parse, const std::vector<Enum>& all) {
  std::vector<Enum> out;
  for (const std::string& name : split_commas(v)) {
    if (name == "all") {
      for (Enum e : all) push_unique(out, e);
    } else {
      push_unique(out, parse_enum(flag, name, values, parse, "all"));
    }
  }
  return out;
}

std::vector<TransportKind> available_transports() {
  std::vector<TransportKind> out;
  for (TransportKind t : kTransports)
    if (transport_available(t)) out.push_back(t);
  return out;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

struct Flag {
  char short_name;          // 0: long only
  const char* long_name;
  const char* metavar;      // nullptr: takes no value
  const char* help;
  const char* default_text; // nullptr: no default to show
};

constexpr Flag kFlags[] = {
    {'b', "minbytes", "SIZE", "smallest message size in bytes; K, M, G suffixes are powers of 1024", "8"},
    {'e', "maxbytes", "SIZE", "largest message size in bytes", "64M"},
    {'f', "stepfactor", "N", "multiply the size by N (integer >= 2) between steps; not with -i", "2"},
    {'i', "stepbytes", "SIZE", "add SIZE bytes between steps instead of multiplying; not with -f",
     "none: -f 2"},
    {'a', "algorithms", "LIST",
     "comma list of auto, ring, tree, recursive-doubling (rd), rabenseifner (rab), hierarchical, "
     "mpi (MPI_Allreduce), nccl; 'all' = every one this build has (nccl only where available)",
     "all"},
    {'d', "datatype", "TYPE",
     "int8, uint8, int32, uint32, int64, uint64, half, bfloat16, float, double, a comma list, or all",
     "float"},
    {'o', "op", "OP", "sum, prod, min, max, avg, a comma list, or all", "sum"},
    {'n', "iters", "N", "timed iterations per size, algorithm, transport and section",
     "at least 20, and as many more as fill 1 ms of calls, at most 1000"},
    {'w', "warmup_iters", "N", "untimed iterations before each timed loop", "5"},
    {0, "rounds", "N", "measure the lines of each size in N interleaved rounds (every line's -w and -n "
     "calls, line after line, N times over) and show each line's median round: a slow phase of a "
     "shared machine then falls on every algorithm alike instead of on whichever ran during it", "1"},
    {'c', "check", "0|1", "1: one more call outside the timed loop, on fresh data, and count the "
     "wrong elements (#wrong); 0: no check (#wrong N/A)", "1"},
    {'t', "transport", "LIST", "comma list of mpi, ucx, ucx-rma, or all (every transport this "
     "build has); one communicator each", "mpi"},
    {'z', "inplace", "0|1", "0: both sections on each line, out-of-place then in-place (send == "
     "recv), as nccl-tests prints them; 1 (or a bare -z): in place only", "0"},
    {0, "ranks-per-node", "K", "treat consecutive groups of K ranks as nodes (K must divide the "
     "rank count): hierarchical's levels and the cost model's machine get nodes = ranks / K, with the "
     "topology's inter-node link between them (its intra link when it describes one node)",
     "none: as the topology places them, else the ranks sharing memory"},
    {0, "calibrate", nullptr, "measure this machine first, in this launch (arlab-calibrate --all-pairs "
     "over the first -t transport, a few seconds; with --ranks-per-node K, nodes of K ranks), and "
     "give the pred column and auto the fitted machine; not with --topology",
     "off: --topology, ARLAB_TOPOLOGY or the built-in machine"},
    {0, "topology", "FILE", "topology file (YAML, docs/model.md) for the cost model's pred column; "
     "ARLAB_TOPOLOGY when not given", "built-in: one shared-memory node"},
    {0, "json", "FILE", "write the header and one record per line and section as JSON (rank 0)", "none"},
    {0, "csv", "FILE", "write the same records as CSV, with a header row (rank 0)", "none"},
    {0, "plot", "FILE.png", "draw busbw and time against size with bench/plot.py (needs "
     "python3-matplotlib; ARLAB_BENCH_PYTHON names the interpreter)", "none"},
    {0, "fresh-input", nullptr, "write the input anew before every timed call (untimed), as each "
     "training step brings new gradients: the data a rank sends was just written by its own CPU, "
     "as the calibration's probes send it", "on"},
    {0, "reuse-input", nullptr, "the same input every call, as nccl-tests: on a CPU node a rank "
     "that received a peer's input last call may still hold it in its cache and read it again "
     "for free (2 ranks, 128 KiB: recursive doubling out of place 2x faster than with fresh input)",
     "off"},
    {'D', "device", nullptr, "device buffers for every line: cudaMalloc'd memory on the GPU of the "
     "local rank (modulo the GPUs), reduced by arlab's kernels and staged through page-locked host "
     "memory by the transports (docs/gpu.md); nccl runs on the same buffers, mpi is skipped (this "
     "MPI is not CUDA-aware). Needs a CUDA device", "off: host buffers"},
    {0, "gradients", "MODEL", "instead of the sweep: the per-step time to synchronise the gradients of "
     "resnet50 (161 tensors, 25.6 M floats) or bert-base (199 tensors, 109 M) per tensor, flat, bucketed "
     "(GradientBucketer, DDP's defaults) and bucketed with fp16 compression, on every -t transport; "
     "-n steps (default 10), -w, --json as usual; --rounds N runs the four modes in turn N times and "
     "shows each mode's median round (docs/ddp.md)", "none"},
    {'q', "quiet", nullptr, "the table only: no header, notes or footer on stdout", nullptr},
    {0, "progress", nullptr, "progress on stderr even when stderr is not a terminal", "only on a terminal"},
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

struct Given {
  bool algorithms = false, factor = false, step = false;
};

void apply(BenchOptions& o, const Flag& f, std::string_view shown, const std::string& v, Given& given) {
  const std::string_view name = f.long_name;
  if (name == "minbytes" || name == "maxbytes" || name == "stepbytes") {
    auto n = parse_size(v);
    if (!n || (name == "stepbytes" && *n == 0))
      bad_value(shown, v, name == "stepbytes" ? "a size >= 1 in bytes such as 8, 64K or 1M"
                                             : "a size in bytes such as 8, 64K, 1M or 2G");
    if (name == "minbytes") o.min_bytes = *n;
    if (name == "maxbytes") o.max_bytes = *n;
    if (name == "stepbytes") o.step = *n, given.step = true;
  } else if (name == "stepfactor") {
    // Any factor >= 2, as nccl-tests: a factor beyond -e just gives one size.
    std::uint64_t f = 0;
    auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), f);
    if (v.empty() || ec != std::errc{} || end != v.data() + v.size() || f < 2 ||
        f > std::numeric_limits<std::size_t>::max())
      bad_value(shown, v, "an integer >= 2");
    o.factor = static_cast<std::size_t>(f);
    given.factor = true;
  } else if (name == "algorithms") {
    given.algorithms = true;
    o.algorithms = parse_list(shown, v, kAlgorithms, algorithm_from_string, all_algorithms());
    const auto items = split_commas(v);
    o.all_algorithms = std::find(items.begin(), items.end(), "all") != items.end();
  } else if (name == "datatype") {
    const std::vector<DataType> all(std::begin(kDataTypes), std::end(kDataTypes));
    o.dtypes = parse_list(shown, v, kDataTypes, datatype_from_string, all);
  } else if (name == "op") {
    o.ops = parse_list(shown, v, kOps, reduce_op_from_string, std::vector<ReduceOp>(std::begin(kOps), std::end(kOps)));
  } else if (name == "iters") {
    o.iters = parse_bounded(shown, v, 1, 1000000, "an integer from 1 to 1000000");
    o.iters_given = true;
  } else if (name == "warmup_iters") {
    o.warmup = parse_bounded(shown, v, 0, 1000000, "an integer from 0 to 1000000");
  } else if (name == "rounds") {
    o.rounds = parse_bounded(shown, v, 1, 1000, "an integer from 1 to 1000");
  } else if (name == "check") {
    o.check = parse_bool(shown, v);
  } else if (name == "transport") {
    o.transports = parse_list(shown, v, kTransports, transport_from_string, available_transports());
  } else if (name == "inplace") {
    const bool in_place_only = parse_bool(shown, v);
    o.out_of_place = !in_place_only;
    o.in_place = true;
  } else if (name == "ranks-per-node") {
    o.ranks_per_node = parse_bounded(shown, v, 1, 1 << 24, "an integer >= 1 that divides the rank count");
  } else if (name == "gradients") {
    if (v != "resnet50" && v != "bert-base") bad_value(shown, v, "resnet50 or bert-base");
    o.gradients = v;
  } else if (name == "topology" || name == "json" || name == "csv" || name == "plot") {
    if (v.empty()) bad_value(shown, v, "a file name");
    if (v == "-" && name != "topology") bad_value(shown, v, "a file name (stdout carries the table)");
    if (name == "plot" && !ends_with(v, ".png") && !ends_with(v, ".svg") && !ends_with(v, ".pdf"))
      bad_value(shown, v, "a file name ending in .png, .svg or .pdf");
    if (name == "topology") o.topology = v;
    if (name == "json") o.json_path = v;
    if (name == "csv") o.csv_path = v;
    if (name == "plot") o.plot_path = v;
  }
}

// The flags without a value: -D, -q, --progress, --fresh-input, --reuse-input, --calibrate, -h.
ParseResult::Status apply_switch(BenchOptions& o, const Flag& f) {
  const std::string_view name = f.long_name;
  if (name == "help") return ParseResult::Status::Help;
  if (name == "quiet") o.quiet = true;
  if (name == "progress") o.progress = true;
  if (name == "fresh-input") o.fresh_input = true;
  if (name == "reuse-input") o.fresh_input = false;
  if (name == "calibrate") o.calibrate = true;
  if (name == "device") o.device = true;
  return ParseResult::Status::Run;
}

}  // namespace

std::vector<Algorithm> all_algorithms() {
  std::vector<Algorithm> out;
  for (Algorithm a : schedule_algorithms()) push_unique(out, a);
  for (Algorithm a : {Algorithm::Hierarchical, Algorithm::Mpi, Algorithm::Nccl, Algorithm::Auto})
    push_unique(out, a);
  return out;
}

ParseResult parse_options(int argc, const char* const* argv) {
  ParseResult result;
  BenchOptions& o = result.options;
  Given given;
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
      if (flag->metavar == nullptr) {
        if (value) throw BadArgument{shown + " takes no value"};
        if (apply_switch(o, *flag) == ParseResult::Status::Help) {
          result.status = ParseResult::Status::Help;
          return result;
        }
        continue;
      }
      if (!value) {
        const bool next_exists = i + 1 < argc;
        if (flag->short_name == 'z') {
          // Optional value: "-z" alone means in place only; "-z 0" / "-z 1" are explicit.
          std::string_view next = next_exists ? argv[i + 1] : "";
          value = !next.empty() && next[0] != '-' ? std::string(argv[++i]) : std::string("1");
        } else {
          if (!next_exists) throw BadArgument{"missing value for " + shown + " (" + flag->metavar + ")"};
          value = argv[++i];
        }
      }
      apply(o, *flag, shown, *value, given);
    }
    if (!given.algorithms) {
      o.algorithms = all_algorithms();
      o.all_algorithms = true;
    }
    if (given.factor && given.step)
      throw BadArgument{"-f and -i exclude each other: -f N multiplies the size, -i SIZE adds to it"};
    if (given.step) o.factor = 0;
    if (!o.gradients.empty() && (o.device || o.calibrate || !o.csv_path.empty() || !o.plot_path.empty()))
      throw BadArgument{"--gradients runs with -n, -w, -t, --rounds, --topology and --json only (not -D, "
                        "--calibrate, --csv or --plot)"};
    if (o.calibrate && o.topology)
      throw BadArgument{"--calibrate and --topology exclude each other: --calibrate measures the machine the "
                        "model describes, --topology reads it from a file"};
    if (o.min_bytes > o.max_bytes)
      throw BadArgument{"bad value: -b " + std::to_string(o.min_bytes) + " is larger than -e " +
                        std::to_string(o.max_bytes)};
    if (o.step && (o.max_bytes - o.min_bytes) / o.step >= kMaxSizes)
      throw BadArgument{"bad value '" + std::to_string(o.step) + "' for -i: more than " +
                        std::to_string(kMaxSizes) + " sizes from -b to -e; expected a larger step"};
    if (o.algorithms.empty()) throw BadArgument{"no algorithm to run (-a)"};
    if (o.transports.empty()) throw BadArgument{"no transport to run (-t)"};
  } catch (const BadArgument& e) {
    result.status = ParseResult::Status::Error;
    result.message = e.message;
  }
  return result;
}

std::string usage() {
  constexpr std::size_t kIndent = 30;
  std::ostringstream out;
  out << "usage: mpirun -np P arlab-bench [options]\n"
         "Times arlab all-reduce over a range of message sizes for several algorithms and\n"
         "transports, like nccl-tests' all_reduce_perf. Rank 0 prints one line per size,\n"
         "algorithm and transport, with the out-of-place and in-place sections side by side,\n"
         "the cost model's prediction (pred) and its error (err% = (time - pred) / time).\n\n"
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
    // Wrap at word boundaries to 90 columns; "(default: ...)" stays on one line.
    std::istringstream in(f.help);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    if (f.default_text) words.push_back(std::string("(default: ") + f.default_text + ")");
    std::size_t column = kIndent;
    bool first = true;
    for (const std::string& word : words) {
      if (!first && column + 1 + word.size() > 90) {
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
  out << "\nTiming: each call is timed between barriers; per call the slowest rank's time counts;\n"
         "time is the average of those over the -n calls (--json and --csv add the min and max).\n"
         "algbw = size / time (GB = 1e9 bytes); busbw = algbw x 2(p-1)/p, as nccl-tests.\n"
         "\nEnvironment: ARLAB_BENCH_MIN_BUSBW=X fails the run (exit 1) when the best algorithm's\n"
         "average busbw (GB/s, over every size and section) is below X. ARLAB_* knobs apply to\n"
         "every communicator (README).\n"
         "\nExit status: 0 every value correct; 1 wrong values (the sizes are named), a failed\n"
         "algorithm or transport, nothing run, or busbw below ARLAB_BENCH_MIN_BUSBW; 2 bad\n"
         "arguments, a bad topology file, or --plot without matplotlib.\n";
  return out.str();
}

std::vector<std::size_t> sweep_sizes(const BenchOptions& o, std::size_t elem) {
  std::vector<std::size_t> out;
  for (std::size_t s = o.min_bytes; s <= o.max_bytes;) {
    const std::size_t rounded = s / elem * elem;
    if (rounded > 0 && (out.empty() || out.back() != rounded)) out.push_back(rounded);
    if (o.step) {
      if (o.step > o.max_bytes - s) break;  // s <= max_bytes here, so this cannot wrap
      s += o.step;
    } else {
      if (s == 0) {
        s = 1;  // -b 0: continue from one byte
        continue;
      }
      if (s > o.max_bytes / o.factor) break;
      s *= o.factor;
    }
  }
  return out;
}

}  // namespace arlab::bench

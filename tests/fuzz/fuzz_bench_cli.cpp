// Fuzzes arlab-bench's command line (bench/options.cpp): parse_options() on argv entries split
// from the input at NUL bytes (fuzz_argv.hpp), then sweep_sizes() for every -d type, as the
// bench does next. Run, Help and Error (a one-line message) are normal outcomes. A bug: a
// crash, a sanitizer report, a hang, an exception, an empty or multi-line message, or options
// the bench would trip over: no algorithm, transport, type or op; -b above -e; both or neither
// of -f and -i; a sweep that is not increasing, off the element size, outside -b..-e, or longer
// than kMaxSizes.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_argv.hpp"
#include "fuzz_check.hpp"
#include "options.hpp"

namespace {

using arlab::bench::BenchOptions;
using arlab::fuzz::bug;
using arlab::fuzz::require;

void check_sweep(const BenchOptions& o, std::size_t elem) {
  const auto sizes = arlab::bench::sweep_sizes(o, elem);
  if (sizes.size() > arlab::bench::kMaxSizes) bug("sweep of " + std::to_string(sizes.size()) + " sizes");
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    require(sizes[i] > 0 && sizes[i] % elem == 0, "sweep size not a positive multiple of the element");
    require(sizes[i] <= o.max_bytes && sizes[i] + elem > o.min_bytes, "sweep size outside -b..-e");
    require(i == 0 || sizes[i] > sizes[i - 1], "sweep sizes not increasing");
  }
}

void check_run(const BenchOptions& o) {
  require(!o.algorithms.empty() && !o.transports.empty(), "no algorithm or transport");
  require(!o.dtypes.empty() && !o.ops.empty(), "no data type or op");
  require(o.min_bytes <= o.max_bytes, "-b above -e");
  require((o.factor >= 2) != (o.step > 0), "not exactly one of -f and -i");
  require(o.iters >= 1 && o.warmup >= 0 && o.rounds >= 1, "-n, -w or --rounds out of range");
  require(o.in_place, "no section to run");
  for (arlab::DataType t : o.dtypes) check_sweep(o, arlab::size_of(t));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return arlab::fuzz::fuzz_command_line(
      "arlab-bench", data, size, [](int argc, const char* const* argv) { return arlab::bench::parse_options(argc, argv); }, check_run);
}

// Fuzzes arlab-model's command line (tools/model_options.cpp, tools/cli.cpp): parse_options()
// on argv entries split from the input at NUL bytes (fuzz_argv.hpp), then sweep_sizes(), as
// the tool does next. Run, Help and Error (a one-line message) are normal outcomes. A bug: a
// crash, a sanitizer report, a hang, an exception, an empty or multi-line message, or options
// the tool would trip over: no topology, algorithms outside the schedule ones, --ranks or
// --sizes out of range, a sweep that is not increasing, off whole floats or outside MIN..MAX.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_argv.hpp"
#include "fuzz_check.hpp"
#include "model_options.hpp"

namespace {

using arlab::fuzz::require;
using arlab::tool::ModelOptions;

void check_run(const ModelOptions& o) {
  require(!o.topology.empty(), "no topology");
  const auto& valid = arlab::schedule_algorithms();
  require(!o.algorithms.empty(), "no algorithm");
  for (arlab::Algorithm a : o.algorithms)
    require(std::find(valid.begin(), valid.end(), a) != valid.end(), "not a schedule algorithm");
  require(o.ranks >= 0 && o.ranks <= 65536, "--ranks out of range");
  require(o.min_bytes >= 1 && o.min_bytes <= o.max_bytes, "--sizes MIN out of range");
  require(o.factor >= 2 && o.factor <= (1u << 20), "--sizes FACTOR out of range");
  require(!o.json || !o.json->empty(), "empty --json");
  const auto sizes = arlab::tool::sweep_sizes(o);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    require(sizes[i] > 0 && sizes[i] % sizeof(float) == 0, "size not a positive multiple of a float");
    require(sizes[i] <= o.max_bytes && sizes[i] + sizeof(float) > o.min_bytes, "size outside MIN..MAX");
    require(i == 0 || sizes[i] > sizes[i - 1], "sizes not increasing");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return arlab::fuzz::fuzz_command_line(
      "arlab-model", data, size, [](int argc, const char* const* argv) { return arlab::tool::parse_options(argc, argv); }, check_run);
}

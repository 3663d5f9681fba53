// Fuzzes arlab-calibrate's command line (tools/calibrate_options.cpp, tools/cli.cpp):
// parse_calibrate_options() on argv entries split from the input at NUL bytes (fuzz_argv.hpp),
// then calibrate_sizes() as the measurement asks for them. Run, Help and Error (a one-line
// message) are normal outcomes. A bug: a crash, a sanitizer report, a hang, an exception, an
// empty or multi-line message, or options the tool would trip over: a transport name that
// is not the transport, a name the topology file cannot hold, --sizes out of range or with
// fewer than two sizes, a size list that is not increasing or outside MIN..MAX.
#include <cstddef>
#include <cstdint>
#include <string>

#include "calibrate_options.hpp"
#include "fuzz_argv.hpp"
#include "fuzz_check.hpp"

namespace {

using arlab::fuzz::require;
using arlab::tool::CalibrateOptions;

void check_sizes(const CalibrateOptions& o, std::size_t multiple) {
  const auto sizes = arlab::tool::calibrate_sizes(o, multiple);
  require(multiple > 1 || sizes.size() >= 2, "fewer than two sizes");
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    require(sizes[i] > 0 && sizes[i] % multiple == 0, "size not a positive multiple");
    require(sizes[i] <= o.max_bytes && sizes[i] + multiple > o.min_bytes, "size outside MIN..MAX");
    require(i == 0 || sizes[i] > sizes[i - 1], "sizes not increasing");
  }
}

void check_run(const CalibrateOptions& o) {
  require(arlab::transport_from_string(o.transport_name) == o.transport, "transport name is not the transport");
  require(o.name.find_first_of("\n\"\\") == std::string::npos, "--name the file cannot hold");
  require(!o.output || !o.output->empty(), "empty --output");
  require(o.ranks_per_node >= 0, "negative --ranks-per-node");
  require(o.min_bytes >= 1 && o.min_bytes < o.max_bytes && o.max_bytes <= (std::size_t{1} << 30),
          "--sizes MIN or MAX out of range");
  require(o.factor >= 2 && o.min_bytes * o.factor <= o.max_bytes, "--sizes FACTOR out of range");
  require(o.samples >= 1 && o.sample_ms > 0, "no samples");
  check_sizes(o, 1);
  check_sizes(o, sizeof(float));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return arlab::fuzz::fuzz_command_line(
      "arlab-calibrate", data, size, [](int argc, const char* const* argv) { return arlab::tool::parse_calibrate_options(argc, argv); }, check_run);
}

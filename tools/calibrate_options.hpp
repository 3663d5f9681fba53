// arlab-calibrate command line: the flags, their defaults, --help, and the list of sizes.
#pragma once

#include <arlab/arlab.hpp>

#include "calibrate/calibration.hpp"

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace arlab::tool {

// The measurement's settings (calib::Settings) and where the file goes.
struct CalibrateOptions : calib::Settings {
  std::optional<std::string> output;  // -o, --output: the topology file to write
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

// The library's calibration (src/calibrate: the measurement, the fits, the file) is the tools'
// too: tool::fit_line, tool::Calibration, tool::calibrate, ...
using namespace calib;

}  // namespace arlab::tool

// arlab-calibrate's printed report: the measured times beside their fits, the residuals, and
// the fitted alpha, beta and gamma, in cache and beyond it.
#pragma once

#include <cstdio>

#include "calibrate_options.hpp"

namespace arlab::tool {

void print_header(std::FILE* out, const Calibration& c);
void print_link(std::FILE* out, const Calibration& c, const LinkCalibration& l);
void print_compute(std::FILE* out, const Calibration& c);
// One line per fitted number, as the topology file has them.
void print_summary(std::FILE* out, const Calibration& c);

}  // namespace arlab::tool

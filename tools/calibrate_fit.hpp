// arlab-calibrate's least-squares fit: time = intercept + bytes * slope over a sweep of sizes.
//
// The fit minimises the *relative* error of every size alike (weights 1 / time^2), so a sweep
// from 8 B to 64 MiB fixes the intercept (alpha) on the small sizes and the slope (beta, gamma)
// on the large ones, rather than letting the largest times decide both. An intercept the data
// would put below zero is clamped to zero (a topology file needs alpha >= 0) and the slope
// refitted through the origin.
#pragma once

#include <cstddef>
#include <span>

namespace arlab::tool {

struct LineFit {
  double intercept = 0;  // us
  double slope = 0;      // us per byte
  double r2 = 0;         // 1 - SS_res / SS_tot of the times themselves
  double rms_rel = 0;    // root mean square of (measured - fitted) / measured
  double max_rel = 0;    // the largest |measured - fitted| / measured
  bool clamped = false;  // the free intercept came out negative and was set to zero
  std::size_t points = 0;

  double at(double bytes) const { return intercept + bytes * slope; }
};

// Fits y = intercept + x * slope (x in bytes, y in us, y > 0). Throws std::invalid_argument
// for fewer than two distinct x, mismatched lengths, or a y that is not positive.
LineFit fit_line(std::span<const double> x, std::span<const double> y);

}  // namespace arlab::tool

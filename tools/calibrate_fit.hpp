// arlab-calibrate's least-squares fit: time = intercept + bytes * slope over a sweep of sizes.
//
// The fit minimises the *relative* error of every size alike (weights 1 / time^2), so a sweep
// from 8 B to 64 MiB fixes the intercept (alpha) on the small sizes and the slope (beta, gamma)
// on the large ones, rather than letting the largest times decide both. An intercept the data
// would put below zero is clamped to zero (a topology file needs alpha >= 0) and the slope
// refitted through the origin.
//
// Two regimes (fit_regimes): sizes whose working set fits in the cache get their own line;
// beyond it the same intercept and a slope of their own, fitted to those sizes alone.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

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

// Fits y = intercept + x * slope with the intercept given, minimising the relative error;
// residuals as fit_line's (r2 of the times about their mean). Throws std::invalid_argument for
// no points, mismatched lengths, or a y that is not positive.
LineFit fit_slope(std::span<const double> x, std::span<const double> y, double intercept);

// A line in cache and a slope beyond it. Point i is beyond when working_set[i] >= cache_bytes.
struct RegimeFit {
  double cache_bytes = 0;        // the split; 0 when there is one regime
  LineFit in_cache;              // over the points in cache (over all, with one regime)
  std::optional<LineFit> beyond; // in_cache.intercept + bytes * its own slope, over the others
  std::vector<bool> is_beyond;   // per point

  const LineFit& of(std::size_t i) const { return beyond && is_beyond[i] ? *beyond : in_cache; }
};

// With cache_bytes > 0, at least two distinct in-cache sizes and one beyond, two regimes;
// otherwise one line over every point (fit_line), and `beyond` empty.
RegimeFit fit_regimes(std::span<const double> x, std::span<const double> y, std::span<const double> working_set,
                      double cache_bytes);

}  // namespace arlab::tool

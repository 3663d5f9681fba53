// arlab-calibrate's least-squares fit: time = intercept + bytes * slope over a sweep of sizes.
//
// The fit minimises the *relative* error of every size alike (weights 1 / time^2), so a sweep
// from 8 B to 64 MiB fixes the intercept (alpha) on the small sizes and the slope (beta, gamma)
// on the large ones, rather than letting the largest times decide both. An intercept the data
// would put below zero, or a slope at or below zero (times that do not grow with the size, as
// a slow spell during the small sizes makes them), is replaced by the line through the origin
// (a topology file needs alpha >= 0 and a positive bandwidth); the latter is marked `flat`.
// fit_slope, whose times sit at or below the given intercept, marks its fit `flat` likewise.
//
// Two regimes (fit_regimes): sizes whose working set fits in the cache get their own line;
// beyond it the same intercept and a slope of their own, fitted to those sizes alone.
#pragma once

#include <cstddef>
#include <optional>
#include <span>
#include <vector>

namespace arlab::calib {

struct LineFit {
  double intercept = 0;  // us
  double slope = 0;      // us per byte
  double r2 = 0;         // 1 - SS_res / SS_tot of the times themselves
  double rms_rel = 0;    // root mean square of (measured - fitted) / measured
  double max_rel = 0;    // the largest |measured - fitted| / measured
  bool clamped = false;  // the free line was unphysical (intercept < 0, or slope <= 0): through the origin
  // The times did not grow with the size (the free slope was <= 0): no bandwidth can be read
  // from them (a busy machine's small sizes running slower than its large ones). The fit still
  // has a positive slope, but the self-calibration refuses a machine fitted from it.
  bool flat = false;
  bool marginal = false;  // the slope is the two largest sizes' marginal rate (use_marginal_slope)
  std::size_t points = 0;
  // A step (fit_step_line): sizes above step_bytes have intercept_above instead of intercept,
  // the same slope. step_bytes = 0: no step. step_next is the smallest measured size above it.
  double step_bytes = 0, step_next = 0, intercept_above = 0;

  double at(double bytes) const {
    return (step_bytes > 0 && bytes > step_bytes ? intercept_above : intercept) + bytes * slope;
  }
};

// Fits y = intercept + x * slope (x in bytes, y in us, y > 0). Throws std::invalid_argument
// for fewer than two distinct x, mismatched lengths, or a y that is not positive.
LineFit fit_line(std::span<const double> x, std::span<const double> y);

// What a fit's fallback means, for the printed fits and the topology file's comments: "" for a
// free fit, else " (the times did not grow ...)" or " (through the origin: ...)".
const char* fallback_note(const LineFit& f);

// Fits y = intercept + x * slope with the intercept given, minimising the relative error;
// residuals as fit_line's (r2 of the times about their mean). Throws std::invalid_argument for
// no points, mismatched lengths, or a y that is not positive.
LineFit fit_slope(std::span<const double> x, std::span<const double> y, double intercept);

// A protocol switch (eager -> rendezvous): a line whose intercept steps up between two
// consecutive sizes, y = (x <= T ? a : a_above) + x * slope, fitted by weighted least squares
// for every split with at least two sizes on each side. A split qualifies when it cuts the
// plain line's rms relative error by at least a quarter and steps up by at least 2x
// (a_above >= 2a: a handshake costs round trips); of those the one with the largest step is
// kept (smaller steps, such as fast boxes against eager fragments, are not the handshake);
// with none, the plain line (fit_line). T is the largest measured size below the step.
LineFit fit_step_line(std::span<const double> x, std::span<const double> y);

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
// With `step`, the in-cache line may have a step (fit_step_line); the beyond-cache slope then
// shares the intercept above the step.
RegimeFit fit_regimes(std::span<const double> x, std::span<const double> y, std::span<const double> working_set,
                      double cache_bytes, bool step = false);

// A network link's steady rate: the slope of the regime holding the two largest sizes becomes
// their marginal time per byte, (y[n-1] - y[n-2]) / (x[n-1] - x[n-2]), when that is positive
// and both take at least 10x the smallest size's time (transfer-dominated); `marginal` is set
// and the residuals recomputed over that regime's points. What passes faster at a message's
// start (a token bucket's burst, TCP's window opening) is the same in both sizes and cancels,
// where the least-squares slope, which weighs small sizes alike, takes some of it for rate
// (and fit_step_line may take the burst for a protocol step). A step is kept with the line
// above it through the largest size, or dropped where that would not step up. Returns
// whether the slope changed.
bool use_marginal_slope(RegimeFit& f, std::span<const double> x, std::span<const double> y);

// Latencies measured one size at a time, for a link whose latency rises gradually between the
// protocol's steps: at each size from the smallest, the exchange time less bytes x slope, up to
// and including the first size whose transfer (bytes x slope) is half its time or more; a
// size whose remainder is not positive is skipped; none above kLatencyTableBytes; then made
// non-decreasing (adjacent points that fall pooled to their mean). (bytes, alpha in us),
// ascending.
struct LatencyPoint {
  double bytes = 0, alpha_us = 0;
};
std::vector<LatencyPoint> latency_points(std::span<const double> x, std::span<const double> y, double slope);

// The protocols' switches lie below this (Open MPI's shared-memory eager limit of 4 KiB, UCX's
// rendezvous thresholds of 8-16 KiB); above it every transport is in its rendezvous protocol,
// whose latency the fitted line's intercept carries, and a size slower than the line (4 ranks
// on 2 cores at 2 MiB took 13x the time of 512 KiB) is a change of bandwidth, not latency.
constexpr double kLatencyTableBytes = 64 * 1024;

// The write-back cost per byte at each size x[i]: (in_place[i] - aside[i]) / x[i], at least 0
// (LinkBench::writeback's two times per round). (bytes, us per byte), ascending as x.
struct WritebackPoint {
  double bytes = 0, us_per_byte = 0;
};
std::vector<WritebackPoint> writeback_points(std::span<const double> x, std::span<const double> in_place,
                                             std::span<const double> aside);

}  // namespace arlab::calib

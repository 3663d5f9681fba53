#include "calibrate/fit.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace arlab::calib {

namespace {

void check(std::span<const double> x, std::span<const double> y) {
  if (x.size() != y.size()) throw std::invalid_argument("fit: x and y differ in length");
  for (double v : y)
    if (!(v > 0) || !std::isfinite(v)) throw std::invalid_argument("fit: times must be positive");
}

// R^2 of the times, rms and largest relative error of `f` over the points.
void residuals(LineFit& f, std::span<const double> x, std::span<const double> y) {
  const std::size_t n = x.size();
  double mean = 0;
  for (double v : y) mean += v / static_cast<double>(n);
  double ss_res = 0, ss_tot = 0, rel2 = 0;
  f.max_rel = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double e = y[i] - f.at(x[i]);
    ss_res += e * e;
    ss_tot += (y[i] - mean) * (y[i] - mean);
    rel2 += (e / y[i]) * (e / y[i]);
    f.max_rel = std::max(f.max_rel, std::fabs(e / y[i]));
  }
  f.r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : 1;
  f.rms_rel = std::sqrt(rel2 / static_cast<double>(n));
}

}  // namespace

LineFit fit_line(std::span<const double> x, std::span<const double> y) {
  check(x, y);
  const std::size_t n = x.size();
  if (n < 2 || std::all_of(x.begin(), x.end(), [&](double v) { return v == x[0]; }))
    throw std::invalid_argument("fit_line: needs at least two distinct sizes");

  // Weighted means first, then the centred sums: stable over sizes spanning 10^7.
  double sw = 0, swx = 0, swy = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double w = 1 / (y[i] * y[i]);
    sw += w;
    swx += w * x[i];
    swy += w * y[i];
  }
  const double xm = swx / sw, ym = swy / sw;
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double w = 1 / (y[i] * y[i]);
    sxx += w * (x[i] - xm) * (x[i] - xm);
    sxy += w * (x[i] - xm) * (y[i] - ym);
  }
  LineFit f;
  f.points = n;
  f.slope = sxy / sxx;
  f.intercept = ym - f.slope * xm;
  // Through the origin where the free line is unphysical: a negative intercept, or a slope
  // that is not positive (times that do not grow with the size: noise, a slow spell during
  // the small sizes). That fit (fit_slope with intercept 0) has a positive slope always.
  f.flat = !(f.slope > 0);
  if (f.intercept < 0 || f.flat) {
    f.intercept = 0;
    f.slope = fit_slope(x, y, 0).slope;
    f.clamped = true;
  }

  residuals(f, x, y);
  return f;
}

const char* fallback_note(const LineFit& f) {
  return f.flat      ? " (the times did not grow with the size: no bandwidth to read)"
         : f.clamped ? " (through the origin: the free line had a negative intercept)"
                     : "";
}

LineFit fit_slope(std::span<const double> x, std::span<const double> y, double intercept) {
  check(x, y);
  if (x.empty()) throw std::invalid_argument("fit_slope: needs at least one size");
  // Minimise sum ((y - intercept - slope x) / y)^2: slope = sum r (1 - intercept / y) / sum r^2, r = x / y.
  double num = 0, den = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double r = x[i] / y[i];
    num += r * (1 - intercept / y[i]);
    den += r * r;
  }
  if (!(den > 0)) throw std::invalid_argument("fit_slope: needs a size above zero");
  LineFit f;
  f.points = x.size();
  f.intercept = intercept;
  f.slope = num / den;
  if (!(f.slope > 0) && intercept != 0) {  // times at or below the intercept: no rate in them
    f.slope = fit_slope(x, y, 0).slope;  // positive, so that a file can be written; flat refuses it
    f.flat = true;
  }
  residuals(f, x, y);
  return f;
}

LineFit fit_step_line(std::span<const double> x, std::span<const double> y) {
  LineFit plain = fit_line(x, y);
  const std::size_t n = x.size();
  for (std::size_t i = 1; i < n; ++i)
    if (!(x[i] > x[i - 1])) return plain;  // the split needs sizes in increasing order
  LineFit best;
  bool found = false;
  for (std::size_t k = 2; k + 2 <= n; ++k) {  // x[0..k) below, x[k..n) above
    // Normal equations of sum w (y - a I_below - c I_above - b x)^2, w = 1 / y^2.
    double s_lo = 0, s_hi = 0, sx_lo = 0, sx_hi = 0, sxx = 0, sy_lo = 0, sy_hi = 0, sxy = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double w = 1 / (y[i] * y[i]);
      (i < k ? s_lo : s_hi) += w;
      (i < k ? sx_lo : sx_hi) += w * x[i];
      (i < k ? sy_lo : sy_hi) += w * y[i];
      sxx += w * x[i] * x[i];
      sxy += w * x[i] * y[i];
    }
    // a = (sy_lo - b sx_lo) / s_lo, c = (sy_hi - b sx_hi) / s_hi; substitute into the b equation.
    const double den = sxx - sx_lo * sx_lo / s_lo - sx_hi * sx_hi / s_hi;
    if (!(den > 0)) continue;
    LineFit f;
    f.points = n;
    f.slope = (sxy - sx_lo * sy_lo / s_lo - sx_hi * sy_hi / s_hi) / den;
    f.intercept = (sy_lo - f.slope * sx_lo) / s_lo;
    f.intercept_above = (sy_hi - f.slope * sx_hi) / s_hi;
    f.step_bytes = x[k - 1];
    f.step_next = x[k];
    // A protocol switch costs a handshake: at least twice the eager latency.
    if (!(f.slope > 0) || f.intercept < 0 || !(f.intercept_above >= 2 * f.intercept)) continue;
    residuals(f, x, y);
    if (f.rms_rel > 0.75 * plain.rms_rel) continue;
    // Of the steps that explain the data, the largest: smaller ones (Open MPI's fast boxes
    // against its eager fragments, say) are not the handshake and are not modelled.
    if (!found || f.intercept_above - f.intercept > best.intercept_above - best.intercept) best = f, found = true;
  }
  return found ? best : plain;
}

RegimeFit fit_regimes(std::span<const double> x, std::span<const double> y, std::span<const double> working_set,
                      double cache_bytes, bool step) {
  check(x, y);
  if (working_set.size() != x.size()) throw std::invalid_argument("fit_regimes: working sets differ in length");
  RegimeFit r;
  std::vector<double> xi, yi, xb, yb;
  for (std::size_t i = 0; i < x.size(); ++i) {
    const bool beyond = cache_bytes > 0 && working_set[i] >= cache_bytes;
    r.is_beyond.push_back(beyond);
    (beyond ? xb : xi).push_back(x[i]);
    (beyond ? yb : yi).push_back(y[i]);
  }
  const bool two = !xb.empty() && xi.size() >= 2 && std::any_of(xi.begin(), xi.end(), [&](double v) { return v != xi[0]; });
  if (!two) {
    r.in_cache = step ? fit_step_line(x, y) : fit_line(x, y);
    r.is_beyond.assign(x.size(), false);
    return r;
  }
  r.cache_bytes = cache_bytes;
  r.in_cache = step ? fit_step_line(xi, yi) : fit_line(xi, yi);
  // Beyond the cache the messages are large: above any step.
  r.beyond = fit_slope(xb, yb, r.in_cache.step_bytes > 0 ? r.in_cache.intercept_above : r.in_cache.intercept);
  return r;
}

bool use_marginal_slope(RegimeFit& f, std::span<const double> x, std::span<const double> y) {
  check(x, y);
  const std::size_t n = x.size();
  if (n < 2 || f.is_beyond.size() != n || f.is_beyond[n - 1] != f.is_beyond[n - 2] || x[n - 1] <= x[n - 2]) return false;
  const bool beyond = f.is_beyond[n - 1] && f.beyond;
  LineFit& line = beyond ? *f.beyond : f.in_cache;
  const double slope = (y[n - 1] - y[n - 2]) / (x[n - 1] - x[n - 2]);
  if (!(slope > 0) || y[n - 2] < 10 * y[0]) return false;  // not transfer-dominated
  line.slope = slope;
  line.marginal = true;
  line.flat = false;  // the two largest sizes grow: a rate after all
  // A step (fit_step_line) above which the line now runs through the largest size; one that
  // would not step up was the burst taken for a protocol switch, and goes.
  if (line.step_bytes > 0) {
    line.intercept_above = y[n - 1] - slope * x[n - 1];
    if (line.intercept_above <= line.intercept) line.step_bytes = line.step_next = line.intercept_above = 0;
  }
  std::vector<double> xs, ys;
  for (std::size_t i = 0; i < n; ++i)
    if ((f.is_beyond[i] && f.beyond) == beyond) xs.push_back(x[i]), ys.push_back(y[i]);
  residuals(line, xs, ys);
  return true;
}

std::vector<LatencyPoint> latency_points(std::span<const double> x, std::span<const double> y, double slope) {
  check(x, y);
  std::vector<LatencyPoint> out;
  for (std::size_t i = 0; i < x.size() && x[i] <= kLatencyTableBytes; ++i) {
    const double transfer = x[i] * slope, alpha = y[i] - transfer;
    if (alpha <= 0) continue;  // all transfer: no latency to read off
    if (out.empty() || x[i] > out.back().bytes) out.push_back({x[i], alpha});
    if (transfer >= 0.5 * y[i]) break;
  }
  // Latency does not fall as messages grow: pool adjacent points that say it does (the
  // least-squares non-decreasing fit), so one noisy size cannot bend the curve.
  struct Block {
    double sum;
    std::size_t n;
  };
  std::vector<Block> blocks;
  for (const auto& p : out) {
    blocks.push_back({p.alpha_us, 1});
    while (blocks.size() >= 2 && blocks[blocks.size() - 2].sum / static_cast<double>(blocks[blocks.size() - 2].n) >
                                     blocks.back().sum / static_cast<double>(blocks.back().n)) {
      blocks[blocks.size() - 2].sum += blocks.back().sum;
      blocks[blocks.size() - 2].n += blocks.back().n;
      blocks.pop_back();
    }
  }
  std::size_t i = 0;
  for (const auto& b : blocks)
    for (std::size_t k = 0; k < b.n; ++k) out[i++].alpha_us = b.sum / static_cast<double>(b.n);
  return out;
}

std::vector<WritebackPoint> writeback_points(std::span<const double> x, std::span<const double> in_place,
                                             std::span<const double> aside) {
  check(x, in_place);
  check(x, aside);
  std::vector<WritebackPoint> out;
  for (std::size_t i = 0; i < x.size(); ++i) out.push_back({x[i], std::max(0.0, in_place[i] - aside[i]) / x[i]});
  return out;
}

}  // namespace arlab::calib

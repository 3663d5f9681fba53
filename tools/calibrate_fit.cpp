#include "calibrate_fit.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>

namespace arlab::tool {

LineFit fit_line(std::span<const double> x, std::span<const double> y) {
  if (x.size() != y.size()) throw std::invalid_argument("fit_line: x and y differ in length");
  const std::size_t n = x.size();
  for (double v : y)
    if (!(v > 0) || !std::isfinite(v)) throw std::invalid_argument("fit_line: times must be positive");
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
  if (f.intercept < 0) {  // through the origin: minimise sum (1 - slope x / y)^2
    double sr = 0, srr = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double r = x[i] / y[i];
      sr += r;
      srr += r * r;
    }
    f.intercept = 0;
    f.slope = sr / srr;
    f.clamped = true;
  }

  double mean = 0;
  for (double v : y) mean += v / static_cast<double>(n);
  double ss_res = 0, ss_tot = 0, rel2 = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const double e = y[i] - f.at(x[i]);
    ss_res += e * e;
    ss_tot += (y[i] - mean) * (y[i] - mean);
    rel2 += (e / y[i]) * (e / y[i]);
    f.max_rel = std::max(f.max_rel, std::fabs(e / y[i]));
  }
  f.r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : 1;
  f.rms_rel = std::sqrt(rel2 / static_cast<double>(n));
  return f;
}

}  // namespace arlab::tool

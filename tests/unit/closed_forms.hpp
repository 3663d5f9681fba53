// The test oracle: textbook closed forms of the all-reduce algorithms on a uniform network
// (Thakur, Rabenseifner, Gropp 2005; DESIGN.md), unpipelined. Only tests use these; arlab
// itself predicts every time by walking the schedules.
#pragma once

#include <cmath>

#include "arlab/arlab.hpp"

namespace arlab::test {

struct Uniform {
  double alpha;  // us per message
  double beta;   // us per byte
  double gamma;  // us per byte reduced
};

inline int floor_log2(int p) {
  int l = 0;
  while ((2 << l) <= p) ++l;
  return l;
}

// Predicted time of `a` for p ranks and n bytes; NaN for algorithms without a closed form.
// Non-powers of two fold the extra ranks first: 2 alpha + 2n beta + n gamma.
inline double closed_form(Algorithm a, int p, double n, const Uniform& u) {
  const int lg = floor_log2(p);
  const bool pof2 = (1 << lg) == p;
  const double fold = pof2 ? 0 : 2 * u.alpha + 2 * n * u.beta + n * u.gamma;
  const double q = 1 << lg;  // ranks in the butterfly
  switch (a) {
    case Algorithm::Ring:
      return 2 * (p - 1) * u.alpha + 2 * n * (p - 1) / p * u.beta + n * (p - 1) / p * u.gamma;
    case Algorithm::RecursiveDoubling:
      return lg * (u.alpha + n * u.beta + n * u.gamma) + fold;
    case Algorithm::Rabenseifner:
      return 2 * lg * u.alpha + 2 * n * (q - 1) / q * u.beta + n * (q - 1) / q * u.gamma + fold;
    default:
      return NAN;
  }
}

}  // namespace arlab::test

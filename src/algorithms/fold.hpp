// Non-power-of-two rank counts for the butterfly algorithms (recursive doubling, Rabenseifner).
//
// With p = p' + e ranks, p' the largest power of two <= p, the first 2e ranks pair up: each
// even rank 2i sends its whole vector to 2i+1, which reduces it, and then sits out while the
// remaining p' ranks run the power-of-two algorithm; at the end 2i+1 sends the result back.
// Cost: alpha + n*beta + n*gamma before, alpha + n*beta after (Thakur, Rabenseifner, Gropp 2005).
#pragma once

#include "schedule/schedule.hpp"

namespace arlab::detail {

struct Fold {
  int pof2 = 1;    // ranks in the butterfly
  int extra = 0;   // e = p - pof2
  int newrank = -1;  // position in the butterfly, -1 for a rank that sits out

  explicit Fold(const Shape& s) {
    while (pof2 * 2 <= s.nranks) pof2 *= 2;
    extra = s.nranks - pof2;
    if (s.rank < 2 * extra)
      newrank = s.rank % 2 == 0 ? -1 : s.rank / 2;
    else
      newrank = s.rank - extra;
  }
  // The real rank of butterfly position `nr`.
  int real(int nr) const { return nr < extra ? 2 * nr + 1 : nr + extra; }
};

// Emits the fold-in steps; returns the step after which this rank's Output holds the folded
// vector (or, for a rank that sits out, the step after which it only waits for the result).
inline ScheduleBuilder::Deps fold_in(ScheduleBuilder& b, const Shape& s, const Fold& f) {
  if (s.rank >= 2 * f.extra) return {};
  const Region all = out_region(0, s.count);
  if (f.newrank < 0) return {b.send(s.rank + 1, all)};
  auto r = b.recv(s.rank - 1, tmp_region(0, s.count));
  return {b.reduce(all, tmp_region(0, s.count), {r})};
}

// Emits the fold-out steps after `done` (the steps that finish the butterfly on this rank).
inline void fold_out(ScheduleBuilder& b, const Shape& s, const Fold& f,
                     const ScheduleBuilder::Deps& done) {
  if (s.rank >= 2 * f.extra) return;
  const Region all = out_region(0, s.count);
  if (f.newrank < 0)
    b.recv(s.rank + 1, all, done);
  else
    b.send(s.rank - 1, all, done);
}

}  // namespace arlab::detail

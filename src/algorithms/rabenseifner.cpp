// Rabenseifner's all-reduce: reduce-scatter by recursive halving, allgather by recursive doubling.
//
// Idea: in each of log2 p halving steps a rank keeps one half of its current window of blocks,
// sends the other half to its partner and reduces the partner's copy of the kept half; the
// windows halve until rank r owns block r, fully reduced. The allgather retraces the steps in
// reverse, doubling the window each time. Bandwidth like the ring, latency like recursive
// doubling: the usual choice for medium messages. Non-powers of two fold first (fold.hpp).
//
// Picture, p = 4, blocks 0..3, window shown per rank:
//
//   halving, distance 2   r0:[0 1] r1:[0 1] r2:[2 3] r3:[2 3]   (r0<->r2, r1<->r3)
//   halving, distance 1   r0:[0]   r1:[1]   r2:[2]   r3:[3]     (r0<->r1, r2<->r3)
//   doubling, distance 1  r0:[0 1] r1:[0 1] r2:[2 3] r3:[2 3]
//   doubling, distance 2  everyone: [0 1 2 3]
//
// Cost: 2 log p alpha + 2n(p-1)/p beta + n(p-1)/p gamma (+ fold: 2 alpha + 2n beta + n gamma).
#include "algorithms/fold.hpp"
#include "algorithms/registry.hpp"

namespace arlab::detail {

Schedule build_rabenseifner(const Shape& s) {
  ScheduleBuilder b;
  if (s.nranks == 1) return b.finish();
  const Fold f(s);
  ScheduleBuilder::Deps done = fold_in(b, s, f);
  if (f.newrank >= 0) {
    const int me = f.newrank;
    const Blocks blocks{s.count, static_cast<std::size_t>(f.pof2)};
    auto span = [&](int lo, int hi, Buffer buf) {
      return Region{buf, blocks.offset(lo), blocks.offset(hi) - blocks.offset(lo)};
    };
    int lo = 0, hi = f.pof2;  // current window of blocks [lo, hi)
    ScheduleBuilder::Deps sends;
    for (int mask = f.pof2 / 2; mask >= 1; mask /= 2) {
      const int peer = f.real(me ^ mask), mid = (lo + hi) / 2;
      const bool low = (me & mask) == 0;
      const int keep_lo = low ? lo : mid, keep_hi = low ? mid : hi;
      const int give_lo = low ? mid : lo, give_hi = low ? hi : mid;
      sends.push_back(b.send(peer, span(give_lo, give_hi, Buffer::Output), done));
      const Region staging = span(keep_lo, keep_hi, Buffer::Scratch);
      const auto got = b.recv(peer, staging, done);
      done = {b.reduce(span(keep_lo, keep_hi, Buffer::Output), staging, {got})};
      lo = keep_lo;
      hi = keep_hi;
    }
    // The allgather overwrites regions sent during the halving: wait for those sends.
    ScheduleBuilder::Deps free = sends;
    for (int mask = 1; mask < f.pof2; mask *= 2) {
      const int peer = f.real(me ^ mask), width = hi - lo;
      const bool low = (me & mask) == 0;
      const int other_lo = low ? hi : lo - width, other_hi = low ? hi + width : lo;
      const auto sent = b.send(peer, span(lo, hi, Buffer::Output), done);
      free.insert(free.end(), done.begin(), done.end());
      const auto got = b.recv(peer, span(other_lo, other_hi, Buffer::Output), free);
      done = {sent, got};
      lo = std::min(lo, other_lo);
      hi = std::max(hi, other_hi);
    }
  }
  fold_out(b, s, f, done);
  return b.finish();
}

}  // namespace arlab::detail

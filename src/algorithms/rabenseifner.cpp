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
// Across nodes each half goes in chunk-sized pieces, each piece's send posted beside its
// receive (Shape::pieces_to; all sends first, then the receives, took 1.6x as long over
// Open MPI's TCP path).
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
      // Across nodes each half goes in pieces (Shape::pieces_to); the peer cuts the half it
      // keeps, which is the one this rank gives, the same way.
      const Region give = span(give_lo, give_hi, Buffer::Output), staging = span(keep_lo, keep_hi, Buffer::Scratch);
      const Region keep = span(keep_lo, keep_hi, Buffer::Output);
      const std::size_t give_parts = s.pieces_to(peer, give.count);
      const std::size_t keep_parts = s.pieces_to(peer, keep.count);
      ScheduleBuilder::Deps reduced;
      for (std::size_t j = 0; j < std::max(give_parts, keep_parts); ++j) {
        if (j < give_parts) sends.push_back(b.send(peer, piece(give, give_parts, j), done));
        if (j >= keep_parts) continue;
        const auto got = b.recv(peer, piece(staging, keep_parts, j), done);
        reduced.push_back(b.reduce(piece(keep, keep_parts, j), piece(staging, keep_parts, j), {got}));
      }
      done = std::move(reduced);
      lo = keep_lo;
      hi = keep_hi;
    }
    // The allgather overwrites regions sent during the halving: wait for those sends.
    ScheduleBuilder::Deps free = sends;
    for (int mask = 1; mask < f.pof2; mask *= 2) {
      const int peer = f.real(me ^ mask), width = hi - lo;
      const bool low = (me & mask) == 0;
      const int other_lo = low ? hi : lo - width, other_hi = low ? hi + width : lo;
      const Region mine = span(lo, hi, Buffer::Output), theirs = span(other_lo, other_hi, Buffer::Output);
      const std::size_t send_parts = s.pieces_to(peer, mine.count), recv_parts = s.pieces_to(peer, theirs.count);
      free.insert(free.end(), done.begin(), done.end());
      ScheduleBuilder::Deps moved;
      for (std::size_t j = 0; j < std::max(send_parts, recv_parts); ++j) {
        if (j < send_parts) moved.push_back(b.send(peer, piece(mine, send_parts, j), done));
        if (j < recv_parts) moved.push_back(b.recv(peer, piece(theirs, recv_parts, j), free));
      }
      done = std::move(moved);
      lo = std::min(lo, other_lo);
      hi = std::max(hi, other_hi);
    }
  }
  fold_out(b, s, f, done);
  return b.finish();
}

}  // namespace arlab::detail

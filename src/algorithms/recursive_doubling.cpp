// Recursive doubling all-reduce.
//
// Idea: in step k every rank exchanges its whole current vector with the partner whose rank
// differs in bit k and reduces what it receives. After log2 p steps every rank has summed
// every other. Fewest steps of any algorithm, but each step moves the whole vector, so it
// suits small messages. Non-powers of two fold the extra ranks in first (fold.hpp).
//
// Picture, p = 4, partner = r xor 2^k; {..} = ranks summed so far:
//
//   step 0   r0 <-> r1    r2 <-> r3      r0,r1: {0,1}    r2,r3: {2,3}
//   step 1   r0 <-> r2    r1 <-> r3      everyone: {0,1,2,3}
//
// Across nodes each exchange goes in chunk-sized pieces, each piece's send posted beside its
// receive and reduced on arrival (Shape::pieces_to): whole, two ranks' messages through one
// node's port moved at about 2/3 of its rate over TCP.
//
// Cost: log p alpha + n log p beta + n log p gamma (+ fold: 2 alpha + 2n beta + n gamma).
#include "algorithms/fold.hpp"
#include "algorithms/registry.hpp"

namespace arlab::detail {

Schedule build_recursive_doubling(const Shape& s) {
  ScheduleBuilder b;
  if (s.nranks == 1) return b.finish();
  const Fold f(s);
  ScheduleBuilder::Deps done = fold_in(b, s, f);
  if (f.newrank >= 0) {
    const Region all = out_region(0, s.count), staging = tmp_region(0, s.count);
    for (int mask = 1; mask < f.pof2; mask <<= 1) {
      const int peer = f.real(f.newrank ^ mask);
      const std::size_t parts = s.pieces_to(peer, s.count);  // across nodes: pieces
      ScheduleBuilder::Deps reduced;
      for (std::size_t j = 0; j < parts; ++j) {
        const Region mine = piece(all, parts, j), theirs = piece(staging, parts, j);
        const auto sent = b.send(peer, mine, done);
        // The staging buffer is free again once the previous reduction has consumed it.
        const auto got = b.recv(peer, theirs, done);
        // Reduce in place only after the send of the same data has completed.
        reduced.push_back(b.reduce(mine, theirs, {got, sent}));
      }
      done = std::move(reduced);
    }
  }
  fold_out(b, s, f, done);
  return b.finish();
}

}  // namespace arlab::detail

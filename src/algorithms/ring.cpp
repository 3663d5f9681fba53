// Ring all-reduce: reduce-scatter then allgather around a ring.
//
// Idea: cut the vector into p blocks. In p-1 reduce-scatter steps every rank sends one block
// to its right neighbour and reduces the block arriving from its left, so that after them
// rank r holds block r+1 fully reduced. In p-1 allgather steps the reduced blocks travel
// round once more. Every link carries the same load at every step, which is why the ring is
// bandwidth-optimal. Each block is cut further into chunks of `chunk_bytes` that move through
// the steps independently, so several chunks are in flight and reduction overlaps transfer.
//
// Picture, p = 4, block b written [b]; step k of rank r sends block r-k (mod 4):
//
//   reduce-scatter  r0     r1     r2     r3          allgather  r0     r1     r2     r3
//   step 0          [0]->  [1]->  [2]->  [3]->0      step 0     [1]->  [2]->  [3]->  [0]->0
//   step 1          [3]->  [0]->  [1]->  [2]->0      step 1     [0]->  [1]->  [2]->  [3]->0
//   step 2          [2]->  [3]->  [0]->  [1]->0      step 2     [3]->  [0]->  [1]->  [2]->0
//   after: r holds block r+1 reduced                 after: every rank holds every block
//
// Cost (n bytes, not pipelined): 2(p-1) alpha + 2n(p-1)/p beta + n(p-1)/p gamma.
#include "algorithms/registry.hpp"

namespace arlab::detail {

Schedule build_ring(const Shape& s) { return build_ring_phases(s, RingPhases::Both); }

Schedule build_ring_phases(const Shape& s, RingPhases phases) {
  const bool rs = phases != RingPhases::Allgather, ag = phases != RingPhases::ReduceScatter;
  ScheduleBuilder b;
  const int p = s.nranks, r = s.rank;
  if (p == 1) return b.finish();
  const int right = (r + 1) % p, left = (r + p - 1) % p;
  const Blocks blocks{s.count, static_cast<std::size_t>(p)};
  // Every block is cut into the same number of chunks, so chunk j of each step lines up.
  const std::size_t chunks = std::max<std::size_t>(
      1, (blocks.size(0) + s.chunk_elems() - 1) / s.chunk_elems());
  auto block_of = [&](int k) { return static_cast<std::size_t>(((k % p) + p) % p); };
  auto chunk = [&](std::size_t blk, std::size_t j, Buffer buf) {
    const Blocks within{blocks.size(blk), chunks};
    return Region{buf, blocks.offset(blk) + within.offset(j), within.size(j)};
  };

  using Id = ScheduleBuilder::Id;
  std::vector<Id> last(chunks), sent(chunks);  // per chunk: the step that made it, the send
  std::vector<std::vector<Id>> rs_sends(p - 1, std::vector<Id>(chunks));

  // Reduce-scatter: send block r-k, receive block r-k-1 and reduce it into place.
  for (int k = 0; k < p - 1 && rs; ++k) {
    const std::size_t out_blk = block_of(r - k), in_blk = block_of(r - k - 1);
    for (std::size_t j = 0; j < chunks; ++j) {
      const ScheduleBuilder::Deps after = k == 0 ? ScheduleBuilder::Deps{} : ScheduleBuilder::Deps{last[j]};
      rs_sends[k][j] = b.send(right, chunk(out_blk, j, Buffer::Output), after);
      // Staging lies at the block's own offset in Scratch: each block arrives once here.
      const Region staging = chunk(in_blk, j, Buffer::Scratch);
      const Id got = b.recv(left, staging);
      last[j] = b.reduce(chunk(in_blk, j, Buffer::Output), staging, {got});
    }
  }
  // Allgather: send block r+1-k, receive block r-k over the copy sent in reduce-scatter step k
  // (alone, the allgather starts from the reduce-scatter's result: whoever composes it orders
  // it after what came before).
  for (int k = 0; k < p - 1 && ag; ++k) {
    const std::size_t out_blk = block_of(r + 1 - k), in_blk = block_of(r - k);
    for (std::size_t j = 0; j < chunks; ++j) {
      const ScheduleBuilder::Deps after =
          rs || k > 0 ? ScheduleBuilder::Deps{last[j]} : ScheduleBuilder::Deps{};
      b.send(right, chunk(out_blk, j, Buffer::Output), after);
      last[j] = b.recv(left, chunk(in_blk, j, Buffer::Output),
                       rs ? ScheduleBuilder::Deps{rs_sends[k][j]} : ScheduleBuilder::Deps{});
    }
  }
  return b.finish();
}

}  // namespace arlab::detail

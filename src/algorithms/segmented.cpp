// Segmented runs: a large call as a sequence of all-reduces of consecutive pieces of it.
//
// Idea: every algorithm passes over its buffers several times (send a block, receive into
// scratch, reduce, send the result on, receive the others' results). Once a call's buffers
// outgrow the caches, each of those passes streams from memory. Cut the call into segments of
// Shape::segment_bytes and run the algorithm on one segment after another: a segment's later
// passes then find it in cache, and only its first read and its last write go to memory. A
// segment starts on a rank once every segment two or more before it has finished there, so at
// most two are in flight (one drains while the next fills its pipeline); they alternate
// between two halves of the scratch. Every rank cuts the same segments, so the k-th message
// of a channel is the same one at both ends, as in any schedule.
//
// Picture, 5 segments, each a row of its scratch half (--> : starts after ... has finished on
// this rank):
//
//   buffer   [ s0 | s1 | s2 | s3 | s4 ]
//   half 0     s0 ------> s2 ------> s4      s2 after s0, s4 after s2 and s1
//   half 1          s1 ------> s3            s3 after s1 and s0
//
// Cost: the segments' costs at the in-cache rates (neighbours overlapping), plus streaming the
// buffers once from memory and back (predict(), model/cost_walk.cpp). Where the whole call
// would run in cache anyway, only the segments' extra latencies change: so it is used only
// for calls of at least Shape::kMinSegments segments.
#include <algorithm>

#include "algorithms/registry.hpp"

namespace arlab::detail {

Schedule build_schedule(const AlgorithmInfo& algo, const Shape& shape) {
  const std::size_t parts = shape.segments();
  if (parts <= 1) return algo.build(shape);
  const Blocks segment{shape.count, parts};
  std::vector<Schedule> pieces(parts);
  std::size_t half = 0;  // scratch elements of the largest segment
  for (std::size_t k = 0; k < parts; ++k) {
    Shape s = shape;
    s.count = segment.size(k);
    s.segment_bytes = 0;
    pieces[k] = algo.build(s);
    half = std::max(half, pieces[k].scratch_count);
  }

  Schedule out;
  out.scratch_count = 2 * half;
  // The last steps of the segments three, two and one before this one.
  std::vector<std::uint32_t> three_before, two_before, one_before;
  for (std::size_t k = 0; k < parts; ++k) {
    const auto base = static_cast<std::uint32_t>(out.steps.size());
    auto shift = [&](Region& r) {
      if (r.buffer == Buffer::Scratch) r.offset += (k % 2) * half;
      else r.offset += segment.offset(k);
    };
    std::vector<bool> waited_for(pieces[k].steps.size(), false);
    for (Step step : pieces[k].steps) {
      shift(step.src);
      shift(step.dst);
      shift(step.aux);
      for (auto& d : step.deps) waited_for[d] = true, d += base;
      // A step that waits for nothing waits for the segments two and three before (and so,
      // through theirs, for all before them): the one two before used this scratch half, and
      // with the one three before done no more than two segments are ever in flight. Every
      // step of a segment follows one of those first steps.
      if (step.deps.empty()) {
        step.deps = two_before;
        step.deps.insert(step.deps.end(), three_before.begin(), three_before.end());
      }
      out.steps.push_back(std::move(step));
    }
    std::vector<std::uint32_t> last;  // the steps no step of this segment waits for
    for (std::uint32_t i = 0; i < waited_for.size(); ++i)
      if (!waited_for[i]) last.push_back(base + i);
    if (last.empty()) last = two_before;  // no steps: what it would have waited for stands in
    three_before = std::move(two_before);
    two_before = std::move(one_before);
    one_before = std::move(last);
  }
  return out;
}

}  // namespace arlab::detail

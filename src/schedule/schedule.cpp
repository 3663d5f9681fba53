// ScheduleBuilder, block partitioning and the out-of-place lowering.
#include "schedule/schedule.hpp"

#include <algorithm>
#include <map>

namespace arlab::detail {

std::size_t Shape::chunk_elems() const {
  if (chunk_bytes == 0 || elem_size == 0) return std::max<std::size_t>(count, 1);
  return std::max<std::size_t>(chunk_bytes / elem_size, 1);
}

int Shape::node_of(int r) const {
  if (!rank_to_node.empty()) return rank_to_node[static_cast<std::size_t>(r)];
  return ranks_per_node > 0 ? r / ranks_per_node : 0;
}

std::size_t Shape::pieces_to(int peer, std::size_t elems) const {
  if (!across_nodes(rank, peer) || chunk_bytes == 0) return 1;
  return std::max<std::size_t>(1, (elems + chunk_elems() - 1) / chunk_elems());
}

std::size_t Shape::segments() const {
  if (segment_bytes == 0 || nranks < 2) return 1;
  // Never smaller than a chunk per rank: a segment cut finer would only add steps and latency.
  const std::size_t size = std::max(segment_bytes, chunk_bytes * static_cast<std::size_t>(nranks));
  const std::size_t bytes = count * elem_size;
  if (bytes / kMinSegments < size) return 1;
  return std::min((bytes + size - 1) / size, count);  // never an empty one
}

std::size_t Blocks::offset(std::size_t i) const {
  const std::size_t base = count / parts, extra = count % parts;
  return i * base + std::min(i, extra);
}

ScheduleBuilder::Id ScheduleBuilder::add(Step step, const Deps& deps) {
  std::vector<std::uint32_t> resolved;
  for (Id d : deps) resolve(d, resolved);
  std::sort(resolved.begin(), resolved.end());
  resolved.erase(std::unique(resolved.begin(), resolved.end()), resolved.end());
  const bool empty = step.kind == StepKind::Send ? step.src.count == 0 : step.dst.count == 0;
  if (empty) {
    vanished_.push_back(std::move(resolved));
    return kVanished | static_cast<Id>(vanished_.size() - 1);
  }
  step.deps = std::move(resolved);
  for (const Region* r : {&step.src, &step.dst, &step.aux})
    if (r->buffer == Buffer::Scratch)
      schedule_.scratch_count = std::max(schedule_.scratch_count, r->offset + r->count);
  schedule_.steps.push_back(std::move(step));
  return static_cast<Id>(schedule_.steps.size() - 1);
}

void ScheduleBuilder::resolve(Id id, std::vector<std::uint32_t>& out) const {
  if (id & kVanished) {
    const auto& deps = vanished_[id & ~kVanished];
    out.insert(out.end(), deps.begin(), deps.end());
  } else {
    out.push_back(id);
  }
}

ScheduleBuilder::Id ScheduleBuilder::send(int peer, Region src, const Deps& deps) {
  return add(Step{StepKind::Send, peer, src, {}, {}, {}}, deps);
}

ScheduleBuilder::Id ScheduleBuilder::recv(int peer, Region dst, const Deps& deps) {
  return add(Step{StepKind::Recv, peer, {}, dst, {}, {}}, deps);
}

ScheduleBuilder::Id ScheduleBuilder::reduce(Region dst, Region staging, const Deps& deps) {
  return add(Step{StepKind::Reduce, -1, dst, dst, staging, {}}, deps);
}

ScheduleBuilder::Id ScheduleBuilder::copy(Region src, Region dst, const Deps& deps) {
  return add(Step{StepKind::Copy, -1, src, dst, {}, {}}, deps);
}

namespace {

// Which Output elements have been written so far, as disjoint [begin, end) intervals.
class Written {
 public:
  // 0: none of [b, e) written, 1: all of it, -1: partly.
  int state(std::size_t b, std::size_t e) const {
    std::size_t covered = 0;
    auto it = spans_.upper_bound(b);
    if (it != spans_.begin()) --it;
    for (; it != spans_.end() && it->first < e; ++it)
      if (it->second > b) covered += std::min(e, it->second) - std::max(b, it->first);
    return covered == 0 ? 0 : covered == e - b ? 1 : -1;
  }
  void add(std::size_t b, std::size_t e) {
    auto it = spans_.upper_bound(b);
    if (it != spans_.begin() && std::prev(it)->second >= b) --it;
    while (it != spans_.end() && it->first <= e) {
      b = std::min(b, it->first);
      e = std::max(e, it->second);
      it = spans_.erase(it);
    }
    spans_.emplace(b, e);
  }
  // The gaps in [0, count).
  std::vector<std::pair<std::size_t, std::size_t>> gaps(std::size_t count) const {
    std::vector<std::pair<std::size_t, std::size_t>> out;
    std::size_t at = 0;
    for (auto [b, e] : spans_) {
      if (b > at) out.emplace_back(at, b);
      at = std::max(at, e);
    }
    if (at < count) out.emplace_back(at, count);
    return out;
  }

 private:
  std::map<std::size_t, std::size_t> spans_;
};

}  // namespace

// The builders write every schedule in place (all data in Output) and order each rank's steps
// so that a step that reads an element comes after the step that wrote it. Walking the steps
// in that order, a read of an Output element that nothing has written yet is a read of the
// rank's own contribution, which out of place lives in Input. A read of a partly written
// region is resolved by a copy of the unwritten part first; elements no step writes at all
// are copied at the end.
Schedule lower_out_of_place(const Schedule& in, std::size_t count) {
  Schedule out;
  out.scratch_count = in.scratch_count;
  Written written;
  std::vector<std::uint32_t> index(in.steps.size());  // old step -> new step
  std::vector<std::uint32_t> fill_copies;            // copies inserted for partial reads

  auto redirect = [&](Region& r, std::vector<std::uint32_t>& deps) {
    if (r.buffer != Buffer::Output || r.count == 0) return;
    const int s = written.state(r.offset, r.offset + r.count);
    if (s == 0) {
      r.buffer = Buffer::Input;
    } else if (s < 0) {
      for (auto [b, e] : written.gaps(r.offset + r.count)) {
        if (e <= r.offset) continue;
        b = std::max(b, r.offset);
        out.steps.push_back(Step{StepKind::Copy, -1, {Buffer::Input, b, e - b},
                                 {Buffer::Output, b, e - b}, {}, {}});
        deps.push_back(static_cast<std::uint32_t>(out.steps.size() - 1));
        written.add(b, e);
      }
    }
  };

  for (std::size_t i = 0; i < in.steps.size(); ++i) {
    Step s = in.steps[i];
    for (auto& d : s.deps) d = index[d];
    if (s.kind != StepKind::Recv) redirect(s.src, s.deps);
    if (s.kind == StepKind::Reduce && s.aux.buffer == Buffer::Output) redirect(s.aux, s.deps);
    if (s.kind != StepKind::Send && s.dst.buffer == Buffer::Output)
      written.add(s.dst.offset, s.dst.offset + s.dst.count);
    out.steps.push_back(std::move(s));
    index[i] = static_cast<std::uint32_t>(out.steps.size() - 1);
  }
  // Elements the schedule never writes (p = 1, or the rank's own final block) are copied.
  for (auto [b, e] : written.gaps(count))
    out.steps.push_back(Step{StepKind::Copy, -1, {Buffer::Input, b, e - b},
                             {Buffer::Output, b, e - b}, {}, {}});
  return out;
}

const char* to_string(StepKind k) {
  switch (k) {
    case StepKind::Send: return "send";
    case StepKind::Recv: return "recv";
    case StepKind::Reduce: return "reduce";
    case StepKind::Copy: return "copy";
  }
  return "?";
}

const char* to_string(Buffer b) {
  switch (b) {
    case Buffer::Input: return "in";
    case Buffer::Output: return "out";
    case Buffer::Scratch: return "tmp";
  }
  return "?";
}

}  // namespace arlab::detail

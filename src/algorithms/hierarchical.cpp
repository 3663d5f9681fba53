// Hierarchical all-reduce: reduce-scatter inside each node, all-reduce across the nodes,
// allgather inside each node (as NCCL and Horovod compose it over a fast and a slow link).
//
// Idea: with N nodes of K ranks, cut the vector into K blocks. A ring reduce-scatter inside each
// node leaves local rank l holding block (l + 1) % K summed over its node. The K ranks with the
// same local index (one per node) then all-reduce that block among themselves with any flat
// algorithm (the inter-node level: ring, tree, recursive doubling or Rabenseifner, chosen by the
// cost model), so every rank's link to the network carries traffic at once, each for 1/K of
// the vector. A ring allgather inside each node spreads the finished blocks. The three levels
// are one schedule (each level's first steps wait for the level before on the same rank), so
// the validator, the cost walk, the printer and the executor see the whole.
//
// Picture, 2 nodes x 2 ranks (r0 r1 | r2 r3), blocks A B:
//
//   intra reduce-scatter   r0: B = B0+B1     r1: A = A0+A1   |  r2: B = B2+B3   r3: A = A2+A3
//   inter all-reduce       r0 <-> r2 on B                    r1 <-> r3 on A
//   intra allgather        r0 -> r1: B, r1 -> r0: A          r2 <-> r3 alike
//
// Cost (n bytes; ring at both levels, not pipelined; i = intra link, e = inter link):
//   2(K-1) (alpha_i + n/K beta_i) + n(K-1)/K gamma            inside the nodes
//   2(N-1) (alpha_e + n/(NK) beta_e) + n(N-1)/(NK) gamma      between them, K rings at once
// Each node's network traffic is K x 2(N-1)/N x n/K = 2n(N-1)/N each way, where a flat ring
// over all NK ranks sends 2n(NK-1)/(NK) through the one rank of each node that borders the
// next node, so the flat ring's slow link carries its whole share on one rank's port while
// the hierarchical one spreads it over K ports.
//
// Nodes of different sizes fall back to a leader per node: a binomial reduce to the node's
// first rank, the flat all-reduce among the leaders, a binomial broadcast back. Exact too, but
// the leaders' links carry everything.
#include <algorithm>
#include <map>

#include "algorithms/registry.hpp"

namespace arlab::detail {
namespace {

// Which ranks share a node, in rank order.
struct Nodes {
  std::vector<std::vector<int>> members;  // per node, ascending
  int node = 0, local = 0;                // this rank's
  bool uniform = true;                    // every node the same size

  explicit Nodes(const Shape& s) {
    std::map<int, std::vector<int>> by_node;
    for (int r = 0; r < s.nranks; ++r) by_node[s.node_of(r)].push_back(r);
    for (auto& [id, ranks] : by_node) {
      for (std::size_t i = 0; i < ranks.size(); ++i)
        if (ranks[i] == s.rank) node = static_cast<int>(members.size()), local = static_cast<int>(i);
      members.push_back(ranks);
    }
    for (const auto& m : members) uniform = uniform && m.size() == members.front().size();
  }
  // The ranks with local index l, one per node (uniform nodes only).
  std::vector<int> column(int l) const {
    std::vector<int> out;
    for (const auto& m : members) out.push_back(m[static_cast<std::size_t>(l)]);
    return out;
  }
};

// Appends `sub`, one rank's schedule of a collective among `group` (its peers are indices into
// `group`) on Output[out_offset, ...) and Scratch[scratch_offset, ...), after `entry`. Returns
// the steps of `sub` that nothing in it waits for: once they are done, all of it is.
std::vector<std::uint32_t> append(Schedule& out, const Schedule& sub, const std::vector<int>& group,
                                  std::size_t out_offset, std::size_t scratch_offset,
                                  const std::vector<std::uint32_t>& entry) {
  const auto base = static_cast<std::uint32_t>(out.steps.size());
  std::vector<bool> awaited(sub.steps.size(), false);
  for (const Step& step : sub.steps) {
    Step t = step;
    if (t.peer >= 0) t.peer = group[static_cast<std::size_t>(t.peer)];
    for (Region* r : {&t.src, &t.dst, &t.aux}) {
      if (r->count == 0) continue;
      r->offset += r->buffer == Buffer::Scratch ? scratch_offset : out_offset;
    }
    for (auto& d : t.deps) {
      awaited[d] = true;
      d += base;
    }
    if (step.deps.empty()) t.deps = entry;
    out.steps.push_back(std::move(t));
  }
  out.scratch_count = std::max(out.scratch_count, scratch_offset + sub.scratch_count);
  std::vector<std::uint32_t> sinks;
  for (std::size_t i = 0; i < sub.steps.size(); ++i)
    if (!awaited[i]) sinks.push_back(base + static_cast<std::uint32_t>(i));
  return sinks.empty() ? entry : sinks;
}

// A shape for `ranks` ranks of which this one is `rank`, on `count` elements: all on one node
// (a level inside the nodes), or with `across`, each on a node of its own (the level among
// them: its messages go in pieces, Shape::pieces_to).
Shape sub_shape(const Shape& s, int rank, int ranks, std::size_t count, bool across = false) {
  Shape t;
  t.rank = rank;
  t.nranks = ranks;
  t.count = count;
  t.elem_size = s.elem_size;
  t.chunk_bytes = s.chunk_bytes;
  t.ranks_per_node = across ? 1 : 0;
  return t;
}

Schedule flat(const Shape& s, const Shape& sub) {
  const AlgorithmInfo* info = find_schedule_algorithm(s.inter);
  if (!info || s.inter == Algorithm::Hierarchical) info = find_schedule_algorithm(Algorithm::Ring);
  return info->build(sub);
}

// Binomial reduce of the whole vector to local rank 0 (broadcast: the reverse), unpipelined.
Schedule binomial(const Shape& s, bool reduce) {
  ScheduleBuilder b;
  const int p = s.nranks, r = s.rank;
  const Region all = out_region(0, s.count), staging = tmp_region(0, s.count);
  ScheduleBuilder::Deps last;
  if (reduce) {
    for (int mask = 1; mask < p; mask <<= 1) {
      if (r & mask) {
        b.send(r - mask, all, last);
        break;
      }
      if (r + mask < p) {
        const auto got = b.recv(r + mask, staging, last);
        last = {b.reduce(all, staging, {got})};
      }
    }
  } else {
    int top = 1;
    while (top < p) top <<= 1;
    for (int mask = top >> 1; mask >= 1; mask >>= 1) {
      if (r % (2 * mask) == 0 && r + mask < p) last = {b.send(r + mask, all, last)};
      else if (r % (2 * mask) == mask) last = {b.recv(r - mask, all, last)};
    }
  }
  return b.finish();
}

}  // namespace

Schedule build_hierarchical(const Shape& s) {
  const Nodes nodes(s);
  Schedule out;
  const auto& mine = nodes.members[static_cast<std::size_t>(nodes.node)];
  const int k = static_cast<int>(mine.size()), n = static_cast<int>(nodes.members.size());
  if (nodes.uniform) {
    const Blocks blocks{s.count, static_cast<std::size_t>(k)};
    const std::size_t owned = static_cast<std::size_t>((nodes.local + 1) % k);
    auto entry = append(out, build_ring_phases(sub_shape(s, nodes.local, k, s.count), RingPhases::ReduceScatter), mine,
                        0, 0, {});
    entry = append(out, flat(s, sub_shape(s, nodes.node, n, blocks.size(owned), true)), nodes.column(nodes.local),
                   blocks.offset(owned), 0, entry);
    append(out, build_ring_phases(sub_shape(s, nodes.local, k, s.count), RingPhases::Allgather), mine, 0, 0, entry);
    return out;
  }
  // Nodes of different sizes: through each node's first rank.
  auto entry = append(out, binomial(sub_shape(s, nodes.local, k, s.count), true), mine, 0, 0, {});
  if (nodes.local == 0) {
    std::vector<int> leaders;
    for (const auto& m : nodes.members) leaders.push_back(m.front());
    entry = append(out, flat(s, sub_shape(s, nodes.node, n, s.count, true)), leaders, 0, 0, entry);
  }
  append(out, binomial(sub_shape(s, nodes.local, k, s.count), false), mine, 0, 0, entry);
  return out;
}

}  // namespace arlab::detail

// Double binary tree all-reduce (Sanders, Speck, Traeff 2009; NCCL 2.4).
//
// Idea: a binary tree reduces to its root and broadcasts back in 2 log p steps, but its
// leaves only send and its interior nodes carry twice their share. Two trees, each carrying
// half of the vector, with the leaves of one tree interior in the other, balance the load:
// every rank sends and receives about n bytes in all. Each half is cut into chunks that
// stream up and down the tree independently (pipelining), so for large n the time is close
// to n/bandwidth plus the depth of the tree in latencies.
//
// Picture, p = 4: tree 0 on the left (first half), tree 1 = mirror (second half):
//
//        0                 3            up:   leaves send their chunk to the parent, which
//        |                 |                  reduces and sends on; the root has the sum
//        2                 1            down: the root sends the sum back to its children,
//       / \               / \                 which forward it to theirs
//      1   3             2   0
//
// Cost (not pipelined, depth d = ceil(log2 p)): about 2 d alpha + n d beta + n d/2 gamma per
// tree, the two trees in parallel; pipelined in k chunks: (2d + k - 1)(alpha + n/(2k) beta).
#include "algorithms/tree.hpp"

#include "algorithms/registry.hpp"

namespace arlab::detail {

namespace {

// Tree 0 at virtual rank v (see tree.hpp).
TreeLinks binary_tree(int p, int v) {
  TreeLinks t;
  if (v == 0) {
    int top = 1;
    while (top < p) top <<= 1;
    if (p > 1) t.children[0] = top / 2;
    return t;
  }
  const int bit = v & -v;  // lowest set bit: the height of v in the tree
  t.parent = (v ^ bit) | (bit << 1);
  if (t.parent >= p) t.parent = v ^ bit;
  if (bit > 1) {
    t.children[0] = v - bit / 2;
    for (int low = bit / 2; low > 0; low /= 2)
      if (v + low < p) {
        t.children[1] = v + low;
        break;
      }
  }
  return t;
}

}  // namespace

TreeLinks double_tree_links(int p, int rank, int tree) {
  if (tree == 0) return binary_tree(p, rank);
  const bool mirror = p % 2 == 0;
  auto to_virtual = [&](int r) { return mirror ? p - 1 - r : (r - 1 + p) % p; };
  auto to_real = [&](int v) { return v < 0 ? -1 : mirror ? p - 1 - v : (v + 1) % p; };
  TreeLinks t = binary_tree(p, to_virtual(rank));
  t.parent = to_real(t.parent);
  for (int& c : t.children) c = to_real(c);
  return t;
}

Schedule build_tree(const Shape& s) {
  ScheduleBuilder b;
  if (s.nranks == 1) return b.finish();
  const Blocks halves{s.count, 2};
  const std::size_t chunks =
      std::max<std::size_t>(1, (halves.size(0) + s.chunk_elems() - 1) / s.chunk_elems());
  const TreeLinks links[2] = {double_tree_links(s.nranks, s.rank, 0),
                              double_tree_links(s.nranks, s.rank, 1)};
  // Chunks of the two trees interleave, so both trees make progress at once.
  for (std::size_t c = 0; c < chunks; ++c) {
    for (int t = 0; t < 2; ++t) {
      const TreeLinks& l = links[t];
      const Blocks within{halves.size(t), chunks};
      const std::size_t off = halves.offset(t) + within.offset(c), len = within.size(c);
      const Region data = out_region(off, len);
      // Up: reduce the children's partial sums into this rank's chunk, one child at a time.
      ScheduleBuilder::Deps ready;
      for (int i = 0; i < 2; ++i) {
        if (l.children[i] < 0) continue;
        const Region staging = tmp_region(i * s.count + off, len);  // one slot per child
        const auto got = b.recv(l.children[i], staging);
        ready.push_back(got);
        ready = {b.reduce(data, staging, ready)};
      }
      if (l.parent >= 0) {
        const auto up = b.send(l.parent, data, ready);
        // Down: the total replaces this rank's partial sum once the partial sum has left.
        ready = {b.recv(l.parent, data, {up})};
      }
      for (int child : l.children)
        if (child >= 0) b.send(child, data, ready);
    }
  }
  return b.finish();
}

}  // namespace arlab::detail

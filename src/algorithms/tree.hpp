// The two binary trees of the double binary tree (Sanders, Speck, Traeff 2009), as NCCL builds them.
#pragma once

namespace arlab::detail {

struct TreeLinks {
  int parent = -1;
  int children[2] = {-1, -1};
};

// Tree 0 on ranks 0..p-1: rank 0 is the root with one child; below it an in-order binary
// tree in which odd ranks are leaves. Tree 1 is tree 0 mirrored (p even) or shifted by one
// rank (p odd), so that a rank that is a leaf in one tree is interior in the other and no
// rank sends more than its share.
TreeLinks double_tree_links(int nranks, int rank, int tree);

}  // namespace arlab::detail

// The step IR: an algorithm is a pure function from a Shape to one rank's Schedule.
// One schedule feeds the executor, the symbolic validator and the cost walk.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "arlab/arlab.hpp"

namespace arlab::detail {

// Which buffer a region lies in. Input is the user's send buffer (read only; only present
// after out-of-place lowering), Output the user's receive buffer, Scratch arlab's own.
enum class Buffer : std::uint8_t { Input, Output, Scratch };

// A run of elements (not bytes) in one buffer.
struct Region {
  Buffer buffer = Buffer::Output;
  std::size_t offset = 0;
  std::size_t count = 0;
};

// Send:   send `src` to `peer`.
// Recv:   receive from `peer` into `dst`.
// Reduce: dst = src (op) aux, locally (a received value is reduced by a Recv into Scratch
//         followed by a Reduce that depends on it, so the two can be scheduled apart).
// Copy:   dst = src, locally.
enum class StepKind : std::uint8_t { Send, Recv, Reduce, Copy };

struct Step {
  StepKind kind = StepKind::Send;
  int peer = -1;
  Region src, dst, aux;
  std::vector<std::uint32_t> deps;  // indices of earlier steps of this rank
};

// The k-th Send from rank a to rank b matches the k-th Recv at b from a; both carry
// the same element count. Messages on one (a, b) channel are posted in schedule order.
struct Schedule {
  std::vector<Step> steps;
  std::size_t scratch_count = 0;  // elements of Scratch the schedule uses
};

// What a builder needs to know. Everything is in elements except chunk_bytes.
struct Shape {
  int rank = 0;
  int nranks = 1;
  std::size_t count = 0;
  std::size_t elem_size = 4;
  std::size_t chunk_bytes = 256 * 1024;  // pipelining unit; 0 means no pipelining
  // A call of at least kMinSegments segments of this many bytes (or of chunk_bytes per rank,
  // if more) runs as a sequence of all-reduces of one segment each (build_schedule,
  // algorithms/segmented.cpp); 0: never.
  std::size_t segment_bytes = 0;
  static constexpr std::size_t kMinSegments = 16;
  int ranks_per_node = 0;                // 0: all ranks on one node
  // The node of each rank, where the nodes are not blocks of ranks_per_node (or differ in
  // size); empty: blocks of ranks_per_node. Only hierarchical reads the nodes.
  std::vector<int> rank_to_node;
  // Hierarchical: the all-reduce among the nodes (a schedule algorithm; Auto: ring).
  Algorithm inter = Algorithm::Auto;

  // Elements per pipelined chunk (at least 1; the whole count when pipelining is off).
  std::size_t chunk_elems() const;
  // Rank r's node: rank_to_node, else blocks of ranks_per_node, else 0 (one node).
  int node_of(int r) const;
  bool across_nodes(int a, int b) const { return node_of(a) != node_of(b); }
  // How many messages an exchange of `elems` with `peer` is cut into: one within a node; across
  // nodes, chunk-sized pieces, all posted at once. Through a network port two whole messages
  // at once move at about 2/3 of its rate over Open MPI's and UCX's TCP paths, pieces at nearly
  // all of it (docs/hierarchical.md: recursive doubling at 4 MiB on the emulated 2 x 2
  // cluster took 124-138 ms whole and 74-81 ms in pieces, 72 predicted).
  std::size_t pieces_to(int peer, std::size_t elems) const;
  // How many segments the call runs in: 1 unless it holds at least kMinSegments segments
  // (and has two ranks), else its bytes / segment size rounded up (at most one per element).
  // The segment size is segment_bytes, or chunk_bytes x nranks where that is more.
  std::size_t segments() const;
};

// Builders append steps through this. A step that moves no data vanishes (both ends of an
// empty message vanish alike, since both compute the same sizes); a step that depends on a
// vanished step inherits the vanished step's own dependencies, so no ordering is lost.
class ScheduleBuilder {
 public:
  using Id = std::uint32_t;  // a step, or a vanished step standing for its dependencies
  using Deps = std::vector<Id>;

  Id send(int peer, Region src, const Deps& deps = {});
  Id recv(int peer, Region dst, const Deps& deps = {});
  // dst = dst (op) staging, after `deps`.
  Id reduce(Region dst, Region staging, const Deps& deps = {});
  Id copy(Region src, Region dst, const Deps& deps = {});
  Schedule finish() { return std::move(schedule_); }

 private:
  static constexpr Id kVanished = 0x80000000u;
  Id add(Step step, const Deps& deps);
  void resolve(Id id, std::vector<std::uint32_t>& out) const;
  Schedule schedule_;
  std::vector<std::vector<std::uint32_t>> vanished_;  // deps of each vanished step
};

inline Region out_region(std::size_t offset, std::size_t count) {
  return {Buffer::Output, offset, count};
}
inline Region tmp_region(std::size_t offset, std::size_t count) {
  return {Buffer::Scratch, offset, count};
}

// Rewrites an in-place schedule (all data in Output) for out-of-place use: the first read of
// every Output element reads Input instead, and elements no step writes are copied once.
Schedule lower_out_of_place(const Schedule& in_place, std::size_t count);

const char* to_string(StepKind);
const char* to_string(Buffer);

// Splits [0, count) into `parts` blocks, the first count % parts one element longer.
struct Blocks {
  std::size_t count;
  std::size_t parts;
  std::size_t offset(std::size_t i) const;
  std::size_t size(std::size_t i) const { return offset(i + 1) - offset(i); }
};

// Piece j of `r` cut into `parts` blocks.
inline Region piece(Region r, std::size_t parts, std::size_t j) {
  const Blocks cut{r.count, parts};
  return {r.buffer, r.offset + cut.offset(j), cut.size(j)};
}

}  // namespace arlab::detail

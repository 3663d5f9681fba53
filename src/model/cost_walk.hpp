// The cost walk: runs all ranks' schedules on a clock instead of data. Ranks sit on nodes
// (Machine::placement); a message crosses the intra- or the inter-node link class, arrives
// alpha + bytes * beta of that class after it starts, and occupies the sender's send port and
// the receiver's receive port for bytes * beta (the latency is in flight, so a rank streaming
// chunks pays alpha once per chain of dependent messages, not once per chunk). On a link
// copied by the CPUs (shared memory) the receiver's compute unit pulls the bytes in and runs
// the protocol: its receive port and that unit are held for alpha + bytes * beta, so there
// alpha is paid once per message, and the sender's port is not held. A reduction costs bytes * gamma on the rank's compute unit. Steps start when their dependencies are done
// and their resources are free. The prediction is when the last step finishes; its breakdown
// follows the critical path. The walk is the only source of predicted times in arlab; predict()
// first picks the machine's in-cache or beyond-cache rates for the call's working set.
#pragma once

#include <cstddef>
#include <vector>

#include "model/machine.hpp"
#include "schedule/schedule.hpp"

namespace arlab::detail {

struct AlgorithmInfo;

struct Cost {
  double total_us = 0;
  double latency_us = 0;    // alpha terms on the critical path
  double bandwidth_us = 0;  // beta terms (and waiting for a busy link)
  double reduce_us = 0;     // gamma terms (and copies)
  double inter_us = 0;      // of the total, the time the critical path spends on inter-node links
};

// The bytes one all-reduce of `count` elements keeps in the cache of its busiest node: each
// rank's input and output (count elements each out of place, one buffer in place) and its
// schedule's scratch,
// summed over the ranks of a node (Machine::node_working_set). Repeated calls on the same
// buffers cycle through exactly these; other data the program touches between calls is not
// counted.
double working_set_bytes(const std::vector<Schedule>& ranks, const Machine& machine, std::size_t count,
                         std::size_t elem_size, bool in_place = false);

// Builds every rank's schedule of `algo` for `shape` (rank ignored; build_schedule, so in
// segments where the shape says so), out of place lowered as the executor runs it
// (lower_out_of_place: the input is copied or read where the in-place schedule reads its
// output), picks the machine's rates for the call's working set (Machine::at_working_set: in
// cache or beyond it; for a segmented call, two segments' worth) and walks it, adding the
// machine's call_us once (to the total and the latency term). A segmented call also pays for
// streaming its buffers once from memory and back: copying count elements at the whole call's
// copy rate less at the segments' (reduce term).
// For hierarchical with Shape::inter Auto, the inter-node algorithm choose_inter() picks.
Cost predict(const AlgorithmInfo& algo, Shape shape, const Machine& machine, bool in_place = true);

// Hierarchical's algorithm among the nodes: the flat schedule algorithm whose composition the
// walk predicts fastest for this shape; `cost`, when given, gets that composition's cost.
Algorithm choose_inter(Shape shape, const Machine& machine, bool in_place, Cost* cost = nullptr);

}  // namespace arlab::detail

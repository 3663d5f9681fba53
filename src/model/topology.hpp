// Topology files: a machine described in YAML, loaded into a Machine for the cost walk.
//
//   name: two-node-example                  # required, a string
//   description: "..."                      # optional, free text
//   nodes: 2                                # required, integer >= 1
//   ranks_per_node: 4                       # required, integer >= 1
//   rank_to_node: [0, 1, 0, 1, 0, 1, 0, 1]  # optional: the node of each rank, in rank order;
//                                           #   nodes * ranks_per_node entries, each node
//                                           #   ranks_per_node times (default: block placement,
//                                           #   rank r on node r / ranks_per_node)
//   call_overhead_us: 0.15                  # optional, >= 0: per call, beyond its messages
//   state_probe_us: 0.16                    # optional, > 0: the machine's state when calibrated
//                                           #   (calibrate/state_probe.hpp); not in the model
//   cache_bytes: 33554432                   # optional, integer >= 1: one node's cache; a call
//                                           #   whose working set on a node reaches it runs at
//                                           #   the *_beyond_cache rates (cost_walk.hpp)
//   links:                                  # required
//     intra: { alpha_us: 0.7, bandwidth_GBps: 150 }  # ranks of one node: required unless
//                                                    #   ranks_per_node = 1 (then = inter)
//     inter: { alpha_us: 5.0, bandwidth_GBps: 25 }   # ranks of different nodes: required
//                                                    #   when nodes > 1 (else = intra)
//   reduce: { bandwidth_GBps: 1000 }        # required: output bytes reduced per second
//   copy: { bandwidth_GBps: 2000 }          # optional: bytes copied per second (default: reduce)
//
// A link may add a protocol switch (rendezvous_bytes: messages above it pay alpha_us_rendezvous)
// and measured latencies (latency_us: { 8: 0.34, 512: 0.75, 2048: 1.1 }: alpha at those message
// sizes, ascending, interpolated in log(bytes) up to the last one; LinkCost::alpha_for), and
// the cost of writing what the peer has just read (writeback_us_per_byte: { 32768: 8e-05, ... }:
// us per byte at those sizes, interpolated, the end values held; LinkCost::writeback).
// Each link, reduce and copy may add bandwidth_GBps_beyond_cache: its rate when the call's
// working set reaches cache_bytes (which it then requires); without it the rate is the same at
// every size. alpha_us >= 0 is the latency of one message in microseconds; bandwidth_GBps > 0 is
// one direction of one rank's link in 10^9 bytes per second (beta = 1 / bandwidth); every
// bandwidth lies in 1e-300..1e300 and byte counts are at most 2^53, so that what
// topology_yaml() writes back always reads again. Every error
// (malformed YAML, unknown or repeated key, missing field, wrong type, out-of-range value)
// throws Error(InvalidArgument) with "FILE:LINE:COLUMN: what is wrong", and for unknown keys
// the valid ones. docs/model.md documents the format and the shipped files in topology/.
#pragma once

#include <string>

#include "model/machine.hpp"

namespace arlab::detail {

// Loads and checks the file at `path`; the Machine's source is `path`.
Machine load_topology(const std::string& path);

// The same from text; `file_name` stands for the file in messages and in Machine::source.
Machine parse_topology(const std::string& text, const std::string& file_name = "<string>");

// A file that parse_topology() reads back into the same machine (every field; numbers with 17
// digits, so a rate comes back within an ulp, as bandwidth and back), without comments;
// `source` is not written. Throws Error(InvalidArgument) for what a file cannot say: fewer than
// 1 node or rank per node (the built-in machine's 0, any number of ranks on one node), a rate
// that is not positive and finite.
std::string topology_yaml(const Machine& m);

}  // namespace arlab::detail

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
//   links:                                  # required
//     intra: { alpha_us: 0.7, bandwidth_GBps: 150 }  # ranks of one node: required unless
//                                                    #   ranks_per_node = 1 (then = inter)
//     inter: { alpha_us: 5.0, bandwidth_GBps: 25 }   # ranks of different nodes: required
//                                                    #   when nodes > 1 (else = intra)
//   reduce: { bandwidth_GBps: 1000 }        # required: output bytes reduced per second
//   copy: { bandwidth_GBps: 2000 }          # optional: bytes copied per second (default: reduce)
//
// alpha_us >= 0 is the latency of one message in microseconds; bandwidth_GBps > 0 is one
// direction of one rank's link in 10^9 bytes per second (beta = 1 / bandwidth). Every error
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

}  // namespace arlab::detail

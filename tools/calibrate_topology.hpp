// arlab-calibrate's results, and the topology file they become (the format of
// src/model/topology.cpp, docs/model.md), with comments saying when, where and how each number
// was measured and how well its fit holds.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "calibrate_fit.hpp"

namespace arlab::tool {

// Working sets (bytes the measured ranks of the busiest node touch, compared with the cache):
// an exchange or ping-pong of n bytes uses a send and a receive buffer of n on each of the two
// ranks (4n when both are on one node, 2n per node across nodes); a reduction out = a + b uses
// 3n and a copy 2n on every rank of a node at once.
struct LinkCalibration {
  std::string link_class;  // "intra" or "inter"
  int rank_a = 0, rank_b = 1;
  int active_ranks = 2;     // ranks exchanging at once (--all-pairs: every rank with a pair)
  bool cpu_copies = false;  // within a node: shared memory, the receiving CPU copies (copied_by: cpu)
  std::vector<std::size_t> sizes;
  std::vector<double> working_set;  // per size
  std::vector<double> pingpong_us;  // one way, half a round trip
  std::vector<double> exchange_us;  // both ways at once
  double separate_run_us = 0;       // exchanges of sizes.front() bytes, one per executor run,
  double chained_run_us = 0;        // and chained in one run, per exchange (timed together)
  RegimeFit exchange;               // what the file gets: alpha, beta, beta beyond the cache
  RegimeFit pingpong;               // for comparison
  std::size_t stream_chunk = 0, stream_count = 0;
  double stream_one_way_GBps = 0, stream_both_ways_GBps = 0;  // per direction
};

struct ComputeCalibration {
  std::vector<std::size_t> sizes;
  std::vector<double> reduce_working_set, copy_working_set;  // per size
  std::vector<double> reduce_us, copy_us;                    // per call
  RegimeFit reduce, copy;  // slopes: gamma, copy cost per byte, in cache and beyond
  int concurrent_ranks = 1;  // ranks computing at once while measured
  int ranks_per_node = 1;    // of them, sharing one node's cache
};

struct Calibration {
  std::string name;
  std::string host, when, transport, mpi_library, command;
  std::string cpu;  // "AMD EPYC, 2 cores"
  int ranks = 2, nodes = 1, ranks_per_node = 2;
  int samples = 5;
  double sample_ms = 20;
  double cache_bytes = 0;    // the split between the regimes; 0: one regime
  std::string cache_source;  // where cache_bytes comes from
  std::optional<LinkCalibration> intra, inter;
  ComputeCalibration compute;

  // Whether any fit has a beyond-cache regime (then the file gets cache_bytes).
  bool two_regimes() const;
  // What one call costs beyond its messages: the first measured link's exchange run alone
  // (separate_run_us) less the same exchange in a chain (chained_run_us), at least 0.
  double call_overhead_us() const;
};

// 1 / (us per byte) in GB/s.
double GBps(double us_per_byte);

// The topology file: YAML that load_topology() accepts, every number with its provenance.
std::string topology_yaml(const Calibration&);

}  // namespace arlab::tool

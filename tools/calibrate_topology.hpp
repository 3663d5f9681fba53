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

struct LinkCalibration {
  std::string link_class;  // "intra" or "inter"
  int rank_a = 0, rank_b = 1;
  std::vector<std::size_t> sizes;
  std::vector<double> pingpong_us;  // one way, half a round trip
  std::vector<double> exchange_us;  // both ways at once
  LineFit exchange;                 // what the file gets: alpha and beta
  LineFit pingpong;                 // for comparison
  std::size_t stream_chunk = 0, stream_count = 0;
  double stream_one_way_GBps = 0, stream_both_ways_GBps = 0;  // per direction
};

struct ComputeCalibration {
  std::vector<std::size_t> sizes;
  std::vector<double> reduce_us, copy_us;  // per call
  LineFit reduce, copy;                    // slopes: gamma, copy cost per byte
  int concurrent_ranks = 1;                // ranks computing at once while measured
};

struct Calibration {
  std::string name;
  std::string host, when, transport, mpi_library, command;
  std::string cpu;  // "AMD EPYC, 2 cores"
  int ranks = 2, nodes = 1, ranks_per_node = 2;
  int samples = 5;
  double sample_ms = 20;
  std::optional<LinkCalibration> intra, inter;
  ComputeCalibration compute;
};

// 1 / (us per byte) in GB/s.
double GBps(double us_per_byte);

// The topology file: YAML that load_topology() accepts, every number with its provenance.
std::string topology_yaml(const Calibration&);

}  // namespace arlab::tool

// A calibration: what to measure (Settings), what was measured and fitted (Calibration), and
// the topology file it becomes (the format of src/model/topology.cpp, docs/model.md), with
// comments saying when, where and how each number was measured and how well its fit holds.
// arlab-calibrate and the communicators' self-calibration (calibrate/self_calibration.hpp)
// share all of it.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "arlab/arlab.hpp"
#include "calibrate/fit.hpp"

namespace arlab::calib {

// What a calibration measures, and how long it samples.
struct Settings {
  TransportKind transport = TransportKind::Mpi;
  std::string transport_name = "mpi";
  int ranks_per_node = 0;                  // 0: every rank on one node
  std::size_t min_bytes = 8;               // sizes MIN, MIN*FACTOR, ... <= MAX
  std::size_t max_bytes = std::size_t{64} << 20;
  std::size_t factor = 4;
  std::string name;                        // the machine's name; "": the host name
  std::optional<std::size_t> cache_bytes;  // none: the node's cache from sysfs; 0: one regime
  bool quick = false;                      // few sizes, short samples (tests)
  bool all_pairs = false;                  // every rank exchanges with its pair at once
  bool comparisons = true;                 // also ping-pong and streams (printed, not fitted)
  double sample_ms = 20;                   // target length of one timed sample
  int samples = 5;                         // timed samples per size (the median is kept)
  int long_samples = 0;                    // of a size whose one run outlasts a sample; 0: samples
  int compute_samples = 0;                 // of the reducer and copy sizes; 0: samples
  double timeout_s = 300;                  // a message that waits longer fails
  // Between nodes, stop the sweep before a size whose exchange would take longer than this
  // (sweep_within_time); 0: every size (arlab-calibrate). The self-calibration's budget.
  double slow_size_ms = 0;
};

// MIN, MIN*FACTOR, ... <= MAX; with `multiple` > 1, rounded down to multiples of it, zeros and
// repeats dropped.
std::vector<std::size_t> calibrate_sizes(const Settings&, std::size_t multiple = 1);
std::vector<std::size_t> geometric_sizes(std::size_t min_bytes, std::size_t max_bytes, std::size_t factor,
                                         std::size_t multiple);

// 8 -> "8 B", 4096 -> "4 KiB", 1 << 26 -> "64 MiB", 1.5 MiB -> "1.5 MiB".
std::string size_text(double bytes);

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
  // Both ways at once, what the fit uses: within a node (cpu_copies), exchanges timed one per
  // call less the call's own cost (call_us - chained_run_us); across nodes, in a chain.
  std::vector<double> exchange_us;
  std::vector<double> chained_exchange_us;  // within a node, for the report: in a chain
  double call_us = 0;               // one exchange of sizes.front() bytes timed as a call,
  double chained_run_us = 0;        // and per exchange in a chain (LinkBench::sweep)
  // Within a node: the call's own cost (call_us - chained_run_us) exceeded a chained exchange,
  // so exchange_us holds the chain (run.cpp, measure_link).
  bool calls_drowned = false;
  RegimeFit exchange;               // what the file gets: alpha, beta, beta beyond the cache
  RegimeFit pingpong;               // for comparison
  // Inter-node, with several ranks per node: a 4 MiB exchange with every rank paired across at
  // once, over one pair alone (shared_ratio); about ranks-per-node when the node's ranks share
  // one port (a NIC), about 1 when each has its own. Shared: shared_by: node, and the rates
  // are the lone pair's.
  double shared_ratio = 0;
  bool shared_by_node = false;
  // Within a node: an exchange then a reduction over the bytes just sent, against one over the
  // bytes just received, per round at each of these sizes (LinkBench::writeback): the cost of
  // writing what the peer has just read (writeback_us_per_byte).
  std::vector<std::size_t> writeback_sizes;
  std::vector<double> writeback_in_place_us, writeback_aside_us;
  // And the same with the write an exchange later (over what the peer read before it read
  // another buffer), against aside (writeback_later_us_per_byte).
  std::vector<double> writeback_later_us, writeback_later_aside_us;
  std::size_t stream_chunk = 0, stream_count = 0;
  double stream_one_way_GBps = 0, stream_both_ways_GBps = 0;  // per direction
};

struct ComputeCalibration {
  std::vector<std::size_t> sizes;
  std::vector<double> reduce_working_set, copy_working_set;  // per size
  std::vector<double> reduce_us, copy_us;                    // per call
  RegimeFit reduce, copy;  // slopes: gamma, copy cost per byte, in cache and beyond
  // The cache's edge (run.cpp, find_cache_edge): float sums at working sets around the sysfs
  // size; empty when not measured.
  std::vector<std::size_t> edge_sizes;
  std::vector<double> edge_reduce_us;
  int concurrent_ranks = 1;  // ranks computing at once while measured
  int ranks_per_node = 1;    // of them, sharing one node's cache
};

struct Calibration {
  std::string name;
  std::string host, when, transport, mpi_library, command;
  std::string cpu;  // "AMD EPYC, 2 cores"
  int ranks = 2, nodes = 1, ranks_per_node = 2;
  int samples = 5;
  int long_samples = 0;  // of a size whose one run outlasts a sample; 0: samples
  int compute_samples = 0;  // of the reducer and copy sizes; 0: samples
  double sample_ms = 20;
  double cache_bytes = 0;    // the split between the regimes; 0: one regime
  std::string cache_source;  // where cache_bytes comes from
  bool cache_edge_measured = false;  // cache_bytes found by measurement (run.cpp), not sysfs
  std::optional<LinkCalibration> intra, inter;
  ComputeCalibration compute;
  // The machine's state (state_probe.hpp) before the links, after them and after the compute;
  // empty when not probed. The file gets their median (state_probe_us).
  std::vector<double> state_probes_us;

  // The median of state_probes_us; 0 when not probed.
  double state_probe_us() const;
  // Whether the probes read the machine in two states: the calibration straddled a change.
  bool straddles_states() const;
  // The probes as text: "0.17, 0.16, 0.2".
  std::string state_probes_text() const;

  // Whether any fit has a beyond-cache regime (then the file gets cache_bytes).
  bool two_regimes() const;
  // What one call costs beyond its messages: the first measured link's exchange run alone
  // timed as a call (call_us) less the same exchange in a chain (chained_run_us), at least 0.
  double call_overhead_us() const;
};

// 1 / (us per byte) in GB/s.
double GBps(double us_per_byte);

// The topology file: YAML that load_topology() accepts, every number with its provenance.
std::string topology_yaml(const Calibration&);

}  // namespace arlab::calib

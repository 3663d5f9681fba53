// arlab-bench results: one table line per size x algorithm x transport (x type x op), holding
// the out-of-place and in-place measurements (nccl-tests' two sections) and the model's time.
#pragma once

#include <arlab/arlab.hpp>

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace arlab::bench {

// One timed loop. Each call is timed between barriers; the slowest rank's time counts.
struct Section {
  int iters = 0;          // timed calls
  double time_us = 0;     // the average of those per-call times
  double min_us = 0;      // the fastest and slowest call
  double max_us = 0;
  double algbw_GBps = 0;  // size / time_us, GB = 1e9 bytes
  double busbw_GBps = 0;  // algbw * 2(p-1)/p
  std::optional<std::uint64_t> wrong;  // wrong elements; absent when not checked (-c 0)
  // The machine's state just before these calls (calibrate/state_probe.hpp; with --rounds, the
  // median round's); 0: not probed.
  double state_probe_us = 0;
};

struct Line {
  std::size_t size = 0;   // bytes
  std::size_t count = 0;  // elements
  DataType dtype = DataType::Float32;
  ReduceOp op = ReduceOp::Sum;
  Algorithm algorithm = Algorithm::Auto;  // as asked for
  std::optional<Algorithm> pick;          // auto only: the algorithm it ran out of place, when known
  std::optional<Algorithm> pick_in_place; // and in place (the model may pick another there)
  TransportKind transport = TransportKind::Mpi;  // ignored for baselines
  int ranks = 1;
  std::optional<double> predicted_us;     // the cost model's time out of place, when it has one
  std::optional<double> predicted_in_place_us;  // and in place
  std::optional<Algorithm> model_pick;    // the model's fastest algorithm at this size (out of place)
  double calibrated_state_probe_us = 0;   // the state its model was calibrated in; 0: unknown
  std::optional<Section> out_of_place, in_place;

  // The section that stands for the line (winners, err% in summaries): out of place if run.
  const Section* main() const { return out_of_place ? &*out_of_place : in_place ? &*in_place : nullptr; }
};

// What the header says; --json repeats it.
struct RunInfo {
  std::string version;
  std::string command;                  // the bench's argv, shell-quoted
  int ranks = 1;
  int hosts = 1;                        // distinct shared-memory nodes (MPI_COMM_TYPE_SHARED)
  int model_nodes = 1;                  // the cost model's nodes and ranks per node
  int model_ranks_per_node = 1;
  std::string topology_name;            // the model's machine
  std::string topology_source;          // its file, or "built-in"
  // Without a topology file each transport's communicator finds its own machine (its
  // calibration, cached or measured): per transport, Plan::machine. Empty with a file.
  std::vector<std::pair<std::string, std::string>> machines;
  std::vector<std::string> transports;  // as run
  std::vector<std::string> algorithms;  // as run
  std::vector<std::string> dtypes, ops;
  int iters = 0, warmup = 0, rounds = 1;
  bool iters_fill = false;              // iters is the least; more fill kFillMs (at most kMaxAutoIters)
  bool fresh_input = false;
  bool check = true;
  bool device = false;                  // -D: the buffers are device memory
  std::string buffers;                  // "host memory", or the device's
  std::string timing;                   // one sentence on how times are taken
};

// "ring", or for auto "auto(ring)" with its pick ("auto(ring/rabenseifner)" when it picks
// another algorithm in place).
std::string label(const Line&);

// The section's own prediction and auto's pick there.
const std::optional<double>& predicted(const Line&, bool in_place);
std::optional<Algorithm> pick(const Line&, bool in_place);

// The baselines (mpi = MPI_Allreduce, nccl) bring their own communication: they run once per
// size, not once per arlab transport, and their transport reads "native".
bool is_baseline(Algorithm);
std::string transport_label(const Line&);

// 100 * (time - pred) / time for this section (`in_place` or not) against its own prediction
// (positive: the model is optimistic); absent without a prediction.
std::optional<double> err_pct(const Line&, const Section&, bool in_place);

// size / time in GB/s (1e9 bytes per second); 0 for a non-positive time.
double algbw_GBps(std::size_t bytes, double time_us);
// nccl-tests' bus bandwidth for all-reduce: algbw * 2(p-1)/p (0 for one rank).
double busbw_GBps(double algbw, int ranks);

// "8B", "1KiB", "64MiB", "3GiB"; sizes that are not a whole unit keep the smaller unit.
std::string format_bytes(std::size_t bytes);

}  // namespace arlab::bench

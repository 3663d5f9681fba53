// arlab-bench: the sweep. One Communicator per transport; for each type, op and size, for
// each transport and algorithm, one table line: the out-of-place and in-place sections
// (measure.hpp), the cost model's prediction and its error. With --rounds R the lines of a
// size are measured R times over, in turn, and each shows its median round. Rank 0 prints the table and
// writes --json and --csv after each size.
//
// Every decision that changes the sequence of collective calls (an error on some rank, a
// wrong count) is first agreed on by all ranks (agree.hpp), so the ranks never disagree on
// what to run next and all exit with the same status.
#pragma once

#include <arlab/arlab.hpp>

#include <cstdint>
#include <cstdio>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agree.hpp"
#include "buffers.hpp"
#include "call_buffers.hpp"
#include "check.hpp"
#include "header.hpp"
#include "model_setup.hpp"
#include "options.hpp"
#include "progress.hpp"
#include "results.hpp"

namespace arlab::bench {

constexpr int kExitOk = 0, kExitFailed = 1, kExitUsage = 2;

// A communicator over one transport, and what it no longer runs.
struct Channel {
  TransportKind kind = TransportKind::Mpi;
  std::unique_ptr<Communicator> comm;
  std::optional<Algorithm> forced;  // what auto runs when ARLAB_ALGO names an algorithm
  std::vector<Algorithm> dropped;   // failed here: not tried again
};

// The whole run on every rank; rank 0 prints and writes.
class Bench {
 public:
  Bench(const BenchOptions& o, MPI_Comm world, std::string command) : o_(o), world_(world) {
    rank_ = comm_rank(world);
    nranks_ = comm_size(world);
    info_.command = std::move(command);
  }

  // The exit status, the same on every rank.
  int run(std::optional<double> min_busbw);

  // Rank 0, after run(): the JSON file (--json, or a temporary one for --plot; "" for
  // neither), and whether any line ran (then there is something to plot).
  const std::string& json_path() const { return json_path_; }
  bool ran() const { return !lines_.empty(); }

 private:
  bool prepare_outputs();
  bool open_channels();
  void choose_algorithms();
  void fill_info();
  HeaderExtras extras() const;
  double step_weight(std::size_t bytes) const {
    return (o_.warmup + o_.iters + (o_.check ? 1 : 0)) * (static_cast<double>(bytes) + 65536.0);
  }
  void plan_progress();
  void sweep();
  struct Pending;
  // One size: every line (transport x algorithm; the baselines once) in o_.rounds interleaved
  // rounds, each running the line's sections in turn; then rank 0 prints the lines.
  using Plans = std::map<std::pair<TransportKind, bool>, Plan>;  // (transport, in place) -> plan
  void measure_size(DataType dtype, ReduceOp op, std::size_t size, const Checker& checker, const Plans& plans);
  void print_pending(const Pending& p, DataType dtype, ReduceOp op, std::size_t size, const Plans& plans);
  void drop(Channel& ch, Algorithm a, std::size_t size, const Failure& f);
  void write_outputs();
  int finish(std::optional<double> min_busbw);
  void out(const char* text) const {  // a comment line on stdout (rank 0, not with -q)
    if (rank_ != 0 || o_.quiet) return;
    progress_.clear();
    std::printf("# %s\n", text);
    std::fflush(stdout);
  }

  const BenchOptions& o_;
  MPI_Comm world_;
  int rank_ = 0, nranks_ = 1;
  std::map<DataType, std::vector<std::size_t>> sizes_;
  ModelSetup model_;
  std::vector<Channel> channels_;
  std::vector<Algorithm> algorithms_;   // the ones this build runs
  std::vector<std::string> notes_;      // for the header
  bool force_calibration_ = false;      // --calibrate without --ranks-per-node: SelfCalibration::Force
  std::string calibration_summary_;     // rank 0, --calibrate: the fitted machine, for the header
  CallBuffers buffers_;                 // every line's: host, or device with -D
  RunInfo info_;
  mutable Progress progress_{false, false};
  std::vector<Line> lines_;             // rank 0
  std::string json_path_;               // rank 0: --json, or a temporary file for --plot
  bool output_failed_ = false;          // rank 0
  std::uint64_t wrong_ = 0;             // every rank
  std::vector<std::string> failed_;     // every rank: "ring at 8B over ucx: message"
};

}  // namespace arlab::bench

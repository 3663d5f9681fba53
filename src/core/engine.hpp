// The engine behind a Communicator: argument checks, algorithm choice, the schedule cache,
// the executor. It knows its transport only through the Transport interface, so tests run it
// on loopback threads as well as over MPI.
#pragma once

#include <mpi.h>

#include <array>
#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <memory>
#include <set>
#include <tuple>
#include <vector>

#include "arlab/arlab.hpp"
#include "baseline/nccl_baseline.hpp"
#include "calibrate/self_calibration.hpp"
#include "core/progress.hpp"
#include "device/device_memory.hpp"
#include "device/staged_transport.hpp"
#include "exec/executor.hpp"
#include "model/machine.hpp"
#include "reduce/reducer.hpp"
#include "schedule/program.hpp"
#include "transport/transport.hpp"

namespace arlab::detail {

// The transport `o.transport` names (resolved options), over `comm`; Unavailable when this
// build lacks it.
std::unique_ptr<Transport> make_transport(const Options& o, MPI_Comm comm);

// Another transport over the same ranks whose messages never meet the others' (a lane,
// core/progress.hpp), over `comm`: a duplicate of the communicator that the engine made for
// it, or MPI_COMM_NULL without MPI. Collective: every rank makes it at the same point.
using LaneFactory = std::function<std::unique_ptr<Transport>(MPI_Comm comm)>;

class Engine {
 public:
  // Collectives in flight at once on one communicator, at most (Options::max_in_flight, 1 to
  // this): each lane holds a transport, its scratch memory, and one collective at a time.
  static constexpr int kMaxLanes = 8;

  ~Engine();
  // `options` resolved. `mpi_comm` serves the "mpi" baseline; MPI_COMM_NULL where there is none.
  // Without `more_lanes`, the collectives of allreduce_async run one at a time. `topology`:
  // options.topology's machine where the caller has read it already (else it is read here).
  Engine(std::unique_ptr<Transport> transport, Options options, MPI_Comm mpi_comm, LaneFactory more_lanes = {},
         std::optional<Machine> topology = std::nullopt);

  int rank() const { return lanes_.front()->transport->rank(); }
  int size() const { return lanes_.front()->transport->size(); }
  const Options& options() const { return options_; }
  // The machine Auto's cost model walks: Options::topology's file, else this machine's
  // calibration (cached or measured, calibrate/self_calibration.hpp) or, with
  // SelfCalibration::Off or no MPI communicator, Machine::local_default(). Without a file the
  // first call finds it, collectively.
  const Machine& machine() const;
  // The node of each rank (Options::ranks_per_node, else the topology file's placement, else
  // the ranks that share memory), numbered from 0 in rank order.
  const std::vector<int>& nodes() const { return nodes_; }
  // How many schedule walks the cost model has run (one per algorithm per new size): tests
  // check that repeated sizes are answered from the plan cache without walking.
  std::size_t model_walks() const { return model_walks_; }

  // Collectives start in issue order and several run at once, each on its lane
  // (core/progress.hpp): the blocking ones on the caller's thread when nothing is queued or in
  // flight, the asynchronous ones on the progress thread.
  void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                 Algorithm algorithm);
  // Checks the arguments now (Error), queues the call and returns; the op rethrows what failed later.
  std::shared_ptr<AsyncOp> allreduce_async(const void* send, void* recv, std::size_t count, DataType type,
                                           ReduceOp op, Algorithm algorithm);
  // Communicator::prepare_async: collectively, everything allreduce_async would make on its
  // first calls (the progress thread's communicator, every lane, Auto's machine).
  void prepare_async(Algorithm algorithm);
  Plan plan(std::size_t count, DataType type, bool in_place = false) const;
  // Communicator::allreduce with a CUDA stream (arlab.hpp): waits for the stream's earlier work,
  // then the call above; for nccl, ncclAllReduce enqueued on the stream. Unavailable without a device.
  void allreduce_on_stream(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                           Algorithm algorithm, void* stream);

  // The device whose memory calls may pass (device/device_memory.hpp): by default the CUDA
  // one, found on the first call when this build has CUDA and a device is usable; tests give
  // the host stand-in, and a piece size for the staging. Before the first call only.
  void use_device_memory(std::unique_ptr<DeviceMemory> memory,
                         std::size_t piece_bytes = StagedTransport::kDefaultPieceBytes);
  // The staging transport of the device path on the first lane, once a call has used it
  // (tests read its memory).
  const StagedTransport* staged_transport() const { return lanes_.front()->staged.get(); }
  // How many lanes exist (1 until the first asynchronous call needs a second).
  std::size_t lanes() const { return lane_count_; }

  // The device, looked for on first use (CUDA); nullptr without one, device_why() saying why.
  DeviceMemory* device();
  const std::string& device_why() const { return device_why_; }

 private:
  // Starts the progress thread (and the caller's duplicate communicator) unless it runs.
  void start_progress();
  // Makes lanes until there are `count` (collective over issue_comm(); a failure breaks the engine).
  void make_lanes(std::size_t count);
  // A transport with what runs on it: one collective at a time.
  struct Lane {
    Lane(MPI_Comm c, bool own, std::unique_ptr<Transport> t, Reducer& reducer)
        : comm(c), owns_comm(own), transport(std::move(t)), executor(*transport, reducer) {}
    MPI_Comm comm;   // the transport's communicator; the mpi baseline runs on it too
    bool owns_comm;  // the engine's duplicate, freed after the transport
    // Declared before the transport, destroyed after it: after a failed call, peers may still
    // write into it until the transport's shutdown has settled with them.
    std::vector<std::byte> scratch;
    std::unique_ptr<Transport> transport;
    Executor executor;
    // The device path: the staging transport over this one and its executor (first device call).
    std::unique_ptr<StagedTransport> staged;
    std::unique_ptr<Executor> device_executor;
  };
  // What a call is, decided on the caller's thread when it is issued.
  struct Issue {
    int lane = 0;
    bool device = false;     // its buffers are device memory
    bool exclusive = false;  // it runs alone, to its end (the baselines, device buffers)
  };
  class HostRun;
  // In issue order, on the caller's thread: the call's lane (made when first used), its kind,
  // and the machine when Auto or Hierarchical will need it (the first such call finds it,
  // collectively), so that nothing collective over the communicator itself happens elsewhere.
  Issue issue(const void* send, const void* recv, Algorithm algorithm);
  // The communicator that calls on the caller's thread make their collectives on (the
  // calibration, new lanes): once the progress thread exists, a duplicate of their own.
  MPI_Comm issue_comm() const { return issue_comm_ != MPI_COMM_NULL ? issue_comm_ : mpi_comm_; }
  // Starts the call on its lane: nullptr once it has finished (to_end, or a call that cannot
  // be advanced in pieces), else the run for the progress thread to advance.
  std::unique_ptr<InFlight> start_allreduce(const Issue& is, const void* send, void* recv, std::size_t count,
                                            DataType type, ReduceOp op, Algorithm algorithm, bool to_end);
  // Whether the call's buffers are device memory: both, or neither (else InvalidArgument).
  bool on_device(const void* send, const void* recv);
  // `start` in issue order: directly while no asynchronous call was ever made.
  template <typename Start>
  void in_turn(const Issue& is, const Start& start) {
    if (progress_) progress_->run(StartFn(start), is.lane, is.exclusive); else start(true);
  }
  void run_on_device(Lane& lane, const Program& prog, const void* send, void* recv, const Call& call);
  // A host run's end: Avg ran as Sum, so divide by the rank count.
  void divide_for_avg(const Call& call, void* recv);
  void check_arguments(const void* send, const void* recv, std::size_t count, DataType type,
                       ReduceOp op, Algorithm algorithm) const;
  Algorithm choose(std::size_t count, DataType type, bool in_place);
  const Plan& cached_plan(std::size_t count, std::size_t elem, bool in_place) const;
  std::shared_ptr<const Program> program(Algorithm algorithm, std::size_t count, std::size_t elem, bool in_place);
  // machine() with this communicator's nodes (nodes()) as its placement: what the model walks.
  const Machine& model_machine() const;
  Shape shape(std::size_t count, std::size_t elem) const;

  CpuReducer reducer_;
  // The first over the engine's transport; the others made by issue() on the caller's thread
  // (a fixed array: the progress thread reads the lanes while the caller adds one).
  std::array<std::unique_ptr<Lane>, kMaxLanes> lanes_;
  std::size_t lane_count_ = 1;
  LaneFactory more_lanes_;
  Options options_;
  MPI_Comm mpi_comm_;
  MPI_Comm issue_comm_ = MPI_COMM_NULL;  // issue_comm()
  std::size_t issued_ = 0;                // calls issued since the progress thread began
  mutable std::optional<Machine> machine_;  // found on first use without a topology file
  mutable std::string machine_source_;
  mutable calib::Meeting meeting_;  // find_machine's wait for the other ranks, if it timed out
  std::vector<int> nodes_;
  // Options::segment_bytes, as a topology file's machine allows it (Machine::segment_bytes).
  std::size_t segment_bytes_ = *options_.segment_bytes;
  mutable std::optional<Machine> model_machine_;
  // The device path: its memory and device scratch (device calls run alone, one at a time),
  // made on the first call that passes device memory; each lane has its staging.
  std::unique_ptr<DeviceMemory> device_;
  std::atomic<bool> device_looked_for_ = false;  // device() may run on the caller's thread and the progress thread
  std::mutex device_mutex_;
  std::string device_why_;  // why there is no device
  std::size_t piece_bytes_ = StagedTransport::kDefaultPieceBytes;
  void* device_scratch_ = nullptr;
  std::unique_ptr<NcclBaseline> nccl_;  // made on the first nccl call
  std::size_t device_scratch_bytes_ = 0;
  struct LastKinds {  // the last call's classification: repeated buffers skip the runtime's lookup
    const void* send = nullptr;
    const void* recv = nullptr;
    bool device = false;
  } last_kinds_;
  // After a failed call the peers' state is unknown: refuse further calls.
  std::atomic<bool> broken_ = false;

  // The queue of asynchronous calls and its thread: made by the first one, destroyed first.
  std::unique_ptr<Progress> progress_;

  using ProgramKey = std::tuple<Algorithm, std::size_t, std::size_t, bool>;
  // Shared with the runs that use them: emptying the cache leaves runs in flight theirs.
  std::map<ProgramKey, std::shared_ptr<const Program>> programs_;
  // plan() on the caller's thread and Auto's choice where calls start both use the plans.
  mutable std::mutex plans_mutex_;
  mutable std::map<std::tuple<std::size_t, std::size_t, bool>, Plan> plans_;  // (count, elem, in place) -> plan
  mutable std::size_t model_walks_ = 0;
  std::set<std::tuple<int, DataType, bool>> logged_classes_;
  // The last call's choice and program: repeated calls of one size skip both lookups.
  struct LastCall {
    Algorithm requested = Algorithm::Nccl;
    std::size_t count = 0, elem = 0;
    bool in_place = false;
    Algorithm chosen = Algorithm::Auto;
    std::shared_ptr<const Program> program;
  } last_;
};

}  // namespace arlab::detail

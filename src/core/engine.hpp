// The engine behind a Communicator: argument checks, algorithm choice, the schedule cache,
// the executor. It knows its transport only through the Transport interface, so tests run it
// on loopback threads as well as over MPI.
#pragma once

#include <mpi.h>

#include <atomic>
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

class Engine {
 public:
  ~Engine();
  // `options` resolved. `mpi_comm` serves the "mpi" baseline; MPI_COMM_NULL where there is none.
  Engine(std::unique_ptr<Transport> transport, Options options, MPI_Comm mpi_comm);

  int rank() const { return transport_->rank(); }
  int size() const { return transport_->size(); }
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

  // Collectives run one at a time in issue order (core/progress.hpp): the blocking ones on
  // the caller's thread when nothing is queued, the asynchronous ones on the progress thread.
  void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                 Algorithm algorithm);
  // Checks the arguments now (Error), queues the call and returns; the op rethrows what failed later.
  std::shared_ptr<AsyncOp> allreduce_async(const void* send, void* recv, std::size_t count, DataType type,
                                           ReduceOp op, Algorithm algorithm);
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
  // The staging transport of the device path, once a call has used it (tests read its memory).
  const StagedTransport* staged_transport() const { return staged_.get(); }

 private:
  // The device, looked for on first use (CUDA); nullptr without one, device_why_ saying why.
  DeviceMemory* device();
  // Whether the call's buffers are device memory: both, or neither (else InvalidArgument).
  bool on_device(const void* send, const void* recv);
  // The blocking call's body, run in its turn.
  void run_allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                     Algorithm algorithm);
  // `job` in issue order: directly while no asynchronous call was ever made.
  template <typename Job>
  void in_turn(const Job& job) const {
    if (progress_) progress_->run(job); else job();
  }
  void run_on_device(const Program& prog, const void* send, void* recv, const Call& call);
  void check_arguments(const void* send, const void* recv, std::size_t count, DataType type,
                       ReduceOp op, Algorithm algorithm) const;
  Algorithm choose(std::size_t count, DataType type, bool in_place);
  const Plan& cached_plan(std::size_t count, std::size_t elem, bool in_place) const;
  const Program& program(Algorithm algorithm, std::size_t count, std::size_t elem, bool in_place);
  // machine() with this communicator's nodes (nodes()) as its placement: what the model walks.
  const Machine& model_machine() const;
  Shape shape(std::size_t count, std::size_t elem) const;

  // Declared first, destroyed last: after a failed call, peers may still write into it until
  // the transport's shutdown has settled with them.
  std::vector<std::byte> scratch_;
  std::unique_ptr<Transport> transport_;
  Options options_;
  MPI_Comm mpi_comm_;
  mutable std::optional<Machine> machine_;  // found on first use without a topology file
  mutable std::string machine_source_;
  std::vector<int> nodes_;
  mutable std::optional<Machine> model_machine_;
  CpuReducer reducer_;
  Executor executor_;
  // The device path: its memory, the staging transport over transport_, their executor, and
  // device scratch. Made on the first call that passes device memory.
  std::unique_ptr<DeviceMemory> device_;
  std::atomic<bool> device_looked_for_ = false;  // device() may run on the caller's thread and the progress thread
  std::mutex device_mutex_;
  std::string device_why_;  // why there is no device
  std::size_t piece_bytes_ = StagedTransport::kDefaultPieceBytes;
  std::unique_ptr<StagedTransport> staged_;
  std::unique_ptr<Executor> device_executor_;
  void* device_scratch_ = nullptr;
  std::unique_ptr<NcclBaseline> nccl_;  // made on the first nccl call
  std::size_t device_scratch_bytes_ = 0;
  struct LastKinds {  // the last call's classification: repeated buffers skip the runtime's lookup
    const void* send = nullptr;
    const void* recv = nullptr;
    bool device = false;
  } last_kinds_;
  bool broken_ = false;  // after a failed call the peers' state is unknown: refuse further calls

  // The queue of asynchronous calls and its thread: made by the first one, destroyed first.
  std::unique_ptr<Progress> progress_;

  using ProgramKey = std::tuple<Algorithm, std::size_t, std::size_t, bool>;
  std::map<ProgramKey, std::unique_ptr<Program>> programs_;
  mutable std::map<std::tuple<std::size_t, std::size_t, bool>, Plan> plans_;  // (count, elem, in place) -> plan
  mutable std::size_t model_walks_ = 0;
  std::set<std::tuple<int, DataType, bool>> logged_classes_;
  // The last call's choice and program: repeated calls of one size skip both lookups.
  struct LastCall {
    Algorithm requested = Algorithm::Nccl;
    std::size_t count = 0, elem = 0;
    bool in_place = false;
    Algorithm chosen = Algorithm::Auto;
    const Program* program = nullptr;
  } last_;
};

}  // namespace arlab::detail

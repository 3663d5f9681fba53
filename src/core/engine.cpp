#include "core/engine.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <sstream>

#include "algorithms/registry.hpp"
#include "calibrate/self_calibration.hpp"
#include "baseline/mpi_baseline.hpp"
#include "model/cost_walk.hpp"
#include "model/topology.hpp"

namespace arlab::detail {

namespace {

constexpr std::size_t kCacheLimit = 256;  // entries per cache before it is emptied

bool valid(DataType t) { return static_cast<unsigned>(t) <= static_cast<unsigned>(DataType::Float64); }
bool valid(ReduceOp o) { return static_cast<unsigned>(o) <= static_cast<unsigned>(ReduceOp::Avg); }
bool valid(Algorithm a) { return static_cast<unsigned>(a) <= static_cast<unsigned>(Algorithm::Nccl); }

[[noreturn]] void invalid(const std::string& message) {
  throw Error(Error::Code::InvalidArgument, "arlab::Communicator::allreduce: " + message);
}

// The machine of a topology file (its errors name the file, line and column), `read` where the caller
// has read the file already; nullopt without one.
std::optional<Machine> load_machine(const Options& options, int ranks, std::optional<Machine> read) {
  if (!options.topology) return std::nullopt;
  Machine m = read ? std::move(*read) : load_topology(*options.topology);
  if (!m.rank_to_node.empty() && m.ranks() != ranks)
    throw Error(Error::Code::InvalidArgument,
                "arlab: topology " + *options.topology + " places " + std::to_string(m.ranks()) +
                    " ranks (rank_to_node), but the communicator has " + std::to_string(ranks));
  return m;
}

// Every rank's node: consecutive groups of Options::ranks_per_node; else the topology file's
// placement; else, with an MPI communicator, the ranks sharing memory (collective); else one.
std::vector<int> find_nodes(const Options& o, const std::optional<Machine>& topology, MPI_Comm comm, int p) {
  std::vector<int> nodes(static_cast<std::size_t>(p), 0);
  if (o.ranks_per_node) {
    for (int r = 0; r < p; ++r) nodes[static_cast<std::size_t>(r)] = r / *o.ranks_per_node;
    return nodes;
  }
  if (topology) return topology->placement(p);
  if (comm == MPI_COMM_NULL) return nodes;
  MPI_Comm local = MPI_COMM_NULL;
  int rank = 0, leader = 0;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
  leader = rank;
  MPI_Bcast(&leader, 1, MPI_INT, 0, local);  // the node's lowest rank names it
  MPI_Comm_free(&local);
  std::vector<int> leaders(static_cast<std::size_t>(p));
  MPI_Allgather(&leader, 1, MPI_INT, leaders.data(), 1, MPI_INT, comm);
  std::vector<int> seen;
  for (int r = 0; r < p; ++r) {
    const auto it = std::find(seen.begin(), seen.end(), leaders[static_cast<std::size_t>(r)]);
    nodes[static_cast<std::size_t>(r)] = static_cast<int>(it - seen.begin());
    if (it == seen.end()) seen.push_back(leaders[static_cast<std::size_t>(r)]);
  }
  return nodes;
}

}  // namespace

Engine::Engine(std::unique_ptr<Transport> transport, Options options, MPI_Comm mpi_comm, LaneFactory more_lanes,
               std::optional<Machine> topology)
    : more_lanes_(std::move(more_lanes)),
      options_(std::move(options)),
      mpi_comm_(mpi_comm),
      machine_(load_machine(options_, transport->size(), std::move(topology))) {
  lanes_[0] = std::make_unique<Lane>(mpi_comm, false, std::move(transport), reducer_);
  if (machine_) machine_source_ = "'" + machine_->name + "', the topology file " + *options_.topology;
  nodes_ = find_nodes(options_, machine_, mpi_comm_, size());
  if (machine_) segment_bytes_ = machine_->segment_bytes(segment_bytes_);
  if (!machine_ && mpi_comm_ != MPI_COMM_NULL && MPI_Comm_dup(mpi_comm_, &meeting_.comm) != MPI_SUCCESS)
    throw Error(Error::Code::Transport, "arlab: MPI_Comm_dup failed (the communicator for finding Auto's machine)");
}

const Machine& Engine::model_machine() const {
  if (!model_machine_) {
    Machine m = machine();
    m.rank_to_node = nodes_;
    m.nodes = nodes_.empty() ? 1 : *std::max_element(nodes_.begin(), nodes_.end()) + 1;
    m.ranks_per_node = 0;
    model_machine_ = std::move(m);
  }
  return *model_machine_;
}

Shape Engine::shape(std::size_t count, std::size_t elem) const {
  Shape s;
  s.rank = rank();
  s.nranks = size();
  s.count = count;
  s.elem_size = elem;
  s.chunk_bytes = *options_.chunk_bytes;
  s.segment_bytes = segment_bytes_;
  s.rank_to_node = nodes_;
  return s;
}

Engine::~Engine() {
  progress_.reset();  // runs what is queued, while everything it uses is still here
  if (device_scratch_) {
    device_->synchronize();
    device_->free_device(device_scratch_);
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  while (lane_count_ > 0) {  // the later lanes first, each transport before its communicator
    std::unique_ptr<Lane> lane = std::move(lanes_[--lane_count_]);
    MPI_Comm comm = lane->comm;
    const bool owned = lane->owns_comm;
    lane.reset();
    if (owned && !finalized) MPI_Comm_free(&comm);
  }
  if (issue_comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&issue_comm_);
  if (!finalized) calib::finish_meeting(meeting_);
}

void Engine::use_device_memory(std::unique_ptr<DeviceMemory> memory, std::size_t piece_bytes) {
  device_ = std::move(memory);
  device_looked_for_ = true;
  piece_bytes_ = piece_bytes;
}

DeviceMemory* Engine::device() {
  if (!device_looked_for_.load(std::memory_order_acquire)) {
    std::lock_guard lock(device_mutex_);
    if (!device_looked_for_.load(std::memory_order_relaxed)) {
      device_ = make_device_memory(device_why_);  // CUDA's device: the calling thread's current one
      device_looked_for_.store(true, std::memory_order_release);
    }
  }
  return device_.get();
}

bool Engine::on_device(const void* send, const void* recv) {
  if (!device()) return false;  // no device: every buffer is host memory
  if (send == last_kinds_.send && recv == last_kinds_.recv) return last_kinds_.device;
  const auto kind = [&](const void* p) { return device_->classify(p) != DeviceMemory::Kind::Host; };
  const bool s = kind(send), r = send == recv ? s : kind(recv);
  if (s != r)
    invalid(std::string("the send buffer is ") + (s ? "device" : "host") + " memory and the recv buffer " +
            (r ? "device" : "host") + " memory (" + device_->name() + "); both must be on the same side");
  last_kinds_ = {send, recv, s};
  return s;
}

void Engine::allreduce_on_stream(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                                 Algorithm algorithm, void* stream) {
  check_arguments(send, recv, count, type, op, algorithm);
  if (!device())
    throw Error(Error::Code::Unavailable, "arlab: allreduce on a CUDA stream needs a CUDA device: " + device_why_);
  Issue is = issue(send, recv, algorithm);
  is.exclusive = true;  // it waits for the stream: run alone, to its end
  in_turn(is, [&](bool) -> std::unique_ptr<InFlight> {
    if (algorithm == Algorithm::Nccl && mpi_comm_ != MPI_COMM_NULL && !broken_) {
      if (!nccl_) nccl_ = make_nccl_baseline(mpi_comm_);
      nccl_->allreduce_on(stream, send, recv, count, type, op);  // NCCL's own stream order: returns at once
      return nullptr;
    }
    device_->wait_for_stream(stream);  // the stream's earlier work (which may write send) first
    return start_allreduce(is, send, recv, count, type, op, algorithm, true);
  });
}

void Engine::run_on_device(Lane& lane, const Program& prog, const void* send, void* recv, const Call& call) {
  device_->bind_thread();
  if (!lane.staged) {
    lane.staged = std::make_unique<StagedTransport>(*lane.transport, *device_, piece_bytes_);
    lane.device_executor = std::make_unique<Executor>(*lane.staged, *device_);
  }
  const std::size_t scratch_bytes = prog.schedule.scratch_count * call.elem_size;
  if (device_scratch_bytes_ < scratch_bytes) {
    if (device_scratch_) device_->free_device(device_scratch_);
    device_scratch_ = nullptr;
    device_scratch_bytes_ = 0;
    device_scratch_ = device_->alloc_device(scratch_bytes);
    device_scratch_bytes_ = scratch_bytes;
  }
  lane.device_executor->run(prog, Buffers{send, recv, device_scratch_}, call);
  if (call.user_op == ReduceOp::Avg && size() > 1) device_->divide(call.type, recv, call.count, size());
  device_->synchronize();  // the blocking call returns with the result in recv
}

const Machine& Engine::machine() const {
  if (machine_) return *machine_;
  if (mpi_comm_ == MPI_COMM_NULL) {
    machine_ = Machine::local_default();
    machine_source_ = "'" + machine_->name + "', the built-in description (no MPI communicator to calibrate over)";
    return *machine_;
  }
  calib::FoundMachine found = calib::find_machine(issue_comm(), options_, meeting_);  // machine_ unset: meeting_ has its comm
  machine_ = std::move(found.machine);
  machine_source_ = std::move(found.source);
  return *machine_;
}

void Engine::check_arguments(const void* send, const void* recv, std::size_t count, DataType type,
                             ReduceOp op, Algorithm algorithm) const {
  if (!valid(type)) invalid("unknown data type value " + std::to_string(static_cast<int>(type)));
  if (!valid(op)) invalid("unknown reduce op value " + std::to_string(static_cast<int>(op)));
  if (!valid(algorithm)) invalid("unknown algorithm value " + std::to_string(static_cast<int>(algorithm)));
  const std::size_t elem = size_of(type);
  if (count > SIZE_MAX / elem / 2)  // also leaves room for scratch offsets
    invalid("count " + std::to_string(count) + " of " + to_string(type) + " overflows size_t in bytes");
  if (count == 0) return;
  if (!send) invalid("send buffer is null with count " + std::to_string(count));
  if (!recv) invalid("recv buffer is null with count " + std::to_string(count));
  const auto s = reinterpret_cast<std::uintptr_t>(send), r = reinterpret_cast<std::uintptr_t>(recv);
  const std::size_t bytes = count * elem;
  if (s != r && s < r + bytes && r < s + bytes)
    invalid("send and recv buffers overlap without being the same (in place needs send == recv)");
}

// A host run in flight on the progress thread: its lane's executor, advanced a round at a time.
class Engine::HostRun final : public InFlight {
 public:
  HostRun(Engine& engine, Lane& lane, std::shared_ptr<const Program> program, const Buffers& buffers,
          const Call& call)
      : engine_(engine), lane_(lane), program_(std::move(program)), buffers_(buffers), call_(call) {
    lane_.executor.begin(*program_, buffers_, call_);
  }
  bool advance() override { return lane_.executor.advance(); }
  bool finished() const override { return lane_.executor.finished(); }
  void finish() override {
    lane_.executor.end();
    engine_.divide_for_avg(call_, buffers_.output);
  }
  void abandon() noexcept override {
    lane_.executor.abandon();
    engine_.broken_ = true;
  }
  double timeout_s() const override { return call_.timeout_s; }
  [[noreturn]] void timed_out(double waited_s) const override { lane_.executor.timed_out(waited_s); }

 private:
  Engine& engine_;
  Lane& lane_;
  std::shared_ptr<const Program> program_;  // kept, whatever the cache does meanwhile
  const Buffers buffers_;
  const Call call_;
};

Engine::Issue Engine::issue(const void* send, const void* recv, Algorithm algorithm) {
  Issue is;
  is.device = on_device(send, recv);  // may refuse the buffers: before any message, still usable
  const Algorithm resolved = algorithm == Algorithm::Auto ? *options_.algorithm : algorithm;
  is.exclusive = is.device || resolved == Algorithm::Mpi || resolved == Algorithm::Nccl;
  if (resolved == Algorithm::Auto || resolved == Algorithm::Hierarchical) model_machine();
  if (progress_ && more_lanes_) {
    is.lane = static_cast<int>(issued_++ % static_cast<std::size_t>(*options_.max_in_flight));
    make_lanes(static_cast<std::size_t>(is.lane) + 1);
  }
  return is;
}

void Engine::make_lanes(std::size_t count) {
  while (lane_count_ < count) {
    // A rank without the lane would put its later calls on other lanes than its peers:
    // after a failure here the communicator refuses further calls.
    MPI_Comm comm = MPI_COMM_NULL;
    if (issue_comm() != MPI_COMM_NULL && MPI_Comm_dup(issue_comm(), &comm) != MPI_SUCCESS) {
      broken_ = true;
      throw Error(Error::Code::Transport, "arlab: MPI_Comm_dup failed making a lane for a collective in flight");
    }
    try {
      lanes_[lane_count_] = std::make_unique<Lane>(comm, comm != MPI_COMM_NULL, more_lanes_(comm), reducer_);
      ++lane_count_;
    } catch (...) {
      broken_ = true;
      if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
      throw;
    }
  }
}

void Engine::start_progress() {
  if (progress_) return;
  // From here on the progress thread may make collectives on the communicator (the mpi
  // baseline): the caller's thread makes its own on a duplicate.
  if (mpi_comm_ != MPI_COMM_NULL && MPI_Comm_dup(mpi_comm_, &issue_comm_) != MPI_SUCCESS)
    throw Error(Error::Code::Transport, "arlab: MPI_Comm_dup failed starting the progress thread");
  progress_ = std::make_unique<Progress>();
}

void Engine::prepare_async(Algorithm algorithm) {
  if (!valid(algorithm)) invalid("unknown algorithm value " + std::to_string(static_cast<int>(algorithm)));
  device();  // the caller's CUDA device, as allreduce_async looks for it
  start_progress();
  if (more_lanes_) make_lanes(static_cast<std::size_t>(*options_.max_in_flight));
  const Algorithm resolved = algorithm == Algorithm::Auto ? *options_.algorithm : algorithm;
  if (resolved == Algorithm::Auto || resolved == Algorithm::Hierarchical) model_machine();
}

void Engine::allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                       Algorithm algorithm) {
  check_arguments(send, recv, count, type, op, algorithm);
  const Issue is = issue(send, recv, algorithm);
  in_turn(is, [&](bool to_end) { return start_allreduce(is, send, recv, count, type, op, algorithm, to_end); });
}

std::shared_ptr<AsyncOp> Engine::allreduce_async(const void* send, void* recv, std::size_t count, DataType type,
                                                 ReduceOp op, Algorithm algorithm) {
  check_arguments(send, recv, count, type, op, algorithm);
  device();  // looked for here, so that CUDA's device is the caller's, not the progress thread's
  start_progress();
  const Issue is = issue(send, recv, algorithm);
  return progress_->enqueue(
      [=, this](bool to_end) { return start_allreduce(is, send, recv, count, type, op, algorithm, to_end); },
      is.lane, is.exclusive);
}

std::unique_ptr<InFlight> Engine::start_allreduce(const Issue& is, const void* send, void* recv, std::size_t count,
                                                  DataType type, ReduceOp op, Algorithm algorithm, bool to_end) {
  if (broken_)
    throw Error(Error::Code::Transport,
                "arlab: an earlier call on this communicator failed (timeout or transport error) and it "
                "cannot be used again; create a new one");
  Lane& lane = *lanes_[static_cast<std::size_t>(is.lane)];
  const std::size_t elem = size_of(type);
  const bool in_place = send == recv;
  std::shared_ptr<const Program> prog;
  if (last_.program && last_.requested == algorithm && last_.count == count && last_.elem == elem &&
      last_.in_place == in_place) {
    prog = last_.program;
    algorithm = last_.chosen;
  } else {
    const Algorithm requested = algorithm;
    if (algorithm == Algorithm::Auto) algorithm = *options_.algorithm;
    if (algorithm == Algorithm::Auto) algorithm = choose(count, type, in_place);
    if (algorithm == Algorithm::Nccl) {
      if (mpi_comm_ == MPI_COMM_NULL)
        throw Error(Error::Code::Unavailable, "arlab: the nccl baseline needs an MPI communicator");
      if (!nccl_) nccl_ = make_nccl_baseline(mpi_comm_);  // collective; throws Unavailable without NCCL or a GPU
      nccl_->allreduce(send, recv, count, type, op);
      return nullptr;
    }
    if (algorithm == Algorithm::Mpi) {
      if (lane.comm == MPI_COMM_NULL)
        throw Error(Error::Code::Unavailable, "arlab: the mpi baseline needs an MPI communicator");
      if (is.device)  // also with no elements, so that a probe call tells
        throw Error(Error::Code::Unavailable,
                    "arlab: the mpi baseline needs host buffers (this MPI is not known to be CUDA-aware)");
      if (count > 0) mpi_allreduce(lane.comm, send, recv, count, type, op);
      return nullptr;
    }
    if (count == 0) return nullptr;
    prog = program(algorithm, count, elem, in_place);
    last_ = {requested, count, elem, in_place, algorithm, prog};
  }
  const Call call{algorithm, count, type, op, op == ReduceOp::Avg ? ReduceOp::Sum : op, elem,
                  *options_.timeout_s,
                  call_signature(static_cast<int>(algorithm), count, static_cast<int>(type), static_cast<int>(op))};
  try {
    if (is.device) {
      run_on_device(lane, *prog, send, recv, call);
      return nullptr;
    }
    const std::size_t scratch_bytes = prog->schedule.scratch_count * elem;
    if (lane.scratch.size() < scratch_bytes) lane.scratch.resize(scratch_bytes);
    const Buffers buffers{send, recv, lane.scratch.data()};
    if (!to_end) return std::make_unique<HostRun>(*this, lane, std::move(prog), buffers, call);
    lane.executor.run(*prog, buffers, call);
  } catch (const Error&) {
    // A call that failed part-way leaves peers in unknown states (the executor abandoned its
    // messages): refuse further calls rather than risk mismatched messages.
    broken_ = true;
    throw;
  }
  divide_for_avg(call, recv);
  return nullptr;
}

void Engine::divide_for_avg(const Call& call, void* recv) {
  if (call.user_op == ReduceOp::Avg && size() > 1) reducer_.divide(call.type, recv, call.count, size());
}

std::shared_ptr<const Program> Engine::program(Algorithm algorithm, std::size_t count, std::size_t elem,
                                               bool in_place) {
  const ProgramKey key{algorithm, count, elem, in_place};
  if (auto it = programs_.find(key); it != programs_.end()) return it->second;
  const AlgorithmInfo* info = find_schedule_algorithm(algorithm);
  if (!info)
    throw Error(Error::Code::Unavailable, "arlab: algorithm '" + to_string(algorithm) + "' has no schedule");
  Shape sh = shape(count, elem);
  // Hierarchical's level between the nodes: the model's pick for this size (every rank walks
  // the same machine, so all agree).
  if (algorithm == Algorithm::Hierarchical) sh.inter = choose_inter(sh, model_machine(), in_place);
  Schedule s = build_schedule(*info, sh);
  if (!in_place) s = lower_out_of_place(s, count);
  if (programs_.size() >= kCacheLimit) {
    programs_.clear();
    last_.program = nullptr;
  }
  auto& slot = programs_[key];
  slot = std::make_shared<const Program>(compile(std::move(s), size()));
  return slot;
}

Plan Engine::plan(std::size_t count, DataType type, bool in_place) const {
  if (!valid(type))
    throw Error(Error::Code::InvalidArgument,
                "arlab::Communicator::plan: unknown data type value " + std::to_string(static_cast<int>(type)));
  model_machine();  // on this thread, in issue order: the first finds it, collectively
  std::lock_guard lock(plans_mutex_);
  return cached_plan(count, size_of(type), in_place);  // a copy: a later call may empty the cache
}

const Plan& Engine::cached_plan(std::size_t count, std::size_t elem, bool in_place) const {
  const auto key = std::make_tuple(count, elem, in_place);
  if (auto it = plans_.find(key); it != plans_.end()) return it->second;
  if (plans_.size() >= kCacheLimit) plans_.clear();
  Plan& plan = plans_[key];
  const Shape sh = shape(count, elem);
  const Machine& m = model_machine();
  if (count == 0) {  // every algorithm returns at once, sending nothing: no walk
    for (const auto& info : schedule_algorithm_table())
      if (info.id != Algorithm::Hierarchical || m.nodes >= 2) plan.candidates.push_back({info.id, 0.0, ""});
    plan.algorithm = plan.candidates.front().algorithm;
    plan.reason = "no elements: every algorithm returns at once, sending nothing (machine " + machine_source_ + ")";
    plan.machine = machine_source_;
    plan.machine_state_probe_us = m.state_probe_us;
    return plan;
  }
  std::vector<std::pair<Cost, Algorithm>> costs;
  for (const auto& info : schedule_algorithm_table()) {
    std::string levels;
    Cost c;
    if (info.id == Algorithm::Hierarchical) {
      if (m.nodes < 2) continue;  // one node: it is the ring
      const Algorithm inter = choose_inter(sh, m, in_place, &c);
      model_walks_ += schedule_algorithm_table().size() - 1;
      levels = "intra ring reduce-scatter/allgather, inter " + to_string(inter);
    } else {
      c = predict(info, sh, m, in_place);
      ++model_walks_;
    }
    plan.candidates.push_back({info.id, c.total_us, levels});
    costs.push_back({c, info.id});
  }
  std::stable_sort(plan.candidates.begin(), plan.candidates.end(),
                   [](const auto& a, const auto& b) { return a.predicted_us < b.predicted_us; });
  plan.algorithm = plan.candidates.front().algorithm;
  plan.predicted_us = plan.candidates.front().predicted_us;
  const Cost& best = std::find_if(costs.begin(), costs.end(), [&](auto& c) { return c.second == plan.algorithm; })->first;
  std::ostringstream why;
  why.precision(3);
  why << to_string(plan.algorithm) << " is predicted fastest on " << machine_->name << ": "
      << best.latency_us << " us latency + " << best.bandwidth_us << " us transfer + "
      << best.reduce_us << " us reduction";
  if (!plan.candidates.front().levels.empty()) why << " (" << plan.candidates.front().levels << ")";
  if (const std::size_t segments = sh.segments(); segments > 1)
    why << ", run in " << segments << " segments of about " << (count * elem + segments - 1) / segments
        << " B, two at a time";
  if (plan.candidates.size() > 1)
    why << "; runner-up " << to_string(plan.candidates[1].algorithm) << " at "
        << plan.candidates[1].predicted_us << " us";
  if (m.nodes > 1) {
    // Which level decides: the inter-node links' share of the pick's time, and of the best
    // algorithm of the other kind (flat against hierarchical).
    const bool picked_hierarchical = plan.algorithm == Algorithm::Hierarchical;
    why << "; on " << m.nodes << " nodes, " << best.inter_us << " us of " << to_string(plan.algorithm)
        << "'s time are on inter-node links";
    const Cost* other = nullptr;
    Algorithm other_algorithm = Algorithm::Auto;
    for (const auto& [c, a] : costs)
      if ((a == Algorithm::Hierarchical) != picked_hierarchical && (!other || c.total_us < other->total_us))
        other = &c, other_algorithm = a;
    if (other)
      why << ", against " << other->inter_us << " us of " << other->total_us << " for "
          << to_string(other_algorithm);
  }
  why << " (machine " << machine_source_ << ")";
  plan.reason = why.str();
  plan.machine = machine_source_;
  plan.machine_state_probe_us = m.state_probe_us;
  return plan;
}

Algorithm Engine::choose(std::size_t count, DataType type, bool in_place) {
  std::lock_guard lock(plans_mutex_);
  const Plan& p = cached_plan(count, size_of(type), in_place);
  if (*options_.log_level >= LogLevel::Info && rank() == 0) {
    const std::size_t bytes = count * size_of(type);
    const int size_class = bytes == 0 ? -1 : std::bit_width(bytes);
    if (logged_classes_.insert({size_class, type, in_place}).second) {
      const bool second = p.candidates.size() > 1;
      std::fprintf(stderr,
                   "arlab INFO: allreduce %zu B (%s, %s) on %d ranks of '%s': auto -> %s, predicted %.2f us; "
                   "runner-up %s, predicted %.2f us (%s)\n",
                   bytes, to_string(type).c_str(), in_place ? "in place" : "out of place", size(),
                   machine_->name.c_str(), to_string(p.algorithm).c_str(),
                   p.predicted_us, second ? to_string(p.candidates[1].algorithm).c_str() : "none",
                   second ? p.candidates[1].predicted_us : 0.0, p.reason.c_str());
    }
  }
  return p.algorithm;
}

}  // namespace arlab::detail

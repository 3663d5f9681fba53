// Communicator: the public face of an Engine running over a private duplicate of an MPI_Comm.
#include "core/engine.hpp"
#include "model/topology.hpp"
#include "transport/mpi_transport.hpp"
#ifdef ARLAB_HAVE_UCX
#include "transport/ucx_transports.hpp"
#endif

#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <utility>

namespace arlab {

namespace {

MPI_Comm duplicate(MPI_Comm comm) {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (!initialized || finalized)
    throw Error(Error::Code::InvalidArgument,
                "arlab::Communicator: MPI is not initialized (call MPI_Init first)");
  if (comm == MPI_COMM_NULL)
    throw Error(Error::Code::InvalidArgument, "arlab::Communicator: comm is MPI_COMM_NULL");
  MPI_Comm dup = MPI_COMM_NULL;
  if (MPI_Comm_dup(comm, &dup) != MPI_SUCCESS)
    throw Error(Error::Code::Transport, "arlab::Communicator: MPI_Comm_dup failed");
  return dup;
}

// Every rank must run the communicator with the same settings: ranks with different transports
// would wait for each other in the transports' setup, different lane counts in the lanes'
// (MPI_Comm_dup), different chunks, segments, nodes, algorithms or machines would send
// messages their peers do not expect or pick differently, and a calibration that some ranks
// skip times out. Each is a knob a rank may take from its own environment, and a knob or a
// topology file that is bad on one rank alone would leave the others waiting in the
// collectives that follow. So every rank takes part in one collective (the min and the max of
// each setting, and the first rank whose own failed) before anything else, and all throw
// together: the failing rank its own Error, the others one naming it or what differs.
void agree_on_settings(MPI_Comm comm, const std::optional<Options>& resolved, std::size_t topology_hash,
                       const std::optional<Error>& bad) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  struct Setting {
    const char* name;
    long long value;
  };
  // A rank whose options failed counts nothing but its failure (below).
  const auto of = [&](auto field) -> long long { return resolved ? static_cast<long long>(field(*resolved)) : 0; };
  const Setting mine[] = {
      {"transport (ARLAB_TRANSPORT)", of([](const Options& o) { return *o.transport; })},
      {"algorithm (ARLAB_ALGO)",
       of([](const Options& o) { return o.algorithm && *o.algorithm != Algorithm::Auto ? static_cast<int>(*o.algorithm) : -1; })},
      {"chunk_bytes (ARLAB_CHUNK_BYTES)", of([](const Options& o) { return *o.chunk_bytes; })},
      {"segment_bytes (ARLAB_SEGMENT_BYTES)", of([](const Options& o) { return *o.segment_bytes; })},
      {"max_in_flight (ARLAB_MAX_IN_FLIGHT)", of([](const Options& o) { return *o.max_in_flight; })},
      {"ranks_per_node (ARLAB_RANKS_PER_NODE; set it alike, or on no rank)",
       of([](const Options& o) { return o.ranks_per_node ? *o.ranks_per_node : 0; })},
      // How Auto finds its machine: a file, a calibration (cached or forced: only rank 0's
      // choice counts), or none.
      {"a topology file (ARLAB_TOPOLOGY), a calibration or the built-in machine (ARLAB_CALIBRATE=0)",
       of([](const Options& o) { return o.topology ? -1 : *o.self_calibration == SelfCalibration::Off ? 0 : 1; })},
      {"the topology file's content", static_cast<long long>(topology_hash)},
  };
  constexpr int n = static_cast<int>(std::size(mine));
  // The min of each, and of its complement (~v reverses the order: the min of ~v is ~max);
  // last, the first rank whose options failed (size if none).
  long long in[2 * n + 1], out[2 * n + 1];
  for (int i = 0; i < n; ++i) in[i] = mine[i].value, in[n + i] = ~mine[i].value;
  in[2 * n] = bad ? rank : size;
  MPI_Allreduce(in, out, 2 * n + 1, MPI_LONG_LONG, MPI_MIN, comm);
  if (bad) throw *bad;
  if (out[2 * n] < size)
    throw Error(Error::Code::InvalidArgument,
                "arlab::Communicator: rank " + std::to_string(out[2 * n]) +
                    " could not resolve its options or read its topology file (its own error says why); every "
                    "rank fails");
  std::string differ;
  for (int i = 0; i < n; ++i)
    if (out[i] != ~out[n + i]) differ += std::string(differ.empty() ? "" : ", ") + mine[i].name;
  if (!differ.empty())
    throw Error(Error::Code::InvalidArgument,
                "arlab::Communicator: the ranks were given different settings: " + differ +
                    "; every rank of a communicator must use the same (set them alike in Options or in every "
                    "rank's environment)");
}

}  // namespace

namespace detail {

std::unique_ptr<Transport> make_transport(const Options& o, MPI_Comm comm) {
  const TransportKind kind = *o.transport;
  if (!transport_available(kind))
    throw Error(Error::Code::Unavailable,
                "arlab: transport '" + to_string(kind) +
                    "' is not in this build: UCX was not found when arlab was built (install libucx-dev, "
                    "reconfigure with -DARLAB_UCX=ON)");
  switch (kind) {
    case TransportKind::Mpi: return make_mpi_transport(comm, *o.timeout_s);
#ifdef ARLAB_HAVE_UCX
    case TransportKind::Ucx: return make_ucx_transport(comm, *o.timeout_s);
    case TransportKind::UcxRma: return make_ucx_rma_transport(comm, *o.timeout_s);
#endif
    default: break;
  }
  throw Error(Error::Code::InvalidArgument,
              "arlab::Communicator: unknown transport value " + std::to_string(static_cast<int>(kind)));
}

}  // namespace detail

bool transport_available(TransportKind kind) {
  switch (kind) {
    case TransportKind::Mpi: return true;
    case TransportKind::Ucx:
    case TransportKind::UcxRma:
#ifdef ARLAB_HAVE_UCX
      return true;
#else
      return false;
#endif
  }
  return false;
}

Communicator::Communicator(MPI_Comm comm, Options options) {
  // A bad knob or topology file fails on every rank at once (agree_on_settings); without MPI
  // to meet over, at once here.
  std::optional<Options> resolved;
  std::optional<detail::Machine> topology;  // read here once, for the check and the engine
  std::optional<Error> bad;
  std::size_t topology_hash = 0;  // the file's content as read (every file read writes back): the same on every host
  try {
    resolved = options.resolved();
    if (resolved->topology) {
      topology = detail::load_topology(*resolved->topology);
      topology_hash = std::hash<std::string>{}(detail::topology_yaml(*topology));
    }
  } catch (const Error& e) {
    bad = e;
  }
  try {
    comm_ = duplicate(comm);
  } catch (const Error&) {
    if (bad) throw *bad;
    throw;
  }
  try {
    agree_on_settings(comm_, resolved, topology_hash, bad);
    engine_ = std::make_unique<detail::Engine>(detail::make_transport(*resolved, comm_), *resolved, comm_,
                                               [o = *resolved](MPI_Comm lane) { return detail::make_transport(o, lane); },
                                               std::move(topology));
  } catch (...) {
    MPI_Comm_free(&comm_);
    throw;
  }
}

Communicator::~Communicator() {
  engine_.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (comm_ != MPI_COMM_NULL && !finalized) MPI_Comm_free(&comm_);
}

Communicator::Communicator(Communicator&& o) noexcept
    : comm_(std::exchange(o.comm_, MPI_COMM_NULL)), engine_(std::move(o.engine_)) {}

Communicator& Communicator::operator=(Communicator&& o) noexcept {
  if (this != &o) {
    this->~Communicator();
    comm_ = std::exchange(o.comm_, MPI_COMM_NULL);
    engine_ = std::move(o.engine_);
  }
  return *this;
}

namespace {
detail::Engine& use(const std::unique_ptr<detail::Engine>& e) {
  if (!e) throw Error(Error::Code::InvalidArgument, "arlab::Communicator: used after being moved from");
  return *e;
}
}  // namespace

int Communicator::rank() const { return use(engine_).rank(); }
int Communicator::size() const { return use(engine_).size(); }
const Options& Communicator::options() const { return use(engine_).options(); }

void Communicator::allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                             Algorithm algorithm) {
  use(engine_).allreduce(send, recv, count, type, op, algorithm);
}

void Communicator::allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                             Algorithm algorithm, cudaStream_t stream) {
  use(engine_).allreduce_on_stream(send, recv, count, type, op, algorithm, stream);
}

namespace {

// The progress thread calls MPI while the caller's may too.
void needs_thread_multiple(const char* what) {
  int provided = MPI_THREAD_SINGLE;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_MULTIPLE)
    throw Error(Error::Code::Unavailable,
                std::string("arlab::Communicator::") + what + ": MPI was initialised with " +
                    std::string(provided == MPI_THREAD_SINGLE       ? "MPI_THREAD_SINGLE"
                                : provided == MPI_THREAD_FUNNELED   ? "MPI_THREAD_FUNNELED"
                                                                    : "MPI_THREAD_SERIALIZED") +
                    ", and the collective runs on a thread of its own that calls MPI while this one may too: "
                    "initialise MPI with MPI_Init_thread(..., MPI_THREAD_MULTIPLE, ...)");
}

}  // namespace

Request Communicator::allreduce_async(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                                      Algorithm algorithm) {
  detail::Engine& engine = use(engine_);
  needs_thread_multiple("allreduce_async");
  return Request(engine.allreduce_async(send, recv, count, type, op, algorithm));
}

void Communicator::prepare_async(Algorithm algorithm) {
  detail::Engine& engine = use(engine_);
  needs_thread_multiple("prepare_async");
  engine.prepare_async(algorithm);
}

void Request::wait() {
  if (!op_) return;
  op_->wait();
  op_->rethrow();
}

bool Request::test() {
  if (!op_) return true;
  if (!op_->done()) return false;
  op_->rethrow();
  return true;
}

Plan Communicator::plan(std::size_t count, DataType type, bool in_place) const {
  return use(engine_).plan(count, type, in_place);
}

}  // namespace arlab

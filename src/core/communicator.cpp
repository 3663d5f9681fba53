// Communicator: the public face of an Engine running over a private duplicate of an MPI_Comm.
#include "core/engine.hpp"
#include "transport/mpi_transport.hpp"
#ifdef ARLAB_HAVE_UCX
#include "transport/ucx_transports.hpp"
#endif

#include <iterator>
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
// (MPI_Comm_dup), different chunks, segments, nodes or algorithms would send messages their
// peers do not expect, and a calibration that some ranks skip times out. Each is a knob a
// rank may take from its own environment, so one collective (the min and the max of each)
// checks them all before anything else, and every rank throws the same Error naming them.
void agree_on_settings(MPI_Comm comm, const Options& o) {
  struct Setting {
    const char* name;
    long long value;
  };
  const Setting mine[] = {
      {"transport (ARLAB_TRANSPORT)", static_cast<long long>(*o.transport)},
      {"algorithm (ARLAB_ALGO)", o.algorithm && *o.algorithm != Algorithm::Auto ? static_cast<long long>(*o.algorithm) : -1},
      {"chunk_bytes (ARLAB_CHUNK_BYTES)", static_cast<long long>(*o.chunk_bytes)},
      {"segment_bytes (ARLAB_SEGMENT_BYTES)", static_cast<long long>(*o.segment_bytes)},
      {"max_in_flight (ARLAB_MAX_IN_FLIGHT)", *o.max_in_flight},
      {"ranks_per_node (ARLAB_RANKS_PER_NODE)", o.ranks_per_node ? *o.ranks_per_node : 0},
      {"a topology file (ARLAB_TOPOLOGY) or none", o.topology ? 1 : 0},
      {"self_calibration (ARLAB_CALIBRATE)", static_cast<long long>(*o.self_calibration)},
  };
  constexpr int n = static_cast<int>(std::size(mine));
  long long in[2 * n], out[2 * n];  // the min of each, and the min of its negation (-max)
  for (int i = 0; i < n; ++i) in[i] = mine[i].value, in[n + i] = -mine[i].value;
  MPI_Allreduce(in, out, 2 * n, MPI_LONG_LONG, MPI_MIN, comm);
  std::string differ;
  for (int i = 0; i < n; ++i)
    if (out[i] != -out[n + i]) differ += std::string(differ.empty() ? "" : ", ") + mine[i].name;
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
  const Options resolved = options.resolved();  // bad knobs fail before any MPI call
  comm_ = duplicate(comm);
  try {
    agree_on_settings(comm_, resolved);
    engine_ = std::make_unique<detail::Engine>(detail::make_transport(resolved, comm_), resolved, comm_,
                                               [resolved](MPI_Comm lane) { return detail::make_transport(resolved, lane); });
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

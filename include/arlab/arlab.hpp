// arlab: all-reduce algorithms side by side, over real transports, with a cost model.
// The public API. Everything else lives in namespace arlab::detail and is not installed.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

// CUDA's stream handle, declared as cuda_runtime.h declares it (a repeated typedef of the same
// type is allowed), so that this header needs no CUDA header.
typedef struct CUstream_st* cudaStream_t;

namespace arlab {

enum class DataType { Int8, UInt8, Int32, UInt32, Int64, UInt64, Float16, BFloat16, Float32, Float64 };

// Avg is the sum divided by the number of ranks; integer types truncate toward zero.
// Every op is defined for every data type (integers wrap on overflow, as in two's complement).
enum class ReduceOp { Sum, Prod, Min, Max, Avg };

enum class Algorithm { Auto, Ring, Tree, RecursiveDoubling, Rabenseifner, Hierarchical, Mpi, Nccl };

enum class TransportKind { Mpi, Ucx, UcxRma };

enum class LogLevel { None, Warn, Info, Trace };

// Where Auto's machine description comes from when no topology file is given (ARLAB_CALIBRATE):
// Cached (1): this machine's calibration from the cache, measured once and cached when there is
// none; Off (0): the built-in description, nothing measured; Force: measured again, and cached.
enum class SelfCalibration { Cached, Off, Force };

// Everything arlab throws. The message names the argument, rank or peer at fault.
class Error : public std::runtime_error {
 public:
  enum class Code { InvalidArgument, Unavailable, Timeout, Transport, Internal };
  Error(Code code, const std::string& message);
  Code code() const noexcept { return code_; }

 private:
  Code code_;
};

std::size_t size_of(DataType);

std::string to_string(DataType);       // "int8", "uint8", "int32", ..., "half", "bfloat16", "float", "double"
std::string to_string(ReduceOp);       // "sum", "prod", "min", "max", "avg"
std::string to_string(Algorithm);      // "auto", "ring", "tree", "recursive-doubling", "rabenseifner", ...
std::string to_string(TransportKind);  // "mpi", "ucx", "ucx-rma"

// Parsers accept the names above (and a few aliases); anything else throws Error listing the valid names.
DataType datatype_from_string(const std::string&);
ReduceOp reduce_op_from_string(const std::string&);
Algorithm algorithm_from_string(const std::string&);  // also "rd", "rab"
TransportKind transport_from_string(const std::string&);

// The algorithms arlab implements as schedules (ring, tree, recursive doubling, Rabenseifner, ...).
const std::vector<Algorithm>& schedule_algorithms();

// Whether this build has the transport (ucx and ucx-rma need UCX at build time).
bool transport_available(TransportKind);

// Per-communicator settings. Every field resolves in one order: a value set here wins; a
// field left unset takes its environment knob (ARLAB_TRANSPORT, ARLAB_ALGO, ARLAB_CHUNK_BYTES,
// ARLAB_SEGMENT_BYTES, ARLAB_TIMEOUT_S, ARLAB_DEBUG, ARLAB_TOPOLOGY, ARLAB_CALIBRATE,
// ARLAB_CACHE_DIR, ARLAB_MAX_IN_FLIGHT); the default comes last.
struct Options {
  std::optional<TransportKind> transport; // default Mpi
  std::optional<Algorithm> algorithm;     // replaces Algorithm::Auto in every call
  std::optional<std::size_t> chunk_bytes; // pipelining unit (default 256 KiB; 0: no pipelining)
  // A call of at least 16 segments of this many bytes (and of chunk_bytes per rank at least)
  // runs as all-reduces of one segment after another, so that each finds its data in cache
  // (default 1 MiB; 0: never; ARLAB_SEGMENT_BYTES).
  std::optional<std::size_t> segment_bytes;
  std::optional<double> timeout_s;        // a wait longer than this throws (default 300)
  std::optional<LogLevel> log_level;      // default Warn
  // A topology file (YAML, docs/model.md) describing the machine for Auto's cost model. Read
  // when the communicator is created; errors name the file, line and column. Unset: the
  // machine is calibrated (below).
  std::optional<std::string> topology;
  // Without a topology file: this machine's calibration, from the cache or measured once (at
  // most a few seconds, on the first Auto call or plan(); default Cached), or the built-in
  // description (Off).
  std::optional<SelfCalibration> self_calibration;
  // Where calibrations are cached (default $XDG_CACHE_HOME/arlab, else ~/.cache/arlab).
  std::optional<std::string> cache_dir;
  // Nodes as consecutive groups of this many ranks (the last may be smaller), for
  // Algorithm::Hierarchical and the model's placement, so that one machine can act as several.
  // Unset: a topology file's placement, else the ranks that share memory
  // (MPI_COMM_TYPE_SHARED).
  std::optional<int> ranks_per_node;
  // Collectives of one communicator that run at once (allreduce_async), each on a transport
  // of its own, 1 to 8 (default 4; ARLAB_MAX_IN_FLIGHT); 1 runs them one at a time.
  std::optional<int> max_in_flight;

  // The options with every unset field filled from the environment and the defaults.
  Options resolved() const;
};

// What Auto picks for a call of this size, and the model's prediction for every algorithm.
struct Plan {
  struct Candidate {
    Algorithm algorithm;
    double predicted_us;
    std::string levels;  // hierarchical: "intra ring, inter rabenseifner"; "" for the flat ones
  };
  Algorithm algorithm = Algorithm::Auto;  // the pick
  double predicted_us = 0;                // its predicted time
  std::vector<Candidate> candidates;      // fastest first
  std::string reason;                     // one sentence: why the pick wins
  // The machine description the model walked, and where it came from: a topology file, this
  // machine's cached calibration (its file), a calibration made now, or the built-in one.
  std::string machine;
  // The machine's state when that description was calibrated: ranks 0 and 1 exchanging 8 B
  // through plain MPI, us per exchange (docs/model.md, "The machine's state"); 0: unknown (a
  // file without it, the built-in description).
  double machine_state_probe_us = 0;
};

namespace detail {
class Engine;
class AsyncOp;
}  // namespace detail

// An all-reduce issued with Communicator::allreduce_async. Its buffers belong to the
// collective until wait() returns (or test() returns true): do not read or write them before.
// Destroying a Request does not cancel its collective, which still runs to its end (the
// communicator owns it); only its outcome is lost.
class Request {
 public:
  Request() = default;  // no collective: wait() returns and test() is true at once
  // Until the collective has finished; then rethrows its Error, if it failed (every time).
  void wait();
  // Whether it has finished (never blocks); true also for a failed one, whose Error it rethrows.
  bool test();
  bool valid() const { return op_ != nullptr; }

 private:
  friend class Communicator;
  explicit Request(std::shared_ptr<detail::AsyncOp> op) : op_(std::move(op)) {}
  std::shared_ptr<detail::AsyncOp> op_;
};

class Communicator {
 public:
  // Duplicates `comm`, so user traffic never mixes with arlab's own. Collective over `comm`.
  // Every rank must resolve the same transport, algorithm, chunk and segment sizes,
  // max_in_flight and ranks_per_node, and find Auto's machine the same way (the same topology
  // file, or a calibration, or the built-in one); each may come from a rank's own environment.
  // Otherwise, or where a knob or topology file is bad on some rank, every rank throws
  // Error(InvalidArgument), naming what differs (the timeout, the log level, the cache
  // directory and a calibration forced on some ranks only may differ).
  explicit Communicator(MPI_Comm comm, Options options = {});
  // Collective too, as MPI_Comm_free is: the transports settle with every peer (the last
  // messages, UCX's endpoints), so destroy a communicator at the same point on every rank. A
  // rank that destroys it while its peers are busy elsewhere waits for them, up to 2 x the
  // timeout for each transport it holds (one per lane: allreduce_async opens up to
  // max_in_flight) and the timeout of a collective still queued, and then goes on. Two
  // communicators destroyed in opposite orders on two ranks wait that out for both (measured:
  // with requests in flight on each and ARLAB_TIMEOUT_S=5, 60 s).
  ~Communicator();
  Communicator(Communicator&&) noexcept;
  Communicator& operator=(Communicator&&) noexcept;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const;
  int size() const;
  const Options& options() const;  // resolved

  // recv[i] = op over all ranks of send[i]. send == recv means in place. Collective: every rank
  // calls with the same count, type, op and algorithm. Throws Error on bad input before
  // touching any buffer, and on a peer that does not answer within the timeout. Ranks that
  // call with different arguments get an Error (or a Timeout that says so), never data.
  // After a call failed, the communicator refuses further calls; that call's buffers may
  // still be read (unfinished sends) or written (peers' puts) until the communicator is
  // destroyed, so keep them until then. The
  // destructor of a failed communicator waits (at most 2 x the timeout) for its peers to
  // leave the failed call, so that nothing is left in flight.
  void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                 Algorithm algorithm = Algorithm::Auto);
  // The same, ordered on a CUDA stream: the collective starts after the work queued on
  // `stream` before the call, and work queued on it afterwards sees the result. With arlab's
  // algorithms the call returns once the collective is done (its transfers are driven from
  // the host): it first waits for the stream's earlier work, so the host blocks where NCCL
  // would return at once. With Algorithm::Nccl it is NCCL's own: enqueued on `stream`, and the
  // call returns at once. Host buffers wait for the stream, then run as the call above.
  // Needs a CUDA device: Error(Unavailable) without one, or in a build without CUDA.
  void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op, Algorithm algorithm,
                 cudaStream_t stream);

  // The call above without waiting for it: it is queued and runs on a thread of the
  // communicator's own (started by the first such call; blocking-only use has none), so the
  // caller can compute meanwhile and collect it with Request::wait(). Arguments are checked
  // here (Error at once); what fails later (a timeout, a peer's other arguments) is rethrown
  // by wait(), and fails every call issued after it. Collectives start in the order they were
  // issued, blocking and asynchronous alike, so every rank must issue them in the same order
  // (as in MPI); up to Options::max_in_flight (m, default 4) run at once, each on a transport
  // of its own over a duplicate of the communicator (made when first needed), call n on the
  // (n mod m)-th, so their messages never meet. Any number may be outstanding, with the
  // scratch memory of at most m. Calls with the
  // mpi or nccl baseline, or with device buffers, run alone once those before them are done.
  // Destroying the communicator first runs what is still queued.
  // The thread calls MPI (the MPI transport, MPI_Allreduce, calibration), so MPI must be
  // initialised with MPI_Init_thread(MPI_THREAD_MULTIPLE): Error(Unavailable) otherwise.
  Request allreduce_async(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op,
                          Algorithm algorithm = Algorithm::Auto);
  // The first allreduce_async calls are collective where they make what the later ones reuse
  // (the thread's duplicate communicator, one lane per collective in flight, Auto's machine
  // description, which may be measured): every rank waits there for the others. A program
  // that interleaves allreduce_async with other collectives at points that differ between
  // ranks (a gradient ready at another moment on each rank, its own MPI calls between) would
  // then wait in arlab on one rank and in its own collective on another, forever. Collective:
  // call this first, at the same point on every rank, and every later allreduce_async returns
  // without waiting for another rank (as MPI_Iallreduce does). `algorithm`: the one the calls
  // will use (Auto finds the machine). Same MPI requirement as allreduce_async.
  void prepare_async(Algorithm algorithm = Algorithm::Auto);

  // What Auto would run for `count` elements of `type`, and why. Local, except for the
  // communicator's first plan() or Auto call when it has no topology file: that one finds the
  // machine (reads the cache, or measures it once), collectively, so every rank must make it
  // (a rank left waiting longer than the timeout throws Timeout).
  // `in_place`: for calls with send == recv (an out-of-place call also copies or reads the
  // input, which the model charges).
  Plan plan(std::size_t count, DataType type, bool in_place = false) const;

 private:
  friend class GradientBucketer;  // its device memory is the engine's
  MPI_Comm comm_ = MPI_COMM_NULL;
  std::unique_ptr<detail::Engine> engine_;
};

const char* version();

}  // namespace arlab

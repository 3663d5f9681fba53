// arlab-soak: what a user's program does, for as long as it is asked to.
//
// A seeded random sequence of all-reduce calls — algorithm (Auto, Hierarchical and Mpi among them) x
// transport x type x op x count (0 to --max-count elements: odd counts, counts below the
// rank count) x in place or out of place — spread over several communicators alive at once
// (two on the first transport: one over the world, one over the world with its ranks
// reversed, small chunks and nodes of 2 ranks), interleaved with MPI_Barrier, MPI_Allreduce on MPI_COMM_WORLD
// and host work of uneven length on each rank. Every result is checked exactly against
// MPI_Allreduce on MPI_COMM_WORLD (for half and bfloat16, MPI_Allreduce with arlab's own
// reduction as the MPI_Op), and an out-of-place send buffer must come back untouched.
// One call in four is issued with allreduce_async and collected (waited for and checked)
// only after up to three more calls, so that several are in flight at once on one or more
// communicators, beside the blocking ones and the world's own MPI calls (--no-async: none);
// each is issued before its reference's MPI_Allreduce on even ranks and after it on odd ones,
// so the communicators are prepared (prepare_async) and issuing must never wait for a peer.
// Any failure prints the seed, the call and one command that replays it.
//
//   mpirun -np 3 arlab-soak --seconds 60                  random calls for 60 s
//   mpirun -np 3 arlab-soak --seed 42 --calls 1234        exactly the first 1234 calls of seed 42
//   mpirun -np 3 arlab-soak --sweep -t ucx -a ring        every type x op x count in turn, in
//                                                         place and not, on each communicator
//
// Flags: --seconds S (60), --calls N (none: until --seconds), --seed N (from the clock),
// -t/--transports LIST (every one this build has), -a/--algorithms LIST (auto ring tree
// recursive-doubling rabenseifner hierarchical mpi), --max-count N (16M elements), --sweep, --no-async,
// --stall-report S (10: a rank whose main thread stays S seconds in one place says where, on stderr; 0: never),
// --stall-log DIR (the same reports also appended to DIR/rank-R.txt at once: mpirun's forwarding may stall too),
// -v (one line per call on rank 0). Exit status 0 when every result was exact, 1 otherwise, 2 for a bad flag.
#include <mpi.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <deque>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "arlab/arlab.hpp"
#include "baseline/mpi_baseline.hpp"
#include "common/store.hpp"

namespace {

using arlab::Algorithm;
using arlab::DataType;
using arlab::ReduceOp;
using arlab::TransportKind;

const DataType kTypes[] = {DataType::Int8,    DataType::UInt8,    DataType::Int32,   DataType::UInt32,
                           DataType::Int64,   DataType::UInt64,   DataType::Float16, DataType::BFloat16,
                           DataType::Float32, DataType::Float64};
const ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max, ReduceOp::Avg};

struct Config {
  double seconds = 60;
  double stall_report_s = 10;
  std::string stall_log_dir;
  long calls = -1;
  std::uint64_t seed = 0;
  bool seed_given = false;
  std::vector<TransportKind> transports;
  std::vector<Algorithm> algorithms;
  std::size_t max_count = std::size_t{16} << 20;
  bool sweep = false;
  bool async = true;
  bool verbose = false;
};

int world_rank() { int r; MPI_Comm_rank(MPI_COMM_WORLD, &r); return r; }
int world_size() { int s; MPI_Comm_size(MPI_COMM_WORLD, &s); return s; }

[[noreturn]] void usage_error(const std::string& message) {
  if (world_rank() == 0) std::fprintf(stderr, "arlab-soak: %s\n", message.c_str());
  MPI_Finalize();
  std::exit(2);
}

template <class T, class F>
std::vector<T> parse_list(const std::string& text, F parse) {
  std::vector<T> out;
  std::size_t at = 0;
  while (at <= text.size()) {
    const std::size_t comma = text.find(',', at);
    const std::string item = text.substr(at, comma == std::string::npos ? std::string::npos : comma - at);
    if (!item.empty()) out.push_back(parse(item));
    if (comma == std::string::npos) break;
    at = comma + 1;
  }
  return out;
}

Config parse(int argc, char** argv) {
  Config c;
  for (TransportKind t : {TransportKind::Mpi, TransportKind::Ucx, TransportKind::UcxRma})
    if (arlab::transport_available(t)) c.transports.push_back(t);
  c.algorithms = {Algorithm::Auto,         Algorithm::Ring,         Algorithm::Tree, Algorithm::RecursiveDoubling,
                  Algorithm::Rabenseifner, Algorithm::Hierarchical, Algorithm::Mpi};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) usage_error(a + " needs a value");
      return argv[++i];
    };
    auto number = [&](const std::string& v) {
      char* end = nullptr;
      const double x = std::strtod(v.c_str(), &end);
      if (end == v.c_str() || *end || !(x >= 0)) usage_error("bad " + a + " '" + v + "': expected a number >= 0");
      return x;
    };
    try {
      if (a == "--seconds") c.seconds = number(value());
      else if (a == "--calls") c.calls = static_cast<long>(number(value()));
      else if (a == "--seed") c.seed = static_cast<std::uint64_t>(std::strtoull(value().c_str(), nullptr, 10)), c.seed_given = true;
      else if (a == "-t" || a == "--transports") {
        const std::string v = value();
        if (v != "all") c.transports = parse_list<TransportKind>(v, arlab::transport_from_string);
      } else if (a == "-a" || a == "--algorithms") {
        const std::string v = value();
        if (v != "all") c.algorithms = parse_list<Algorithm>(v, arlab::algorithm_from_string);
      } else if (a == "--max-count") c.max_count = static_cast<std::size_t>(number(value()));
      else if (a == "--stall-report") c.stall_report_s = number(value());
      else if (a == "--stall-log") c.stall_log_dir = value();
      else if (a == "--sweep") c.sweep = true;
      else if (a == "--no-async") c.async = false;
      else if (a == "-v") c.verbose = true;
      else usage_error("unknown flag '" + a + "' (see the comment atop tests/mpi/soak.cpp)");
    } catch (const arlab::Error& e) {
      usage_error(e.what());
    }
  }
  if (!c.stall_log_dir.empty() &&
      (!std::filesystem::is_directory(c.stall_log_dir) || access(c.stall_log_dir.c_str(), W_OK) != 0))
    usage_error("--stall-log '" + c.stall_log_dir + "' is not a directory this process can write to");
  if (c.transports.empty()) usage_error("no transport to test");
  if (c.algorithms.empty()) usage_error("no algorithm to test");
  for (TransportKind t : c.transports)
    if (!arlab::transport_available(t)) usage_error("transport " + arlab::to_string(t) + " is not in this build");
  return c;
}

// One communicator under test and what it is.
struct Comm {
  std::string name;
  arlab::Communicator comm;
};

// One call: everything that decides it, drawn from the seeded generator (same on every rank).
struct CallSpec {
  std::size_t comm = 0;
  Algorithm algorithm = Algorithm::Auto;
  DataType type = DataType::Float32;
  ReduceOp op = ReduceOp::Sum;
  std::size_t count = 0;
  bool in_place = false;
  bool fresh_buffers = false;   // new allocations for this call (new addresses, new registrations)
  std::size_t misalign = 0;     // elements the buffers start past the allocation's start
  int interleave = 0;           // 0 nothing, 1 MPI_Barrier, 2 MPI_Allreduce on the world, 3 host work
  unsigned host_work_us = 0;    // rank 0's; every rank works a different amount
  std::uint32_t salt = 0;       // varies the data from call to call
  bool async = false;           // allreduce_async, collected after `collect_after` more calls
  int collect_after = 0;
};

std::string describe(const CallSpec& s, const std::vector<Comm>& comms) {
  char text[256];
  std::snprintf(text, sizeof text, "%s allreduce%s of %zu %s (%s) on %s, %s", arlab::to_string(s.algorithm).c_str(),
                s.async ? "_async" : "", s.count, arlab::to_string(s.type).c_str(), arlab::to_string(s.op).c_str(),
                comms[s.comm].name.c_str(), s.in_place ? "in place" : "out of place");
  return text;
}

std::size_t draw_count(std::mt19937_64& rng, std::size_t p, std::size_t max_count) {
  auto upto = [&](std::size_t hi) { return std::uniform_int_distribution<std::size_t>(0, hi)(rng); };
  const unsigned cls = static_cast<unsigned>(upto(99));
  std::size_t n;
  if (cls < 15) n = upto(2 * p + 1);            // around and below the rank count, and 0
  else if (cls < 55) n = 1 + upto(4095);
  else if (cls < 85) n = 1 + upto(256 << 10);
  else if (cls < 97) n = 1 + upto(2 << 20);
  else n = 1 + upto(max_count > 0 ? max_count - 1 : 0);
  if (n > 2 && upto(1)) n |= 1;  // odd counts half the time
  return std::min(n, max_count);
}

CallSpec draw(std::mt19937_64& rng, const Config& c, std::size_t ncomms, std::size_t p) {
  auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
  CallSpec s;
  s.comm = pick(ncomms);
  s.algorithm = c.algorithms[pick(c.algorithms.size())];
  s.type = kTypes[pick(std::size(kTypes))];
  s.op = kOps[pick(std::size(kOps))];
  s.count = draw_count(rng, p, c.max_count);
  s.in_place = pick(2);
  s.fresh_buffers = pick(4) == 0;
  s.misalign = pick(3);
  const std::size_t r = pick(10);
  s.interleave = r < 5 ? 0 : r < 7 ? 1 : r < 9 ? 2 : 3;
  s.host_work_us = static_cast<unsigned>(pick(2000));
  s.salt = static_cast<std::uint32_t>(rng());
  return s;
}

// Small integers, exact in every type and for every op: Prod multiplies ones and twos
// (at most 2^p), Min/Max see negative values on the signed types, Sum and Avg stay far from
// the 16-bit floats' integer limit. Different on every rank and every call.
void fill(DataType t, std::size_t count, int rank, ReduceOp op, std::uint32_t salt, std::byte* at) {
  const std::size_t e = arlab::size_of(t);
  const bool is_unsigned = t == DataType::UInt8 || t == DataType::UInt32 || t == DataType::UInt64;
  const std::size_t shift = salt % 1021 + static_cast<std::size_t>(rank) * 7;
  for (std::size_t i = 0; i < count; ++i) {
    const std::size_t k = i + shift;
    double x = op == ReduceOp::Prod ? (k % 5 == 0 ? 2 : 1) : static_cast<double>((k * 5) % 13);
    if (!is_unsigned && (op == ReduceOp::Min || op == ReduceOp::Max)) x -= 6;
    arlab::test::store(t, at + i * e, x);
  }
}

// Buffers reused from call to call unless a call asks for fresh ones.
struct Buffers {
  std::vector<std::byte> send, recv, want, input;
  void prepare(std::size_t bytes, bool fresh) {
    if (fresh) {
      std::vector<std::byte>().swap(send);
      std::vector<std::byte>().swap(recv);
    }
    send.resize(bytes);
    recv.resize(bytes);
    want.resize(bytes);
    input.resize(bytes);
  }
};

// Where the main thread is, for the stall report: each mark() bumps g_marks; a watcher thread
// (MPI-free) says when it has stopped moving, and where, and again when it goes on.
enum class Phase { Loop, Prepare, Check, Reference, Call, Issue, Wait, Barrier, WorldAllreduce, HostWork, Agree };
const char* const kPhaseNames[] = {"the soak's loop, between calls",
                                   "drawing a call and filling its buffers",
                                   "checking a result and freeing its buffers",
                                   "the reference MPI_Allreduce on MPI_COMM_WORLD",
                                   "a blocking arlab allreduce",
                                   "allreduce_async (issuing)",
                                   "Request::wait",
                                   "an interleaved MPI_Barrier",
                                   "an interleaved MPI_Allreduce on MPI_COMM_WORLD",
                                   "host work",
                                   "the MPI_Allreduce that agrees on going on"};
std::atomic<int> g_phase{0};
std::atomic<long> g_call{-1};
std::atomic<unsigned long> g_marks{0};

void mark(Phase ph, long call = -1) {
  g_phase.store(static_cast<int>(ph), std::memory_order_relaxed);
  if (call >= 0) g_call.store(call, std::memory_order_relaxed);
  g_marks.fetch_add(1, std::memory_order_release);
}

// Waits for every rank as MPI_Barrier does, but asleep once it has waited 1 ms: MPI's own wait
// spins (yielding, with mpi_yield_when_idle), and with more ranks than cores a rank blocked
// in the kernel may need the CPU it spins on. On machines that run DAMON, kdamond can hold a
// rank's anon_vma lock while it waits for a CPU, and that rank's heap cannot grow meanwhile
// (docs/ddp.md, the stall of the whole job); ranks spinning on it then keep kdamond waiting for
// minutes. Before the reference MPI_Allreduce and the agreeing one, where the ranks wait for a
// rank that is filling its buffers.
void barrier_asleep() {
  MPI_Request r;
  MPI_Ibarrier(MPI_COMM_WORLD, &r);
  const auto start = std::chrono::steady_clock::now();
  for (int done = 0;;) {
    MPI_Test(&r, &done, MPI_STATUS_IGNORE);
    if (done) return;
    if (std::chrono::steady_clock::now() - start > std::chrono::milliseconds(1))
      std::this_thread::sleep_for(std::chrono::microseconds(100));
  }
}

// The wall-clock time of day (UTC, to the millisecond): stall reports reach mpirun's output
// late when its forwarding stalls too, so each says when it was made.
std::string utc_now() {
  const auto now = std::chrono::system_clock::now();
  const std::time_t t = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&t, &tm);
  const long ms = static_cast<long>(
      std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000);
  char text[32];
  std::snprintf(text, sizeof text, "%02d:%02d:%02d.%03ld", tm.tm_hour, tm.tm_min, tm.tm_sec, ms);
  return text;
}

class StallWatch {
 public:
  // `log_dir`, when not empty: each report is also appended to log_dir/rank-R.txt, flushed at
  // once, so that a watcher outside the job sees a stall while it lasts.
  StallWatch(double limit_s, int rank, const std::string& log_dir) {
    if (limit_s <= 0) return;
    if (!log_dir.empty()) {
      const std::string path = log_dir + "/rank-" + std::to_string(rank) + ".txt";
      log_ = std::fopen(path.c_str(), "a");
      if (!log_) std::fprintf(stderr, "arlab-soak: cannot append to %s: %s\n", path.c_str(), std::strerror(errno));
    }
    thread_ = std::thread([this, limit_s, rank] {
      using Clock = std::chrono::steady_clock;
      unsigned long seen = g_marks.load();
      auto since = Clock::now();
      bool reported = false;
      char line[256];
      while (!stop_.load()) {
        std::this_thread::sleep_for(std::chrono::milliseconds(250));
        const unsigned long now_marks = g_marks.load(std::memory_order_acquire);
        const double still = std::chrono::duration<double>(Clock::now() - since).count();
        if (now_marks != seen) {
          if (reported) {
            std::snprintf(line, sizeof line, "arlab-soak: %s world rank %d went on after %.1f s\n", utc_now().c_str(),
                          rank, still);
            report(line);
          }
          seen = now_marks, since = Clock::now(), reported = false;
        } else if (!reported && still >= limit_s) {
          std::snprintf(line, sizeof line, "arlab-soak: %s world rank %d has been in %s (call %ld) for %.0f s\n",
                        utc_now().c_str(), rank, kPhaseNames[g_phase.load()], g_call.load(), still);
          report(line);
          reported = true;
        }
      }
    });
  }
  ~StallWatch() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    if (log_) std::fclose(log_);
  }

 private:
  void report(const char* line) {
    std::fputs(line, stderr);
    if (log_) std::fputs(line, log_), std::fflush(log_);
  }

  std::atomic<bool> stop_{false};
  std::FILE* log_ = nullptr;
  std::thread thread_;
};

void host_work(unsigned us) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  volatile unsigned sink = 0;
  while (std::chrono::steady_clock::now() < until) sink = sink + 1;
}

struct Totals {
  long calls = 0;
  double bytes = 0;
  std::map<std::string, long> per_line;  // "algorithm over comm" -> calls
};

// The command that replays the first `calls` calls, with the environment that shapes them.
std::string replay_command(const Config& c, long calls) {
  std::string env, exports;
  for (const char* name : {"UCX_TLS", "UCX_POSIX_FIFO_SIZE", "UCX_SYSV_FIFO_SIZE", "ARLAB_TIMEOUT_S",
                           "ARLAB_CHUNK_BYTES", "ARLAB_SEGMENT_BYTES", "ARLAB_ALGO", "ARLAB_TOPOLOGY"})
    if (const char* v = std::getenv(name)) {
      env += std::string(name) + "=" + v + " ";
      exports += std::string(" -x ") + name;
    }
  std::string cmd = env + "mpirun" + exports + " -np " + std::to_string(world_size()) + " arlab-soak --seed " + std::to_string(c.seed) +
                    " --calls " + std::to_string(calls) + " --max-count " + std::to_string(c.max_count) + " -t ";
  for (std::size_t i = 0; i < c.transports.size(); ++i) cmd += (i ? "," : "") + arlab::to_string(c.transports[i]);
  cmd += " -a ";
  for (std::size_t i = 0; i < c.algorithms.size(); ++i) cmd += (i ? "," : "") + arlab::to_string(c.algorithms[i]);
  if (c.sweep) cmd += " --sweep";
  if (!c.async) cmd += " --no-async";
  return cmd;
}

// A call issued and not yet checked: its own buffers while it is asynchronous.
struct Issued {
  CallSpec spec;
  long index = 0;
  Buffers own;
  Buffers* b = nullptr;  // &own, or the buffers shared by blocking calls
  std::byte* send = nullptr;
  std::byte* recv = nullptr;
  arlab::Request request;
};

[[noreturn]] void threw(const Issued& call, const std::vector<Comm>& comms, const Config& c, const arlab::Error& err) {
  std::fprintf(stderr, "arlab-soak: world rank %d, call %ld (seed %" PRIu64 "): %s threw: %s\nreplay: %s\n", world_rank(),
               call.index, c.seed, describe(call.spec, comms).c_str(), err.what(), replay_command(c, call.index + 1).c_str());
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  std::abort();
}

// Fills the buffers, computes the reference (MPI_Allreduce on the world communicator) and
// makes the call; a blocking one has finished on return, an asynchronous one is in flight.
void issue(Issued& call, std::vector<Comm>& comms, Buffers& shared, const Config& c) {
  const CallSpec& s = call.spec;
  const std::size_t e = arlab::size_of(s.type);
  const std::size_t bytes = s.count * e, off = s.misalign * e;
  call.b = s.async ? &call.own : &shared;
  Buffers& b = *call.b;
  b.prepare(bytes + off, s.fresh_buffers);
  call.send = b.send.data() + off;
  call.recv = s.in_place ? call.send : b.recv.data() + off;
  fill(s.type, s.count, world_rank(), s.op, s.salt, b.input.data());
  std::memcpy(call.send, b.input.data(), bytes);
  if (!s.in_place) std::memset(call.recv, 0x77, bytes);  // poison: every element must be written
  // An asynchronous call is issued before the reference's MPI_Allreduce on even ranks and
  // after it on odd ones: issuing must never wait for another rank (prepare_async, in main).
  const bool reference_first = !s.async || world_rank() % 2 == 1;
  mark(Phase::Reference, call.index);
  if (reference_first) {
    barrier_asleep();
    arlab::detail::mpi_allreduce(MPI_COMM_WORLD, b.input.data(), b.want.data(), s.count, s.type, s.op);
  }
  mark(s.async ? Phase::Issue : Phase::Call);
  try {
    if (s.async)
      call.request = comms[s.comm].comm.allreduce_async(call.send, call.recv, s.count, s.type, s.op, s.algorithm);
    else
      comms[s.comm].comm.allreduce(call.send, call.recv, s.count, s.type, s.op, s.algorithm);
  } catch (const arlab::Error& err) {
    threw(call, comms, c, err);
  }
  mark(Phase::Reference);
  if (!reference_first) {
    barrier_asleep();
    arlab::detail::mpi_allreduce(MPI_COMM_WORLD, b.input.data(), b.want.data(), s.count, s.type, s.op);
  }
  mark(Phase::Loop);
}

// Waits for the call and checks it. Returns false on this rank's wrong result (printed here).
bool collect(Issued& call, const std::vector<Comm>& comms, const Config& c, Totals& totals) {
  const int rank = world_rank();
  const CallSpec& s = call.spec;
  mark(Phase::Wait, call.index);
  try {
    call.request.wait();
  } catch (const arlab::Error& err) {
    threw(call, comms, c, err);
  }
  mark(Phase::Check);
  const std::size_t e = arlab::size_of(s.type), bytes = s.count * e;
  const Buffers& b = *call.b;
  bool ok = std::memcmp(call.recv, b.want.data(), bytes) == 0;
  if (!ok) {
    std::size_t i = 0;
    while (i < s.count && std::memcmp(call.recv + i * e, b.want.data() + i * e, e) == 0) ++i;
    std::uint64_t got = 0, want = 0;
    std::memcpy(&got, call.recv + i * e, e);
    std::memcpy(&want, b.want.data() + i * e, e);
    std::fprintf(stderr,
                 "arlab-soak: world rank %d, call %ld (seed %" PRIu64 "): %s: element %zu is 0x%" PRIx64
                 ", MPI_Allreduce gives 0x%" PRIx64 "\n",
                 rank, call.index, c.seed, describe(s, comms).c_str(), i, got, want);
  }
  if (!s.in_place && std::memcmp(call.send, b.input.data(), bytes) != 0) {
    ok = false;
    std::fprintf(stderr, "arlab-soak: world rank %d, call %ld (seed %" PRIu64 "): %s changed the send buffer\n", rank,
                 call.index, c.seed, describe(s, comms).c_str());
  }
  ++totals.calls;
  totals.bytes += static_cast<double>(bytes);
  ++totals.per_line[arlab::to_string(s.algorithm) + (s.async ? " async" : "") + " over " + comms[s.comm].name];
  if (c.verbose && rank == 0) std::printf("%ld: %s\n", call.index, describe(s, comms).c_str());
  return ok;
}

// A blocking call: issued and checked at once.
bool run_call(const CallSpec& s, long index, std::vector<Comm>& comms, Buffers& b, const Config& c,
              Totals& totals) {
  Issued call;
  call.spec = s;
  call.index = index;
  issue(call, comms, b, c);
  return collect(call, comms, c, totals);
}

// The user's own MPI between arlab calls. Each waits for the others asleep first, as the
// reference does: ranks spinning here on a rank stalled in the kernel kept it stalled for the
// whole of arlab's 30 s timeout in one `.ci/run` (soak.sm.np4, 2026-12-07; docs/ddp.md).
void interleave(const CallSpec& s, int rank) {
  switch (s.interleave) {
    case 1:
      mark(Phase::Barrier);
      barrier_asleep();
      MPI_Barrier(MPI_COMM_WORLD);
      break;
    case 2: {
      mark(Phase::WorldAllreduce);
      barrier_asleep();
      long mine = rank + 1, all = 0;
      MPI_Allreduce(&mine, &all, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD);
      break;
    }
    case 3: mark(Phase::HostWork); host_work(s.host_work_us * static_cast<unsigned>(1 + rank) % 2500); break;
    default: break;
  }
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;  // allreduce_async's progress thread calls MPI beside this one
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  Config c = parse(argc, argv);
  const int rank = world_rank(), p = world_size();
  if (provided < MPI_THREAD_MULTIPLE && c.async) {
    if (rank == 0) std::printf("arlab-soak: MPI lacks MPI_THREAD_MULTIPLE: no asynchronous calls\n");
    c.async = false;
  }
  if (!c.seed_given) c.seed = static_cast<std::uint64_t>(std::chrono::system_clock::now().time_since_epoch().count());
  MPI_Bcast(&c.seed, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  if (rank == 0)
    std::printf("arlab-soak: %d ranks, seed %" PRIu64 " (replay: --seed %" PRIu64 "), %s\n", p, c.seed, c.seed,
                c.sweep ? "sweep" : "random calls");
  int failed = 0;
  {
    std::vector<Comm> comms;
    MPI_Comm reversed;
    MPI_Comm_split(MPI_COMM_WORLD, 0, p - 1 - rank, &reversed);
    for (std::size_t i = 0; i < c.transports.size(); ++i) {
      arlab::Options o;
      o.transport = c.transports[i];
      comms.push_back({arlab::to_string(*o.transport), arlab::Communicator(MPI_COMM_WORLD, o)});
      if (i == 0 && !c.sweep) {
        o.chunk_bytes = 16 << 10;  // many messages in flight
        o.ranks_per_node = 2;      // emulated nodes: hierarchical across them, the last one short at odd p
        comms.push_back({arlab::to_string(*o.transport) + " (reversed ranks, 16 KiB chunks, 2 ranks per node)",
                         arlab::Communicator(reversed, o)});
      }
    }
    if (c.async)  // collectively, here: the asynchronous calls below then never wait for a peer
      for (Comm& cm : comms) cm.comm.prepare_async();
    StallWatch watch(c.stall_report_s, rank, c.stall_log_dir);
    Buffers buffers;
    Totals totals;
    std::mt19937_64 rng(c.seed);
    // Which calls are asynchronous, from a generator of their own: a seed draws the same calls
    // with --no-async.
    std::mt19937_64 async_rng(c.seed ^ 0x5ca1ab1eull);
    std::deque<Issued> pending;  // asynchronous calls in flight, in issue order
    const auto start = std::chrono::steady_clock::now();
    auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
    double next_report = 10;
    long index = 0;

    // Every rank must agree on whether to go on: rank 0's clock decides, in the same
    // MPI_Allreduce that agrees on the result.
    auto agree = [&](bool ok, bool more) {
      int mine[2] = {ok ? 1 : 0, rank == 0 ? (more ? 1 : 0) : 1}, all[2] = {0, 0};
      mark(Phase::Agree);
      barrier_asleep();
      MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
      mark(Phase::Prepare);
      if (!all[0]) failed = 1;
      return all[0] && all[1];
    };

    if (c.sweep) {
      const std::size_t up = static_cast<std::size_t>(p);
      const std::size_t counts[] = {0, 1, 2, 3, up - 1, up, up + 1, 17, 1000, 4099, 65539, 1048583};
      bool go = true;
      for (std::size_t ci = 0; ci < comms.size() && go; ++ci)
        for (Algorithm a : c.algorithms)
          for (DataType t : kTypes)
            for (ReduceOp op : kOps)
              for (std::size_t count : counts)
                for (bool in_place : {false, true}) {
                  if (!go || (c.calls >= 0 && index >= c.calls)) { go = false; continue; }
                  CallSpec s;
                  s.comm = ci, s.algorithm = a, s.type = t, s.op = op, s.count = std::min(count, c.max_count);
                  s.in_place = in_place, s.salt = static_cast<std::uint32_t>(index);
                  go = agree(run_call(s, index, comms, buffers, c, totals), true);
                  ++index;
                }
    } else {
      for (;;) {
        if (c.calls >= 0 && index >= c.calls) break;
        CallSpec s = draw(rng, c, comms.size(), static_cast<std::size_t>(p));
        const std::uint64_t a = async_rng();
        s.async = c.async && a % 4 == 0;
        s.collect_after = static_cast<int>(a / 4 % 4);
        bool ok = true;
        if (s.async) {
          pending.emplace_back();
          pending.back().spec = s;
          pending.back().index = index;
          issue(pending.back(), comms, buffers, c);
        } else {
          ok = run_call(s, index, comms, buffers, c, totals);
        }
        // Collect the asynchronous calls whose turn has come (every rank the same ones).
        while (!pending.empty() && pending.front().index + pending.front().spec.collect_after <= index) {
          ok = collect(pending.front(), comms, c, totals) && ok;
          pending.pop_front();
        }
        interleave(s, rank);
        ++index;
        const double t = elapsed();
        if (rank == 0 && t >= next_report) {
          std::printf("arlab-soak: %ld calls, %.0f s\n", index, t);
          std::fflush(stdout);
          next_report += 10;
        }
        if (!agree(ok, c.calls >= 0 || t < c.seconds)) break;
      }
      bool ok = true;
      for (auto& call : pending) ok = collect(call, comms, c, totals) && ok;
      pending.clear();
      agree(ok, false);
    }

    if (rank == 0) {
      if (failed) {
        std::printf("arlab-soak: FAILED at call %ld (seed %" PRIu64 "); replay: %s\n", index - 1, c.seed,
                    replay_command(c, index).c_str());
      } else {
        std::printf("arlab-soak: %ld calls exact in %.1f s, %.2f GB reduced per rank, %zu communicators, seed %" PRIu64
                    "\n", totals.calls, elapsed(), totals.bytes / 1e9, comms.size(), c.seed);
        for (const auto& [line, n] : totals.per_line) std::printf("  %6ld  %s\n", n, line.c_str());
      }
    }
    MPI_Comm_free(&reversed);
  }
  MPI_Finalize();
  return failed;
}

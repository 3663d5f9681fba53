// arlab-faults: what the ranks that are left see when a peer fails or disagrees.
//
//   arlab-faults stop  -t T    the last rank stops itself (SIGSTOP) in the middle of a large
//                              ring all-reduce
//   arlab-faults kill  -t T    the last rank kills itself (SIGKILL) there
//   arlab-faults count|type|op|algorithm -t T
//                              rank 0 calls with another count (same element size), type
//                              (float where the others have int32: the same bytes), op or
//                              algorithm than the others
//
// Run under mpirun with ARLAB_TIMEOUT_S set (T_out below) and, for kill, with
// `--mca orte_abort_on_non_zero_status 0` so that mpirun lets the survivors finish. Every
// rank that is left checks, and prints one line "faults: rank R PASSED|FAILED: ...":
//   - its call throws arlab::Error (never returns: that would be data made without a peer),
//     a Timeout that names a peer it waited for, within T_out + 1 s of the fault; after a
//     kill, the transport may see the death first (a rendezvous read from the dead process
//     fails): an Error(Transport) that names the killed rank is as good;
//     for a disagreement, an Error whose message says the arguments differ may come first;
//   - the rank that waits on the failed peer directly names it (ring: rank 0 waits on p-1);
//     a rank's clock restarts when a peer that gave up first drains its messages (its sends
//     to that peer complete), so the bound is (p - 1) T_out + 1 s, after a fault as after a
//     disagreement (a segmented call has sends of its later segments still unmatched when
//     the peer fails);
//   - a further call on that communicator fails at once with an Error saying it cannot be
//     used again, and destroying the communicator does not hang: bounded by 2 T_out + 2 s
//     (its shutdown waits up to 2 T_out for peers still inside the failed call).
// After a stop or kill the survivors end the stopped rank and leave without MPI_Finalize
// (the world has lost a rank); after a disagreement every rank finalizes normally.
#include <mpi.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "arlab/arlab.hpp"

namespace {

using arlab::Algorithm;
using arlab::DataType;
using arlab::ReduceOp;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

struct Verdict {
  bool ok = true;
  std::string why;
  void fail(const std::string& reason) {
    if (ok) why = reason;
    ok = false;
  }
};

// A call that must fail, its error, and how long it took.
struct Failure {
  std::optional<arlab::Error> error;
  double seconds = 0;
};

Failure call_expecting_failure(arlab::Communicator& comm, void* buf, std::size_t count, DataType type, ReduceOp op,
                               Algorithm algorithm) {
  Failure f;
  const auto t0 = Clock::now();
  try {
    comm.allreduce(buf, buf, count, type, op, algorithm);
  } catch (const arlab::Error& e) {
    f.error = e;
  }
  f.seconds = seconds_since(t0);
  return f;
}

// After the failed call: refused at once, and the communicator goes without hanging.
void check_refused_and_destroyed(std::optional<arlab::Communicator>& comm, double timeout_s, Verdict& v) {
  std::vector<float> x(4, 1.0f);
  const auto t0 = Clock::now();
  try {
    comm->allreduce(x.data(), x.data(), x.size(), DataType::Float32, ReduceOp::Sum, Algorithm::Ring);
    v.fail("a call after the failure returned");
  } catch (const arlab::Error& e) {
    if (!contains(e.what(), "cannot be used again")) v.fail(std::string("the call after the failure said: ") + e.what());
  }
  if (seconds_since(t0) > 0.5) v.fail("the call after the failure took " + std::to_string(seconds_since(t0)) + " s");
  const auto t1 = Clock::now();
  comm.reset();
  const double took = seconds_since(t1);
  if (took > 2 * timeout_s + 2) v.fail("destroying the communicator took " + std::to_string(took) + " s");
}

int run_peer_failure(const std::string& scenario, arlab::TransportKind transport, double timeout_s) {
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const int victim = p - 1;
  std::vector<int> pids(p);
  const int mine = static_cast<int>(getpid());
  MPI_Allgather(&mine, 1, MPI_INT, pids.data(), 1, MPI_INT, MPI_COMM_WORLD);
  MPI_Comm survivors;  // to agree that every survivor has printed before any leaves
  MPI_Comm_split(MPI_COMM_WORLD, rank == victim ? 1 : 0, rank, &survivors);

  arlab::Options o;
  o.transport = transport;
  std::optional<arlab::Communicator> comm(std::in_place, MPI_COMM_WORLD, o);
  // Large enough that the fault lands mid-collective: 64 MiB takes tens of ms here.
  std::vector<float> x(std::size_t{16} << 20, 1.0f);
  comm->allreduce(x.data(), x.data(), 1024, DataType::Float32, ReduceOp::Sum, Algorithm::Ring);  // connect
  MPI_Barrier(MPI_COMM_WORLD);

  if (rank == victim) {
    std::thread([scenario] {
      std::this_thread::sleep_for(std::chrono::milliseconds(15));
      kill(getpid(), scenario == "stop" ? SIGSTOP : SIGKILL);
    }).detach();
    for (;;) comm->allreduce(x.data(), x.data(), x.size(), DataType::Float32, ReduceOp::Sum, Algorithm::Ring);
  }

  Verdict v;
  const auto fault_window = Clock::now();
  Failure f;
  for (int k = 0; k < 100 && !f.error; ++k)
    f = call_expecting_failure(*comm, x.data(), x.size(), DataType::Float32, ReduceOp::Sum, Algorithm::Ring);
  const double since_fault = seconds_since(fault_window) - 0.015;
  if (!f.error) {
    v.fail("100 calls returned without the stopped rank");
  } else {
    const std::string m = f.error->what();
    const bool timeout = f.error->code() == arlab::Error::Code::Timeout;
    const bool death_seen = scenario == "kill" && f.error->code() == arlab::Error::Code::Transport &&
                            contains(m, "rank " + std::to_string(victim));
    if (!timeout && !death_seen) v.fail("not a Timeout, nor the transport's failure naming the victim: " + m);
    if (timeout && !contains(m, "waiting for rank") && !contains(m, "to take the last messages"))
      v.fail("names no peer: " + m);
    // Ring: rank 0 receives from the victim, its left neighbour.
    if (rank == 0 && timeout && !contains(m, "waiting for rank " + std::to_string(victim)))
      v.fail("does not name the victim: " + m);
    const double bound = (p - 1) * timeout_s + 1;
    if (f.seconds > bound && since_fault > bound)
      v.fail("took " + std::to_string(f.seconds) + " s (ARLAB_TIMEOUT_S=" + std::to_string(timeout_s) + ")");
  }
  check_refused_and_destroyed(comm, timeout_s, v);
  std::printf("faults: rank %d %s: %s%s\n", rank, v.ok ? "PASSED" : "FAILED", v.ok ? "" : v.why.c_str(),
              v.ok && f.error ? f.error->what() : "");
  std::fflush(stdout);
  // The survivors agree they are done (a barrier over the world would wait for the victim).
  MPI_Barrier(survivors);
  if (rank == 0 && scenario == "stop") kill(pids[victim], SIGKILL);
  std::_Exit(v.ok ? 0 : 1);
}

int run_disagreement(const std::string& scenario, arlab::TransportKind transport, double timeout_s) {
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  arlab::Options o;
  o.transport = transport;
  std::optional<arlab::Communicator> comm(std::in_place, MPI_COMM_WORLD, o);
  std::size_t count = 100003;
  DataType type = DataType::Int32;
  ReduceOp op = ReduceOp::Sum;
  Algorithm algorithm = Algorithm::Ring;
  if (rank == 0) {
    if (scenario == "count") count += 1;
    if (scenario == "type") type = DataType::Float32;
    if (scenario == "op") op = ReduceOp::Max;
    if (scenario == "algorithm") algorithm = Algorithm::Rabenseifner;
  }
  std::vector<std::int32_t> x(count, 1);
  Verdict v;
  MPI_Barrier(MPI_COMM_WORLD);
  const Failure f = call_expecting_failure(*comm, x.data(), count, type, op, algorithm);
  if (!f.error) {
    v.fail("the call returned although rank 0 called it with another " + scenario);
  } else {
    const std::string m = f.error->what();
    const bool says_disagreement = contains(m, "other arguments") || contains(m, "different arguments");
    if (!says_disagreement) v.fail("does not say the arguments may differ: " + m);
    if (f.seconds > (p - 1) * timeout_s + 1) v.fail("took " + std::to_string(f.seconds) + " s");
  }
  check_refused_and_destroyed(comm, timeout_s, v);
  std::printf("faults: rank %d %s: %s%s\n", rank, v.ok ? "PASSED" : "FAILED", v.ok ? "" : v.why.c_str(),
              v.ok && f.error ? f.error->what() : "");
  std::fflush(stdout);
  MPI_Barrier(MPI_COMM_WORLD);
  MPI_Finalize();
  return v.ok ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  const std::string scenario = argc > 1 ? argv[1] : "";
  arlab::TransportKind transport = arlab::TransportKind::Mpi;
  if (argc > 3 && std::string(argv[2]) == "-t") transport = arlab::transport_from_string(argv[3]);
  const double timeout_s = *arlab::Options{}.resolved().timeout_s;
  if (scenario == "stop" || scenario == "kill") return run_peer_failure(scenario, transport, timeout_s);
  if (scenario == "count" || scenario == "type" || scenario == "op" || scenario == "algorithm")
    return run_disagreement(scenario, transport, timeout_s);
  std::fprintf(stderr, "usage: arlab-faults stop|kill|count|type|op|algorithm [-t mpi|ucx|ucx-rma]\n");
  MPI_Finalize();
  return 2;
}

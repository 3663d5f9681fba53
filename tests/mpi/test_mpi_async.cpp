// allreduce_async under mpirun, as training code uses it: several communicators (every
// transport, and one whose ranks are reversed) with requests outstanding on all of them at
// once, while this thread makes its own MPI calls and host work; sizes, types, ops and
// algorithms vary call to call; results compared exactly with MPI_Allreduce of the same data.
// With ARLAB_TEST_MPI_THREAD=single, MPI is initialised without MPI_THREAD_MULTIPLE and only
// the test of the error that gives runs.
#include <gtest/gtest.h>
#include <mpi.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include "arlab/arlab.hpp"
#include "common/mpi_world.hpp"

namespace {

using arlab::test::available_transports;
using arlab::test::everywhere;
using arlab::test::options_over;
using arlab::test::world_rank;

using arlab::Algorithm;
using arlab::DataType;
using arlab::ReduceOp;
using arlab::TransportKind;

bool single_threaded_mpi() {
  const char* v = std::getenv("ARLAB_TEST_MPI_THREAD");
  return v && std::string(v) == "single";
}

// One call's buffers: integer-valued data (exact in every order of summation), its expected
// result from MPI_Allreduce, and arlab's.
struct Call {
  std::size_t count;
  DataType type;
  MPI_Datatype mpi_type;
  ReduceOp op;
  MPI_Op mpi_op;
  Algorithm algorithm;
  std::vector<std::byte> send, recv, want;
};

Call make_call(int i, int rank, int comm_rank) {
  const Algorithm algos[] = {Algorithm::Ring, Algorithm::Tree, Algorithm::RecursiveDoubling, Algorithm::Rabenseifner,
                             Algorithm::Auto, Algorithm::Mpi};
  const std::size_t counts[] = {1, 3, 257, 4099, 65537, 300001};
  Call c;
  c.count = counts[(i * 5 + 1) % 6];
  c.algorithm = algos[i % 6];
  const bool floating = i % 2 == 0;
  c.type = floating ? DataType::Float32 : DataType::Int64;
  c.mpi_type = floating ? MPI_FLOAT : MPI_INT64_T;
  c.op = i % 3 == 2 ? ReduceOp::Max : ReduceOp::Sum;
  c.mpi_op = c.op == ReduceOp::Max ? MPI_MAX : MPI_SUM;
  const std::size_t e = arlab::size_of(c.type);
  c.send.resize(c.count * e);
  c.recv.assign(c.count * e, std::byte{0x5a});
  c.want.resize(c.count * e);
  for (std::size_t k = 0; k < c.count; ++k) {
    const auto v = static_cast<std::int64_t>((k * 7 + static_cast<std::size_t>(comm_rank) * 13 + i) % 101);
    if (floating) {
      const float f = static_cast<float>(v);
      std::memcpy(c.send.data() + k * e, &f, e);
    } else {
      std::memcpy(c.send.data() + k * e, &v, e);
    }
  }
  (void)rank;
  return c;
}

TEST(Async, RequestsOnSeveralCommunicatorsBesideTheCallersOwnMpi) {
  if (single_threaded_mpi()) GTEST_SKIP() << "MPI without MPI_THREAD_MULTIPLE";
  const int rank = world_rank();
  int p = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Comm reversed;
  MPI_Comm_split(MPI_COMM_WORLD, 0, p - 1 - rank, &reversed);
  std::vector<arlab::Communicator> comms;
  std::vector<MPI_Comm> under;  // the MPI communicator each was made from
  for (TransportKind t : available_transports()) {
    arlab::Options o = options_over(t);
    o.chunk_bytes = 16384;
    comms.emplace_back(MPI_COMM_WORLD, o);
    under.push_back(MPI_COMM_WORLD);
  }
  comms.emplace_back(reversed, arlab::Options{});
  under.push_back(reversed);

  bool ok = true;
  std::string first_failure;
  for (int round = 0; round < 4; ++round) {
    std::vector<Call> calls;
    std::vector<arlab::Request> requests;
    std::vector<std::size_t> comm_of;
    const int per_comm = 3 + round;  // a different number outstanding each round
    calls.reserve(comms.size() * per_comm);
    for (int i = 0; i < per_comm; ++i)
      for (std::size_t c = 0; c < comms.size(); ++c) {
        const int id = round * 31 + i * 7 + static_cast<int>(c);
        calls.push_back(make_call(id, rank, comms[c].rank()));
        Call& call = calls.back();
        requests.push_back(comms[c].allreduce_async(call.send.data(), call.recv.data(), call.count, call.type,
                                                    call.op, call.algorithm));
        comm_of.push_back(c);
      }
    // Meanwhile, the caller's own MPI: the references, and host work between them.
    double work = 0;
    for (std::size_t k = 0; k < calls.size(); ++k) {
      MPI_Allreduce(calls[k].send.data(), calls[k].want.data(), static_cast<int>(calls[k].count), calls[k].mpi_type,
                    calls[k].mpi_op, under[comm_of[k]]);
      for (int w = 0; w < 20000; ++w) work += std::sqrt(static_cast<double>(w + k));
    }
    EXPECT_GT(work, 0);
    // Poll some, wait for the rest in reverse order.
    for (std::size_t k = 0; k < requests.size(); k += 2) (void)requests[k].test();
    for (std::size_t k = requests.size(); k-- > 0;) {
      requests[k].wait();
      if (calls[k].recv != calls[k].want && ok) {
        ok = false;
        first_failure = "round " + std::to_string(round) + " call " + std::to_string(k) + " on communicator " +
                        std::to_string(comm_of[k]) + ": " + arlab::to_string(calls[k].algorithm) + " " +
                        arlab::to_string(calls[k].type) + " count " + std::to_string(calls[k].count);
      }
    }
    // A blocking call between rounds, on each communicator.
    for (auto& comm : comms) {
      std::int64_t x = comm.rank() + 1, sum = 0;
      comm.allreduce(&x, &sum, 1, DataType::Int64, ReduceOp::Sum, Algorithm::Auto);
      if (sum != static_cast<std::int64_t>(p) * (p + 1) / 2) ok = false;
    }
  }
  EXPECT_TRUE(everywhere(ok)) << "rank " << rank << ": " << first_failure;
  comms.clear();
  MPI_Comm_free(&reversed);
}

TEST(Async, ASmallCallIssuedAfterALargeOneFinishesFirstOverEveryTransport) {
  // Collectives in flight together on one communicator: a small call issued after a large one
  // is done while the large one is still moving. One at a time, it never could be. Tried up to
  // ten times per transport (every rank the same calls, until it has happened on every rank), it
  // must happen at least once on every rank: a timing matter, which three tries once missed.
  if (single_threaded_mpi()) GTEST_SKIP() << "MPI without MPI_THREAD_MULTIPLE";
  for (TransportKind t : available_transports()) {
    arlab::Communicator comm(MPI_COMM_WORLD, options_over(t));
    const int p = comm.size();
    int overtaken = 0;
    bool ok = true;
    for (int attempt = 0; attempt < 10 && !everywhere(overtaken > 0); ++attempt) {
      std::vector<float> large(std::size_t{4} << 20);  // 16 MiB
      for (std::size_t k = 0; k < large.size(); ++k) large[k] = static_cast<float>((k + comm.rank()) % 31);
      std::int64_t small[3] = {comm.rank(), -comm.rank(), 7};
      auto a = comm.allreduce_async(large.data(), large.data(), large.size(), DataType::Float32, ReduceOp::Sum,
                                    Algorithm::Ring);
      auto b = comm.allreduce_async(small, small, 3, DataType::Int64, ReduceOp::Max, Algorithm::RecursiveDoubling);
      b.wait();
      overtaken += !a.test();
      a.wait();
      ok &= small[0] == p - 1 && small[1] == 0 && small[2] == 7;
      for (std::size_t k = 0; k < large.size(); k += 4093) {
        float want = 0;
        for (int r = 0; r < p; ++r) want += static_cast<float>((k + r) % 31);
        ok &= large[k] == want;
      }
    }
    EXPECT_TRUE(everywhere(ok)) << arlab::to_string(t);
    EXPECT_GT(overtaken, 0) << arlab::to_string(t) << " rank " << comm.rank();
  }
}

TEST(Async, WaitingLongForALatePeerTheProgressThreadSleeps) {
  // The last rank issues its call 0.4 s late; the others issue theirs and wait. After
  // 10 ms without progress the progress thread sleeps between polls (exec/idle_wait.hpp): the
  // waiting process must have used under a third of the wait's CPU time, on every transport.
  if (single_threaded_mpi()) GTEST_SKIP() << "MPI without MPI_THREAD_MULTIPLE";
  const auto process_cpu_s = [] {
    timespec t{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) + 1e-9 * static_cast<double>(t.tv_nsec);
  };
  for (TransportKind t : available_transports()) {
    arlab::Communicator comm(MPI_COMM_WORLD, options_over(t));
    const int p = comm.size();
    const bool late = comm.rank() == p - 1;
    comm.prepare_async(Algorithm::Ring);  // issuing never waits for another rank after this
    MPI_Barrier(MPI_COMM_WORLD);
    if (late) std::this_thread::sleep_for(std::chrono::milliseconds(400));
    double x = 1;
    const double t0 = MPI_Wtime(), cpu0 = process_cpu_s();
    comm.allreduce_async(&x, &x, 1, DataType::Float64, ReduceOp::Sum, Algorithm::Ring).wait();
    const double waited = MPI_Wtime() - t0, cpu = process_cpu_s() - cpu0;
    EXPECT_TRUE(everywhere(x == p)) << arlab::to_string(t);
    if (!late) {
      EXPECT_GT(waited, 0.2) << arlab::to_string(t);
      EXPECT_LT(cpu, waited / 3) << arlab::to_string(t) << " rank " << comm.rank() << ": " << cpu
                                 << " s of CPU time in a wait of " << waited << " s";
    }
  }
}

TEST(Async, BlockingCallsTakeTheirTurnAmongQueuedOnes) {
  if (single_threaded_mpi()) GTEST_SKIP() << "MPI without MPI_THREAD_MULTIPLE";
  arlab::Communicator comm(MPI_COMM_WORLD);
  const int p = comm.size();
  std::vector<std::int32_t> a(100003), b(77), c(5000);
  for (auto* v : {&a, &b, &c})
    for (std::size_t k = 0; k < v->size(); ++k) (*v)[k] = static_cast<std::int32_t>(k % 17 + comm.rank());
  auto ra = comm.allreduce_async(a.data(), a.data(), a.size(), DataType::Int32, ReduceOp::Sum, Algorithm::Ring);
  comm.allreduce(b.data(), b.data(), b.size(), DataType::Int32, ReduceOp::Sum, Algorithm::Tree);  // after a
  auto rc = comm.allreduce_async(c.data(), c.data(), c.size(), DataType::Int32, ReduceOp::Avg);
  const arlab::Plan plan = comm.plan(c.size(), DataType::Int32);  // in its turn, after c
  rc.wait();
  ra.wait();
  bool ok = !plan.candidates.empty();
  const std::int32_t ranks_sum = p * (p - 1) / 2;
  for (std::size_t k = 0; k < a.size(); ++k) ok &= a[k] == static_cast<std::int32_t>(k % 17) * p + ranks_sum;
  for (std::size_t k = 0; k < b.size(); ++k) ok &= b[k] == static_cast<std::int32_t>(k % 17) * p + ranks_sum;
  for (std::size_t k = 0; k < c.size(); ++k) ok &= c[k] == (static_cast<std::int32_t>(k % 17) * p + ranks_sum) / p;
  EXPECT_TRUE(everywhere(ok));
}

// After prepare_async, issuing never waits for another rank: rank 0 issues its calls before
// its own MPI_Allreduce, the others after it, on every transport's communicator (with the
// first calls making lanes and finding Auto's machine there, rank 0 would wait in arlab for
// ranks waiting in MPI_Allreduce for it: a hang, as a training job's).
TEST(Async, AfterPrepareIssuingNeverWaitsForAnotherRank) {
  if (single_threaded_mpi()) GTEST_SKIP() << "MPI without MPI_THREAD_MULTIPLE";
  const int rank = world_rank();
  bool ok = true;
  std::string failure;
  for (TransportKind t : available_transports()) {
    arlab::Communicator comm(MPI_COMM_WORLD, options_over(t));
    comm.prepare_async();
    std::vector<Call> calls;
    std::vector<arlab::Request> requests;
    calls.reserve(8);
    const auto issue = [&] {
      for (int i = 0; i < 8; ++i) {  // more than the lanes in flight; every algorithm, Auto among them
        calls.push_back(make_call(i * 11 + 5, rank, comm.rank()));
        Call& c = calls.back();
        requests.push_back(comm.allreduce_async(c.send.data(), c.recv.data(), c.count, c.type, c.op, c.algorithm));
      }
    };
    int one = 1, ranks = 0;
    if (rank == 0) issue();
    MPI_Allreduce(&one, &ranks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank != 0) issue();
    for (std::size_t k = 0; k < calls.size(); ++k)
      MPI_Allreduce(calls[k].send.data(), calls[k].want.data(), static_cast<int>(calls[k].count), calls[k].mpi_type,
                    calls[k].mpi_op, MPI_COMM_WORLD);
    for (std::size_t k = 0; k < requests.size(); ++k) {
      requests[k].wait();
      if (calls[k].recv != calls[k].want && ok) {
        ok = false;
        failure = arlab::to_string(t) + " call " + std::to_string(k) + " " + arlab::to_string(calls[k].algorithm);
      }
    }
    int p = 1;
    MPI_Comm_size(MPI_COMM_WORLD, &p);
    if (ranks != p) ok = false;
  }
  EXPECT_TRUE(everywhere(ok)) << "rank " << rank << ": " << failure;
}

TEST(Async, AnEmptyRequestIsDone) {
  arlab::Request r;
  EXPECT_FALSE(r.valid());
  EXPECT_TRUE(r.test());
  EXPECT_NO_THROW(r.wait());
}

TEST(Async, WithoutThreadMultipleItSaysSo) {
  if (!single_threaded_mpi()) GTEST_SKIP() << "MPI has MPI_THREAD_MULTIPLE here";
  arlab::Communicator comm(MPI_COMM_WORLD);
  float x = 1;
  try {
    comm.allreduce_async(&x, &x, 1, DataType::Float32, ReduceOp::Sum);
    ADD_FAILURE() << "no error";
  } catch (const arlab::Error& e) {
    EXPECT_EQ(e.code(), arlab::Error::Code::Unavailable);
    EXPECT_NE(std::string(e.what()).find("MPI_THREAD_MULTIPLE"), std::string::npos) << e.what();
  }
  comm.allreduce(&x, &x, 1, DataType::Float32, ReduceOp::Sum);  // the blocking call still works
  int p = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  EXPECT_TRUE(everywhere(x == static_cast<float>(p)));
}

// Settings a rank may take from its own environment must agree: a rank with another lane count
// hung the others in the lanes' MPI_Comm_dup (ARLAB_TIMEOUT_S does not reach it), another
// chunk size made messages of other sizes. The constructor checks them all in one collective
// and every rank throws the same Error, naming what differs.
TEST(Communicator, RanksGivenDifferentSettingsAllFailAtConstruction) {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (p < 2) GTEST_SKIP() << "needs 2 ranks";
  const bool first = world_rank() == 0;
  struct Case {
    const char* names;
    arlab::Options options;
  };
  std::vector<Case> cases(3);
  cases[0].names = "max_in_flight (ARLAB_MAX_IN_FLIGHT)";
  cases[0].options.max_in_flight = first ? 1 : 4;
  cases[1].names = "chunk_bytes (ARLAB_CHUNK_BYTES), segment_bytes (ARLAB_SEGMENT_BYTES)";
  cases[1].options.chunk_bytes = first ? 4096 : 8192;
  cases[1].options.segment_bytes = first ? 4096 : 0;
  cases[2].names = "algorithm (ARLAB_ALGO)";
  cases[2].options.algorithm = first ? Algorithm::Ring : Algorithm::Auto;
  cases.push_back({"a topology file (ARLAB_TOPOLOGY), a calibration or the built-in machine (ARLAB_CALIBRATE=0)", {}});
  if (first) cases.back().options.self_calibration = arlab::SelfCalibration::Off;
  if (available_transports().size() > 1) {
    cases.push_back({"transport (ARLAB_TRANSPORT)", {}});
    cases.back().options.transport = first ? TransportKind::Mpi : available_transports()[1];
  }
  for (const Case& c : cases) {
    std::string what = "no error";
    try {
      arlab::Communicator comm(MPI_COMM_WORLD, c.options);
    } catch (const arlab::Error& e) {
      what = e.code() == arlab::Error::Code::InvalidArgument ? e.what() : "another code: " + std::string(e.what());
    }
    EXPECT_TRUE(everywhere(what.find(std::string("the ranks were given different settings: ") + c.names +
                                     "; every rank") != std::string::npos))
        << "rank " << world_rank() << ": " << what;
  }
  // A knob that is bad on one rank alone fails there with its own error, and on the others
  // (which would have waited in the constructor's collectives) with one naming that rank.
  {
    arlab::Options o;
    if (first) o.max_in_flight = 9;
    std::string what = "no error";
    try {
      arlab::Communicator comm(MPI_COMM_WORLD, o);
    } catch (const arlab::Error& e) {
      what = e.what();
    }
    const std::string want = first ? "max_in_flight" : "rank 0 could not resolve its options";
    EXPECT_TRUE(everywhere(what.find(want) != std::string::npos)) << "rank " << world_rank() << ": " << what;
  }
  // What may differ: the timeout, the log level, the cache, and a calibration forced on some
  // ranks only (rank 0's choice decides); Auto set on one rank is Auto left unset.
  arlab::Options same;
  same.max_in_flight = 2;
  if (first) same.algorithm = Algorithm::Auto;
  same.timeout_s = first ? 60 : 90;
  same.self_calibration = first ? arlab::SelfCalibration::Force : arlab::SelfCalibration::Cached;
  arlab::Communicator comm(MPI_COMM_WORLD, same);
  std::vector<int> x(1000, 1);
  comm.allreduce(x.data(), x.data(), x.size(), DataType::Int32, ReduceOp::Sum, Algorithm::Ring);
  EXPECT_TRUE(everywhere(x.front() == p && x.back() == p));
}

// One rank's first Auto lookup (plan()) times out alone; then the first asynchronous call
// opens the lanes (MPI_Comm_dup on the communicator's own), and Auto finds its machine. The
// lone rank's wait stays posted on a communicator of its own: posted on the communicator's
// own, it met the others' MPI_Comm_dup instead (MPI_ERR_TRUNCATE, the job aborted).
TEST(Async, AfterALonePlanTimedOutTheLanesStillOpen) {
  if (single_threaded_mpi()) GTEST_SKIP() << "MPI without MPI_THREAD_MULTIPLE";
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  if (p < 2) GTEST_SKIP() << "needs 2 ranks";
  char dir[64] = "/tmp/arlab-async-test-XXXXXX";
  if (world_rank() == 0 && mkdtemp(dir) == nullptr) dir[0] = '\0';
  MPI_Bcast(dir, sizeof dir, MPI_CHAR, 0, MPI_COMM_WORLD);
  arlab::Options o;
  o.timeout_s = 5;
  o.cache_dir = dir;
  arlab::Communicator comm(MPI_COMM_WORLD, o);
  if (world_rank() == p - 1) EXPECT_THROW(comm.plan(1000, DataType::Float32), arlab::Error);
  MPI_Barrier(MPI_COMM_WORLD);
  std::vector<int> x(1000, 1);
  comm.allreduce_async(x.data(), x.data(), x.size(), DataType::Int32, ReduceOp::Sum, Algorithm::Ring).wait();
  EXPECT_TRUE(everywhere(x.front() == p && x.back() == p));
  for (int i = 0; i < 2; ++i) {
    std::fill(x.begin(), x.end(), world_rank() + 1);
    comm.allreduce_async(x.data(), x.data(), x.size(), DataType::Int32, ReduceOp::Sum).wait();  // Auto
    EXPECT_TRUE(everywhere(x.front() == p * (p + 1) / 2 && x.back() == x.front()));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0 && dir[0]) std::filesystem::remove_all(dir);
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  if (single_threaded_mpi())
    MPI_Init(&argc, &argv);
  else
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  ::testing::InitGoogleTest(&argc, argv);
  if (world_rank() != 0) {
    auto& listeners = ::testing::UnitTest::GetInstance()->listeners();
    delete listeners.Release(listeners.default_result_printer());
  }
  if (!single_threaded_mpi() && provided < MPI_THREAD_MULTIPLE && world_rank() == 0)
    std::printf("note: MPI provides thread level %d, not MPI_THREAD_MULTIPLE\n", provided);
  int failed = RUN_ALL_TESTS() != 0, any = 0;
  MPI_Allreduce(&failed, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  MPI_Finalize();
  return any;
}

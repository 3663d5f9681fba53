// Transports side by side: communicators over different transports, used alternately, never
// see each other's messages; and the RDMA path's registration cache reuses registrations of
// a buffer and drops them when the buffer's memory is unmapped and the address reused.
#include <gtest/gtest.h>
#include <mpi.h>
#include <sys/mman.h>

#include <cstdint>
#include <string>
#include <vector>

#include "arlab/arlab.hpp"
#include "core/engine.hpp"
#ifdef ARLAB_HAVE_UCX
#include "transport/ucx_transports.hpp"
#include "common/mpi_world.hpp"
#endif

namespace {

using arlab::test::everywhere;

using arlab::Algorithm;
using arlab::DataType;
using arlab::ReduceOp;
using arlab::TransportKind;

// Sum over ranks r of (i * (r + 1) + salt).
bool sum_is_exact(const std::int64_t* x, std::size_t count, int p, std::int64_t salt) {
  for (std::size_t i = 0; i < count; ++i)
    if (x[i] != static_cast<std::int64_t>(i) * p * (p + 1) / 2 + salt * p) return false;
  return true;
}

void fill(std::int64_t* x, std::size_t count, int rank, std::int64_t salt) {
  for (std::size_t i = 0; i < count; ++i) x[i] = static_cast<std::int64_t>(i) * (rank + 1) + salt;
}

TEST(Transports, CommunicatorsUsedAlternatelyNeverCrossMatch) {
  // Every available transport, twice: once on the world, once on a communicator whose ranks
  // are reversed, so that the same peers are different ranks on the two.
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  MPI_Comm reversed;
  MPI_Comm_split(MPI_COMM_WORLD, 0, p - 1 - rank, &reversed);
  std::vector<arlab::Communicator> comms;
  for (TransportKind t : arlab::test::available_transports()) {
    arlab::Options o = arlab::test::options_over(t);
    o.chunk_bytes = 8192;  // many messages in flight per call
    comms.emplace_back(MPI_COMM_WORLD, o);
    comms.emplace_back(reversed, o);
  }
  const Algorithm algos[] = {Algorithm::Ring, Algorithm::Tree, Algorithm::RecursiveDoubling,
                             Algorithm::Rabenseifner};
  bool ok = true;
  for (int round = 0; round < 24; ++round) {
    for (std::size_t c = 0; c < comms.size(); ++c) {
      const std::size_t count = 1 + (static_cast<std::size_t>(round) * 7919 + c * 104729) % 40000;
      std::vector<std::int64_t> x(count), y(count);
      const std::int64_t salt = round * 100 + static_cast<std::int64_t>(c);
      fill(x.data(), count, comms[c].rank(), salt);
      comms[c].allreduce(x.data(), y.data(), count, DataType::Int64, ReduceOp::Sum, algos[(round + c) % 4]);
      ok &= sum_is_exact(y.data(), count, p, salt);
    }
  }
  comms.clear();
  MPI_Comm_free(&reversed);
  EXPECT_TRUE(everywhere(ok));
}

TEST(Transports, MismatchedCountsFailOnEveryRankInsteadOfHanging) {
  // Rank 0 asks for one more element than the others: messages differ in size. Every rank
  // must get an Error (a size mismatch where it is seen, a timeout where a peer gave up)
  // within a few timeouts, and the communicator then refuses further calls.
  for (TransportKind t : arlab::test::available_transports()) {
    arlab::Options o = arlab::test::options_over(t);
    o.timeout_s = 1;
    int rank = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const std::size_t count = 4000 + (rank == 0 ? 1 : 0);
    // Declared before the communicator: after a failed call, peers may use the buffer until
    // the communicator is destroyed (include/arlab/arlab.hpp).
    std::vector<float> x(count, 1.0f);
    arlab::Communicator comm(MPI_COMM_WORLD, o);
    if (comm.size() < 2) GTEST_SKIP() << "needs 2 ranks";
    const double t0 = MPI_Wtime();
    bool threw = false;
    try {
      comm.allreduce(x.data(), x.data(), count, DataType::Float32, ReduceOp::Sum, Algorithm::Ring);
    } catch (const arlab::Error&) {
      threw = true;
    }
    const double waited = MPI_Wtime() - t0;
    bool refused = false;
    try {
      comm.allreduce(x.data(), x.data(), count, DataType::Float32, ReduceOp::Sum, Algorithm::Ring);
    } catch (const arlab::Error& e) {
      refused = std::string(e.what()).find("cannot be used again") != std::string::npos;
    }
    EXPECT_TRUE(everywhere(threw && refused && waited < 20))
        << arlab::to_string(t) << ": threw " << threw << ", refused " << refused << ", waited " << waited << " s";
  }
}

#ifdef ARLAB_HAVE_UCX

// An engine over ucx-rma whose transport the test can still ask for its cache counters.
struct RmaEngine {
  MPI_Comm comm = MPI_COMM_NULL;
  arlab::detail::Transport* transport = nullptr;
  std::unique_ptr<arlab::detail::Engine> engine;

  RmaEngine() {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm);
    arlab::Options o;
    o.transport = TransportKind::UcxRma;
    o = o.resolved();
    auto t = arlab::detail::make_ucx_rma_transport(comm, *o.timeout_s);
    transport = t.get();
    engine = std::make_unique<arlab::detail::Engine>(std::move(t), o, comm);
  }
  ~RmaEngine() {
    engine.reset();
    MPI_Comm_free(&comm);
  }
  arlab::detail::RegistrationStats stats() const { return *arlab::detail::registration_stats(*transport); }
  bool ring_sum(std::int64_t* x, std::size_t count, std::int64_t salt) {
    fill(x, count, engine->rank(), salt);
    engine->allreduce(x, x, count, DataType::Int64, ReduceOp::Sum, Algorithm::Ring);
    return sum_is_exact(x, count, engine->size(), salt);
  }
};

TEST(RegistrationCache, ReusesTheSameBufferAndSubranges) {
  RmaEngine e;
  std::vector<std::int64_t> buf(1 << 16);
  bool ok = e.ring_sum(buf.data(), buf.size(), 1);
  const auto first = e.stats();
  for (int k = 0; k < 5; ++k) ok &= e.ring_sum(buf.data(), buf.size(), 2 + k);
  ok &= e.ring_sum(buf.data(), buf.size() / 2, 9);  // a smaller call on the same buffer
  const auto later = e.stats();
  EXPECT_TRUE(everywhere(ok));
  EXPECT_GE(first.registrations, 1u);
  EXPECT_EQ(later.registrations, first.registrations) << "repeated calls on one buffer re-registered it";
  EXPECT_GE(later.hits, first.hits + 6);
}

TEST(RegistrationCache, BufferFreedAndReallocatedAtTheSameAddress) {
  RmaEngine e;
  const std::size_t big = 1 << 18, small = 3 * (1 << 15) + 7;  // elements; different sizes
  void* a = mmap(nullptr, big * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(a, MAP_FAILED);
  bool ok = e.ring_sum(static_cast<std::int64_t*>(a), big, 3);
  const auto before = e.stats();
  ASSERT_EQ(munmap(a, big * 8), 0);
  // The same address, a smaller mapping: new pages behind an address the cache has seen.
  void* b = mmap(a, small * 8, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  ASSERT_EQ(b, a);
  ok &= e.ring_sum(static_cast<std::int64_t*>(b), small, 4);
  const auto after = e.stats();
  munmap(b, small * 8);
  EXPECT_TRUE(everywhere(ok));
  EXPECT_GE(after.invalidations, before.invalidations + 1) << "munmap of a registered buffer went unnoticed";
  EXPECT_GT(after.registrations, before.registrations) << "the new mapping reused a stale registration";
}

#endif  // ARLAB_HAVE_UCX

}  // namespace

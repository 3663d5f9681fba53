// Asynchronous all-reduce on loopback threads: queued calls run in issue order, interleaved
// with blocking calls and plan(), and give exactly what blocking calls give; failures reach
// wait(); a communicator destroyed with requests queued runs them first.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "common/loopback_ranks.hpp"
#include "common/reference.hpp"
#include "core/engine.hpp"
#include "core/progress.hpp"

namespace arlab::detail {
namespace {

using arlab::test::fill;
using arlab::test::on_threads;
using arlab::test::reference;

Options test_options(double timeout_s = 60) {
  Options o = arlab::test::loopback_options(4096);  // many chunks per call
  o.timeout_s = timeout_s;
  return o;
}

// The i-th call of a sequence: sizes, types, ops and algorithms vary from call to call.
struct CallSpec {
  std::size_t count;
  DataType type;
  ReduceOp op;
  Algorithm algorithm;
  bool in_place;
};
CallSpec spec(int i, int p) {
  const Algorithm algos[] = {Algorithm::Ring, Algorithm::Tree, Algorithm::RecursiveDoubling, Algorithm::Rabenseifner,
                             Algorithm::Auto};
  const DataType types[] = {DataType::Float32, DataType::Int32, DataType::Float16, DataType::Float64, DataType::UInt8};
  const ReduceOp ops[] = {ReduceOp::Sum, ReduceOp::Avg, ReduceOp::Max, ReduceOp::Prod, ReduceOp::Min};
  const std::size_t counts[] = {1, 7, static_cast<std::size_t>(p) + 1, 1023, 20011};
  return {counts[i % 5], types[(i / 2) % 5], ops[(i / 3) % 5], algos[i % 5], i % 4 == 1};
}

struct Buffers2 {
  std::vector<std::byte> send, recv;
  void* out() { return recv.empty() ? send.data() : recv.data(); }
};

Buffers2 inputs(const CallSpec& s, int rank) {
  Buffers2 b{fill(s.type, s.count, rank, s.op), {}};
  if (!s.in_place) b.recv.assign(b.send.size(), std::byte{0x5a});
  return b;
}

TEST(Async, QueuedCallsInterleavedWithBlockingOnesAreExact) {
  for (int p : {1, 2, 3, 5}) {
    std::vector<std::string> failures(p);
    on_threads(p, test_options(), [&](Engine& engine, int rank) {
      const int n = 24;
      std::vector<Buffers2> bufs;
      std::vector<std::shared_ptr<AsyncOp>> ops;
      bufs.reserve(n);
      for (int i = 0; i < n; ++i) {
        const CallSpec s = spec(i, p);
        bufs.push_back(inputs(s, rank));
        ops.push_back(engine.allreduce_async(bufs[i].send.data(), bufs[i].out(), s.count, s.type, s.op, s.algorithm));
        if (i % 7 == 3) {  // a blocking call and a plan, in their turn among the queued ones
          auto extra = fill(DataType::Int64, 333, rank, ReduceOp::Sum);
          engine.allreduce(extra.data(), extra.data(), 333, DataType::Int64, ReduceOp::Sum, Algorithm::Ring);
          if (extra != reference(DataType::Int64, 333, p, ReduceOp::Sum)) failures[rank] = "blocking call " + std::to_string(i);
          EXPECT_FALSE(engine.plan(1000, DataType::Float32).candidates.empty());
        }
        if (i % 5 == 2) std::this_thread::sleep_for(std::chrono::microseconds(200));  // host work
      }
      for (int i = n - 1; i >= 0; --i) {  // waited in the reverse order
        ops[i]->wait();
        ops[i]->rethrow();
        const CallSpec s = spec(i, p);
        const auto want = reference(s.type, s.count, p, s.op);
        if (std::memcmp(bufs[i].out(), want.data(), want.size()) != 0 && failures[rank].empty())
          failures[rank] = "call " + std::to_string(i) + ": " + to_string(s.algorithm) + " " + to_string(s.type) +
                           " " + to_string(s.op) + " count " + std::to_string(s.count);
      }
    });
    for (int r = 0; r < p; ++r) EXPECT_EQ(failures[r], "") << "p=" << p << " rank " << r;
  }
}

TEST(Async, TestTurnsTrueWithoutWait) {
  on_threads(2, test_options(), [&](Engine& engine, int rank) {
    auto data = fill(DataType::Float32, 100000, rank, ReduceOp::Sum);
    auto op = engine.allreduce_async(data.data(), data.data(), 100000, DataType::Float32, ReduceOp::Sum,
                                     Algorithm::Ring);
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (!op->done() && std::chrono::steady_clock::now() < until) std::this_thread::yield();
    ASSERT_TRUE(op->done()) << "the progress thread did not finish the call by itself";
    EXPECT_EQ(data, reference(DataType::Float32, 100000, 2, ReduceOp::Sum));
  });
}

TEST(Async, BadArgumentsFailAtIssue) {
  on_threads(1, test_options(), [&](Engine& engine, int) {
    float x = 0;
    try {
      engine.allreduce_async(nullptr, &x, 4, DataType::Float32, ReduceOp::Sum, Algorithm::Ring);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Error::Code::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find("send buffer is null"), std::string::npos) << e.what();
    }
  });
}

TEST(Async, AFailureReachesWaitAndFailsTheCallsAfterIt) {
  // Rank 1 never joins: rank 0's call times out on the progress thread; wait() rethrows it,
  // and the call queued behind it fails too, saying why.
  on_threads(2, test_options(1), [&](Engine& engine, int rank) {
    if (rank == 1) return;
    std::vector<float> a(1000, 1.0f), b(1000, 1.0f);
    auto first = engine.allreduce_async(a.data(), a.data(), a.size(), DataType::Float32, ReduceOp::Sum, Algorithm::Ring);
    auto second = engine.allreduce_async(b.data(), b.data(), b.size(), DataType::Float32, ReduceOp::Sum, Algorithm::Ring);
    first->wait();
    try {
      first->rethrow();
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Error::Code::Timeout);
      EXPECT_NE(std::string(e.what()).find("waiting for rank 1"), std::string::npos) << e.what();
    }
    second->wait();
    try {
      second->rethrow();
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("an earlier call on this communicator failed"), std::string::npos) << e.what();
    }
  });
}

TEST(Async, ATimeoutIsFoundWhileTheCallerComputesAndNobodyWaits) {
  // The progress thread sleeps between polls while no caller waits (Call::callers_waiting);
  // it must still notice the silent peer after the timeout, not later and not never.
  on_threads(2, test_options(1), [&](Engine& engine, int rank) {
    if (rank == 1) return;
    std::vector<float> a(1000, 1.0f);
    const auto start = std::chrono::steady_clock::now();
    auto op = engine.allreduce_async(a.data(), a.data(), a.size(), DataType::Float32, ReduceOp::Sum, Algorithm::Ring);
    volatile unsigned work = 0;
    while (!op->done() && std::chrono::steady_clock::now() - start < std::chrono::seconds(30)) work = work + 1;
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(op->done()) << "no timeout after 30 s with a 1 s timeout";
    EXPECT_GE(took, 1.0);
    EXPECT_LT(took, 10.0);
    try {
      op->rethrow();
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Error::Code::Timeout);
      EXPECT_NE(std::string(e.what()).find("waiting for rank 1"), std::string::npos) << e.what();
    }
  });
}

TEST(Async, ADestroyedEngineRunsWhatIsQueuedFirst) {
  for (int p : {2, 4}) {
    std::vector<std::vector<std::shared_ptr<AsyncOp>>> ops(p);
    std::vector<std::vector<std::vector<std::byte>>> data(p);
    on_threads(p, test_options(), [&](Engine& engine, int rank) {
      for (int i = 0; i < 10; ++i) {
        data[rank].push_back(fill(DataType::Int32, 5000 + i, rank, ReduceOp::Sum));
        ops[rank].push_back(engine.allreduce_async(data[rank][i].data(), data[rank][i].data(), 5000 + i,
                                                   DataType::Int32, ReduceOp::Sum, Algorithm::Rabenseifner));
      }
    });  // the engines are gone, their requests not waited for
    for (int r = 0; r < p; ++r)
      for (int i = 0; i < 10; ++i) {
        ASSERT_TRUE(ops[r][i]->done());
        EXPECT_NO_THROW(ops[r][i]->rethrow());
        EXPECT_EQ(data[r][i], reference(DataType::Int32, 5000 + i, p, ReduceOp::Sum)) << "rank " << r << " call " << i;
      }
  }
}

TEST(Progress, RunsJobsInIssueOrderAndBlockingOnesInTheirTurn) {
  Progress progress;
  std::vector<int> order;  // written by one job at a time
  std::vector<std::shared_ptr<AsyncOp>> ops;
  for (int i = 0; i < 5; ++i)
    ops.push_back(progress.enqueue([&order, i] {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      order.push_back(i);
    }));
  progress.run([&] { order.push_back(100); });  // after the five queued before it
  EXPECT_EQ(order, (std::vector<int>{0, 1, 2, 3, 4, 100}));
  EXPECT_THROW(progress.run([] { throw Error(Error::Code::Internal, "x"); }), Error);
  auto failed = progress.enqueue([] { throw Error(Error::Code::Timeout, "late"); });
  failed->wait();
  EXPECT_THROW(failed->rethrow(), Error);
  for (auto& op : ops) EXPECT_TRUE(op->done());
}

}  // namespace
}  // namespace arlab::detail

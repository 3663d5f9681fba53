// Asynchronous all-reduce on loopback threads: queued calls run in issue order, interleaved
// with blocking calls and plan(), and give exactly what blocking calls give; failures reach
// wait(); a communicator destroyed with requests queued runs them first.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <algorithm>
#include <mutex>

#include "common/loopback_ranks.hpp"
#include "common/reference.hpp"
#include "core/engine.hpp"
#include "core/progress.hpp"
#include "exec/idle_wait.hpp"
#include "transport/loopback_transport.hpp"

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

// A transport whose completions are held back until the gate opens.
class GatedTransport final : public Transport {
 public:
  GatedTransport(std::unique_ptr<Transport> inner, const std::atomic<bool>& open)
      : inner_(std::move(inner)), open_(open) {}
  int rank() const override { return inner_->rank(); }
  int size() const override { return inner_->size(); }
  std::string name() const override { return "gated " + inner_->name(); }
  void begin_run(std::span<const Region> regions, std::uint32_t signature) override {
    inner_->begin_run(regions, signature);
  }
  void end_run() noexcept override { inner_->end_run(); }
  Request isend(int peer, int tag, const void* buf, std::size_t bytes) override {
    return inner_->isend(peer, tag, buf, bytes);
  }
  Request irecv(int peer, int tag, void* buf, std::size_t bytes) override {
    return inner_->irecv(peer, tag, buf, bytes);
  }
  void poll(std::vector<Request>& done) override {
    if (open_.load()) inner_->poll(done);
  }
  void cancel_all() override { inner_->cancel_all(); }

 private:
  std::unique_ptr<Transport> inner_;
  const std::atomic<bool>& open_;
};

TEST(Async, ACallFinishesWhileTheOneIssuedBeforeItCannot) {
  // Collectives in flight together, each on its lane: rank 0's first lane is held shut (its
  // completions withheld), so the call on it cannot finish; the call issued after it, on the
  // next lane, must finish all the same. Run one at a time, it would wait for good (and fail
  // by the timeout).
  for (int p : {2, 3}) {
    auto world = make_loopback_world(p);
    std::atomic<bool> open = true;
    std::vector<std::string> failures(p);
    std::vector<std::thread> threads;
    for (int r = 0; r < p; ++r)
      threads.emplace_back([&, r] {
        try {
          std::unique_ptr<Transport> t = make_loopback_transport(world, r);
          if (r == 0) t = std::make_unique<GatedTransport>(std::move(t), open);
          Engine engine(std::move(t), test_options(10).resolved(), MPI_COMM_NULL, arlab::test::loopback_lanes(world, r));
          std::vector<std::vector<std::byte>> warm;  // every lane made: the next call is on the first
          std::vector<std::shared_ptr<AsyncOp>> ops;
          for (int i = 0; i < 4; ++i) warm.push_back(fill(DataType::Int32, 100, r, ReduceOp::Sum));
          for (auto& w : warm)
            ops.push_back(engine.allreduce_async(w.data(), w.data(), 100, DataType::Int32, ReduceOp::Sum, Algorithm::Ring));
          for (auto& op : ops) op->wait();
          if (engine.lanes() != 4) failures[r] = "lanes " + std::to_string(engine.lanes());
          if (r == 0) open = false;
          auto large = fill(DataType::Float32, 100000, r, ReduceOp::Sum);
          auto small = fill(DataType::Int64, 3, r, ReduceOp::Max);
          auto a = engine.allreduce_async(large.data(), large.data(), large.size() / 4, DataType::Float32,
                                          ReduceOp::Sum, Algorithm::Ring);
          auto b = engine.allreduce_async(small.data(), small.data(), 3, DataType::Int64, ReduceOp::Max,
                                          Algorithm::RecursiveDoubling);
          b->wait();
          b->rethrow();
          if (small != reference(DataType::Int64, 3, p, ReduceOp::Max)) failures[r] = "small call wrong";
          if (r == 0) {
            if (a->done()) failures[r] = "the call on the shut lane finished";
            open = true;
          }
          a->wait();
          a->rethrow();
          if (large != reference(DataType::Float32, 100000, p, ReduceOp::Sum)) failures[r] = "large call wrong";
        } catch (const std::exception& e) {
          failures[r] = e.what();
        }
      });
    for (auto& t : threads) t.join();
    for (int r = 0; r < p; ++r) EXPECT_EQ(failures[r], "") << "p=" << p << " rank " << r;
  }
}

TEST(Async, OneInFlightRunsTheCallsOneAtATimeOnOneTransport) {
  Options o = test_options();
  o.max_in_flight = 1;
  for (int p : {2, 3}) {
    std::vector<std::string> failures(p);
    on_threads(p, o, [&](Engine& engine, int rank) {
      std::vector<Buffers2> bufs;
      std::vector<std::shared_ptr<AsyncOp>> ops;
      bufs.reserve(10);
      for (int i = 0; i < 10; ++i) {
        const CallSpec s = spec(i, p);
        bufs.push_back(inputs(s, rank));
        ops.push_back(engine.allreduce_async(bufs[i].send.data(), bufs[i].out(), s.count, s.type, s.op, s.algorithm));
      }
      for (int i = 0; i < 10; ++i) {
        ops[i]->wait();
        ops[i]->rethrow();
        const CallSpec s = spec(i, p);
        if (std::memcmp(bufs[i].out(), reference(s.type, s.count, p, s.op).data(), s.count * size_of(s.type)) != 0)
          failures[rank] = "call " + std::to_string(i);
      }
      if (engine.lanes() != 1) failures[rank] = "lanes " + std::to_string(engine.lanes());
    });
    for (int r = 0; r < p; ++r) EXPECT_EQ(failures[r], "") << "p=" << p << " rank " << r;
  }
}

// prepare_async makes every lane and finds Auto's machine at once, so that the calls after it
// make nothing collective; they then run exactly as without it.
TEST(Async, PrepareMakesEveryLaneBeforeTheFirstCall) {
  for (int max : {1, 3}) {
    Options o = test_options();
    o.max_in_flight = max;
    const int p = 3;
    std::vector<std::string> failures(p);
    on_threads(p, o, [&](Engine& engine, int rank) {
      if (engine.lanes() != 1) failures[rank] = "lanes before " + std::to_string(engine.lanes());
      engine.prepare_async(Algorithm::Auto);
      engine.prepare_async(Algorithm::Auto);  // again: nothing more
      if (engine.lanes() != static_cast<std::size_t>(max))
        failures[rank] = "lanes after prepare " + std::to_string(engine.lanes());
      std::vector<Buffers2> bufs;
      std::vector<std::shared_ptr<AsyncOp>> ops;
      bufs.reserve(6);
      for (int i = 0; i < 6; ++i) {
        const CallSpec s = spec(i, p);
        bufs.push_back(inputs(s, rank));
        ops.push_back(engine.allreduce_async(bufs[i].send.data(), bufs[i].out(), s.count, s.type, s.op, s.algorithm));
      }
      for (int i = 0; i < 6; ++i) {
        ops[i]->wait();
        ops[i]->rethrow();
        const CallSpec s = spec(i, p);
        if (std::memcmp(bufs[i].out(), reference(s.type, s.count, p, s.op).data(), s.count * size_of(s.type)) != 0)
          failures[rank] = "call " + std::to_string(i);
      }
      if (engine.lanes() != static_cast<std::size_t>(max)) failures[rank] = "lanes at the end " + std::to_string(engine.lanes());
    });
    for (int r = 0; r < p; ++r) EXPECT_EQ(failures[r], "") << "max_in_flight " << max << " rank " << r;
  }
  Options o = test_options();
  on_threads(2, o, [&](Engine& engine, int) {
    EXPECT_THROW(engine.prepare_async(static_cast<Algorithm>(99)), Error);
  });
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
  // Rank 1 never joins: rank 0's call times out on the progress thread; wait() rethrows it.
  // The call in flight beside it (another lane) times out too, and a call issued after the
  // failure fails at once, saying why.
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
      EXPECT_EQ(e.code(), Error::Code::Timeout) << e.what();
    }
    auto third = engine.allreduce_async(b.data(), b.data(), b.size(), DataType::Float32, ReduceOp::Sum, Algorithm::Ring);
    third->wait();
    try {
      third->rethrow();
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("an earlier call on this communicator failed"), std::string::npos) << e.what();
    }
  });
}

TEST(Async, ATimeoutIsFoundWhileTheCallerComputesAndNobodyWaits) {
  // The progress thread sleeps between polls while no caller waits (Progress::loop);
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

// A collective in flight for the Progress tests: finishes once `needs` rounds of the other
// runs have been counted in `rounds` since it started (the progress of the runs it waits
// for), logging when it starts and ends.
struct FakeRun final : InFlight {
  FakeRun(std::vector<std::string>& log, std::mutex& m, std::string name, std::atomic<int>& rounds, int needs)
      : log_(log), m_(m), name_(std::move(name)), rounds_(rounds), needs_(needs), start_(rounds.load()) {
    std::lock_guard lock(m_);
    log_.push_back("start " + name_);
  }
  bool advance() override {  // moves while the others do: alone, it times out
    ++own_;
    ++rounds_;
    const int others = rounds_ - start_ - own_;
    const bool moved = others != seen_ || own_ == 1;
    seen_ = others;
    return moved;
  }
  bool finished() const override { return rounds_ - start_ - own_ >= needs_; }
  void finish() override {
    std::lock_guard lock(m_);
    log_.push_back("end " + name_);
  }
  void abandon() noexcept override {}
  double timeout_s() const override { return 5; }
  [[noreturn]] void timed_out(double) const override { throw Error(Error::Code::Timeout, name_); }
  std::vector<std::string>& log_;
  std::mutex& m_;
  std::string name_;
  std::atomic<int>& rounds_;
  int needs_, start_, own_ = 0, seen_ = -1;
};

TEST(Progress, RunsLanesTogetherOneAtATimePerLaneAndExclusiveOnesAlone) {
  Progress progress;
  std::vector<std::string> log;
  std::mutex m;
  std::atomic<int> rounds = 0;
  auto job = [&](std::string name, int needs) -> StartFn {
    return [&, name, needs](bool) { return std::make_unique<FakeRun>(log, m, name, rounds, needs); };
  };
  // a (lane 0) and b (lane 1) each finish only after the other has advanced: they must be in
  // flight together. c waits for a (same lane); x (exclusive) for everything before it.
  std::vector<std::shared_ptr<AsyncOp>> ops;
  ops.push_back(progress.enqueue(job("a", 5), 0, false));
  ops.push_back(progress.enqueue(job("b", 5), 1, false));
  ops.push_back(progress.enqueue(job("c", 0), 0, false));
  ops.push_back(progress.enqueue(
      [&](bool to_end) -> std::unique_ptr<InFlight> {
        EXPECT_FALSE(to_end);
        std::lock_guard lock(m);
        log.push_back("x alone");
        return nullptr;
      },
      2, true));
  std::vector<std::string> direct;
  progress.run([&](bool to_end) -> std::unique_ptr<InFlight> {  // after everything before it
    direct.push_back(to_end ? "to end" : "queued");
    return to_end ? nullptr : std::make_unique<FakeRun>(log, m, "d", rounds, 0);
  }, 3, false);
  for (auto& op : ops) {
    EXPECT_TRUE(op->done());
    EXPECT_NO_THROW(op->rethrow());
  }
  const auto at = [&](const std::string& entry) { return std::find(log.begin(), log.end(), entry) - log.begin(); };
  // d was queued behind x, or, where this thread was held up long enough (TSan) for the thread
  // to finish everything first, it found the queue empty and ran on this thread, to its end.
  ASSERT_EQ(direct.size(), 1u);
  const bool queued = direct.front() == "queued";
  ASSERT_EQ(log.size(), queued ? 9u : 7u) << testing::PrintToString(log) << ", d " << direct.front();
  EXPECT_LT(at("start b"), at("end a"));
  EXPECT_LT(at("start a"), at("end b"));
  EXPECT_GT(at("start c"), at("end a"));
  EXPECT_GT(at("x alone"), at("end b"));
  EXPECT_GT(at("x alone"), at("end c"));
  if (queued) EXPECT_GT(at("start d"), at("x alone"));

  // Nothing queued or in flight: a blocking call runs on its caller's thread, to its end.
  direct.clear();
  progress.run([&](bool to_end) -> std::unique_ptr<InFlight> {
    direct.push_back(to_end ? "to end" : "queued");
    return nullptr;
  }, 0, false);
  EXPECT_EQ(direct, std::vector<std::string>{"to end"});
  EXPECT_THROW(progress.run([](bool) -> std::unique_ptr<InFlight> { throw Error(Error::Code::Internal, "x"); }, 0,
                            false),
               Error);
  auto failed = progress.enqueue([](bool) -> std::unique_ptr<InFlight> { throw Error(Error::Code::Timeout, "late"); },
                                 1, false);
  failed->wait();
  EXPECT_THROW(failed->rethrow(), Error);
}

TEST(Progress, ARunThatNeverMovesTimesOutAndTheOthersGoOn) {
  Progress progress;
  std::vector<std::string> log;
  std::mutex m;
  std::atomic<int> rounds = 0;
  struct Stuck final : InFlight {
    bool advance() override { return false; }
    bool finished() const override { return false; }
    void finish() override {}
    void abandon() noexcept override { abandoned = true; }
    double timeout_s() const override { return 0.2; }
    [[noreturn]] void timed_out(double) const override { throw Error(Error::Code::Timeout, "stuck"); }
    bool& abandoned;
    explicit Stuck(bool& a) : abandoned(a) {}
  };
  bool abandoned = false;
  auto stuck = progress.enqueue([&](bool) -> std::unique_ptr<InFlight> { return std::make_unique<Stuck>(abandoned); },
                                0, false);
  auto fine = progress.enqueue(
      [&](bool) -> std::unique_ptr<InFlight> { return std::make_unique<FakeRun>(log, m, "fine", rounds, 0); }, 1,
      false);
  fine->wait();
  EXPECT_NO_THROW(fine->rethrow());
  stuck->wait();
  EXPECT_THROW(stuck->rethrow(), Error);
  EXPECT_TRUE(abandoned);
}

TEST(Progress, TransportsMayYieldTheCoreOnlyWhileACallerWaits) {
  // While nobody waits the thread naps itself; a transport's yield (UcxWorker::progress) would
  // put it behind the caller's computation for a time slice, so it is switched off then. The
  // run counts the rounds it was advanced with and without the switch, in counters of the
  // test's own (declared before the Progress, so that they outlive its thread and the run).
  std::atomic<bool> done = false;
  std::atomic<int> yields = 0, no_yields = 0;
  Progress progress;
  struct Watcher final : InFlight {
    Watcher(std::atomic<bool>& d, std::atomic<int>& y, std::atomic<int>& n) : done(d), yields(y), no_yields(n) {}
    bool advance() override {
      (idle_yield_allowed ? yields : no_yields)++;
      return false;
    }
    bool finished() const override { return done; }
    void finish() override {}
    void abandon() noexcept override {}
    double timeout_s() const override { return 30; }
    [[noreturn]] void timed_out(double) const override { throw Error(Error::Code::Timeout, "watcher"); }
    std::atomic<bool>& done;
    std::atomic<int>&yields, &no_yields;
  };
  auto op = progress.enqueue(
      [&](bool) -> std::unique_ptr<InFlight> { return std::make_unique<Watcher>(done, yields, no_yields); }, 0, false);
  struct Finish {  // also when an assertion returns early: the Progress's destructor waits for the run
    std::atomic<bool>& done;
    ~Finish() { done = true; }
  } finish{done};
  const auto rounds_until = [](auto&& reached) {
    for (int k = 0; k < 2000 && !reached(); ++k) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return reached();
  };
  ASSERT_TRUE(rounds_until([&] { return no_yields > 20; })) << "the thread did not advance the run";
  const int yields_before = yields;
  std::thread waiter([&] { op->wait(); });
  EXPECT_TRUE(rounds_until([&] { return yields > yields_before + 20; })) << "no yields while a caller waits";
  done = true;
  waiter.join();
  EXPECT_LE(yields_before, 1) << "yields while nobody waited";  // the first round, before the switch
}

// The idle stretch both polling loops share (exec/idle_wait.hpp): nothing before its start,
// then the clock every kIdleRoundsPerClockRead rounds while a caller waits, no nap for the
// first 10 ms, then naps (and the clock every round while napping); without a caller, naps
// from the start. moved() begins a new stretch.
TEST(IdleWait, SpinsThenReadsTheClockThenNaps) {
  using arlab::detail::IdleWait;
  using arlab::detail::kIdleRoundsPerClockRead;
  IdleWait wait(64);
  for (int i = 1; i < 64; ++i) EXPECT_FALSE(wait.idle_round(true).clock_read) << i;
  IdleWait::Round r = wait.idle_round(true);  // the 64th: the stretch starts
  EXPECT_TRUE(r.clock_read);
  EXPECT_EQ(r.waited_s, 0);
  EXPECT_EQ(r.nap_s, 0);
  unsigned rounds = 64, reads = 0;
  for (; rounds < 64 + 4 * kIdleRoundsPerClockRead; ) {
    r = wait.idle_round(true);
    ++rounds;
    if (!r.clock_read) continue;
    ++reads;
    EXPECT_EQ(rounds % kIdleRoundsPerClockRead, 0u);
  }
  EXPECT_EQ(reads, 4u);
  // Past 10 ms a read gives a nap, and while napping every round reads the clock.
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(12);
  while (std::chrono::steady_clock::now() < until) {}
  do r = wait.idle_round(true);
  while (!r.clock_read);
  EXPECT_GT(r.waited_s, 0.010);
  EXPECT_GT(r.nap_s, 0);
  EXPECT_LE(r.nap_s, 200e-6);
  EXPECT_TRUE(wait.idle_round(true).clock_read);
  wait.moved();
  EXPECT_FALSE(wait.idle_round(true).clock_read);
  // No caller waits: from the start of the stretch, every round reads the clock and naps.
  IdleWait alone(4);
  for (int i = 1; i < 4; ++i) alone.idle_round(false);
  EXPECT_EQ(alone.idle_round(false).nap_s, 0);  // the start
  for (int i = 0; i < 3; ++i) {
    r = alone.idle_round(false);
    EXPECT_TRUE(r.clock_read);
    EXPECT_GE(r.nap_s, 2e-6);
  }
}

}  // namespace
}  // namespace arlab::detail

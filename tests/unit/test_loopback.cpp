// The engine on loopback threads: every algorithm, dtype, op, p = 1..16, odd counts, in place
// and out of place, checked exactly against a reference fold. Plus errors and timeouts.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <thread>

#include "common/loopback_ranks.hpp"
#include "core/engine.hpp"
#include "common/reference.hpp"
#include "common/store.hpp"
#include "reduce/reducer.hpp"
#include "transport/loopback_transport.hpp"

namespace arlab::detail {
namespace {

const DataType kTypes[] = {DataType::Int8,    DataType::UInt8,    DataType::Int32,   DataType::UInt32,
                           DataType::Int64,   DataType::UInt64,   DataType::Float16, DataType::BFloat16,
                           DataType::Float32, DataType::Float64};
const ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max, ReduceOp::Avg};

using arlab::test::fill;
using arlab::test::reference;
using arlab::test::on_threads;

Options test_options(std::size_t chunk) { return arlab::test::loopback_options(chunk); }

class LoopbackAllreduce : public ::testing::TestWithParam<Algorithm> {};

TEST_P(LoopbackAllreduce, EveryTypeOpAndRankCount) {
  const Algorithm algo = GetParam();
  for (int p = 1; p <= 16; ++p) {
    std::vector<std::string> failures(p);
    on_threads(p, test_options(256), [&](Engine& engine, int rank) {
      const std::size_t pp = static_cast<std::size_t>(p);
      for (DataType type : kTypes)
        for (ReduceOp op : kOps)
          for (std::size_t count : {std::size_t{1}, pp - 1, pp + 1, std::size_t{517}})
            for (bool in_place : {true, false}) {
              auto send = fill(type, count, rank, op);
              std::vector<std::byte> recv(send.size(), std::byte{0x5a});
              void* out = in_place ? send.data() : recv.data();
              engine.allreduce(send.data(), out, count, type, op, algo);
              const auto want = reference(type, count, p, op);
              if (count && std::memcmp(out, want.data(), want.size()) != 0 && failures[rank].empty())
                failures[rank] = to_string(type) + " " + to_string(op) + " count " + std::to_string(count) +
                                 (in_place ? " in place" : " out of place");
            }
    });
    for (int r = 0; r < p; ++r) EXPECT_EQ(failures[r], "") << to_string(algo) << " p=" << p << " rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, LoopbackAllreduce,
                         ::testing::Values(Algorithm::Ring, Algorithm::Tree, Algorithm::RecursiveDoubling,
                                           Algorithm::Rabenseifner, Algorithm::Auto),
                         [](const auto& info) {
                           std::string n = to_string(info.param);
                           for (auto& c : n) if (c == '-') c = '_';
                           return n;
                         });

TEST(Loopback, LargePipelinedCall) {
  // 1 MiB of floats with 16 KiB chunks: many chunks in flight at once.
  const std::size_t count = 262147;
  for (Algorithm algo : {Algorithm::Ring, Algorithm::Tree, Algorithm::Rabenseifner}) {
    on_threads(4, test_options(16 << 10), [&](Engine& engine, int rank) {
      auto data = fill(DataType::Float32, count, rank, ReduceOp::Sum);
      engine.allreduce(data.data(), data.data(), count, DataType::Float32, ReduceOp::Sum, algo);
      EXPECT_EQ(data, reference(DataType::Float32, count, 4, ReduceOp::Sum)) << to_string(algo);
    });
  }
}

TEST(Loopback, BadArgumentsThrowAndLeaveBuffersAlone) {
  on_threads(1, test_options(0), [](Engine& e, int) {
    std::vector<float> buf(8, 3.0f), out(8, 7.0f);
    auto expect_error = [&](auto&& call, const char* words) {
      try {
        call();
        ADD_FAILURE() << "no error for " << words;
      } catch (const Error& err) {
        EXPECT_EQ(err.code(), Error::Code::InvalidArgument);
        EXPECT_NE(std::string(err.what()).find(words), std::string::npos) << err.what();
      }
      EXPECT_EQ(out, std::vector<float>(8, 7.0f));
      EXPECT_EQ(buf, std::vector<float>(8, 3.0f));
    };
    expect_error([&] { e.allreduce(nullptr, out.data(), 8, DataType::Float32, ReduceOp::Sum, Algorithm::Ring); },
                 "send buffer is null");
    expect_error([&] { e.allreduce(buf.data(), nullptr, 8, DataType::Float32, ReduceOp::Sum, Algorithm::Ring); },
                 "recv buffer is null");
    expect_error([&] { e.allreduce(buf.data(), out.data(), 8, static_cast<DataType>(42), ReduceOp::Sum, Algorithm::Ring); },
                 "unknown data type value 42");
    expect_error([&] { e.allreduce(buf.data(), out.data(), 8, DataType::Float32, static_cast<ReduceOp>(9), Algorithm::Ring); },
                 "unknown reduce op value 9");
    expect_error([&] { e.allreduce(buf.data(), out.data(), 8, DataType::Float32, ReduceOp::Sum, static_cast<Algorithm>(77)); },
                 "unknown algorithm value 77");
    expect_error([&] { e.allreduce(buf.data(), out.data(), SIZE_MAX / 2, DataType::Float32, ReduceOp::Sum, Algorithm::Ring); },
                 "overflows size_t");
    expect_error([&] { e.allreduce(buf.data(), buf.data() + 1, 4, DataType::Float32, ReduceOp::Sum, Algorithm::Ring); },
                 "overlap");
    // Null pointers are fine with nothing to do.
    e.allreduce(nullptr, nullptr, 0, DataType::Float32, ReduceOp::Sum, Algorithm::Ring);
  });
}

TEST(Loopback, UnavailableAlgorithmsSaySo) {
  on_threads(1, test_options(0), [](Engine& e, int) {
    float x = 1;
    for (Algorithm a : {Algorithm::Nccl}) {
      try {
        e.allreduce(&x, &x, 1, DataType::Float32, ReduceOp::Sum, a);
        ADD_FAILURE() << to_string(a) << " ran";
      } catch (const Error& err) {
        EXPECT_EQ(err.code(), Error::Code::Unavailable);
        // nccl needs MPI for its setup, which loopback ranks lack.
        const char* why = "the nccl baseline needs an MPI communicator";
        EXPECT_NE(std::string(err.what()).find(why), std::string::npos) << err.what();
      }
    }
  });
}

TEST(Loopback, SilentPeerTimesOutNamingIt) {
  Options o = test_options(0);
  o.timeout_s = 0.5;
  std::string message;
  on_threads(3, o, [&](Engine& e, int rank) {
    if (rank == 2) return;  // never calls allreduce
    std::vector<float> x(64, 1.0f);
    try {
      e.allreduce(x.data(), x.data(), x.size(), DataType::Float32, ReduceOp::Sum, Algorithm::Ring);
      ADD_FAILURE() << "rank " << rank << " finished without its peer";
    } catch (const Error& err) {
      EXPECT_EQ(err.code(), Error::Code::Timeout);
      if (rank == 0) message = err.what();
      // The communicator refuses further use.
      EXPECT_THROW(e.allreduce(x.data(), x.data(), 1, DataType::Float32, ReduceOp::Sum, Algorithm::Ring), Error);
    }
  });
  // Rank 0 receives from rank 2 in the ring (its left neighbour).
  EXPECT_NE(message.find("waiting for rank 2"), std::string::npos) << message;
  EXPECT_NE(message.find("ring allreduce of 64 float"), std::string::npos) << message;
}

TEST(Loopback, PlanRanksEveryAlgorithm) {
  on_threads(1, test_options(256 << 10), [](Engine& e, int) {
    const Plan plan = e.plan(1 << 20, DataType::Float32);
    // Every schedule algorithm but hierarchical, which on one node is the ring.
    EXPECT_EQ(plan.candidates.size(), schedule_algorithms().size() - 1);
    for (const auto& c : plan.candidates) EXPECT_NE(c.algorithm, Algorithm::Hierarchical);
    EXPECT_EQ(plan.algorithm, plan.candidates.front().algorithm);
    EXPECT_FALSE(plan.reason.empty());
  });
}

}  // namespace
}  // namespace arlab::detail

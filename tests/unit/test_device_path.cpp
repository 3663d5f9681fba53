// The device path (device/: staging through host memory, a device reducer completing later,
// device scratch) through the host stand-in of a device, on loopback threads: every algorithm,
// type and op, 1..5 ranks, odd counts, messages of many staging pieces, in place and out of
// place, interleaved with host-buffer calls on the same engine. The stand-in runs copies and
// reductions on threads of their own, so a result read before its event said done is wrong.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "common/loopback_ranks.hpp"
#include "common/reference.hpp"
#include "device/device_memory.hpp"

namespace arlab::detail {
namespace {

using arlab::test::on_threads;

const DataType kTypes[] = {DataType::Int8,    DataType::UInt8,    DataType::Int32,   DataType::UInt32,
                           DataType::Int64,   DataType::UInt64,   DataType::Float16, DataType::BFloat16,
                           DataType::Float32, DataType::Float64};
const ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max, ReduceOp::Avg};
const Algorithm kAlgorithms[] = {Algorithm::Ring,         Algorithm::Tree,         Algorithm::RecursiveDoubling,
                                 Algorithm::Rabenseifner, Algorithm::Hierarchical, Algorithm::Auto};

using arlab::test::fill;
using arlab::test::reference;

Options options(std::size_t chunk) { return arlab::test::loopback_options(chunk); }

// A rank's device: the stand-in, kept by the engine; `memory` stays usable to allocate.
struct Device {
  DeviceMemory* memory = nullptr;
  std::vector<void*> allocations;
  explicit Device(Engine& engine, std::size_t piece_bytes) {
    auto m = make_host_device_memory();
    memory = m.get();
    engine.use_device_memory(std::move(m), piece_bytes);
  }
  ~Device() {
    for (void* p : allocations) memory->free_device(p);
  }
  void* upload(const std::vector<std::byte>& data) {
    void* p = memory->alloc_device(data.size());
    allocations.push_back(p);
    std::memcpy(p, data.data(), data.size());
    return p;
  }
};

// One call on device buffers; the result as the host sees it.
std::vector<std::byte> device_call(Engine& engine, Device& device, DataType type, ReduceOp op, Algorithm algo,
                                   std::size_t count, int rank, bool in_place) {
  auto input = fill(type, count, rank, op);
  void* send = device.upload(input);
  void* recv = in_place ? send : device.upload(std::vector<std::byte>(input.size(), std::byte{0x5a}));
  engine.allreduce(send, recv, count, type, op, algo);
  std::vector<std::byte> out(input.size());
  if (!out.empty()) std::memcpy(out.data(), recv, out.size());
  if (!in_place && !input.empty() && std::memcmp(send, input.data(), input.size()) != 0)
    ADD_FAILURE() << "rank " << rank << ": the send buffer changed";
  return out;
}

class DevicePath : public ::testing::TestWithParam<Algorithm> {};

TEST_P(DevicePath, EveryTypeAndOpOnThreeRanks) {
  const Algorithm algo = GetParam();
  const int p = 3;
  std::vector<std::string> failures(p);
  on_threads(p, options(256), [&](Engine& engine, int rank) {
    Device device(engine, 1000);  // pieces of 1000 B: odd, and many per message
    for (DataType type : kTypes)
      for (ReduceOp op : kOps)
        for (std::size_t count : {std::size_t{1}, std::size_t{2}, std::size_t{4}, std::size_t{517}})
          for (bool in_place : {true, false}) {
            const auto got = device_call(engine, device, type, op, algo, count, rank, in_place);
            if (got != reference(type, count, p, op) && failures[rank].empty())
              failures[rank] = to_string(type) + " " + to_string(op) + " count " + std::to_string(count) +
                               (in_place ? " in place" : " out of place");
          }
  });
  for (int r = 0; r < p; ++r) EXPECT_EQ(failures[r], "") << to_string(algo) << " rank " << r;
}

TEST_P(DevicePath, OneToFiveRanksOddCountsAndManyPieces) {
  const Algorithm algo = GetParam();
  for (int p = 1; p <= 5; ++p) {
    std::vector<std::string> failures(p);
    Options o = options(4096);
    // Nodes of two ranks (uneven at 3 and 5: the leader variant), so that hierarchical has
    // levels and Auto weighs it.
    if (algo == Algorithm::Hierarchical || algo == Algorithm::Auto) o.ranks_per_node = 2;
    on_threads(p, o, [&](Engine& engine, int rank) {
      Device device(engine, 4000);
      const std::size_t pp = static_cast<std::size_t>(p);
      for (auto [type, op] : {std::pair{DataType::Float32, ReduceOp::Sum}, std::pair{DataType::Int32, ReduceOp::Max},
                              std::pair{DataType::Float16, ReduceOp::Avg}})
        for (std::size_t count : {pp - 1, pp + 1, std::size_t{100003}})
          for (bool in_place : {true, false}) {
            if (count == 0) continue;
            const auto got = device_call(engine, device, type, op, algo, count, rank, in_place);
            if (got != reference(type, count, p, op) && failures[rank].empty())
              failures[rank] = to_string(type) + " " + to_string(op) + " count " + std::to_string(count) +
                               (in_place ? " in place" : " out of place");
          }
    });
    for (int r = 0; r < p; ++r) EXPECT_EQ(failures[r], "") << to_string(algo) << " p=" << p << " rank " << r;
  }
}

INSTANTIATE_TEST_SUITE_P(Algorithms, DevicePath, ::testing::ValuesIn(kAlgorithms), [](const auto& info) {
  std::string n = to_string(info.param);
  for (auto& c : n)
    if (c == '-') c = '_';
  return n;
});

// A user's program: device calls and host calls alternate on one engine, sizes vary, and the
// staging memory stays within the largest call's needs (the receive mirror of its output and
// scratch, and the send pieces it has in flight at most: every byte it sends) however many
// calls are made.
TEST(DevicePathUse, HostAndDeviceCallsInterleaveAndStagingIsReused) {
  const int p = 4;
  on_threads(p, options(64 << 10), [&](Engine& engine, int rank) {
    Device device(engine, 64 << 10);
    const std::size_t largest = 300000 * sizeof(float);
    for (int round = 0; round < 3; ++round)
      for (std::size_t count : {std::size_t{300000}, std::size_t{17}, std::size_t{65536}}) {
        const auto got = device_call(engine, device, DataType::Float32, ReduceOp::Sum, Algorithm::Ring, count, rank, false);
        EXPECT_EQ(got, reference(DataType::Float32, count, p, ReduceOp::Sum)) << "device, count " << count;
        auto host = fill(DataType::Int64, count, rank, ReduceOp::Min);
        engine.allreduce(host.data(), host.data(), count, DataType::Int64, ReduceOp::Min, Algorithm::RecursiveDoubling);
        EXPECT_EQ(host, reference(DataType::Int64, count, p, ReduceOp::Min)) << "host, count " << count;
        ASSERT_NE(engine.staged_transport(), nullptr);
        const std::size_t staged = engine.staged_transport()->staging_bytes();
        // output + ring scratch (n / p) mirrored, and at most 2 (p - 1) / p x n sent in 64 KiB pieces
        EXPECT_LE(staged, largest + largest / p + 2 * largest + 2 * p * (64 << 10)) << "round " << round;
        EXPECT_GE(staged, largest) << "no mirror of the output";
      }
  });
}

TEST(DevicePathUse, MixedHostAndDeviceBuffersAreRefused) {
  on_threads(1, options(0), [](Engine& engine, int) {
    Device device(engine, 1 << 20);
    std::vector<float> host(8, 1.0f);
    void* dev = device.upload(std::vector<std::byte>(32));
    try {
      engine.allreduce(host.data(), dev, 8, DataType::Float32, ReduceOp::Sum, Algorithm::Ring);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Error::Code::InvalidArgument);
      EXPECT_NE(std::string(e.what()).find("the send buffer is host memory and the recv buffer device memory"),
                std::string::npos)
          << e.what();
    }
    // Refused before any message: the engine still works.
    engine.allreduce(host.data(), host.data(), 8, DataType::Float32, ReduceOp::Sum, Algorithm::Ring);
    EXPECT_EQ(host[0], 1.0f);
  });
}

TEST(DevicePathUse, WithoutCudaThereIsNoDeviceAndHostBuffersRunAsBefore) {
  std::string why;
  const auto cuda = make_cuda_device_memory(why);
  if (cuda) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_FALSE(why.empty());
  on_threads(2, options(0), [](Engine& engine, int rank) {
    std::vector<double> v(5, rank + 1.0);
    engine.allreduce(v.data(), v.data(), v.size(), DataType::Float64, ReduceOp::Sum, Algorithm::Ring);
    EXPECT_EQ(v[4], 3.0);
    EXPECT_EQ(engine.staged_transport(), nullptr);
  });
}

}  // namespace
}  // namespace arlab::detail

namespace arlab::detail {
namespace {

// On a stream: the stream's earlier work first (the stand-in has none to wait for), then the
// call, done when it returns.
TEST(DevicePathUse, AStreamCallRunsOnDeviceBuffersAndReturnsDone) {
  const int p = 3;
  on_threads(p, arlab::test::loopback_options(4096), [&](Engine& engine, int rank) {
    Device device(engine, 2048);
    auto input = fill(DataType::Float32, 10001, rank, ReduceOp::Avg);
    void* buf = device.upload(input);
    int stream_tag = 0;  // any address stands for a stream here
    engine.allreduce_on_stream(buf, buf, 10001, DataType::Float32, ReduceOp::Avg, Algorithm::Ring, &stream_tag);
    std::vector<std::byte> got(input.size());
    std::memcpy(got.data(), buf, got.size());
    EXPECT_EQ(got, reference(DataType::Float32, 10001, p, ReduceOp::Avg));
  });
}

TEST(DevicePathUse, AStreamCallWithoutADeviceIsUnavailable) {
  std::string why;
  if (make_cuda_device_memory(why)) GTEST_SKIP() << "a CUDA device is present";
  on_threads(1, arlab::test::loopback_options(0), [](Engine& engine, int) {
    float x = 1;
    try {
      engine.allreduce_on_stream(&x, &x, 1, DataType::Float32, ReduceOp::Sum, Algorithm::Ring, nullptr);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Error::Code::Unavailable);
      EXPECT_NE(std::string(e.what()).find("allreduce on a CUDA stream needs a CUDA device"), std::string::npos)
          << e.what();
    }
  });
}

}  // namespace
}  // namespace arlab::detail

namespace arlab::detail {
namespace {

// One registry per process: a stand-in knows another's device memory (as every CUDA context
// of a process knows every cudaMalloc), and forgets it once freed.
TEST(DevicePathUse, EveryStandInKnowsEveryOthersDeviceMemory) {
  const auto a = make_host_device_memory(), b = make_host_device_memory();
  auto* p = static_cast<unsigned char*>(a->alloc_device(100));
  EXPECT_EQ(b->classify(p), DeviceMemory::Kind::Device);
  EXPECT_EQ(b->classify(p + 99), DeviceMemory::Kind::Device);
  int on_stack = 0;
  EXPECT_EQ(b->classify(&on_stack), DeviceMemory::Kind::Host);
  a->free_device(p);
  EXPECT_EQ(b->classify(p), DeviceMemory::Kind::Host);
}

// ARLAB_TEST_DEVICE=host gives every communicator (and arlab-bench -D) the stand-in; any other
// value is refused by name; unset, the CUDA device or none.
TEST(DevicePathUse, TheTestDeviceVariableChoosesTheStandIn) {
  std::string why;
  ASSERT_EQ(setenv("ARLAB_TEST_DEVICE", "host", 1), 0);
  const auto host = make_device_memory(why);
  ASSERT_NE(host, nullptr);
  EXPECT_EQ(host->name(), "host test device");
  ASSERT_EQ(setenv("ARLAB_TEST_DEVICE", "gpu", 1), 0);
  try {
    make_device_memory(why);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Error::Code::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("ARLAB_TEST_DEVICE='gpu': the only value is 'host'"), std::string::npos)
        << e.what();
  }
  ASSERT_EQ(unsetenv("ARLAB_TEST_DEVICE"), 0);
  std::string cuda_why;
  const bool cuda = make_cuda_device_memory(cuda_why) != nullptr;
  EXPECT_EQ(make_device_memory(why) != nullptr, cuda);
  if (!cuda) EXPECT_EQ(why, cuda_why);
}

}  // namespace
}  // namespace arlab::detail

// The device path on a real GPU: loopback ranks as threads sharing device 0, each engine with
// its own CUDA device memory (its own copy and compute streams), cudaMalloc'd buffers, every
// algorithm; and the stream overload ordered after a copy still queued on the caller's stream.
// Skipped with the reason where no CUDA device is usable.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/loopback_ranks.hpp"
#include "common/reference.hpp"
#include "kernels/kernels.hpp"

namespace arlab::detail {
namespace {

using arlab::test::fill;
using arlab::test::on_threads;
using arlab::test::reference;

#define SKIP_WITHOUT_GPU() \
  if (arlab::kernels::device_count() == 0) GTEST_SKIP() << arlab::kernels::unavailable_reason()

void* upload(const std::vector<std::byte>& data) {
  void* p = nullptr;
  EXPECT_EQ(cudaMalloc(&p, data.size() ? data.size() : 1), cudaSuccess);
  EXPECT_EQ(cudaMemcpy(p, data.data(), data.size(), cudaMemcpyHostToDevice), cudaSuccess);
  return p;
}

std::vector<std::byte> download(const void* p, std::size_t bytes) {
  std::vector<std::byte> out(bytes);
  EXPECT_EQ(cudaMemcpy(out.data(), p, bytes, cudaMemcpyDeviceToHost), cudaSuccess);
  return out;
}

TEST(GpuDevicePath, EveryAlgorithmOnDeviceBuffersOverLoopbackThreads) {
  SKIP_WITHOUT_GPU();
  for (int p = 1; p <= 4; ++p) {
    std::vector<std::string> failures(p);
    // Nodes of two ranks (uneven at 3: the leader variant), so that hierarchical has levels.
    Options o = arlab::test::loopback_options(256 << 10);
    o.ranks_per_node = 2;
    on_threads(p, o, [&](Engine& engine, int rank) {
      ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
      for (Algorithm algo : {Algorithm::Ring, Algorithm::Tree, Algorithm::RecursiveDoubling, Algorithm::Rabenseifner,
                             Algorithm::Hierarchical, Algorithm::Auto})
        for (auto [type, op] : {std::pair{DataType::Float32, ReduceOp::Sum}, std::pair{DataType::BFloat16, ReduceOp::Avg},
                                std::pair{DataType::Int8, ReduceOp::Max}, std::pair{DataType::Float16, ReduceOp::Prod}})
          for (std::size_t count : {std::size_t{1}, std::size_t{7}, std::size_t{4099}, (std::size_t{1} << 20) + 3})
            for (bool in_place : {true, false}) {
              const auto input = fill(type, count, rank, op);
              void* send = upload(input);
              void* recv = in_place ? send : upload(std::vector<std::byte>(input.size()));
              engine.allreduce(send, recv, count, type, op, algo);
              if (download(recv, input.size()) != reference(type, count, p, op) && failures[rank].empty())
                failures[rank] = to_string(algo) + " " + to_string(type) + " " + to_string(op) + " count " +
                                 std::to_string(count) + (in_place ? " in place" : " out of place");
              if (recv != send) cudaFree(recv);
              cudaFree(send);
            }
    });
    for (int r = 0; r < p; ++r) EXPECT_EQ(failures[r], "") << "p=" << p << " rank " << r;
  }
}

TEST(GpuDevicePath, AStreamCallWaitsForTheCopyQueuedBeforeIt) {
  SKIP_WITHOUT_GPU();
  const int p = 2;
  const std::size_t count = (std::size_t{1} << 22) + 1;
  on_threads(p, arlab::test::loopback_options(256 << 10), [&](Engine& engine, int rank) {
    ASSERT_EQ(cudaSetDevice(0), cudaSuccess);
    const auto input = fill(DataType::Float32, count, rank, ReduceOp::Sum);
    void* host = nullptr;
    ASSERT_EQ(cudaMallocHost(&host, input.size()), cudaSuccess);
    std::memcpy(host, input.data(), input.size());
    void* buf = nullptr;
    ASSERT_EQ(cudaMalloc(&buf, input.size()), cudaSuccess);
    ASSERT_EQ(cudaMemset(buf, 0, input.size()), cudaSuccess);
    cudaStream_t stream;
    ASSERT_EQ(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), cudaSuccess);
    // The input reaches the device on the caller's stream; the call must wait for it.
    ASSERT_EQ(cudaMemcpyAsync(buf, host, input.size(), cudaMemcpyHostToDevice, stream), cudaSuccess);
    engine.allreduce_on_stream(buf, buf, count, DataType::Float32, ReduceOp::Sum, Algorithm::Ring, stream);
    EXPECT_EQ(download(buf, input.size()), reference(DataType::Float32, count, p, ReduceOp::Sum));
    cudaStreamDestroy(stream);
    cudaFree(buf);
    cudaFreeHost(host);
  });
}

}  // namespace
}  // namespace arlab::detail

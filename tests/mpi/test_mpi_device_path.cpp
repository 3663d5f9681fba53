// The device path (staging through host memory, a device reducer completing later) over a
// real transport under mpirun, through the host stand-in of a device: every algorithm, odd
// counts, messages of many pieces, in place and out of place, with plain MPI calls and host
// calls on the same engine in between. The transport is ARLAB_TRANSPORT's (mpi by default; the
// mpi.ucx.* and mpi.ucx-rma.* tests run this binary over UCX), so the ucx-rma transport puts
// straight into the staging mirror it registered.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/reference.hpp"
#include "core/engine.hpp"
#include "device/device_memory.hpp"
#include "common/mpi_world.hpp"

namespace {

using arlab::test::everywhere;

using namespace arlab;
using arlab::test::fill;
using arlab::test::reference;

TEST(MpiDevicePath, EveryAlgorithmOnStagedDeviceBuffers) {
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  Options o;
  o.timeout_s = 60;
  o.self_calibration = SelfCalibration::Off;
  o.ranks_per_node = p >= 3 ? 2 : 1;  // emulated nodes, so that hierarchical has levels (uneven at 3 and 5)
  const Options resolved = o.resolved();
  MPI_Comm comm;
  MPI_Comm_dup(MPI_COMM_WORLD, &comm);
  std::string failure;
  {
    detail::Engine engine(detail::make_transport(resolved, comm), resolved, comm);
    auto owned = detail::make_host_device_memory();
    detail::DeviceMemory& device = *owned;
    engine.use_device_memory(std::move(owned), 3000);  // pieces of 3000 B
    const std::size_t pp = static_cast<std::size_t>(p);
    for (Algorithm algo : {Algorithm::Ring, Algorithm::Tree, Algorithm::RecursiveDoubling, Algorithm::Rabenseifner,
                           Algorithm::Hierarchical, Algorithm::Auto})
      for (auto [type, op] : {std::pair{DataType::Float32, ReduceOp::Sum}, std::pair{DataType::Int64, ReduceOp::Max},
                              std::pair{DataType::BFloat16, ReduceOp::Avg}})
        for (std::size_t count : {pp + 1, std::size_t{7}, std::size_t{50001}})
          for (bool in_place : {true, false}) {
            const auto input = fill(type, count, rank, op);
            void* send = device.alloc_device(input.size());
            void* recv = in_place ? send : device.alloc_device(input.size());
            std::memcpy(send, input.data(), input.size());
            engine.allreduce(send, recv, count, type, op, algo);
            const auto want = reference(type, count, p, op);
            if (std::memcmp(recv, want.data(), want.size()) != 0 && failure.empty())
              failure = to_string(algo) + " " + to_string(type) + " " + to_string(op) + " count " +
                        std::to_string(count) + (in_place ? " in place" : " out of place");
            if (recv != send) device.free_device(recv);
            device.free_device(send);
            // The user's own MPI and a host call between device calls.
            int one = 1, ranks = 0;
            MPI_Allreduce(&one, &ranks, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
            std::vector<double> host(5, 1.0);
            engine.allreduce(host.data(), host.data(), host.size(), DataType::Float64, ReduceOp::Sum, algo);
            if ((ranks != p || host[4] != p) && failure.empty()) failure = "the host call after " + to_string(algo);
          }
  }
  MPI_Comm_free(&comm);
  EXPECT_EQ(failure, "") << "rank " << rank;
  EXPECT_TRUE(everywhere(failure.empty()));
}

}  // namespace

namespace {

// Without a GPU the nccl baseline says why, on every rank, and the communicator stays usable.
TEST(MpiNccl, UnavailableWithoutAGpuAndTheCommunicatorGoesOn) {
  std::string why;
  if (arlab::detail::make_cuda_device_memory(why)) GTEST_SKIP() << "a CUDA device is present";
  arlab::Communicator comm(MPI_COMM_WORLD);
  std::vector<float> v(4, 1.0f);
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      comm.allreduce(v.data(), v.data(), v.size(), arlab::DataType::Float32, arlab::ReduceOp::Sum, arlab::Algorithm::Nccl);
      ADD_FAILURE() << "no error";
    } catch (const arlab::Error& e) {
      EXPECT_EQ(e.code(), arlab::Error::Code::Unavailable);
      EXPECT_NE(std::string(e.what()).find("nccl baseline"), std::string::npos) << e.what();
    }
  }
  // The stream overload needs a device too.
  try {
    comm.allreduce(v.data(), v.data(), v.size(), arlab::DataType::Float32, arlab::ReduceOp::Sum,
                   arlab::Algorithm::Ring, cudaStream_t{});
    ADD_FAILURE() << "no error";
  } catch (const arlab::Error& e) {
    EXPECT_EQ(e.code(), arlab::Error::Code::Unavailable);
    EXPECT_NE(std::string(e.what()).find("needs a CUDA device"), std::string::npos) << e.what();
  }
  comm.allreduce(v.data(), v.data(), v.size(), arlab::DataType::Float32, arlab::ReduceOp::Sum, arlab::Algorithm::Ring);
  int p = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  EXPECT_EQ(v[3], static_cast<float>(p));
}

}  // namespace

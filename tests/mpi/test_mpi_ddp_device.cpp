// GradientBucketer on device gradients, under mpirun, through the host stand-in of a device
// (ARLAB_TEST_DEVICE=host: its "device" memory is host memory of its own registry, its copies
// and reductions complete later on threads of their own, as on a GPU's streams). Bucketed
// results equal a plain all-reduce of each gradient; bucket views on the device survive a
// rebuild; misuse is a clear error. Linked into arlab-mpi-async-tests.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "arlab/ddp.hpp"
#include "common/mpi_world.hpp"
#include "ddp_marking.hpp"
#include "device/device_memory.hpp"

namespace {

using arlab::DataType;
using arlab::ReduceOp;
using arlab::test::backward;
using arlab::test::everywhere;
using arlab::test::forward_order;
using arlab::test::mark_in_order;

bool stand_in() {
  const char* v = std::getenv("ARLAB_TEST_DEVICE");
  return v && std::string(v) == "host";
}

#define NEEDS_THE_STAND_IN()                                                                             \
  do {                                                                                                 \
    int provided = 0;                                                                                  \
    MPI_Query_thread(&provided);                                                                       \
    if (provided < MPI_THREAD_MULTIPLE) GTEST_SKIP() << "MPI without MPI_THREAD_MULTIPLE";             \
    if (!stand_in()) GTEST_SKIP() << "device gradients run here through ARLAB_TEST_DEVICE=host only"; \
  } while (0)

std::string message(const auto& f) {
  try {
    f();
  } catch (const arlab::Error& e) {
    const bool unavailable = e.code() == arlab::Error::Code::Unavailable;
    const bool invalid = e.code() == arlab::Error::Code::InvalidArgument;
    return std::string(unavailable ? "unavailable" : invalid ? "invalid argument" : "other") + ": " + e.what();
  }
  return "no error";
}

// Gradients of mixed sizes and types, in host vectors (the reference) and on the "device".
struct DeviceModel {
  std::unique_ptr<arlab::detail::DeviceMemory> device = arlab::detail::make_host_device_memory();
  std::vector<std::vector<std::byte>> host;
  std::vector<arlab::Gradient> on_host, on_device;
  DeviceModel(int rank, int step) {
    const std::size_t counts[] = {3, 5000, 1 << 14, 1, 777, 40000, 12, 2049};
    for (std::size_t i = 0; i < 16; ++i) {
      const std::size_t n = counts[i % 8] + i;
      const DataType type = i % 3 == 2 ? DataType::Float64 : DataType::Float32;
      host.emplace_back(n * arlab::size_of(type));
      for (std::size_t k = 0; k < n; ++k) {
        const double v = static_cast<double>((k * 7 + i + static_cast<std::size_t>(rank) * 13 + step) % 29);
        if (type == DataType::Float64)
          reinterpret_cast<double*>(host.back().data())[k] = v;
        else
          reinterpret_cast<float*>(host.back().data())[k] = static_cast<float>(v);
      }
      void* d = device->alloc_device(host.back().size());
      std::memcpy(d, host.back().data(), host.back().size());  // the stand-in's memory is the host's
      on_host.push_back({host.back().data(), n, type});
      on_device.push_back({d, n, type});
    }
  }
  ~DeviceModel() {
    for (auto& g : on_device) device->free_device(g.data);
  }
  // Every host gradient averaged by a blocking all-reduce of its own.
  void reference(arlab::Communicator& comm) {
    for (auto& g : on_host) comm.allreduce(g.data, g.data, g.count, g.type, ReduceOp::Avg, arlab::Algorithm::Ring);
  }
  bool device_equals_reference() const {
    for (std::size_t i = 0; i < host.size(); ++i)
      if (std::memcmp(on_device[i].data, host[i].data(), host[i].size()) != 0) return false;
    return true;
  }
};

arlab::BucketOptions small_buckets() {
  arlab::BucketOptions o;
  o.first_bucket_bytes = 4096;
  o.bucket_cap_bytes = 64 << 10;
  return o;
}


TEST(BucketerOnDevice, EqualsAPlainAllreduceOfEachGradientOverTwoSteps) {
  NEEDS_THE_STAND_IN();
  arlab::Communicator comm(MPI_COMM_WORLD);
  for (int step = 0; step < 2; ++step) {
    DeviceModel m(comm.rank(), step);
    m.reference(comm);
    arlab::GradientBucketer sync(comm, m.on_device, small_buckets());
    EXPECT_GT(sync.bucket_count(), 3u);
    EXPECT_EQ(sync.gradient(1), m.on_device[1].data);  // without views: the user's own memory
    backward(sync, m.on_device.size(), 31u * static_cast<unsigned>(comm.rank() + 1) + static_cast<unsigned>(step));
    sync.finish();
    EXPECT_TRUE(everywhere(m.device_equals_reference())) << "step " << step;
    // The next step on the same bucketer: fresh values, all-reduced again.
    DeviceModel next(comm.rank(), step + 2);
    next.reference(comm);
    for (std::size_t i = 0; i < m.host.size(); ++i) std::memcpy(m.on_device[i].data, next.host[i].data(), next.host[i].size());
    backward(sync, m.on_device.size(), 7u + static_cast<unsigned>(comm.rank()));
    sync.finish();
    bool ok = true;
    for (std::size_t i = 0; i < m.host.size(); ++i)
      ok &= std::memcmp(m.on_device[i].data, next.host[i].data(), next.host[i].size()) == 0;
    EXPECT_TRUE(everywhere(ok)) << "second step on the bucketer of step " << step;
  }
}

TEST(BucketerOnDevice, BucketViewsLiveOnTheDeviceAndSurviveARebuild) {
  NEEDS_THE_STAND_IN();
  arlab::Communicator comm(MPI_COMM_WORLD);
  DeviceModel m(comm.rank(), 0);
  m.reference(comm);
  std::vector<arlab::Gradient> views = m.on_host;
  for (auto& g : views) g.data = nullptr;  // the bucketer's device memory holds them
  arlab::BucketOptions o = small_buckets();
  o.gradient_as_bucket_view = true;
  o.on_device = true;
  arlab::GradientBucketer sync(comm, views, o);
  auto probe = arlab::detail::make_host_device_memory();  // the registry is the process's
  const DeviceModel before(comm.rank(), 0);  // the values before the reference's average
  bool ok = true;
  for (std::size_t i = 0; i < views.size(); ++i) {  // "backward" writes each gradient in place
    ok &= probe->classify(sync.gradient(i)) == arlab::detail::DeviceMemory::Kind::Device;
    std::memcpy(sync.gradient(i), before.host[i].data(), before.host[i].size());
  }
  // Rank 0 marks in registration order, the others in their own: rebuild follows rank 0.
  if (comm.rank() == 0) {
    mark_in_order(sync, forward_order(views.size()));
  } else
    backward(sync, views.size(), 5u + static_cast<unsigned>(comm.rank()));
  sync.finish();
  for (std::size_t i = 0; i < views.size(); ++i)
    ok &= std::memcmp(sync.gradient(i), m.host[i].data(), m.host[i].size()) == 0;
  sync.rebuild();  // the views move to the new buckets with what they hold
  ok &= sync.bucket(0).front() == 0;
  for (std::size_t i = 0; i < views.size(); ++i) {
    ok &= probe->classify(sync.gradient(i)) == arlab::detail::DeviceMemory::Kind::Device;
    ok &= std::memcmp(sync.gradient(i), m.host[i].data(), m.host[i].size()) == 0;
  }
  EXPECT_TRUE(everywhere(ok));
}

TEST(BucketerOnDevice, MixedSidesHostOnDeviceAndCpuHooksAreClearErrors) {
  NEEDS_THE_STAND_IN();
  arlab::Communicator comm(MPI_COMM_WORLD);
  DeviceModel m(comm.rank(), 0);
  std::vector<arlab::Gradient> mixed = {m.on_device[0], m.on_host[1]};
  EXPECT_NE(message([&] { arlab::GradientBucketer bad(comm, mixed); })
                .find("invalid argument: arlab::GradientBucketer: gradient 0 is device memory and gradient 1 host memory"),
            std::string::npos)
      << message([&] { arlab::GradientBucketer bad(comm, mixed); });
  arlab::BucketOptions o;
  o.on_device = true;
  EXPECT_NE(message([&] { arlab::GradientBucketer bad(comm, {m.on_host[2]}, o); })
                .find("on_device is set, but gradient 0 is host memory"),
            std::string::npos);
  arlab::BucketOptions hooked;
  hooked.hook = arlab::make_fp16_compression_hook();
  const std::string refused = message([&] { arlab::GradientBucketer bad(comm, m.on_device, hooked); });
  EXPECT_NE(refused.find("unavailable: arlab::GradientBucketer: the 'fp16"), std::string::npos) << refused;
  EXPECT_NE(refused.find("does not take device memory"), std::string::npos) << refused;
  // The communicator is still usable.
  float x = 1;
  comm.allreduce(&x, &x, 1, DataType::Float32, ReduceOp::Sum);
  EXPECT_TRUE(everywhere(x == static_cast<float>(comm.size())));
}

// Without the stand-in, and without a GPU, buckets on the device are refused, saying why.
TEST(BucketerOnDevice, OnDeviceWithoutADeviceIsUnavailable) {
  int provided = 0;
  MPI_Query_thread(&provided);
  if (provided < MPI_THREAD_MULTIPLE) GTEST_SKIP() << "MPI without MPI_THREAD_MULTIPLE";
  if (stand_in()) GTEST_SKIP() << "the stand-in is a device";
  arlab::Communicator comm(MPI_COMM_WORLD);
  arlab::BucketOptions o;
  o.on_device = true;
  o.gradient_as_bucket_view = true;
  const std::string got = message([&] { arlab::GradientBucketer sync(comm, {{nullptr, 10, DataType::Float32}}, o); });
  if (got == "no error") GTEST_SKIP() << "this machine has a CUDA device";
  EXPECT_NE(got.find("unavailable: arlab::GradientBucketer: on_device needs a CUDA device"), std::string::npos) << got;
}

}  // namespace

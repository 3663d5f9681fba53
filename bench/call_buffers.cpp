#include "call_buffers.hpp"

#include <cstring>
#include <utility>

#ifdef ARLAB_HAVE_CUDA
#include <cuda_runtime.h>
#endif

#include "agree.hpp"
#include "device/device_memory.hpp"

namespace arlab::bench {
namespace {

// The GPU of this rank, as the nccl baseline chooses it: the local rank modulo the GPUs.
void select_gpu([[maybe_unused]] MPI_Comm world) {
#ifdef ARLAB_HAVE_CUDA
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    cudaGetLastError();
    return;  // make_device_memory says why
  }
  MPI_Comm local = MPI_COMM_NULL;
  MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  const int local_rank = comm_rank(local);
  MPI_Comm_free(&local);
  cudaSetDevice(local_rank % devices);
#endif
}

}  // namespace

CallBuffers CallBuffers::host(std::size_t bytes, bool out_of_place) {
  CallBuffers b;
  b.host_recv_owned_ = allocate(bytes);
  b.host_recv_ = b.call_recv_ = b.host_recv_owned_.get();
  if (out_of_place) {
    b.host_send_owned_ = allocate(bytes);
    b.host_send_ = b.call_send_ = b.host_send_owned_.get();
  }
  return b;
}

CallBuffers CallBuffers::device(MPI_Comm world, std::size_t bytes, bool out_of_place) {
  select_gpu(world);
  std::string why;
  CallBuffers b;
  b.device_ = detail::make_device_memory(why);
  if (!b.device_) throw Error(Error::Code::Unavailable, "-D: device buffers need a CUDA device: " + why);
  const std::size_t n = bytes ? bytes : 1;
  b.call_recv_ = b.device_->alloc_device(n);
  b.host_recv_ = b.device_->alloc_staging(n);
  std::memset(b.host_recv_, 0, n);
  b.to_call(Side::Recv, n);
  if (out_of_place) {
    b.call_send_ = b.device_->alloc_device(n);
    b.host_send_ = b.device_->alloc_staging(n);
    std::memset(b.host_send_, 0, n);
    b.to_call(Side::Send, n);
  }
  return b;
}

CallBuffers::CallBuffers() = default;
CallBuffers::CallBuffers(CallBuffers&& o) noexcept { *this = std::move(o); }

CallBuffers& CallBuffers::operator=(CallBuffers&& o) noexcept {
  if (this == &o) return *this;
  release();
  device_ = std::move(o.device_);
  host_send_owned_ = std::move(o.host_send_owned_);
  host_recv_owned_ = std::move(o.host_recv_owned_);
  call_send_ = std::exchange(o.call_send_, nullptr);
  call_recv_ = std::exchange(o.call_recv_, nullptr);
  host_send_ = std::exchange(o.host_send_, nullptr);
  host_recv_ = std::exchange(o.host_recv_, nullptr);
  return *this;
}

CallBuffers::~CallBuffers() { release(); }

void CallBuffers::release() noexcept {
  if (device_) {
    device_->synchronize();
    for (void* p : {call_send_, call_recv_})
      if (p) device_->free_device(p);
    for (void* p : {host_send_, host_recv_})
      if (p) device_->free_staging(p);
    device_.reset();
  }
  host_send_owned_.reset();
  host_recv_owned_.reset();
  call_send_ = call_recv_ = host_send_ = host_recv_ = nullptr;
}

void CallBuffers::to_call(Side s, std::size_t bytes) const {
  if (!device_ || bytes == 0) return;
  device_->to_device(call(s), host(s), bytes);
  device_->synchronize();
}

void CallBuffers::to_host(Side s, std::size_t bytes) const {
  if (!device_ || bytes == 0) return;
  device_->to_host(host(s), call(s), bytes);
  device_->synchronize();
}

std::string CallBuffers::describe() const {
  if (!device_) return "host memory";
  return "device memory (-D) of " + device_->name() +
         "; inputs written and results checked through page-locked host copies (untimed)";
}

}  // namespace arlab::bench

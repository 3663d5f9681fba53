// The CUDA implementation of DeviceMemory (device_memory.hpp): the current device, a stream
// for the copies to the host, one for those to the device, and one for the kernels (all
// non-blocking: they never wait for the legacy default stream), page-locked staging from cudaHostAlloc, and events recorded after every copy and
// kernel, queried in order. Built with ARLAB_HAVE_CUDA; otherwise make_cuda_device_memory says
// the build has no CUDA.
#include "device/device_memory.hpp"

#ifdef ARLAB_HAVE_CUDA

#include <cuda_runtime.h>

#include <deque>
#include <utility>
#include <vector>

#include "kernels/kernels.hpp"

namespace arlab::detail {
namespace {

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) throw Error(Error::Code::Internal, std::string("arlab: CUDA ") + what + ": " + cudaGetErrorString(e));
}

// A stream and the events recorded on it, numbered from 1; done(n) once event n has fired.
class EventStream {
 public:
  EventStream() { check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags"); }
  ~EventStream() {
    cudaStreamSynchronize(stream_);
    for (auto& [n, e] : pending_) cudaEventDestroy(e);
    for (cudaEvent_t e : free_) cudaEventDestroy(e);
    cudaStreamDestroy(stream_);
  }
  cudaStream_t stream() const { return stream_; }
  std::uint64_t record() {
    cudaEvent_t e;
    if (free_.empty()) {
      check(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreateWithFlags");
    } else {
      e = free_.back();
      free_.pop_back();
    }
    check(cudaEventRecord(e, stream_), "cudaEventRecord");
    pending_.emplace_back(++recorded_, e);
    return recorded_;
  }
  bool done(std::uint64_t n) {
    while (finished_ < n && !pending_.empty()) {
      const cudaError_t q = cudaEventQuery(pending_.front().second);
      if (q == cudaErrorNotReady) return false;
      check(q, "cudaEventQuery");
      finished_ = pending_.front().first;
      free_.push_back(pending_.front().second);
      pending_.pop_front();
    }
    return finished_ >= n;
  }
  void synchronize() { check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize"); }

 private:
  cudaStream_t stream_ = nullptr;
  std::deque<std::pair<std::uint64_t, cudaEvent_t>> pending_;
  std::vector<cudaEvent_t> free_;
  std::uint64_t recorded_ = 0, finished_ = 0;
};

// Events: the number on its stream times four, plus the stream (1 to host, 2 to device, 3
// compute), so never kDone (0).
enum StreamId : unsigned { kToHost = 1, kToDevice = 2, kCompute = 3 };
constexpr DeviceMemory::Event event_of(std::uint64_t n, StreamId stream) { return n << 2 | stream; }

class CudaDeviceMemory final : public DeviceMemory {
 public:
  explicit CudaDeviceMemory(int device) : device_(device) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, device) == cudaSuccess) name_ = std::string("cuda (") + prop.name + ")";
  }
  std::string name() const override { return name_; }
  void bind_thread() override { check(cudaSetDevice(device_), "cudaSetDevice"); }

  Kind classify(const void* p) const override {
    cudaPointerAttributes a{};
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
      cudaGetLastError();  // an unknown pointer is host memory; clear the error
      return Kind::Host;
    }
    return a.type == cudaMemoryTypeDevice ? Kind::Device : a.type == cudaMemoryTypeManaged ? Kind::Managed : Kind::Host;
  }

  void* alloc_staging(std::size_t bytes) override {
    void* p = nullptr;
    check(cudaHostAlloc(&p, bytes ? bytes : 1, cudaHostAllocPortable), "cudaHostAlloc");
    return p;
  }
  void free_staging(void* p) noexcept override { cudaFreeHost(p); }
  void* alloc_device(std::size_t bytes) override {
    void* p = nullptr;
    check(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc");
    return p;
  }
  void free_device(void* p) noexcept override { cudaFree(p); }

  Event to_host(void* host, const void* device, std::size_t bytes) override {
    check(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, to_host_.stream()), "cudaMemcpyAsync");
    return event_of(to_host_.record(), kToHost);
  }
  Event to_device(void* device, const void* host, std::size_t bytes) override {
    check(cudaMemcpyAsync(device, host, bytes, cudaMemcpyHostToDevice, to_device_.stream()), "cudaMemcpyAsync");
    return event_of(to_device_.record(), kToDevice);
  }
  bool done(Event e) override { return e == kDone || stream(e).done(e >> 2); }

  // The reducer's work: arlab's kernels on the compute stream, an event after each.
  Event reduce(ReduceOp op, DataType type, const void* a, const void* b, void* out, std::size_t n) override {
    kernels::reduce(op, type, a, b, out, nullptr, n, compute_.stream());
    return event_of(compute_.record(), kCompute);
  }
  Event copy(const void* src, void* dst, std::size_t bytes) override {
    kernels::copy(src, dst, bytes, compute_.stream());
    return event_of(compute_.record(), kCompute);
  }
  Event divide(DataType type, void* data, std::size_t n, int divisor) override {
    kernels::divide(type, data, n, divisor, compute_.stream());
    return event_of(compute_.record(), kCompute);
  }
  void synchronize() override {
    to_host_.synchronize();
    to_device_.synchronize();
    compute_.synchronize();
  }
  void wait_for_stream(void* stream) override {
    check(cudaStreamSynchronize(static_cast<cudaStream_t>(stream)), "cudaStreamSynchronize");
  }

 private:
  int device_;
  std::string name_ = "cuda";
  EventStream& stream(Event e) { return (e & 3) == kToHost ? to_host_ : (e & 3) == kToDevice ? to_device_ : compute_; }

  // Copies each way on a stream of their own, so that a send's D2H and a receive's H2D run at
  // once on the GPU's two copy engines; kernels on a third.
  EventStream to_host_, to_device_, compute_;
};

}  // namespace

std::unique_ptr<DeviceMemory> make_cuda_device_memory(std::string& why) {
  if (kernels::device_count() == 0) {
    why = kernels::unavailable_reason();
    return nullptr;
  }
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) {
    why = "no current CUDA device";
    return nullptr;
  }
  return std::make_unique<CudaDeviceMemory>(device);
}

}  // namespace arlab::detail

#else

namespace arlab::detail {

std::unique_ptr<DeviceMemory> make_cuda_device_memory(std::string& why) {
  why = "this arlab was built without CUDA (ARLAB_CUDA=OFF, or no nvcc at build time)";
  return nullptr;
}

}  // namespace arlab::detail

#endif

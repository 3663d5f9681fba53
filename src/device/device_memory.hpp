// The seam between arlab's executor and a device's memory: what the device path needs from a
// GPU runtime, and nothing else. Two implementations:
//   - CUDA (cuda_device_memory.cpp, with ARLAB_HAVE_CUDA): cudaPointerGetAttributes to classify,
//     cudaHostAlloc'd staging buffers, cudaMemcpyAsync on a copy stream each way, arlab's
//     kernels (kernels/) on a compute stream, CUDA events for completion;
//   - host (host_device_memory.cpp): "device" memory that is host memory handed out by the
//     implementation itself, and three worker threads standing in for the copy and compute
//     streams, so every copy and reduction completes later, in stream order, as on a GPU. The
//     CPU tests run the whole device path (staging, events, ordering, overlap) through it.
//
// Completion is polled (done), never waited on: the executor keeps its transport progressing
// while copies and kernels run, and starts a step only once every step it depends on is done,
// so the order between the copy streams, the compute stream and the wire is kept by the
// executor's dependencies, with no cross-stream waits.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "reduce/reducer.hpp"

namespace arlab::detail {

// A DeviceMemory is also the Reducer for its memory (kernels on the compute stream, each
// returning an event), so copies and reductions share one kind of event and one done().
class DeviceMemory : public Reducer {
 public:
  enum class Kind { Host, Device, Managed };

  virtual std::string name() const = 0;  // "cuda (NVIDIA H200)", "host test device"

  // Where `p` lives. Host for memory the device runtime does not know (plain malloc).
  virtual Kind classify(const void* p) const = 0;

  // Page-locked host memory for staging (DMA-able), and device memory (scratch).
  virtual void* alloc_staging(std::size_t bytes) = 0;
  virtual void free_staging(void* p) noexcept = 0;
  virtual void* alloc_device(std::size_t bytes) = 0;
  virtual void free_device(void* p) noexcept = 0;

  // Copies to the host run in order on one stream, copies to the device in order on another,
  // with no order between the two (a GPU's two copy engines); done(event) once finished.
  virtual Event to_host(void* host, const void* device, std::size_t bytes) = 0;
  virtual Event to_device(void* device, const void* host, std::size_t bytes) = 0;

  // Blocks until everything enqueued so far (copies and reductions) has finished.
  virtual void synchronize() = 0;
  // Makes this device the calling thread's current one (CUDA's is per thread): the
  // communicator's progress thread calls it before it runs a collective on device memory.
  virtual void bind_thread() {}
  // Blocks until the work queued on a caller's stream (a cudaStream_t; nullptr: the legacy
  // default stream) has finished. The host stand-in has no caller streams: nothing to wait for.
  virtual void wait_for_stream(void* stream) = 0;
};

// The CUDA implementation, or nullptr when this build has no CUDA or no device is usable
// (then `why` says which).
std::unique_ptr<DeviceMemory> make_cuda_device_memory(std::string& why);
// The host stand-in for tests. Every instance classifies the "device" memory of every other
// (one registry per process), as every CUDA context of a process knows every cudaMalloc.
std::unique_ptr<DeviceMemory> make_host_device_memory();

// What a communicator (and arlab-bench's -D) use: the CUDA one; or, where ARLAB_TEST_DEVICE=host
// is set, the host stand-in, so that the device path of whole programs runs in CPU tests.
// Any other value of ARLAB_TEST_DEVICE is Error(InvalidArgument).
std::unique_ptr<DeviceMemory> make_device_memory(std::string& why);

}  // namespace arlab::detail

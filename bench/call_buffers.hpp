// arlab-bench: the buffers a timed call gets, and the host memory the checker writes and reads.
//
// Host buffers (the default): one page-aligned buffer per side, the call's and the checker's
// alike. Device buffers (-D): device memory for the call, page-locked host mirrors for the
// checker, copied across (untimed) before a call's input is needed and after its result is,
// so every line runs and is checked on the same device memory.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <memory>
#include <string>

#include "buffers.hpp"

namespace arlab::detail {
class DeviceMemory;  // src/device/device_memory.hpp
}

namespace arlab::bench {

enum class Side { Send, Recv };

class CallBuffers {
 public:
  CallBuffers();
  // Host buffers of `bytes` (a send buffer only out of place).
  static CallBuffers host(std::size_t bytes, bool out_of_place);
  // Device buffers on this rank's GPU (the local rank modulo the GPUs, as the nccl baseline
  // chooses): Error(Unavailable) saying why where there is none. Collective over `world`.
  static CallBuffers device(MPI_Comm world, std::size_t bytes, bool out_of_place);
  CallBuffers(CallBuffers&&) noexcept;
  CallBuffers& operator=(CallBuffers&&) noexcept;
  ~CallBuffers();

  void* call(Side s) const { return s == Side::Send ? call_send_ : call_recv_; }
  void* host(Side s) const { return s == Side::Send ? host_send_ : host_recv_; }
  // The first `bytes` of a side, host mirror -> call buffer and back (no-ops for host buffers).
  void to_call(Side s, std::size_t bytes) const;
  void to_host(Side s, std::size_t bytes) const;

  bool on_device() const { return device_ != nullptr; }
  // For the header: "host memory", or the device and how its buffers are checked.
  std::string describe() const;

 private:
  void release() noexcept;

  std::unique_ptr<detail::DeviceMemory> device_;
  Buffer host_send_owned_, host_recv_owned_;  // host buffers
  void* call_send_ = nullptr;
  void* call_recv_ = nullptr;
  void* host_send_ = nullptr;
  void* host_recv_ = nullptr;
};

}  // namespace arlab::bench

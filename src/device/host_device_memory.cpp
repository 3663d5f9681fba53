// The host stand-in of a device (device_memory.hpp), for the CPU tests of the device path.
//
// "Device" memory is host memory these objects hand out and remember (one registry per process),
// so classify() tells it from the caller's own host buffers as cudaPointerGetAttributes would.
// Three worker threads are the streams, as on the GPU: one runs the copies to the host, one the
// copies to the device, one the reducer's work, each in the order enqueued and in no order
// between them; an event is the stream and the task's number on it, done once that task has
// run. So a copy or a reduction completes some time after it is enqueued, as on a GPU, and a
// path that read a result before its event said done would read stale data in these tests.
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <string_view>
#include <thread>

#include "device/device_memory.hpp"

namespace arlab::detail {
namespace {

// One stream: tasks run in order on a thread of its own.
class Stream {
 public:
  Stream() : worker_([this] { work(); }) {}
  ~Stream() {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    worker_.join();
  }
  // The task's number on this stream, from 1.
  std::uint64_t enqueue(std::function<void()> task) {
    std::lock_guard lock(mutex_);
    tasks_.push_back(std::move(task));
    ++enqueued_;
    wake_.notify_all();
    return enqueued_;
  }
  bool done(std::uint64_t number) const { return finished_.load(std::memory_order_acquire) >= number; }
  void synchronize() {
    std::unique_lock lock(mutex_);
    idle_.wait(lock, [&] { return finished_.load(std::memory_order_acquire) == enqueued_; });
  }

 private:
  void work() {
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
      if (tasks_.empty()) return;  // stopping, nothing left
      auto task = std::move(tasks_.front());
      tasks_.pop_front();
      lock.unlock();
      task();
      lock.lock();
      finished_.fetch_add(1, std::memory_order_release);
      idle_.notify_all();
    }
  }

  std::mutex mutex_;
  std::condition_variable wake_, idle_;
  std::deque<std::function<void()>> tasks_;
  std::uint64_t enqueued_ = 0;
  std::atomic<std::uint64_t> finished_{0};
  bool stop_ = false;
  std::thread worker_;  // last: started once the rest exists
};

// Every stand-in's device allocations: base -> bytes.
class Registry {
 public:
  static Registry& instance() {
    static Registry r;
    return r;
  }
  void add(const void* p, std::size_t bytes) {
    std::lock_guard lock(mutex_);
    blocks_[reinterpret_cast<std::uintptr_t>(p)] = bytes;
  }
  void remove(const void* p) {
    std::lock_guard lock(mutex_);
    blocks_.erase(reinterpret_cast<std::uintptr_t>(p));
  }
  bool contains(const void* p) const {
    const auto a = reinterpret_cast<std::uintptr_t>(p);
    std::lock_guard lock(mutex_);
    auto it = blocks_.upper_bound(a);
    if (it == blocks_.begin()) return false;
    --it;
    return a < it->first + it->second;
  }

 private:
  mutable std::mutex mutex_;
  std::map<std::uintptr_t, std::size_t> blocks_;
};

// Events: the task number times four, plus the stream (1 to host, 2 to device, 3 compute); never kDone (0).
enum StreamId : unsigned { kToHost = 1, kToDevice = 2, kCompute = 3 };
constexpr DeviceMemory::Event event_of(std::uint64_t number, StreamId stream) { return number << 2 | stream; }

class HostDeviceMemory final : public DeviceMemory {
 public:
  ~HostDeviceMemory() override {
    synchronize();
    for (void* p : owned_) {
      Registry::instance().remove(p);
      ::operator delete(p, std::align_val_t{256});
    }
  }

  std::string name() const override { return "host test device"; }

  Kind classify(const void* p) const override {
    return Registry::instance().contains(p) ? Kind::Device : Kind::Host;
  }

  void* alloc_staging(std::size_t bytes) override { return ::operator new(bytes ? bytes : 1, std::align_val_t{64}); }
  void free_staging(void* p) noexcept override { ::operator delete(p, std::align_val_t{64}); }
  void* alloc_device(std::size_t bytes) override {
    void* p = ::operator new(bytes ? bytes : 1, std::align_val_t{256});  // cudaMalloc's alignment
    Registry::instance().add(p, bytes ? bytes : 1);
    std::lock_guard lock(mutex_);
    owned_.insert(p);
    return p;
  }
  void free_device(void* p) noexcept override {
    if (!p) return;
    {
      std::lock_guard lock(mutex_);
      owned_.erase(p);
    }
    Registry::instance().remove(p);
    ::operator delete(p, std::align_val_t{256});
  }

  Event to_host(void* host, const void* device, std::size_t bytes) override {
    return copy_on(kToHost, host, device, bytes);
  }
  Event to_device(void* device, const void* host, std::size_t bytes) override {
    return copy_on(kToDevice, device, host, bytes);
  }
  bool done(Event event) override { return event == kDone || stream(static_cast<StreamId>(event & 3)).done(event >> 2); }

  // The reducer's work, on the compute stream.
  Event reduce(ReduceOp op, DataType type, const void* a, const void* b, void* out, std::size_t n) override {
    return on_compute([=] { cpu_reduce(op, type, a, b, out, n); });
  }
  Event copy(const void* src, void* dst, std::size_t bytes) override {
    return on_compute([=] {
      if (bytes && src != dst) std::memcpy(dst, src, bytes);
    });
  }
  Event divide(DataType type, void* data, std::size_t n, int divisor) override {
    cpu_divide(type, nullptr, 0, divisor);  // its argument errors now, as the kernels' launcher gives them
    return on_compute([=] { cpu_divide(type, data, n, divisor); });
  }

  void synchronize() override {
    to_host_.synchronize();
    to_device_.synchronize();
    compute_.synchronize();
  }
  void wait_for_stream(void*) override {}

 private:
  Event on_compute(std::function<void()> task) { return event_of(compute_.enqueue(std::move(task)), kCompute); }
  Event copy_on(StreamId s, void* dst, const void* src, std::size_t bytes) {
    return event_of(stream(s).enqueue([=] {
      if (bytes) std::memcpy(dst, src, bytes);
    }), s);
  }
  Stream& stream(StreamId s) { return s == kToHost ? to_host_ : s == kToDevice ? to_device_ : compute_; }

  std::mutex mutex_;
  std::set<void*> owned_;  // this stand-in's device allocations, freed with it
  Stream to_host_, to_device_, compute_;  // last: their threads stop first
};

}  // namespace

std::unique_ptr<DeviceMemory> make_host_device_memory() { return std::make_unique<HostDeviceMemory>(); }

std::unique_ptr<DeviceMemory> make_device_memory(std::string& why) {
  const char* test = std::getenv("ARLAB_TEST_DEVICE");
  if (!test || !*test) return make_cuda_device_memory(why);
  if (std::string_view(test) == "host") return make_host_device_memory();
  throw Error(Error::Code::InvalidArgument,
              std::string("arlab: ARLAB_TEST_DEVICE='") + test + "': the only value is 'host' (the host stand-in of a device, for tests)");
}

}  // namespace arlab::detail

// GradientBucketer (include/arlab/ddp.hpp): buckets of gradients, each all-reduced with
// allreduce_async as soon as it and every bucket before it are complete.
#include <cstdint>
#include <cstring>
#include <exception>
#include <numeric>
#include <utility>
#include <string>

#include "arlab/ddp.hpp"
#include "core/engine.hpp"
#include "ddp/bucket_plan.hpp"

namespace arlab {

namespace {

[[noreturn]] void invalid(const std::string& what) {
  throw Error(Error::Code::InvalidArgument, "arlab::GradientBucketer: " + what);
}

// A bucket's memory: host bytes, or device memory of the communicator's device.
class BucketMemory {
 public:
  BucketMemory() = default;
  BucketMemory(detail::DeviceMemory* device, std::size_t bytes) : device_(device) {
    if (!device_) {
      host_.assign(bytes, std::byte{0});
      return;
    }
    if (bytes == 0) return;
    data_ = device_->alloc_device(bytes);
    const std::vector<std::byte> zeros(bytes, std::byte{0});  // as the host buckets start
    device_->to_device(data_, zeros.data(), bytes);
    device_->synchronize();
  }
  BucketMemory(BucketMemory&& o) noexcept
      : device_(o.device_), data_(std::exchange(o.data_, nullptr)), host_(std::move(o.host_)) {}
  BucketMemory& operator=(BucketMemory&& o) noexcept {
    if (this != &o) {
      release();
      device_ = o.device_;
      data_ = std::exchange(o.data_, nullptr);
      host_ = std::move(o.host_);
    }
    return *this;
  }
  ~BucketMemory() { release(); }
  std::byte* data() { return device_ ? static_cast<std::byte*>(data_) : host_.data(); }

 private:
  void release() noexcept {
    if (device_ && data_) device_->free_device(data_);
    data_ = nullptr;
  }
  detail::DeviceMemory* device_ = nullptr;
  void* data_ = nullptr;
  std::vector<std::byte> host_;
};

// The communicator's device when the buckets belong on it (the gradients are device memory,
// or there are none of their own and options.on_device), else nullptr: the host.
detail::DeviceMemory* device_side(detail::Engine& engine, const std::vector<Gradient>& gradients,
                                  const BucketOptions& options) {
  constexpr std::size_t none = static_cast<std::size_t>(-1);
  std::size_t first_device = none, first_host = none;
  detail::DeviceMemory* device = engine.device();  // nullptr without one: every pointer is host memory
  for (std::size_t i = 0; i < gradients.size(); ++i) {
    if (!gradients[i].data || gradients[i].count == 0) continue;
    const bool on = device && device->classify(gradients[i].data) != detail::DeviceMemory::Kind::Host;
    std::size_t& first = on ? first_device : first_host;
    if (first == none) first = i;
  }
  if (first_device != none && first_host != none)
    invalid("gradient " + std::to_string(first_device) + " is device memory and gradient " +
            std::to_string(first_host) + " host memory; a bucketer's gradients must all be on one side");
  if (options.on_device && first_host != none)
    invalid("on_device is set, but gradient " + std::to_string(first_host) + " is host memory");
  if (first_device == none && !options.on_device) return nullptr;
  if (!device)
    throw Error(Error::Code::Unavailable, "arlab::GradientBucketer: on_device needs a CUDA device: " + engine.device_why());
  if (options.hook && !options.hook->takes_device_memory())
    throw Error(Error::Code::Unavailable, "arlab::GradientBucketer: the '" + options.hook->name() +
                                              "' hook does not take device memory (it runs on the CPU); its "
                                              "buckets here would be on " + device->name());
  return device;
}

}  // namespace

struct GradientBucketer::State {
  struct Bucket {
    std::vector<std::size_t> members;  // gradient indices, in the order they lie in it
    std::vector<std::size_t> offsets;  // element offset of each member
    std::size_t count = 0;
    DataType type = DataType::Float32;
    BucketMemory storage;
    std::size_t unmarked = 0;
    bool launched = false;
    Request request;
  };
  struct Place {
    std::size_t bucket = 0, offset = 0;
  };

  Communicator& comm;
  BucketOptions options;
  detail::DeviceMemory* device = nullptr;  // set when the gradients (and buckets) are device memory
  std::vector<Gradient> gradients;
  std::vector<Bucket> buckets;
  std::vector<Place> place;              // per gradient
  std::vector<bool> marked;              // this step
  std::vector<std::size_t> ready_order;  // this step's mark_ready calls
  std::vector<std::size_t> last_order;   // the last finished step's
  std::size_t next_launch = 0;           // buckets start in order

  State(Communicator& c, std::vector<Gradient> g, BucketOptions o)
      : comm(c), options(std::move(o)), gradients(std::move(g)) {}

  std::byte* at(std::size_t i) {
    Bucket& b = buckets[place[i].bucket];
    return b.storage.data() + place[i].offset * size_of(b.type);
  }

  // Lays the buckets out for `order`, keeping what the bucket memory held (views move).
  void layout(const std::vector<std::size_t>& order) {
    std::vector<detail::GradientShape> shapes;
    for (const Gradient& g : gradients) shapes.push_back({g.count, g.type});
    std::vector<Bucket> old = std::move(buckets);
    std::vector<Place> old_place = place;
    buckets.clear();
    place.assign(gradients.size(), {});
    for (auto& members : detail::assign_buckets(shapes, order, options.first_bucket_bytes, options.bucket_cap_bytes)) {
      Bucket b;
      b.type = gradients[members.front()].type;
      for (std::size_t i : members) {
        place[i] = {buckets.size(), b.count};
        b.offsets.push_back(b.count);
        b.count += gradients[i].count;
      }
      b.members = std::move(members);
      b.storage = BucketMemory(device, b.count * size_of(b.type));
      buckets.push_back(std::move(b));
    }
    if (!old.empty() && options.gradient_as_bucket_view) {
      for (std::size_t i = 0; i < gradients.size(); ++i) {
        Bucket& from = old[old_place[i].bucket];
        copy(from.storage.data() + old_place[i].offset * size_of(from.type), at(i),
             gradients[i].count * size_of(gradients[i].type));
      }
      if (device) device->synchronize();  // before the old buckets' memory goes
    }
    start_step();
  }

  void start_step() {
    marked.assign(gradients.size(), false);
    ready_order.clear();
    next_launch = 0;
    for (Bucket& b : buckets) {
      b.unmarked = b.members.size();
      b.launched = false;
    }
    // Buckets with no gradients (none) or only empty ones start when reached, like the others.
  }

  // A copy within the buckets' side: on the device's compute stream (synchronize() to wait),
  // or at once on the host.
  void copy(const void* from, void* to, std::size_t bytes) {
    if (bytes == 0) return;
    if (device)
      device->copy(from, to, bytes);
    else
      std::memcpy(to, from, bytes);
  }

  void launch(std::size_t k) {
    Bucket& b = buckets[k];
    if (device) {
      // The gradients are final once their stream's work is done; then copied in (without
      // views; on the host this was done by mark_ready), and the copies finished before the
      // all-reduce's transfers read the bucket.
      device->wait_for_stream(options.stream);
      if (!options.gradient_as_bucket_view) {
        for (std::size_t m = 0; m < b.members.size(); ++m) {
          const Gradient& g = gradients[b.members[m]];
          copy(g.data, b.storage.data() + b.offsets[m] * size_of(b.type), g.count * size_of(g.type));
        }
        device->synchronize();
      }
    }
    HookPayload payload{b.storage.data(), b.count, b.type, options.op};
    if (options.hook) payload = options.hook->before(k, b.storage.data(), b.count, b.type, options.op, comm.size());
    b.request = comm.allreduce_async(payload.data, payload.data, payload.count, payload.type, payload.op,
                                     options.algorithm);
    b.launched = true;
  }

  void launch_ready() {
    while (next_launch < buckets.size() && buckets[next_launch].unmarked == 0) launch(next_launch++);
  }

  void wait_all_quietly() noexcept {
    for (Bucket& b : buckets) {
      if (!b.launched) continue;
      try {
        b.request.wait();
      } catch (...) {
      }
      b.launched = false;
    }
  }
};

GradientBucketer::GradientBucketer(Communicator& comm, std::vector<Gradient> gradients, BucketOptions options)
    : s_(std::make_unique<State>(comm, std::move(gradients), std::move(options))) {
  for (std::size_t i = 0; i < s_->gradients.size(); ++i) {
    const Gradient& g = s_->gradients[i];
    if (static_cast<unsigned>(g.type) > static_cast<unsigned>(DataType::Float64))
      invalid("gradient " + std::to_string(i) + " has an unknown data type value " +
              std::to_string(static_cast<int>(g.type)));
    if (!g.data && g.count > 0 && !s_->options.gradient_as_bucket_view)
      invalid("gradient " + std::to_string(i) + " has no memory (data is null) and gradient_as_bucket_view is off");
  }
  s_->device = device_side(*comm.engine_, s_->gradients, s_->options);
  // Collective: from here on mark_ready never waits for another rank (Communicator::prepare_async).
  comm.prepare_async(s_->options.algorithm);
  std::vector<std::size_t> order(s_->gradients.size());
  std::iota(order.rbegin(), order.rend(), std::size_t{0});  // backward's order: the last first
  s_->layout(order);
}

GradientBucketer::~GradientBucketer() {
  if (s_) s_->wait_all_quietly();
}

void GradientBucketer::mark_ready(std::size_t i) {
  State& s = *s_;
  if (i >= s.gradients.size())
    invalid("mark_ready(" + std::to_string(i) + "): there are " + std::to_string(s.gradients.size()) + " gradients");
  if (s.marked[i])
    invalid("mark_ready(" + std::to_string(i) + "): gradient " + std::to_string(i) +
            " was already marked ready in this step (finish() ends a step)");
  s.marked[i] = true;
  s.ready_order.push_back(i);
  const Gradient& g = s.gradients[i];
  if (!s.options.gradient_as_bucket_view && !s.device) s.copy(g.data, s.at(i), g.count * size_of(g.type));
  --s.buckets[s.place[i].bucket].unmarked;
  s.launch_ready();
}

void GradientBucketer::finish() {
  State& s = *s_;
  std::string unmarked;
  std::size_t missing = 0;
  for (std::size_t i = 0; i < s.gradients.size(); ++i)
    if (!s.marked[i] && missing++ < 10) unmarked += (unmarked.empty() ? "" : ", ") + std::to_string(i);
  if (missing)
    invalid("finish() with " + std::to_string(missing) + " of " + std::to_string(s.gradients.size()) +
            " gradients not marked ready (" + unmarked + (missing > 10 ? ", ..." : "") +
            "): mark every gradient in every step, on every rank");
  std::exception_ptr failure;
  for (std::size_t k = 0; k < s.buckets.size(); ++k) {
    auto& b = s.buckets[k];
    try {
      b.request.wait();
      if (s.options.hook) s.options.hook->after(k, b.storage.data(), b.count, b.type, s.options.op, s.comm.size());
    } catch (...) {
      if (!failure) failure = std::current_exception();
    }
    b.launched = false;
  }
  if (!failure && !s.options.gradient_as_bucket_view) {
    for (std::size_t i = 0; i < s.gradients.size(); ++i) {
      const Gradient& g = s.gradients[i];
      s.copy(s.at(i), g.data, g.count * size_of(g.type));
    }
    if (s.device) s.device->synchronize();  // the results in place when finish() returns
  }
  s.last_order = s.ready_order;
  s.start_step();
  if (failure) std::rethrow_exception(failure);
}

void GradientBucketer::rebuild() {
  State& s = *s_;
  if (!s.ready_order.empty()) invalid("rebuild() in the middle of a step: call it after finish()");
  if (s.last_order.size() != s.gradients.size()) invalid("rebuild() before any step has finished");
  // Rank 0's order, to every rank: a sum where the other ranks give zeros.
  std::vector<std::int64_t> order(s.gradients.size(), 0);
  if (s.comm.rank() == 0)
    for (std::size_t k = 0; k < order.size(); ++k) order[k] = static_cast<std::int64_t>(s.last_order[k]);
  s.comm.allreduce(order.data(), order.data(), order.size(), DataType::Int64, ReduceOp::Sum, Algorithm::Auto);
  std::vector<std::size_t> agreed(order.begin(), order.end());
  s.layout(agreed);
}

void* GradientBucketer::gradient(std::size_t i) const {
  if (i >= s_->gradients.size()) invalid("gradient(" + std::to_string(i) + "): out of range");
  return s_->options.gradient_as_bucket_view ? s_->at(i) : s_->gradients[i].data;
}

std::size_t GradientBucketer::bucket_count() const { return s_->buckets.size(); }

const std::vector<std::size_t>& GradientBucketer::bucket(std::size_t b) const { return s_->buckets.at(b).members; }

std::size_t GradientBucketer::bucket_bytes(std::size_t b) const {
  const auto& k = s_->buckets.at(b);
  return k.count * size_of(k.type);
}

}  // namespace arlab

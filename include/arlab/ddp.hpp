// Data-parallel gradient synchronisation in buckets, as PyTorch DDP does it.
//
// The gradients of a model are registered once, in the order of the model's parameters.
// They are assigned to buckets in reverse order (the order backward produces them): the first
// bucket holds up to first_bucket_bytes (small, so that communication starts early), the
// others up to bucket_cap_bytes; a gradient larger than a bucket has one of its own, and a
// bucket holds one data type. During backward, mark_ready(i) says gradient i is final; when
// every gradient of a bucket is, the bucket's all-reduce starts at once, asynchronously
// (buckets start in bucket order, so every rank issues them in the same order even when its
// gradients become ready in another). finish() waits for them all and leaves every gradient
// averaged (ReduceOp::Avg by default) across the ranks.
//
//   arlab::GradientBucketer sync(comm, {{w1, n1, arlab::DataType::Float32}, ...});
//   for (step...) {
//     ... backward: after each layer, sync.mark_ready(i) for its gradients ...
//     sync.finish();          // every rank now holds the same averaged gradients
//     if (step == 0) sync.rebuild();  // buckets in the order gradients actually came
//   }
//
// Gradients on a CUDA device (the communicator's, where the build has CUDA) are bucketed in
// device memory: a bucket's gradients are final once the work queued on BucketOptions::stream
// has finished, which the bucketer waits for (on the host) when the bucket is complete, before
// it copies them in (so a device gradient must stay as marked until its bucket has started)
// and starts the bucket's all-reduce; finish() returns with the results in place. The
// communicator's allreduce_async needs MPI initialised with MPI_THREAD_MULTIPLE.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "arlab/arlab.hpp"

namespace arlab {

// One gradient tensor: its memory, element count and type. With
// BucketOptions::gradient_as_bucket_view, `data` may be null: the bucketer's memory holds it.
struct Gradient {
  void* data = nullptr;
  std::size_t count = 0;
  DataType type = DataType::Float32;
};

// What a bucket's all-reduce runs on, as a hook hands it over (CommunicationHook::before).
struct HookPayload {
  void* data = nullptr;  // all-reduced in place
  std::size_t count = 0;
  DataType type = DataType::Float32;
  ReduceOp op = ReduceOp::Sum;
};

// Transforms a bucket before its all-reduce and back after it, as DDP's communication hooks
// do. `bucket` is the bucket's memory (count elements of type); `op` the reduction asked for
// (BucketOptions::op). before() may return the bucket itself or memory of the hook's own,
// kept until after() for the same bucket index; after() leaves the result in `bucket`.
class CommunicationHook {
 public:
  virtual ~CommunicationHook() = default;
  virtual std::string name() const = 0;
  virtual HookPayload before(std::size_t bucket_index, void* bucket, std::size_t count, DataType type,
                             ReduceOp op, int ranks) = 0;
  virtual void after(std::size_t bucket_index, void* bucket, std::size_t count, DataType type, ReduceOp op,
                     int ranks) = 0;
  // Whether before() and after() may be handed device memory (buckets of device gradients).
  // The built-in hooks cast on the CPU: not theirs.
  virtual bool takes_device_memory() const { return false; }
};

// Compression: each float or double bucket is divided by the rank count and cast to half
// (or bfloat16), all-reduced as a sum in that type (half the bytes of float), and cast back,
// as PyTorch's fp16_compress_hook and bf16_compress_hook do. With op Sum the division is left
// out. Accuracy: the 16-bit type's rounding of each rank's contribution and of every partial
// sum (about 3 decimal digits for half, 2 for bfloat16); half overflows past 65504. Buckets of
// other types, or with ops other than Sum and Avg, go through unchanged.
std::unique_ptr<CommunicationHook> make_fp16_compression_hook();
std::unique_ptr<CommunicationHook> make_bf16_compression_hook();

struct BucketOptions {
  std::size_t bucket_cap_bytes = std::size_t{25} << 20;
  std::size_t first_bucket_bytes = std::size_t{1} << 20;
  // Gradients live inside the buckets' memory (gradient(i) says where), so nothing is copied
  // in or out; else each is copied into its bucket when marked ready and back by finish().
  bool gradient_as_bucket_view = false;
  ReduceOp op = ReduceOp::Avg;
  Algorithm algorithm = Algorithm::Auto;
  std::shared_ptr<CommunicationHook> hook;  // none: the bucket itself is all-reduced
  // Device gradients: the stream whose work produces them (nullptr: the legacy default stream).
  cudaStream_t stream = nullptr;
  // Where the buckets live when no gradient has memory of its own (gradient_as_bucket_view with
  // null data): on the communicator's device if true. Otherwise the gradients decide (all on
  // the device, or all on the host), and true with host gradients is an Error.
  bool on_device = false;
};

class GradientBucketer {
 public:
  // Collective (Communicator::prepare_async, so that mark_ready never waits for another
  // rank, whatever collectives of its own the program makes between); checks the gradients (types,
  // counts, null data without gradient_as_bucket_view, host and device gradients mixed:
  // Error(InvalidArgument); device gradients with no device, or with a hook that does not take
  // device memory: Error(Unavailable)). The communicator must outlive the bucketer.
  GradientBucketer(Communicator& comm, std::vector<Gradient> gradients, BucketOptions options = {});
  ~GradientBucketer();  // waits for buckets still in flight (their errors are dropped)
  GradientBucketer(const GradientBucketer&) = delete;
  GradientBucketer& operator=(const GradientBucketer&) = delete;

  // Gradient i is final for this step. Error on an index out of range or one marked twice.
  void mark_ready(std::size_t i);
  // Waits for every bucket, copies results back (without bucket views) and rethrows the first
  // failure. Error when gradients are still unmarked (naming them); the next step starts.
  void finish();
  // Re-buckets in the order the gradients became ready in the last finished step, as rank 0
  // saw it (all ranks then agree). Collective; between steps only.
  void rebuild();

  // Where gradient i lives: the registered pointer, or its place in its bucket with views.
  void* gradient(std::size_t i) const;
  std::size_t bucket_count() const;
  // The gradients of bucket b, in the order they lie in it.
  const std::vector<std::size_t>& bucket(std::size_t b) const;
  std::size_t bucket_bytes(std::size_t b) const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace arlab

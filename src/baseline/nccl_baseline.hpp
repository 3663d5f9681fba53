// The "nccl" algorithm: ncclAllReduce on device buffers, through arlab's API, as the GPU
// baseline. One NCCL communicator per arlab communicator, made on its first nccl call: the
// rank's GPU is its local rank (MPI_COMM_TYPE_SHARED) modulo the devices it sees, and rank 0's
// ncclUniqueId is broadcast over the communicator's MPI_Comm. Every type and op of the API
// maps to NCCL's (Avg is ncclAvg). The call is blocking: it returns once NCCL's stream is done.
//
// Built with ARLAB_HAVE_NCCL (ARLAB_NCCL and nvcc found); otherwise, and without a device,
// make_nccl_baseline throws Error(Unavailable) saying why.
#pragma once

#include <mpi.h>

#include <memory>

#include "arlab/arlab.hpp"

namespace arlab::detail {

class NcclBaseline {
 public:
  virtual ~NcclBaseline() = default;
  // send and recv: device memory (InvalidArgument for host memory). Blocking, on NCCL's own
  // stream; or, with `caller_stream` (a cudaStream_t, nullptr the legacy default stream),
  // enqueued there and returning at once, as NCCL does.
  virtual void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) = 0;
  virtual void allreduce_on(void* caller_stream, const void* send, void* recv, std::size_t count, DataType type,
                            ReduceOp op) = 0;
};

// Collective over `comm` (every rank calls it on its first nccl call).
std::unique_ptr<NcclBaseline> make_nccl_baseline(MPI_Comm comm);

}  // namespace arlab::detail

#include "baseline/nccl_baseline.hpp"

#ifdef ARLAB_HAVE_NCCL

#include <cuda_runtime.h>

#include <string>

#include "baseline/nccl_library.hpp"
#include "kernels/kernels.hpp"

namespace arlab::detail {
namespace {

[[noreturn]] void fail(Error::Code code, const std::string& what) { throw Error(code, "arlab: nccl baseline: " + what); }

void check(ncclResult_t r, const char* what) {
  if (r != ncclSuccess) fail(Error::Code::Transport, std::string(what) + ": " + nccl_library().GetErrorString(r));
}
void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) fail(Error::Code::Internal, std::string(what) + ": " + cudaGetErrorString(e));
}

ncclDataType_t nccl_type(DataType t) {
  switch (t) {
    case DataType::Int8: return ncclInt8;
    case DataType::UInt8: return ncclUint8;
    case DataType::Int32: return ncclInt32;
    case DataType::UInt32: return ncclUint32;
    case DataType::Int64: return ncclInt64;
    case DataType::UInt64: return ncclUint64;
    case DataType::Float16: return ncclFloat16;
    case DataType::BFloat16: return ncclBfloat16;
    case DataType::Float32: return ncclFloat32;
    case DataType::Float64: return ncclFloat64;
  }
  fail(Error::Code::InvalidArgument, "unknown data type");
}

ncclRedOp_t nccl_op(ReduceOp o) {
  switch (o) {
    case ReduceOp::Sum: return ncclSum;
    case ReduceOp::Prod: return ncclProd;
    case ReduceOp::Min: return ncclMin;
    case ReduceOp::Max: return ncclMax;
    case ReduceOp::Avg: return ncclAvg;
  }
  fail(Error::Code::InvalidArgument, "unknown reduce op");
}

bool on_device(const void* p) {
  cudaPointerAttributes a{};
  if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
    cudaGetLastError();
    return false;
  }
  return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

class Nccl final : public NcclBaseline {
 public:
  explicit Nccl(MPI_Comm comm) : nccl_(nccl_library()) {
    int rank = 0, size = 1, local_rank = 0, devices = 0;
    MPI_Comm_rank(comm, &rank);
    MPI_Comm_size(comm, &size);
    MPI_Comm local;
    MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
    MPI_Comm_rank(local, &local_rank);
    MPI_Comm_free(&local);
    check(cudaGetDeviceCount(&devices), "cudaGetDeviceCount");
    device_ = local_rank % devices;
    check(cudaSetDevice(device_), "cudaSetDevice");
    ncclUniqueId id{};
    if (rank == 0) check(nccl_.GetUniqueId(&id), "ncclGetUniqueId");
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, comm);
    check(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreateWithFlags");
    check(nccl_.CommInitRank(&comm_, size, id, rank), "ncclCommInitRank");
  }
  ~Nccl() override {
    if (comm_) nccl_.CommDestroy(comm_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  void allreduce(const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) override {
    enqueue(stream_, send, recv, count, type, op);
    check(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }
  void allreduce_on(void* caller_stream, const void* send, void* recv, std::size_t count, DataType type,
                    ReduceOp op) override {
    enqueue(static_cast<cudaStream_t>(caller_stream), send, recv, count, type, op);
  }

 private:
  void enqueue(cudaStream_t stream, const void* send, void* recv, std::size_t count, DataType type, ReduceOp op) {
    if (!on_device(send) || !on_device(recv))
      fail(Error::Code::InvalidArgument, "the send and recv buffers must be device memory (cudaMalloc)");
    check(cudaSetDevice(device_), "cudaSetDevice");
    if (count != 0)
      check(nccl_.AllReduce(send, recv, count, nccl_type(type), nccl_op(op), comm_, stream), "ncclAllReduce");
  }

  const NcclLibrary& nccl_;
  int device_ = 0;
  cudaStream_t stream_ = nullptr;
  ncclComm_t comm_ = nullptr;
};

}  // namespace

std::unique_ptr<NcclBaseline> make_nccl_baseline(MPI_Comm comm) {
  // Every rank learns whether every rank has a device and could load NCCL (nccl_library.hpp,
  // tried only with a device), so that none waits in NCCL's setup alone.
  std::string why;
  int mine[2] = {kernels::device_count() > 0, 0}, all[2] = {0, 0};
  if (mine[0]) {
    try {
      nccl_library();
      mine[1] = 1;
    } catch (const Error& e) {
      why = e.what();
    }
  }
  MPI_Allreduce(mine, all, 2, MPI_INT, MPI_MIN, comm);
  if (!all[0])
    fail(Error::Code::Unavailable, mine[0] ? "another rank has no usable CUDA device"
                                           : "it needs a CUDA device per rank, and this rank has none: " +
                                                 kernels::unavailable_reason());
  if (!all[1]) throw Error(Error::Code::Unavailable, mine[1] ? "arlab: nccl baseline: another rank could not load NCCL" : why);
  return std::make_unique<Nccl>(comm);
}

}  // namespace arlab::detail

#else

namespace arlab::detail {

std::unique_ptr<NcclBaseline> make_nccl_baseline(MPI_Comm) {
  throw Error(Error::Code::Unavailable,
              "arlab: nccl baseline: this arlab was built without NCCL (ARLAB_NCCL=OFF, or no nvcc or nccl.h at build "
              "time)");
}

}  // namespace arlab::detail

#endif

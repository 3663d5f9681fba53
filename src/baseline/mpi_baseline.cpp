#include "baseline/mpi_baseline.hpp"

#include <climits>
#include <mutex>
#include <string>

#include "reduce/reducer.hpp"

namespace arlab::detail {

namespace {

// Distinct committed handles for the two 16-bit float types, and the user ops that know them.
struct HalfTypes {
  MPI_Datatype half = MPI_DATATYPE_NULL, bf16 = MPI_DATATYPE_NULL;
  MPI_Op ops[4] = {MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL, MPI_OP_NULL};  // sum, prod, min, max
};
HalfTypes g_half;

template <ReduceOp Op>
void user_op(void* in, void* inout, int* len, MPI_Datatype* type) {
  const DataType t = *type == g_half.half ? DataType::Float16 : DataType::BFloat16;
  cpu_reduce(Op, t, in, inout, inout, static_cast<std::size_t>(*len));
}

const HalfTypes& half_types() {
  static std::once_flag once;
  std::call_once(once, [] {
    MPI_Type_contiguous(1, MPI_UINT16_T, &g_half.half);
    MPI_Type_contiguous(1, MPI_UINT16_T, &g_half.bf16);
    MPI_Type_commit(&g_half.half);
    MPI_Type_commit(&g_half.bf16);
    MPI_Op_create(&user_op<ReduceOp::Sum>, 1, &g_half.ops[0]);
    MPI_Op_create(&user_op<ReduceOp::Prod>, 1, &g_half.ops[1]);
    MPI_Op_create(&user_op<ReduceOp::Min>, 1, &g_half.ops[2]);
    MPI_Op_create(&user_op<ReduceOp::Max>, 1, &g_half.ops[3]);
  });
  return g_half;
}

MPI_Datatype mpi_type(DataType t) {
  switch (t) {
    case DataType::Int8: return MPI_INT8_T;
    case DataType::UInt8: return MPI_UINT8_T;
    case DataType::Int32: return MPI_INT32_T;
    case DataType::UInt32: return MPI_UINT32_T;
    case DataType::Int64: return MPI_INT64_T;
    case DataType::UInt64: return MPI_UINT64_T;
    case DataType::Float16: return half_types().half;
    case DataType::BFloat16: return half_types().bf16;
    case DataType::Float32: return MPI_FLOAT;
    case DataType::Float64: return MPI_DOUBLE;
  }
  return MPI_DATATYPE_NULL;
}

MPI_Op mpi_op(ReduceOp op, DataType t) {
  const int k = op == ReduceOp::Prod ? 1 : op == ReduceOp::Min ? 2 : op == ReduceOp::Max ? 3 : 0;
  if (t == DataType::Float16 || t == DataType::BFloat16) return half_types().ops[k];
  const MPI_Op builtin[4] = {MPI_SUM, MPI_PROD, MPI_MIN, MPI_MAX};
  return builtin[k];
}

}  // namespace

void mpi_allreduce(MPI_Comm comm, const void* send, void* recv, std::size_t count, DataType type,
                   ReduceOp op) {
  const MPI_Datatype dt = mpi_type(type);
  const MPI_Op mop = mpi_op(op, type);
  const std::size_t elem = size_of(type);
  // MPI counts are int; the reduction is elementwise, so larger calls go in pieces.
  for (std::size_t done = 0; done < count;) {
    const std::size_t n = std::min<std::size_t>(count - done, INT_MAX);
    const void* s = send == recv ? MPI_IN_PLACE : static_cast<const char*>(send) + done * elem;
    const int rc = MPI_Allreduce(s, static_cast<char*>(recv) + done * elem, static_cast<int>(n), dt, mop, comm);
    if (rc != MPI_SUCCESS) {
      char text[MPI_MAX_ERROR_STRING];
      int len = 0;
      MPI_Error_string(rc, text, &len);
      throw Error(Error::Code::Transport, "arlab: MPI_Allreduce failed: " + std::string(text, len));
    }
    done += n;
  }
  if (op == ReduceOp::Avg) {
    int size = 1;
    MPI_Comm_size(comm, &size);
    cpu_divide(type, recv, count, size);
  }
}

}  // namespace arlab::detail

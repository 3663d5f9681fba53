// The "mpi" algorithm: MPI_Allreduce itself, through arlab's API, as the baseline.
// Half and bfloat16 (not MPI types) travel as 16-bit types with arlab's reduction as a
// user-defined MPI_Op; Avg is MPI_SUM followed by a division.
#pragma once

#include <mpi.h>

#include "arlab/arlab.hpp"

namespace arlab::detail {

void mpi_allreduce(MPI_Comm comm, const void* send, void* recv, std::size_t count, DataType type,
                   ReduceOp op);

}  // namespace arlab::detail

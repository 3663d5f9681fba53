// Test helpers under mpirun: this rank, and agreement of every rank on a result.
#pragma once

#include <mpi.h>

namespace arlab::test {

inline int world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

// True on every rank when `ok` is true on every rank.
inline bool everywhere(bool ok) {
  int mine = ok, all = 0;
  MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  return all;
}

}  // namespace arlab::test

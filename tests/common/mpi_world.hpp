// Test helpers under mpirun: this rank, agreement of every rank on a result, and the
// transports this build has.
#pragma once

#include <mpi.h>

#include <vector>

#include "arlab/arlab.hpp"

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

// The transports this build has, in a fixed order (every rank the same).
inline std::vector<TransportKind> available_transports() {
  std::vector<TransportKind> out;
  for (TransportKind t : {TransportKind::Mpi, TransportKind::Ucx, TransportKind::UcxRma})
    if (transport_available(t)) out.push_back(t);
  return out;
}

// Default options but the transport.
inline Options options_over(TransportKind t) {
  Options o;
  o.transport = t;
  return o;
}

}  // namespace arlab::test

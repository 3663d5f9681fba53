// Point-to-point over MPI_Isend/MPI_Irecv on a communicator private to arlab.
#pragma once

#include <mpi.h>

#include <map>
#include <memory>

#include "transport/transport.hpp"

namespace arlab::detail {

// `comm` must be arlab's own duplicate; the transport does not free it. `timeout_s` bounds
// the shutdown of a transport whose call failed.
std::unique_ptr<Transport> make_mpi_transport(MPI_Comm comm, double timeout_s);

}  // namespace arlab::detail

// The UCX transports: "ucx" (tag matching, two-sided) and "ucx-rma" (one-sided puts into
// registered memory, the RDMA path). Built when UCX is found (ARLAB_UCX); see
// ucx_tag_transport.cpp and ucx_rma_transport.cpp for how each moves a message.
#pragma once

#include <mpi.h>

#include <memory>
#include <optional>

#include "transport/registration_cache.hpp"
#include "transport/transport.hpp"

namespace arlab::detail {

// Collective over `comm`: every rank exchanges its UCX worker address. `timeout_s` bounds the
// collective part of shutdown.
std::unique_ptr<Transport> make_ucx_transport(MPI_Comm comm, double timeout_s);
std::unique_ptr<Transport> make_ucx_rma_transport(MPI_Comm comm, double timeout_s);

// The registration cache's counters of a ucx-rma transport; nullopt for other transports.
std::optional<RegistrationStats> registration_stats(const Transport& transport);

}  // namespace arlab::detail

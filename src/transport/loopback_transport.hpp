// Loopback: ranks are threads of one process and messages are memcpy between them. Sends
// complete only when a receive takes them (no buffering), so schedules that would need
// buffering to finish deadlock here too. For many-rank tests without MPI.
#pragma once

#include <memory>

#include "transport/transport.hpp"

namespace arlab::detail {

class LoopbackWorld;  // shared by the threads of one test

std::shared_ptr<LoopbackWorld> make_loopback_world(int nranks);
std::unique_ptr<Transport> make_loopback_transport(std::shared_ptr<LoopbackWorld> world, int rank);
// The k-th world beside `world` (k >= 1), over the same ranks: its messages never meet
// `world`'s. Every rank that asks for k gets the same one.
std::shared_ptr<LoopbackWorld> loopback_sibling(const std::shared_ptr<LoopbackWorld>& world, int k);

}  // namespace arlab::detail

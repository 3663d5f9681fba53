// arlab-bench --gradients MODEL: the per-step time to synchronise a model's gradients in
// four ways, side by side (docs/ddp.md):
//   per-tensor     one blocking all-reduce per gradient tensor, in backward's order
//   flat           one all-reduce of every gradient copied into one buffer (the bound; the
//                  copies are not timed)
//   bucketed       GradientBucketer with DDP's defaults (25 MiB buckets, a 1 MiB first one,
//                  gradients as bucket views), every gradient marked ready in backward's order
//   bucketed-fp16  the same with the fp16 compression hook
// All with Algorithm::Auto and ReduceOp::Avg on float gradients; one table line and one JSON
// record per transport and mode.
#pragma once

#include <mpi.h>

#include <string>

#include "options.hpp"

namespace arlab::bench {

// Runs on every rank of `comm`; rank 0 prints. Returns the bench's exit status.
int run_gradients(const BenchOptions& options, MPI_Comm comm, const std::string& command);

}  // namespace arlab::bench

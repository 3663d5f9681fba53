// arlab-bench: page-aligned buffers, and what the header says about the machine.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdlib>
#include <memory>

namespace arlab::bench {

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<unsigned char[], FreeDeleter>;

// Page-aligned, every page touched (zeroed) before anything is timed.
Buffer allocate(std::size_t bytes);

// The best of five memcpy of 64 MiB, in GB/s of bytes copied (local).
double memcpy_bandwidth_GBps();

// Distinct shared-memory nodes among the ranks of `world` (collective).
int count_hosts(MPI_Comm world);

}  // namespace arlab::bench

#include "buffers.hpp"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "agree.hpp"

namespace arlab::bench {

Buffer allocate(std::size_t bytes) {
  constexpr std::size_t kAlign = 4096;
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
  auto* p = static_cast<unsigned char*>(std::aligned_alloc(kAlign, rounded));
  if (p == nullptr)
    throw Error(Error::Code::InvalidArgument,
                "cannot allocate " + std::to_string(bytes) + " bytes (" + std::strerror(errno) + ")");
  std::memset(p, 0, rounded);  // touch every page before anything is timed
  return Buffer(p);
}

double memcpy_bandwidth_GBps() {
  constexpr std::size_t kBytes = std::size_t{64} << 20;
  Buffer src, dst;
  try {
    src = allocate(kBytes), dst = allocate(kBytes);
  } catch (const Error&) {
    return 0;  // unknown
  }
  std::memset(src.get(), 1, kBytes);
  double best = 0;
  for (int i = 0; i < 5; ++i) {
    src[static_cast<std::size_t>(i)] = static_cast<unsigned char>(i);
    const double t0 = MPI_Wtime();
    std::memcpy(dst.get(), src.get(), kBytes);
    const double t1 = MPI_Wtime();
    if (static_cast<volatile unsigned char*>(dst.get())[i] != static_cast<unsigned char>(i)) return 0;
    if (t1 > t0) best = std::max(best, static_cast<double>(kBytes) / (t1 - t0) / 1e9);
  }
  return best;
}

int count_hosts(MPI_Comm world) {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_Comm_split_type(world, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
  int leader = comm_rank(node) == 0 ? 1 : 0, hosts = 0;
  MPI_Comm_free(&node);
  MPI_Allreduce(&leader, &hosts, 1, MPI_INT, MPI_SUM, world);
  return hosts;
}

}  // namespace arlab::bench

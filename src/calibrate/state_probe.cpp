#include "calibrate/state_probe.hpp"

#include <algorithm>
#include <array>

#include "calibrate/measure.hpp"

namespace arlab::calib {

double state_probe_us(MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  if (size < 2) return 0;
  constexpr int kBlocks = 7, kPerBlock = 100;
  double fastest = 0;
  MPI_Barrier(comm);
  if (rank < 2) {
    const int peer = 1 - rank;
    char out[8] = {}, in[8] = {};
    std::array<double, kBlocks> per;
    MPI_Sendrecv(out, 8, MPI_BYTE, peer, kStateProbeTag, in, 8, MPI_BYTE, peer, kStateProbeTag, comm,
                 MPI_STATUS_IGNORE);  // both are here
    for (double& t : per) {
      const double t0 = MPI_Wtime();
      for (int i = 0; i < kPerBlock; ++i)
        MPI_Sendrecv(out, 8, MPI_BYTE, peer, kStateProbeTag, in, 8, MPI_BYTE, peer, kStateProbeTag, comm,
                     MPI_STATUS_IGNORE);
      t = (MPI_Wtime() - t0) / kPerBlock * 1e6;
    }
    fastest = *std::min_element(per.begin(), per.end());
  }
  MPI_Request req;
  MPI_Ibcast(&fastest, 1, MPI_DOUBLE, 0, comm, &req);
  wait_leaving_the_core(req);
  return fastest;
}

bool other_state(double probe_us, double reference_us) {
  if (probe_us <= 0 || reference_us <= 0) return false;
  const double ratio = probe_us / reference_us;
  return ratio > kOtherStateRatio || ratio < 1 / kOtherStateRatio;
}

}  // namespace arlab::calib

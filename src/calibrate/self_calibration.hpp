// A communicator's machine for Auto when no topology file is given: this machine's calibration,
// read from the cache (machine_cache.hpp) or measured once by every rank together and cached,
// or the built-in description (ARLAB_CALIBRATE=0). Rank 0 reads or writes the cache and
// broadcasts the text, so every rank walks the same machine and never disagrees on a pick.
#pragma once

#include <mpi.h>

#include <functional>
#include <string>

#include "arlab/arlab.hpp"
#include "calibrate/calibration.hpp"
#include "model/machine.hpp"

namespace arlab::calib {

struct FoundMachine {
  detail::Machine machine;
  // Where it came from, for Plan::machine and the bench's header: "'vm', calibrated now over
  // mpi in 2.9 s and cached in /root/.cache/arlab/vm-mpi-2x1.yaml", "'vm' from the cache
  // /root/.cache/arlab/vm-mpi-2x1.yaml (written 2026-12-03 19:02 UTC)", "the built-in
  // description (ARLAB_CALIBRATE=0)".
  std::string source;
};

// Collective over `comm` (every rank calls it, in the same order as the communicator's other
// collectives). `options` resolved, without a topology. First every rank waits, at most the
// timeout, for the others to arrive (an Error(Timeout) says that the first Auto call or plan()
// is collective); then the placement (ranks per node, from MPI's shared-memory split), the
// cache, and if need be the measurement. Problems with the cache are warnings (at
// LogLevel::Warn) and lead to a new measurement; a measurement that fits an unusable machine
// is a warning too and is made once more; a second unusable one leaves the built-in
// description for this run (nothing cached); the measurement's own failures throw.
// `meeting` is the communicator's own: the wait for the other ranks runs on meeting.comm, a
// communicator that carries nothing else, and should it time out it stays posted there and
// the next call waits on it again (finish_meeting ends it at the communicator's end).
struct Meeting {
  MPI_Comm comm = MPI_COMM_NULL;  // a duplicate of the communicator's, for this barrier alone
  MPI_Request request = MPI_REQUEST_NULL;
  bool met = false;  // every rank has arrived
};
FoundMachine find_machine(MPI_Comm comm, const Options& options, Meeting& meeting);

// At a communicator's end: frees meeting.comm, unless this rank's wait timed out and the
// others never came (they never made their first Auto call). Its barrier then stays posted
// (no call can take back a collective) and the communicator allocated: waiting at the end
// would cost every communicator's end a barrier, and hang where a peer has died.
void finish_meeting(Meeting& meeting);

// The topology file of a calibration, or "" with `problem` saying why it would not load (a
// non-positive bandwidth, say): the self-calibration then uses the built-in description for
// this run and caches nothing, rather than failing the caller's first Auto call.
std::string usable_topology_yaml(const Calibration& c, const std::string& file_name, std::string& problem);

// Collective: `attempt(last)` on every rank until rank 0's returns a usable topology text (not
// empty) or `attempts` were made (`last`: this one is the final try); rank 0's last text ("" where none was usable; other ranks
// get ""). Rank 0 decides, so every rank measures equally often. A machine too busy while it
// was measured can give times that do not grow with the size (an unusable fit), which a
// second measurement usually does not.
std::string first_usable(MPI_Comm comm, int attempts, const std::function<std::string(bool last)>& attempt);

// The settings of the self-calibration: arlab-calibrate --all-pairs without its comparisons
// (ping-pong, streams), sampled for about 3 s at 2 to 4 ranks.
Settings self_calibration_settings(TransportKind transport, int ranks_per_node, double timeout_s);

}  // namespace arlab::calib

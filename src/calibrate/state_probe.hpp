// The machine's state in one number, so that a measurement can tell whether it ran on the
// machine its model was calibrated on. On a shared virtual machine the same two cores pass
// messages at two speeds, switching within seconds while the CPU's own arithmetic runs at
// one rate: here ranks 0 and 1 exchanged 8 B in 0.16 us and 1 MiB in 120 us in one state,
// 0.40 us and 560 us in the other, within one launch (docs/model.md, "The machine's state").
// A model calibrated in one state is 2.5-4.7x off in the other, whatever its terms.
//
// The probe: ranks 0 and 1 exchange 8 B through plain MPI (MPI_Sendrecv), 7 blocks of 100;
// rank 0's fastest block per exchange, in us (noise within a state only slows a block down).
// About 0.1-0.3 ms. The calibration records it (state_probe_us in the topology file), and
// arlab-bench takes it before each section it times. Where ranks outnumber cores it spreads
// 2x within one state (4 ranks on 2 cores: 0.39-2.58 us in one launch) and tells nothing.
#pragma once

#include <mpi.h>

namespace arlab::calib {

// Collective over `comm` (every rank calls it; ranks other than 0 and 1 wait, sleeping, so
// that they leave the pair's cores alone); every rank returns rank 0's probe. 0 with fewer
// than 2 ranks. Uses point-to-point tag kStateProbeTag on `comm`: pass a communicator that
// carries no other point-to-point message with that tag.
constexpr int kStateProbeTag = 0x5ab;
double state_probe_us(MPI_Comm comm);

// Whether a probe reads the machine in a state other than the reference's: more than
// kOtherStateRatio apart either way. Here one state's probes read 0.15-0.21 us and the other's
// 0.39-0.52 (a standalone MPI program, 240 probes in three launches): 1.4x at most within a
// state, 1.85x at least across. false when either is unknown (0). arlab-bench's JSON header
// carries the ratio (state_ratio) for scripts/validate_model.py.
constexpr double kOtherStateRatio = 1.6;
bool other_state(double probe_us, double reference_us);

}  // namespace arlab::calib

#pragma once
// How long a thread that polls for messages rests between polls, given how long nothing has
// moved. Shared by the blocking path (Executor::run) and the progress thread.
//
// A caller waits: it spins (a short wait costs no wake-up), until nothing has moved for 10 ms;
// then it sleeps a 64th of the wait between polls, at most 200 us. A wait that long means a peer
// is late (computing, or blocked in the kernel); spinning on it keeps a core that the late
// peer, or a kernel thread it waits on, may need: on a VM of 2 cores, a rank whose heap growth
// waited on the kernel's DAMON thread stayed blocked for exactly as long as its peers spun
// (docs/ddp.md, "A stall of the whole job"). The sleep delays the result by at most 1/64 of
// the wait. It stays short because some transports move a long message only while polled
// (UCX over TCP): with naps of up to 1 ms its 8 MiB exchanges between emulated nodes ran at
// 0.111-0.116 GB/s against 0.112-0.129 spinning (0.119-0.120 with 200 us).
//
// No caller waits (the progress thread while the caller computes): from the 64th idle round it
// sleeps an eighth of the wait, 2 to 200 us, so that the computation has the core and the
// thread, waking from a sleep, is scheduled ahead of it.
#include <algorithm>
#include <chrono>

namespace arlab::detail {

inline constexpr double kSpinBeforeSleepS = 0.01;
// A spinning thread reads the clock (for this and for the timeouts) once per this many idle
// rounds: a round is a transport poll, some hundreds of ns to tens of us (MPI's progress
// yields), so the wait is known to within a few ms.
inline constexpr unsigned kIdleRoundsPerClockRead = 256;

inline double idle_nap_s(double waited_s, bool caller_waits) {
  if (!caller_waits) return std::clamp(waited_s / 8, 2e-6, 200e-6);
  if (waited_s < kSpinBeforeSleepS) return 0;
  return std::min(waited_s / 64, 200e-6);
}

// A polling loop's idle stretch, shared by Executor::run and the progress thread: call moved()
// after a round that moved something, idle_round() after one that did not. The stretch starts
// at the `start`-th idle round in a row (where the clock is first read); from then the clock is
// read every kIdleRoundsPerClockRead rounds, or every round while napping or while no caller
// waits (the naps are then long enough that a clock read is nothing beside them).
class IdleWait {
 public:
  using Clock = std::chrono::steady_clock;
  struct Round {
    bool clock_read = false;  // when false, the fields below are not set: spin on
    Clock::time_point now;
    double waited_s = 0;  // since the stretch started
    double nap_s = 0;     // how long to sleep before the next poll (idle_nap_s)
  };

  explicit IdleWait(unsigned start) : start_(start) {}

  void moved() noexcept {
    idle_ = 0;
    napping_ = false;
  }

  Round idle_round(bool caller_waits) {
    Round r;
    ++idle_;
    if (idle_ < start_) return r;
    if (idle_ > start_ && !napping_ && caller_waits && idle_ % kIdleRoundsPerClockRead != 0) return r;
    r.clock_read = true;
    r.now = Clock::now();
    if (idle_ == start_) since_ = r.now;
    r.waited_s = std::chrono::duration<double>(r.now - since_).count();
    r.nap_s = idle_ == start_ ? 0 : idle_nap_s(r.waited_s, caller_waits);
    napping_ = r.nap_s > 0;
    return r;
  }

 private:
  unsigned start_;
  unsigned idle_ = 0;
  bool napping_ = false;
  Clock::time_point since_;
};

}  // namespace arlab::detail

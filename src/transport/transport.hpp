// Transport: non-blocking point-to-point messages between the ranks of one communicator.
// A transport knows nothing of algorithms; the executor drives it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace arlab::detail {

// Whether a transport polled with nothing to do may yield the core (sched_yield) now and then.
// The progress thread clears it while no caller waits: it naps between polls itself, and a
// yield would put it behind the caller's computation for a whole time slice.
inline thread_local bool idle_yield_allowed = true;

// A 32-bit digest of what every rank of a call must agree on.
std::uint32_t call_signature(int algorithm, std::size_t count, int type, int op);

class Transport {
 public:
  using Request = std::int32_t;

  virtual ~Transport() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;

  // Memory that receives of the next run may write into (the output and scratch buffers).
  struct Region {
    void* base;
    std::size_t bytes;
  };
  // Called once before each run of a schedule. Transports that place data directly in the
  // receiver's memory register these regions; tagged transports start a new call number, so
  // that messages of consecutive runs never match each other. `signature` names the call's
  // arguments (algorithm, count, type, op; call_signature()): transports carry as much of it
  // as they can with every message, so that ranks that called with different arguments never
  // exchange data, and end in an Error or a Timeout instead of a silently wrong result.
  virtual void begin_run(std::span<const Region> receive_regions, std::uint32_t signature) {
    (void)receive_regions;
    (void)signature;
  }
  // Called once when a run ends, however it ends (after cancel_all when it failed, also when
  // begin_run threw). A run
  // whose requests all completed may still leave work a peer waits for: a UCX receiver that
  // has its data may still owe the sender the acknowledgement that completes the send. The
  // caller may now stay away for long (host work, a blocking MPI call), so a transport that
  // needs progress for such work hands it to a thread of its own here.
  virtual void end_run() noexcept {}

  // Post a message. Messages between one pair of ranks with one tag match in posting order.
  virtual Request isend(int peer, int tag, const void* buf, std::size_t bytes) = 0;
  virtual Request irecv(int peer, int tag, void* buf, std::size_t bytes) = 0;
  // Make progress and append the requests that completed since the last call to `done`.
  virtual void poll(std::vector<Request>& done) = 0;
  // After a timeout waiting for message `index` from `peer`: what the transport can tell of
  // it, such as a message of that peer for the same step but other arguments. Empty if nothing.
  virtual std::string explain_wait(int peer, int index) {
    (void)peer;
    (void)index;
    return {};
  }

  // After a timeout: the peer this rank was waiting for, which may have died mid-message.
  // Called before cancel_all. A transport that drains what peers sent at shutdown leaves that
  // peer's messages alone until every rank has shown that it is alive.
  virtual void suspect(int peer) { (void)peer; }

  // Abandon every outstanding request (after a failed run, before its end_run); the
  // transport stays usable only as far as the underlying library allows.
  virtual void cancel_all() = 0;
};

}  // namespace arlab::detail

// UcxWorker: what both UCX transports share. One UCP context and one worker per
// communicator; worker addresses are exchanged over the MPI communicator at construction;
// one endpoint per peer, created on first use and kept. A peer that stops answering is found
// by the executor's timeout (see connect() for why no UCX peer error mode is asked for).
//
// Progress between calls: a run holds the worker from begin_run to end_run (enter/leave).
// Between runs a thread of the worker's own progresses it, because a run whose requests all
// completed may leave work that only progress does and that a peer waits for: over shared
// memory, a receiver that has its data may still have to send the rendezvous acknowledgement
// (ATS) that completes the sender's request, queued while the sender's FIFO was full. The
// caller may now block elsewhere (host work, MPI_Allreduce on another communicator) for as
// long as it likes; without this thread the sender would wait for good. The thread wakes
// with a backoff from 50 us to 10 ms and progresses only when no run has ended since its
// last look, so a caller busy with back-to-back calls never meets it, and a caller away is
// covered within 20 ms. Not UCX's event fd: armed, it makes every sender pay a signal. Not
// a shorter backoff: on this project's VMs, 1000 wakeups a second cost 8 B calls 25%; 100
// cost them about 3%.
//
// Shutdown is collective but bounded: flush everything this rank sent, wait (at most the
// timeout) until every rank has flushed, then close endpoints without network traffic and
// release the worker and context.
#pragma once

#include <mpi.h>
#include <ucp/api/ucp.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace arlab::detail {

class UcxWorker {
 public:
  // `features`: UCP_FEATURE_* bits; `request_size`: bytes UCX reserves in each request for us.
  UcxWorker(MPI_Comm comm, std::string transport_name, std::uint64_t features, std::size_t request_size,
            double timeout_s);
  ~UcxWorker();
  UcxWorker(const UcxWorker&) = delete;
  UcxWorker& operator=(const UcxWorker&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  const std::string& name() const { return name_; }
  ucp_context_h context() const { return context_; }
  ucp_worker_h worker() const { return worker_; }
  // An id all ranks of the communicator agree on, distinct among this process's live
  // communicators (mod 256).
  unsigned comm_id() const { return comm_id_; }

  // Both transports name a message by (call, index): the call number advances once per run
  // (16 bits, wrapping); the index is the executor's position on the channel (20 bits).
  static constexpr unsigned kIndexBits = 20, kRankBits = 20;
  unsigned next_call() { return call_ = (call_ + 1) & 0xffff; }
  unsigned call() const { return call_; }
  std::uint64_t checked_index(int index) const;

  ucp_ep_h endpoint(int peer) {
    ucp_ep_h ep = endpoints_[peer];
    return ep ? ep : connect(peer);
  }

  // A run's hold on the worker: enter() in begin_run, leave() in end_run (a no-op when not
  // entered). The first leave() starts the idle-progress thread.
  void enter();
  void leave() noexcept;
  // Stops the idle-progress thread; owners call it first in their destructors, so that no
  // callback runs on another thread while they take their state apart.
  void stop_idle_progress() noexcept;

  // Drives UCX. `idle` says the caller saw nothing complete: after a run of idle polls the
  // thread yields, so oversubscribed ranks let each other run.
  unsigned progress(bool idle);

  // Throws Error(Transport) when an endpoint reported a failed peer.
  void check_peers() const {
    if (failed_peer_ >= 0) throw_failed_peer();
  }

  // Error(Transport) with the UCX status text, naming this rank, the peer and the transport.
  [[noreturn]] void fail(ucs_status_t status, const std::string& what, int peer);

  // After a timeout the peers' state is unknown: shutdown then skips the collective wait.
  void mark_broken() { broken_ = true; }
  // The peer a failed call waited for, or whose request failed (fail() records it): it may
  // have died mid-message. -1: none.
  void suspect(int peer) { suspect_ = peer; }
  int suspected() const { return suspect_; }

  // The collective half of shutdown: flush what this rank sent and wait (bounded by the
  // timeout) for every rank to do the same. Owners call it before releasing remote keys and
  // registrations; the destructor calls it if they did not.
  // `drain`, if given, is called while waiting: it disposes of one message that no receive
  // will claim and says whether it found one. `settled`, if given, says whether the owner's
  // own requests have all finished; quiesce waits for it (bounded) before the last barrier.
  // `drain` is told whether every rank has reached the first barrier (all alive).
  void quiesce(const std::function<bool(bool everyone_here)>& drain = {},
               const std::function<bool()>& settled = {});
  // Progresses until `request` (from a *_nbx call) completes or `limit_s` passes, then frees
  // it; an unfinished request is cancelled first. Errors and nullptr are accepted and ignored.
  // `step` replaces plain progress: it returns whether it found work.
  void wait(ucs_status_ptr_t request, double limit_s, const std::function<bool()>& step = {});
  // Closes every endpoint without network traffic and destroys the worker (the context stays
  // for deregistration); outstanding requests complete (with an error) through their
  // callbacks, so owners call it while those callbacks' state is alive. After a failed call
  // with a peer lost (it never reached the shutdown barrier) the worker is left undestroyed:
  // requests towards that peer can never complete. Idempotent.
  void close();

 private:
  ucp_ep_h connect(int peer);
  bool barrier(const std::function<bool()>& step, double limit_s);
  void idle_progress();
  [[noreturn]] void throw_failed_peer() const;
  static void on_endpoint_error(void* arg, ucp_ep_h ep, ucs_status_t status);

  MPI_Comm comm_;
  MPI_Comm shutdown_comm_ = MPI_COMM_NULL;
  bool barrier_abandoned_ = false;
  std::string name_;
  int rank_ = 0, size_ = 1;
  unsigned comm_id_ = 0;
  double timeout_s_;
  ucp_context_h context_ = nullptr;
  ucp_worker_h worker_ = nullptr;
  std::vector<std::byte> addresses_;   // every rank's worker address, concatenated
  std::vector<std::size_t> address_at_;
  std::vector<ucp_ep_h> endpoints_;
  struct ErrorArg {
    UcxWorker* self;
    int peer;
  };
  std::vector<ErrorArg> error_args_;
  int failed_peer_ = -1;
  ucs_status_t failed_status_ = UCS_OK;
  unsigned idle_polls_ = 0;
  bool broken_ = false;
  int suspect_ = -1;  // suspect(); fail() records its peer
  bool abandoned_ = false;  // close() left the worker to requests towards a lost peer
  bool quiesced_ = false;
  unsigned call_ = 0;

  std::atomic<bool> busy_{false};  // held by a run, or by the idle thread while it progresses
  bool entered_ = false;
  std::atomic<std::uint64_t> runs_{0};  // runs ended: the idle thread's sign of an active caller
  std::thread idle_thread_;
  std::mutex stop_mutex_;
  std::condition_variable stop_cv_;
  bool stop_ = false;
};

}  // namespace arlab::detail

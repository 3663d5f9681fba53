#include "transport/ucx_worker.hpp"

#include <sched.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>

#include "arlab/arlab.hpp"
#include "transport/transport.hpp"

namespace arlab::detail {

namespace {

std::atomic<unsigned> next_comm_id{0};

constexpr unsigned kIdlePollsBeforeYield = 64;
// The idle thread's polling interval doubles from the first to the last while nothing
// happens, and drops back to the first when a poll found work.
constexpr std::chrono::microseconds kIdleFirst{50}, kIdleLast{10000};
constexpr int kIdleBurst = 32;  // progress calls per poll at most, while they find work

}  // namespace

UcxWorker::UcxWorker(MPI_Comm comm, std::string transport_name, std::uint64_t features,
                     std::size_t request_size, double timeout_s)
    : comm_(comm), name_(std::move(transport_name)), timeout_s_(timeout_s) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
  if (size_ > (1 << kRankBits))
    throw Error(Error::Code::Unavailable, "arlab: the " + name_ + " transport supports up to 2^20 ranks");

  ucp_config_t* config = nullptr;
  ucs_status_t st = ucp_config_read(nullptr, nullptr, &config);
  if (st != UCS_OK) fail(st, "ucp_config_read", -1);
  ucp_params_t params{};
  params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_REQUEST_SIZE | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
  params.features = features;
  params.request_size = request_size;
  params.mt_workers_shared = 0;
  st = ucp_init(&params, config, &context_);
  ucp_config_release(config);
  if (st != UCS_OK) fail(st, "ucp_init", -1);

  ucp_worker_params_t wp{};
  wp.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  wp.thread_mode = UCS_THREAD_MODE_SERIALIZED;  // the caller's runs and the idle thread, in turn
  st = ucp_worker_create(context_, &wp, &worker_);
  if (st != UCS_OK) {
    ucp_cleanup(context_);
    fail(st, "ucp_worker_create", -1);
  }

  // Exchange worker addresses: lengths first, then the addresses themselves.
  ucp_address_t* local = nullptr;
  std::size_t local_len = 0;
  st = ucp_worker_get_address(worker_, &local, &local_len);
  if (st != UCS_OK) {
    ucp_worker_destroy(worker_);
    ucp_cleanup(context_);
    fail(st, "ucp_worker_get_address", -1);
  }
  std::vector<int> lens(size_), displs(size_);
  const int my_len = static_cast<int>(local_len);
  MPI_Allgather(&my_len, 1, MPI_INT, lens.data(), 1, MPI_INT, comm_);
  address_at_.resize(size_);
  int total = 0;
  for (int r = 0; r < size_; ++r) {
    displs[r] = total;
    address_at_[r] = static_cast<std::size_t>(total);
    total += lens[r];
  }
  addresses_.resize(static_cast<std::size_t>(total));
  MPI_Allgatherv(local, my_len, MPI_BYTE, addresses_.data(), lens.data(), displs.data(), MPI_BYTE, comm_);
  ucp_worker_release_address(worker_, local);

  unsigned proposed = next_comm_id.load(), agreed = 0;
  MPI_Allreduce(&proposed, &agreed, 1, MPI_UNSIGNED, MPI_MAX, comm_);
  next_comm_id.store(agreed + 1);
  comm_id_ = agreed % 256;

  endpoints_.assign(size_, nullptr);
  error_args_.resize(size_);
  for (int r = 0; r < size_; ++r) error_args_[r] = {this, r};
  // Shutdown's barriers get a communicator of their own: one a late peer never joins stays
  // with MPI, and this one is then never freed (MPI would still progress the barrier on it).
  MPI_Comm_dup(comm_, &shutdown_comm_);
}

ucp_ep_h UcxWorker::connect(int peer) {
  ucp_ep_params_t ep{};
  ep.field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                  UCP_EP_PARAM_FIELD_ERR_HANDLER;
  ep.address = reinterpret_cast<const ucp_address_t*>(addresses_.data() + address_at_[peer]);
  // UCX 1.13's shared-memory transports do not support peer error handling, and asking for
  // it moves everything to tcp; so no error mode is requested. A silent or dead peer is
  // caught by the executor's timeout, which names it; failures UCX reports still arrive
  // through this handler.
  ep.err_mode = UCP_ERR_HANDLING_MODE_NONE;
  ep.err_handler.cb = &UcxWorker::on_endpoint_error;
  ep.err_handler.arg = &error_args_[peer];
  const ucs_status_t st = ucp_ep_create(worker_, &ep, &endpoints_[peer]);
  if (st != UCS_OK) fail(st, "ucp_ep_create to", peer);
  return endpoints_[peer];
}

void UcxWorker::on_endpoint_error(void* arg, ucp_ep_h, ucs_status_t status) {
  auto* e = static_cast<ErrorArg*>(arg);
  if (e->self->failed_peer_ < 0) {
    e->self->failed_peer_ = e->peer;
    e->self->failed_status_ = status;
  }
}

std::uint64_t UcxWorker::checked_index(int index) const {
  if (static_cast<unsigned>(index) >= (1u << kIndexBits))
    throw Error(Error::Code::Internal, "arlab: " + name_ + " message index " + std::to_string(index) +
                                           " exceeds 20 bits; raise ARLAB_CHUNK_BYTES or ARLAB_SEGMENT_BYTES");
  return static_cast<std::uint64_t>(index);
}

unsigned UcxWorker::progress(bool idle) {
  const unsigned n = ucp_worker_progress(worker_);
  if (n || !idle) {
    idle_polls_ = 0;
  } else if (++idle_polls_ >= kIdlePollsBeforeYield) {
    idle_polls_ = 0;
    if (idle_yield_allowed) sched_yield();
  }
  return n;
}

void UcxWorker::enter() {
  // One atomic exchange per run; it spins only while the idle thread progresses, which it
  // does only after this caller was away for a whole interval.
  while (busy_.exchange(true, std::memory_order_acquire)) std::this_thread::yield();
  entered_ = true;
}

void UcxWorker::leave() noexcept {
  if (!entered_) return;
  entered_ = false;
  runs_.store(runs_.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);  // one writer
  busy_.store(false, std::memory_order_release);
  if (!idle_thread_.joinable() && !stop_) {
    try {
      idle_thread_ = std::thread([this] { idle_progress(); });
    } catch (...) {
      // No thread (resource limits): runs still complete; only the work a run leaves
      // behind waits for the next one.
    }
  }
}

void UcxWorker::idle_progress() {
  using std::chrono::microseconds;
  microseconds interval = kIdleFirst;
  std::uint64_t seen = runs_.load(std::memory_order_relaxed);
  std::unique_lock<std::mutex> stop_lock(stop_mutex_);
  while (!stop_cv_.wait_for(stop_lock, interval, [this] { return stop_; })) {
    // A caller that ran since the last look is active and progresses the worker itself:
    // stay out of its way. Only a caller away for a whole interval is covered for.
    const std::uint64_t runs = runs_.load(std::memory_order_relaxed);
    bool found = false;
    if (runs == seen && !busy_.exchange(true, std::memory_order_acquire)) {
      for (int k = 0; k < kIdleBurst && ucp_worker_progress(worker_) != 0; ++k) found = true;
      busy_.store(false, std::memory_order_release);
    }
    seen = runs;
    interval = found ? kIdleFirst : std::min<microseconds>(interval * 2, kIdleLast);
  }
}

void UcxWorker::stop_idle_progress() noexcept {
  {
    std::lock_guard<std::mutex> g(stop_mutex_);
    stop_ = true;
  }
  stop_cv_.notify_all();
  if (idle_thread_.joinable()) idle_thread_.join();
}

void UcxWorker::fail(ucs_status_t status, const std::string& what, int peer) {
  if (peer >= 0) suspect_ = peer;
  throw Error(Error::Code::Transport, "arlab: " + what + (peer >= 0 ? " rank " + std::to_string(peer) : "") +
                                          " failed on rank " + std::to_string(rank_) + " over " + name_ +
                                          ": " + ucs_status_string(status));
}

void UcxWorker::throw_failed_peer() const {
  throw Error(Error::Code::Transport, "arlab: rank " + std::to_string(failed_peer_) + " failed (seen by rank " +
                                          std::to_string(rank_) + " over " + name_ +
                                          "): " + ucs_status_string(failed_status_));
}

// Progresses (through `step`, or plain progress) until `request` completes or `limit_s`
// passes; an unfinished request is then cancelled, so that the worker can be destroyed.
void UcxWorker::wait(ucs_status_ptr_t request, double limit_s, const std::function<bool()>& step) {
  if (request == nullptr || UCS_PTR_IS_ERR(request)) return;
  const auto start = std::chrono::steady_clock::now();
  while (ucp_request_check_status(request) == UCS_INPROGRESS) {
    if (!(step ? step() : ucp_worker_progress(worker_) != 0)) {
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > limit_s) {
        // Cancel, and give the cancellation a moment: a request towards a dead peer may never
        // finish, and freeing it unfinished lets UCX release it if it ever does.
        ucp_request_cancel(worker_, request);
        for (int k = 0; k < 1000 && ucp_request_check_status(request) == UCS_INPROGRESS; ++k)
          ucp_worker_progress(worker_);
        break;
      }
      sched_yield();
    }
  }
  ucp_request_free(request);
}

// An MPI barrier over the shutdown communicator, progressing through `step` while it is
// open; false when it did not complete within `limit_s` (a rank that never comes). The
// request is then left to MPI, which may complete it later, and the communicator is kept.
bool UcxWorker::barrier(const std::function<bool()>& step, double limit_s) {
  MPI_Request barrier = MPI_REQUEST_NULL;
  if (MPI_Ibarrier(shutdown_comm_, &barrier) != MPI_SUCCESS) return false;
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    int done = 0;
    MPI_Test(&barrier, &done, MPI_STATUS_IGNORE);
    if (done) return true;
    if (!step()) sched_yield();
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > limit_s) {
      barrier_abandoned_ = true;
      return false;
    }
  }
}

void UcxWorker::quiesce(const std::function<bool(bool)>& drain, const std::function<bool()>& settled) {
  if (quiesced_) return;
  quiesced_ = true;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized || failed_peer_ >= 0) return;  // no MPI to agree over, or a peer known dead
  bool everyone_here = false;  // the first barrier passed: every rank is alive
  const std::function<bool()> step = [&] {
    const bool drained = drain && drain(everyone_here);
    return ucp_worker_progress(worker_) != 0 || drained;
  };
  // After a failed call a peer may still be inside it, sending: first agree that every rank
  // has stopped starting operations, draining meanwhile. Every rank takes this barrier, failed
  // or not (a rank that never called must meet the others' as many times as they do). A peer
  // may need up to two timeouts to give up (its clock restarts when a rank that gave up first
  // drains its messages); one that never arrives (stopped, or dead unseen) costs that wait,
  // and the rest is skipped.
  if (!barrier(step, 2 * timeout_s_)) return;
  everyone_here = true;
  // Deliver everything sent (peers drain what no receive claims), then wait until every rank
  // has done the same: after that no message is in flight towards this worker, and endpoints
  // close without traffic.
  ucp_request_param_t p{};
  wait(ucp_worker_flush_nbx(worker_, &p), timeout_s_, step);
  // Flush does not wait for a rendezvous send whose receiver has yet to answer; the owner
  // says when its own requests are done (peers drain meanwhile, here or in the barrier).
  const auto start = std::chrono::steady_clock::now();
  while (settled && !settled() &&
         std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < timeout_s_)
    if (!step()) sched_yield();
  barrier(step, timeout_s_);
  // An eager message completes at its sender before it is received: one sent before the first
  // barrier may still sit in this worker's queue. Drain until the worker is quiet.
  if (!drain) return;
  const auto last = std::chrono::steady_clock::now();
  for (unsigned quiet = 0; quiet < 64 && std::chrono::steady_clock::now() - last < std::chrono::milliseconds(500);)
    quiet = step() ? 0 : quiet + 1;
}

void UcxWorker::close() {
  if (!worker_) return;
  for (auto& ep : endpoints_) {
    if (!ep) continue;
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_EP_CLOSE_FLAG_FORCE;
    wait(ucp_ep_close_nbx(ep, &p), 1.0);
    ep = nullptr;
  }
  // After a failed call with a peer that never came to the shutdown barrier (stopped, or dead
  // unseen), a send whose rendezvous it never answered can no longer finish: without an error
  // mode (shared memory, connect()) UCX tracks no such request to purge, and destroying the
  // worker under them would free what they hold and warn of each. The worker and its context
  // are then left as they are: a leak bounded by one communicator's in-flight messages, only
  // on one whose job has lost a rank.
  if (broken_ && (barrier_abandoned_ || failed_peer_ >= 0)) {
    abandoned_ = true;
    worker_ = nullptr;
    return;
  }
  // Destroying the worker purges what is still queued in it and completes those requests
  // through their callbacks.
  ucp_worker_destroy(worker_);
  worker_ = nullptr;
}

UcxWorker::~UcxWorker() {
  stop_idle_progress();
  quiesce();
  close();
  if (!abandoned_) ucp_cleanup(context_);
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && !barrier_abandoned_) MPI_Comm_free(&shutdown_comm_);
}

}  // namespace arlab::detail

// The "ucx" transport: two-sided messages with UCP tag matching (ucp_tag_send_nbx /
// ucp_tag_recv_nbx). UCP matches tags across all senders, so the 64-bit tag carries the
// sender as well as the message's identity:
//
//   bits 63..56  communicator id    (agreed at construction)
//   bits 55..48  call number        (one per run of a schedule, wrapping at 256: no rank
//                                     can finish a call before every rank has begun it, so
//                                     a rank is at most one call ahead of another)
//   bits 47..40  signature          (8 bits of the call's arguments: ranks that disagree
//                                     never match, and time out instead of mixing data)
//   bits 39..20  sending rank       (up to 2^20 ranks)
//   bits 19..0   message index on its channel (the executor's tag)
//
// A receive matches exactly one message, so back-to-back calls and other communicators can
// never be confused with it.
#include "transport/ucx_transports.hpp"

#include <chrono>
#include <cstring>
#include <deque>

#include "arlab/arlab.hpp"
#include "transport/slot_pool.hpp"
#include "transport/ucx_worker.hpp"

namespace arlab::detail {

namespace {

class UcxTagTransport final : public Transport {
 public:
  UcxTagTransport(MPI_Comm comm, double timeout_s)
      : ucx_(comm, "ucx", UCP_FEATURE_TAG, 0, timeout_s) {}
  ~UcxTagTransport() override {
    ucx_.stop_idle_progress();
    if (slots_.active() > 0) cancel_all();  // only after a failed call; then quiesce skips the barrier
    ucx_.quiesce([this](bool everyone_here) { return discard_unexpected(everyone_here); },
                 [this] { return !any_pending(); });
    ucx_.close();  // late callbacks still find refs_ alive
  }

  int rank() const override { return ucx_.rank(); }
  int size() const override { return ucx_.size(); }
  std::string name() const override { return ucx_.name(); }

  void begin_run(std::span<const Region>, std::uint32_t signature) override {
    ucx_.enter();
    ucx_.next_call();
    signature_ = signature & 0xff;
  }

  std::string explain_wait(int peer, int index) override {
    // The same message under any signature: if one waits here, the peer disagrees.
    const ucp_tag_t sig_field = ucp_tag_t{0xff} << 40;
    ucp_tag_recv_info_t info{};
    if (!ucp_tag_probe_nb(ucx_.worker(), tag_of(peer, index), ~sig_field, 0, &info)) return {};
    if ((info.sender_tag & sig_field) == (tag_of(peer, index) & sig_field)) return {};
    return "rank " + std::to_string(peer) + " did send message " + std::to_string(index) +
           ", but for an allreduce with other arguments (count, type, op or algorithm): the ranks disagree";
  }
  void end_run() noexcept override { ucx_.leave(); }

  Request isend(int peer, int tag, const void* buf, std::size_t bytes) override {
    const Request slot = allocate();
    ucp_request_param_t p = params(slot);
    p.cb.send = &UcxTagTransport::on_send;
    expected_[slot] = {peer, bytes};
    const ucs_status_ptr_t r = ucp_tag_send_nbx(ucx_.endpoint(peer), buf, bytes, tag_of(rank(), tag), &p);
    track(slot, r, "ucp_tag_send_nbx to", peer);
    return slot;
  }

  Request irecv(int peer, int tag, void* buf, std::size_t bytes) override {
    const Request slot = allocate();
    ucp_request_param_t p = params(slot);
    // Always complete through the callback: it is where UCX reports the received length.
    p.op_attr_mask |= UCP_OP_ATTR_FLAG_NO_IMM_CMPL;
    p.cb.recv = &UcxTagTransport::on_recv;
    expected_[slot] = {peer, bytes};
    const ucs_status_ptr_t r = ucp_tag_recv_nbx(ucx_.worker(), buf, bytes, tag_of(peer, tag), ~ucp_tag_t{0}, &p);
    track(slot, r, "ucp_tag_recv_nbx from", peer);
    return slot;
  }

  void poll(std::vector<Request>& done) override {
    const std::size_t before = done.size();
    for (Request r : completed_) {
      done.push_back(r);
      release(r);
    }
    completed_.clear();
    ucx_.progress(done.size() == before);
    if (error_.status != UCS_OK) fail_request();
    ucx_.check_peers();
    for (Request r : completed_) {
      done.push_back(r);
      release(r);
    }
    completed_.clear();
  }

  void cancel_all() override {
    // Cancelled receives complete (through their callbacks) with UCS_ERR_CANCELED; sends
    // cannot be recalled and finish or fail when the endpoints close.
    for (std::size_t i = 0; i < pending_.size(); ++i)
      if (pending_[i]) ucp_request_cancel(ucx_.worker(), pending_[i]);
    for (int k = 0; k < 1000 && any_pending(); ++k) ucp_worker_progress(ucx_.worker());
    ucx_.mark_broken();
    for (auto& ref : refs_) ref.live = false;
    completed_.clear();
    slots_.reset();
  }

 private:
  bool any_pending() const {
    for (auto* r : pending_)
      if (r) return true;
    return false;
  }

  void suspect(int peer) override { ucx_.suspect(peer); }

  // Receives and drops one message that arrived for a receive never posted (or cancelled):
  // after a failed call, what peers sent for steps this rank never reached, or under other
  // arguments. Its sender's request then completes, and UCX has nothing to warn of at
  // shutdown. False when there was none. Until every rank is known alive, not the suspect's:
  // receiving the last message of a peer killed while it sent has crashed UCX's rendezvous
  // path (an assertion on the endpoint the message names).
  bool discard_unexpected(bool everyone_here) {
    ucp_tag_recv_info_t info{};
    ucp_tag_message_h m = nullptr;
    const int suspect = ucx_.suspected();
    if (everyone_here || suspect < 0) {
      m = ucp_tag_probe_nb(ucx_.worker(), 0, 0, 1, &info);
    } else {
      const ucp_tag_t sender_field = ((ucp_tag_t{1} << UcxWorker::kRankBits) - 1) << UcxWorker::kIndexBits;
      for (int peer = 0; peer < size() && !m; ++peer)
        if (peer != suspect)
          m = ucp_tag_probe_nb(ucx_.worker(), static_cast<ucp_tag_t>(peer) << UcxWorker::kIndexBits, sender_field, 1,
                               &info);
    }
    if (!m) return false;
    sink_.resize(std::max<std::size_t>(info.length, 1));
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_DATATYPE;
    p.datatype = ucp_dt_make_contig(1);
    ucx_.wait(ucp_tag_msg_recv_nbx(ucx_.worker(), sink_.data(), info.length, m, &p), 1.0);
    return true;
  }

  ucp_tag_t tag_of(int sender, int index) const {
    return (ucp_tag_t{ucx_.comm_id()} << 56) | (ucp_tag_t{ucx_.call() & 0xffu} << 48) | (ucp_tag_t{signature_} << 40) |
           (static_cast<ucp_tag_t>(sender) << UcxWorker::kIndexBits) | ucx_.checked_index(index);
  }

  // The callback finds its slot through user_data, which points at a stable per-slot record
  // (a receive's callback may run inside ucp_tag_recv_nbx, before the request is returned).
  ucp_request_param_t params(Request slot) {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_DATATYPE;
    p.datatype = ucp_dt_make_contig(1);
    p.user_data = &refs_[slot];
    return p;
  }

  // Records the request of `slot`: done at once (nullptr), failed, or pending.
  void track(Request slot, ucs_status_ptr_t r, const char* what, int peer) {
    if (r == nullptr) {
      if (!refs_[slot].called) completed_.push_back(slot);
    } else if (UCS_PTR_IS_ERR(r)) {
      release(slot);
      ucx_.fail(UCS_PTR_STATUS(r), what, peer);
    } else if (refs_[slot].called) {
      ucp_request_free(r);  // the callback already ran
    } else {
      pending_[slot] = r;
    }
  }

  static void on_send(void* request, ucs_status_t status, void* user_data) {
    auto* ref = static_cast<SlotRef*>(user_data);
    ref->self->finish(request, ref->slot, status, "send to", 0, false);
  }
  static void on_recv(void* request, ucs_status_t status, const ucp_tag_recv_info_t* info, void* user_data) {
    auto* ref = static_cast<SlotRef*>(user_data);
    ref->self->finish(request, ref->slot, status, "receive from", info ? info->length : 0, true);
  }

  void finish(void* request, Request slot, ucs_status_t status, const char* what, std::size_t length, bool recv) {
    if (pending_[slot] == request) {
      ucp_request_free(request);
      pending_[slot] = nullptr;
    }  // else: still inside the posting call, which frees the request
    if (!refs_[slot].live) return;  // abandoned by cancel_all
    refs_[slot].called = true;
    if (status != UCS_OK && status != UCS_ERR_CANCELED && error_.status == UCS_OK) error_ = {status, what, slot};
    if (status == UCS_OK && recv) check_length(slot, length);
    completed_.push_back(slot);
  }

  void check_length(Request slot, std::size_t length) {
    if (length != expected_[slot].bytes && error_.status == UCS_OK) error_ = {UCS_ERR_MESSAGE_TRUNCATED, "receive from", slot};
  }

  [[noreturn]] void fail_request() {
    const int peer = error_.slot >= 0 ? expected_[error_.slot].peer : -1;
    const auto e = error_;
    error_ = {};
    ucx_.fail(e.status, std::string("ucx ") + e.what, peer);
  }

  Request allocate() {
    const Request r = slots_.acquire();
    if (r == static_cast<int>(pending_.size())) {
      pending_.resize(pending_.size() * 2 + 16, nullptr);
      expected_.resize(pending_.size());
      while (refs_.size() < pending_.size()) refs_.push_back({this, static_cast<Request>(refs_.size())});
    }
    expected_[r] = {-1, 0};
    refs_[r].live = true;
    refs_[r].called = false;
    return r;
  }

  void release(Request slot) {
    pending_[slot] = nullptr;
    refs_[slot].live = false;
    slots_.release(slot);
  }

  UcxWorker ucx_;
  unsigned signature_ = 0;  // this run's, 8 bits
  std::vector<std::byte> sink_;  // where discard_unexpected puts what it drops
  std::vector<ucs_status_ptr_t> pending_;  // per slot: the UCX request, or null when none
  struct SlotRef {
    UcxTagTransport* self;
    Request slot;
    bool live = false, called = false;
  };
  std::deque<SlotRef> refs_;  // per slot, at stable addresses
  struct Expected {
    int peer;
    std::size_t bytes;
  };
  std::vector<Expected> expected_;
  std::vector<Request> completed_;
  SlotPool slots_;
  struct {
    ucs_status_t status = UCS_OK;
    const char* what = "";
    Request slot = -1;
  } error_;
};

}  // namespace

std::unique_ptr<Transport> make_ucx_transport(MPI_Comm comm, double timeout_s) {
  return std::make_unique<UcxTagTransport>(comm, timeout_s);
}

}  // namespace arlab::detail

// The "ucx-rma" transport, the RDMA path: data is written straight into the receiver's memory
// with one-sided puts (ucp_put_nbx), the way an RDMA write places it over InfiniBand or RoCE.
//
// A put needs the destination's address and remote key, and it may only land once the
// receiver's step says the destination is free. So each message is receiver-driven:
//
//   receiver                                   writer
//   irecv: registers the buffer (cached),
//          takes a flag slot and a token,
//          ---- clear-to-send (active message) --->
//          {call, index, address, bytes, key id,     isend + CTS: put data into address
//           flag address, token, [packed keys]}        fence (the flag lands after the data)
//                                                     put token into the flag slot
//   <------------------ data, then flag -----------
//   poll: flag == token, the data is there           the put completes locally: send done
//
// Packed keys travel once per (registration, peer); the writer caches the unpacked keys by
// registration id and drops them when the receiver retires a registration (its memory was
// unmapped or evicted). Tokens are unique per receiver, so a flag never matches a stale write.
// Over shared memory or tcp, UCX carries the same puts (process_vm_writev or emulation over
// active messages), and this code runs unchanged.
#include <atomic>
#include <cstring>
#include <deque>
#include <unordered_map>

#include "arlab/arlab.hpp"
#include "transport/registration_cache.hpp"
#include "transport/slot_pool.hpp"
#include "transport/ucx_transports.hpp"
#include "transport/ucx_worker.hpp"

namespace arlab::detail {

namespace {

constexpr unsigned kCtsAm = 17, kRetireAm = 18;  // active message ids
constexpr std::uint32_t kFlagSlots = 1 << 16;    // outstanding receives per communicator
constexpr std::size_t kMaxRegistrations = 64;
constexpr std::uint64_t kFlagRegistration = 0;   // registration ids of the cache start at 1

// The clear-to-send message, followed by `nkeys` x {id, length, packed key bytes}.
struct Cts {
  std::uint32_t from;
  std::uint32_t nkeys;
  std::uint64_t key;  // (call << 20) | message index: what the writer's isend is called
  std::uint64_t address;
  std::uint64_t bytes;
  std::uint64_t registration;
  std::uint64_t flag_address;
  std::uint64_t token;
  std::uint32_t signature;  // the receiver's call arguments (call_signature): the writer checks
  std::uint32_t pad;
};

struct Retire {
  std::uint32_t from;
  std::uint32_t pad;
  std::uint64_t registration;
};

class UcxRmaTransport final : public Transport {
 public:
  UcxRmaTransport(MPI_Comm comm, double timeout_s)
      : ucx_(comm, "ucx-rma", UCP_FEATURE_RMA | UCP_FEATURE_AM, sizeof(Request), timeout_s),
        cache_(ucx_.context(), kMaxRegistrations, [this](const Registration& r) { retire(r); }) {
    map_flags();
    set_handler(kCtsAm, &UcxRmaTransport::on_cts);
    set_handler(kRetireAm, &UcxRmaTransport::on_retire);
    flag_sent_to_.assign(size(), false);
  }

  ~UcxRmaTransport() override {
    ucx_.stop_idle_progress();
    closing_ = true;
    ucx_.quiesce();
    for (auto& [k, rkey] : rkeys_) ucp_rkey_destroy(rkey);
    rkeys_.clear();
    ucx_.close();  // late callbacks still find ops_ alive
    cache_.clear();
    ucp_mem_unmap(ucx_.context(), flags_memh_);
  }

  int rank() const override { return ucx_.rank(); }
  int size() const override { return ucx_.size(); }
  std::string name() const override { return ucx_.name(); }

  void begin_run(std::span<const Region> regions, std::uint32_t signature) override {
    ucx_.enter();
    ucx_.next_call();
    signature_ = signature;
    cache_.refresh();
    for (const Region& r : regions)
      if (r.bytes) cache_.get(r.base, r.bytes);
  }
  void end_run() noexcept override { ucx_.leave(); }

  Request isend(int peer, int index, const void* buf, std::size_t bytes) override {
    const Request slot = allocate(Op::Send, peer, bytes);
    ops_[slot].src = buf;
    const std::uint64_t key = channel_key(peer, message_key(index));
    if (auto it = arrived_.find(key); it != arrived_.end()) {
      const Cts cts = it->second.front();
      it->second.pop_front();
      if (it->second.empty()) arrived_.erase(it);
      put(slot, cts);
    } else {
      waiting_sends_[key].push_back(slot);
    }
    return slot;
  }

  Request irecv(int peer, int index, void* buf, std::size_t bytes) override {
    const Request slot = allocate(Op::Recv, peer, bytes);
    Op& op = ops_[slot];
    Registration* reg = cache_.find(buf, bytes);
    if (!reg) reg = &cache_.get(buf, bytes);  // memory outside the announced regions
    Registration& r = *reg;
    op.cts.resize(sizeof(Cts));
    Cts c{};
    c.from = static_cast<std::uint32_t>(rank());
    c.key = message_key(index);
    c.address = reinterpret_cast<std::uintptr_t>(buf);
    c.bytes = bytes;
    c.registration = r.id;
    c.token = ++last_token_;
    c.signature = signature_;
    op.token = c.token;
    // Keys the writer has not seen yet ride along.
    if (!flag_sent_to_[peer]) {
      append_key(op.cts, kFlagRegistration, flags_rkey_);
      flag_sent_to_[peer] = true;
      ++c.nkeys;
    }
    if (r.rkey_sent_to.empty()) r.rkey_sent_to.assign(size(), false);
    if (!r.rkey_sent_to[peer]) {
      append_key(op.cts, r.id, r.packed_rkey);
      r.rkey_sent_to[peer] = true;
      ++c.nkeys;
    }
    op.pending = 2;  // the clear-to-send leaves, the flag arrives
    op.cts_header = c;
    if (free_flags_.empty() && next_flag_ == kFlagSlots) {
      starved_.push_back(slot);  // sent when a flag slot frees
    } else {
      send_cts(slot);
    }
    return slot;
  }

  void poll(std::vector<Request>& done) override {
    const std::size_t before = done.size();
    drain(done);
    ucx_.progress(done.size() == before);
    if (error_.status != UCS_OK) fail_request();
    ucx_.check_peers();
    for (auto& [from, key] : inbox_keys_) unpack_key(from, key);
    inbox_keys_.clear();
    for (const Cts& c : inbox_cts_) {
      const std::uint64_t key = channel_key(static_cast<int>(c.from), c.key);
      if (auto it = waiting_sends_.find(key); it != waiting_sends_.end()) {
        const Request slot = it->second.front();
        it->second.pop_front();
        if (it->second.empty()) waiting_sends_.erase(it);
        put(slot, c);
      } else {
        arrived_[key].push_back(c);
      }
    }
    inbox_cts_.clear();
    for (const Retire& r : inbox_retire_) {
      auto it = rkeys_.find(rkey_key(static_cast<int>(r.from), r.registration));
      if (it != rkeys_.end()) {
        ucp_rkey_destroy(it->second);
        rkeys_.erase(it);
      }
    }
    inbox_retire_.clear();
    // Flags: a receive is complete when its writer's token has landed.
    for (std::size_t k = 0; k < watching_.size();) {
      const Request slot = watching_[k];
      Op& op = ops_[slot];
      if (std::atomic_ref<std::uint64_t>(flags_[op.flag]).load(std::memory_order_acquire) == op.token) {
        free_flags_.push_back(op.flag);
        watching_[k] = watching_.back();
        watching_.pop_back();
        step_done(slot);
        if (!starved_.empty()) {
          const Request next = starved_.front();
          starved_.pop_front();
          send_cts(next);
        }
      } else {
        ++k;
      }
    }
    drain(done);
  }

  void cancel_all() override {
    for (auto& op : ops_) op.live = false;
    waiting_sends_.clear();
    arrived_.clear();
    watching_.clear();
    starved_.clear();
    completed_.clear();
    slots_.reset();
    ucx_.mark_broken();
  }

  RegistrationStats registration_stats() const { return cache_.stats(); }
  bool watches_memory() const { return cache_.watches_memory(); }

 private:
  struct Op {
    enum Kind { Send, Recv } kind = Send;
    bool live = false;
    int peer = -1;
    std::size_t bytes = 0;
    const void* src = nullptr;
    int pending = 0;             // UCX requests or events still to come
    std::uint64_t token = 0;     // send: the value put into the flag; receive: the one awaited
    std::uint32_t flag = 0;
    Cts cts_header{};
    std::vector<std::byte> cts;  // receive: the clear-to-send message as sent
  };

  std::uint64_t message_key(int index) const {
    return (std::uint64_t{ucx_.call()} << UcxWorker::kIndexBits) | ucx_.checked_index(index);
  }
  static std::uint64_t channel_key(int peer, std::uint64_t message) {
    return (static_cast<std::uint64_t>(peer) << 36) | message;
  }
  static std::uint64_t rkey_key(int peer, std::uint64_t registration) {
    return (registration << 20) | static_cast<std::uint64_t>(peer);
  }

  void map_flags() {
    ucp_mem_map_params_t p{};
    p.field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
    // Ordinary memory, like the buffers the data lands in, so that the flag travels by the
    // same UCX lane as the data and the fence orders it after the data.
    flags_storage_.assign(kFlagSlots, 0);
    p.address = flags_storage_.data();
    p.length = kFlagSlots * sizeof(std::uint64_t);
    p.flags = 0;
    ucs_status_t st = ucp_mem_map(ucx_.context(), &p, &flags_memh_);
    if (st != UCS_OK) ucx_.fail(st, "ucp_mem_map of the completion flags", -1);
    ucp_mem_attr_t attr{};
    attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS;
    st = ucp_mem_query(flags_memh_, &attr);
    if (st != UCS_OK) ucx_.fail(st, "ucp_mem_query", -1);
    flags_ = static_cast<std::uint64_t*>(attr.address);
    std::memset(flags_, 0, p.length);
    void* packed = nullptr;
    std::size_t len = 0;
    st = ucp_rkey_pack(ucx_.context(), flags_memh_, &packed, &len);
    if (st != UCS_OK) ucx_.fail(st, "ucp_rkey_pack", -1);
    flags_rkey_.assign(static_cast<std::byte*>(packed), static_cast<std::byte*>(packed) + len);
    ucp_rkey_buffer_release(packed);
  }

  void set_handler(unsigned id, ucp_am_recv_callback_t cb) {
    ucp_am_handler_param_t p{};
    p.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                   UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
    p.id = id;
    p.cb = cb;
    p.arg = this;
    p.flags = UCP_AM_FLAG_WHOLE_MSG;
    const ucs_status_t st = ucp_worker_set_am_recv_handler(ucx_.worker(), &p);
    if (st != UCS_OK) ucx_.fail(st, "ucp_worker_set_am_recv_handler", -1);
  }

  static void append_key(std::vector<std::byte>& out, std::uint64_t id, const std::vector<std::byte>& packed) {
    const std::uint32_t len = static_cast<std::uint32_t>(packed.size());
    const auto at = out.size();
    out.resize(at + sizeof id + sizeof len + len);
    std::memcpy(out.data() + at, &id, sizeof id);
    std::memcpy(out.data() + at + sizeof id, &len, sizeof len);
    std::memcpy(out.data() + at + sizeof id + sizeof len, packed.data(), len);
  }

  // Active-message handlers run inside ucp_worker_progress: they only copy what arrived;
  // poll acts on it after progress returns.
  static ucs_status_t on_cts(void* arg, const void*, std::size_t, void* data, std::size_t length,
                             const ucp_am_recv_param_t*) {
    auto* self = static_cast<UcxRmaTransport*>(arg);
    if (length < sizeof(Cts)) return UCS_OK;
    Cts c;
    std::memcpy(&c, data, sizeof c);
    std::size_t at = sizeof c;
    for (std::uint32_t k = 0; k < c.nkeys && at + 12 <= length; ++k) {
      std::uint64_t id;
      std::uint32_t len;
      std::memcpy(&id, static_cast<std::byte*>(data) + at, sizeof id);
      std::memcpy(&len, static_cast<std::byte*>(data) + at + sizeof id, sizeof len);
      const auto* p = static_cast<std::byte*>(data) + at + 12;
      self->inbox_keys_.push_back({static_cast<int>(c.from), {id, std::vector<std::byte>(p, p + len)}});
      at += 12 + len;
    }
    self->inbox_cts_.push_back(c);
    return UCS_OK;
  }

  static ucs_status_t on_retire(void* arg, const void*, std::size_t, void* data, std::size_t length,
                                const ucp_am_recv_param_t*) {
    if (length >= sizeof(Retire)) {
      Retire r;
      std::memcpy(&r, data, sizeof r);
      static_cast<UcxRmaTransport*>(arg)->inbox_retire_.push_back(r);
    }
    return UCS_OK;
  }

  void unpack_key(int from, const std::pair<std::uint64_t, std::vector<std::byte>>& key) {
    ucp_rkey_h rkey = nullptr;
    const ucs_status_t st = ucp_ep_rkey_unpack(ucx_.endpoint(from), key.second.data(), &rkey);
    if (st != UCS_OK) ucx_.fail(st, "ucp_ep_rkey_unpack of a key from", from);
    auto [it, fresh] = rkeys_.emplace(rkey_key(from, key.first), rkey);
    if (!fresh) {
      ucp_rkey_destroy(it->second);
      it->second = rkey;
    }
  }

  ucp_rkey_h rkey(int peer, std::uint64_t registration) {
    auto it = rkeys_.find(rkey_key(peer, registration));
    if (it == rkeys_.end())
      throw Error(Error::Code::Internal, "arlab: ucx-rma on rank " + std::to_string(rank()) +
                                             " has no remote key " + std::to_string(registration) + " of rank " +
                                             std::to_string(peer));
    return it->second;
  }

  ucp_request_param_t params() {
    ucp_request_param_t p{};
    p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA;
    p.cb.send = &UcxRmaTransport::on_request_done;
    p.user_data = this;
    return p;
  }

  void send_cts(Request slot) {
    Op& op = ops_[slot];
    if (!free_flags_.empty()) {
      op.flag = free_flags_.back();
      free_flags_.pop_back();
    } else {
      op.flag = next_flag_++;
    }
    op.cts_header.flag_address = reinterpret_cast<std::uintptr_t>(flags_ + op.flag);
    std::memcpy(op.cts.data(), &op.cts_header, sizeof(Cts));
    watching_.push_back(slot);
    ucp_request_param_t p = params();
    p.op_attr_mask |= UCP_OP_ATTR_FIELD_FLAGS;
    p.flags = UCP_AM_SEND_FLAG_EAGER;
    track(slot, ucp_am_send_nbx(ucx_.endpoint(op.peer), kCtsAm, nullptr, 0, op.cts.data(), op.cts.size(), &p),
          "clear-to-send to");
  }

  void put(Request slot, const Cts& c) {
    Op& op = ops_[slot];
    if (c.signature != signature_)
      throw Error(Error::Code::InvalidArgument,
                  "arlab: ucx-rma: rank " + std::to_string(op.peer) + " asks rank " + std::to_string(rank()) +
                      " for message " + std::to_string(c.key & ((1u << UcxWorker::kIndexBits) - 1)) +
                      " of an allreduce with other arguments (count, type, op or algorithm): the ranks called "
                      "allreduce with different arguments");
    if (c.bytes != op.bytes)
      throw Error(Error::Code::InvalidArgument,
                  "arlab: ucx-rma message size mismatch: rank " + std::to_string(op.peer) + " expects " +
                      std::to_string(c.bytes) + " bytes, rank " + std::to_string(rank()) + " sends " +
                      std::to_string(op.bytes) + " (the ranks called allreduce with different arguments)");
    ucp_ep_h ep = ucx_.endpoint(op.peer);
    op.token = c.token;
    op.pending = op.bytes ? 2 : 1;
    if (op.bytes) {
      ucp_request_param_t p = params();
      track(slot, ucp_put_nbx(ep, op.src, op.bytes, c.address, rkey(op.peer, c.registration), &p), "ucp_put_nbx to");
      const ucs_status_t st = ucp_worker_fence(ucx_.worker());
      if (st != UCS_OK) ucx_.fail(st, "ucp_worker_fence before the flag to", op.peer);
    }
    ucp_request_param_t p = params();
    track(slot, ucp_put_nbx(ep, &op.token, sizeof op.token, c.flag_address, rkey(op.peer, kFlagRegistration), &p),
          "ucp_put_nbx of the flag to");
  }

  // A UCX request of `slot`: done at once, failed, or pending with the slot in its own space.
  void track(Request slot, ucs_status_ptr_t r, const char* what) {
    if (r == nullptr) {
      step_done(slot);
    } else if (UCS_PTR_IS_ERR(r)) {
      ucx_.fail(UCS_PTR_STATUS(r), what, ops_[slot].peer);
    } else {
      *static_cast<Request*>(r) = slot;
    }
  }

  static void on_request_done(void* request, ucs_status_t status, void* user_data) {
    auto* self = static_cast<UcxRmaTransport*>(user_data);
    const Request slot = *static_cast<Request*>(request);
    ucp_request_free(request);
    if (slot < 0 || static_cast<std::size_t>(slot) >= self->ops_.size() || !self->ops_[slot].live) return;
    if (status != UCS_OK && self->error_.status == UCS_OK) self->error_ = {status, slot};
    self->step_done(slot);
  }

  void step_done(Request slot) {
    if (--ops_[slot].pending == 0) completed_.push_back(slot);
  }

  void drain(std::vector<Request>& done) {
    for (Request r : completed_) {
      done.push_back(r);
      release(r);
    }
    completed_.clear();
  }

  void retire(const Registration& r) {
    if (closing_) return;
    for (int peer = 0; peer < static_cast<int>(r.rkey_sent_to.size()); ++peer) {
      if (!r.rkey_sent_to[peer]) continue;
      auto* msg = new Retire{static_cast<std::uint32_t>(rank()), 0, r.id};
      ucp_request_param_t p{};
      p.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA | UCP_OP_ATTR_FIELD_FLAGS;
      p.flags = UCP_AM_SEND_FLAG_EAGER;
      p.user_data = msg;
      p.cb.send = [](void* request, ucs_status_t, void* data) {
        delete static_cast<Retire*>(data);
        ucp_request_free(request);
      };
      const ucs_status_ptr_t req = ucp_am_send_nbx(ucx_.endpoint(peer), kRetireAm, nullptr, 0, msg, sizeof *msg, &p);
      if (!UCS_PTR_IS_PTR(req)) delete msg;  // done at once, or failed (the peer is gone)
    }
  }

  [[noreturn]] void fail_request() {
    const auto e = error_;
    error_ = {};
    ucx_.fail(e.status, std::string("ucx-rma ") + (ops_[e.slot].kind == Op::Send ? "put to" : "receive from"),
              ops_[e.slot].peer);
  }

  Request allocate(Op::Kind kind, int peer, std::size_t bytes) {
    const Request r = slots_.acquire();
    if (static_cast<std::size_t>(r) == ops_.size()) ops_.emplace_back();  // deque: addresses stay put
    Op& op = ops_[r];
    op.kind = kind;
    op.live = true;
    op.peer = peer;
    op.bytes = bytes;
    op.pending = 1;
    return r;
  }

  void release(Request slot) {
    ops_[slot].live = false;
    slots_.release(slot);
  }

  UcxWorker ucx_;
  RegistrationCache cache_;
  bool closing_ = false;
  std::uint32_t signature_ = 0;  // this run's
  std::uint64_t last_token_ = 0;

  ucp_mem_h flags_memh_ = nullptr;
  std::vector<std::uint64_t> flags_storage_;
  std::uint64_t* flags_ = nullptr;
  std::vector<std::byte> flags_rkey_;
  std::vector<bool> flag_sent_to_;
  std::vector<std::uint32_t> free_flags_;
  std::uint32_t next_flag_ = 0;

  std::deque<Op> ops_;
  std::vector<Request> completed_, watching_;
  std::deque<Request> starved_;  // receives waiting for a flag slot
  SlotPool slots_;

  // (peer, call, index) -> sends, and clear-to-sends that came before their send, each in
  // posting order: messages of one pair with one index match in order (the Transport contract;
  // the staged transport sends a message as several pieces with its index).
  std::unordered_map<std::uint64_t, std::deque<Request>> waiting_sends_;
  std::unordered_map<std::uint64_t, std::deque<Cts>> arrived_;
  std::unordered_map<std::uint64_t, ucp_rkey_h> rkeys_;       // (peer, registration) -> key

  std::vector<Cts> inbox_cts_;
  std::vector<std::pair<int, std::pair<std::uint64_t, std::vector<std::byte>>>> inbox_keys_;
  std::vector<Retire> inbox_retire_;

  struct {
    ucs_status_t status = UCS_OK;
    Request slot = -1;
  } error_;
};

}  // namespace

std::unique_ptr<Transport> make_ucx_rma_transport(MPI_Comm comm, double timeout_s) {
  return std::make_unique<UcxRmaTransport>(comm, timeout_s);
}

std::optional<RegistrationStats> registration_stats(const Transport& transport) {
  if (const auto* t = dynamic_cast<const UcxRmaTransport*>(&transport)) return t->registration_stats();
  return std::nullopt;
}

}  // namespace arlab::detail

#include "transport/loopback_transport.hpp"

#include <atomic>
#include <cstring>
#include <deque>
#include <list>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "arlab/arlab.hpp"

namespace arlab::detail {

namespace {

struct Slot {
  std::atomic<bool> done{false};
};

struct Pending {  // a posted send or receive not yet matched
  int from, to, tag;
  void* buf;
  std::size_t bytes;
  Slot* slot;
};

}  // namespace

class LoopbackWorld {
 public:
  explicit LoopbackWorld(int n) : nranks(n) {}
  const int nranks;

  void post(bool is_send, const Pending& op) {
    std::lock_guard lock(mu_);
    auto& others = is_send ? recvs_ : sends_;
    for (auto it = others.begin(); it != others.end(); ++it)
      if (it->from == op.from && it->to == op.to && it->tag == op.tag) {
        const Pending& send = is_send ? op : *it;
        const Pending& recv = is_send ? *it : op;
        if (send.bytes != recv.bytes)
          throw Error(Error::Code::Transport,
                      "loopback: rank " + std::to_string(op.from) + " sends " +
                          std::to_string(send.bytes) + " bytes but rank " + std::to_string(op.to) +
                          " receives " + std::to_string(recv.bytes));
        std::memcpy(recv.buf, send.buf, send.bytes);
        send.slot->done.store(true, std::memory_order_release);
        recv.slot->done.store(true, std::memory_order_release);
        others.erase(it);
        return;
      }
    (is_send ? sends_ : recvs_).push_back(op);
  }

  std::shared_ptr<LoopbackWorld> sibling(int k) {
    std::lock_guard lock(mu_);
    auto& w = siblings_[k];
    if (!w) w = std::make_shared<LoopbackWorld>(nranks);
    return w;
  }

  void forget(Slot* slot) {
    std::lock_guard lock(mu_);
    sends_.remove_if([&](const Pending& p) { return p.slot == slot; });
    recvs_.remove_if([&](const Pending& p) { return p.slot == slot; });
  }

 private:
  std::mutex mu_;
  std::list<Pending> sends_, recvs_;
  std::map<int, std::shared_ptr<LoopbackWorld>> siblings_;
};

namespace {

class LoopbackTransport final : public Transport {
 public:
  LoopbackTransport(std::shared_ptr<LoopbackWorld> world, int rank)
      : world_(std::move(world)), rank_(rank) {}
  ~LoopbackTransport() override { cancel_all(); }

  int rank() const override { return rank_; }
  int size() const override { return world_->nranks; }
  std::string name() const override { return "loopback"; }

  Request isend(int peer, int tag, const void* buf, std::size_t bytes) override {
    const Request r = allocate();
    world_->post(true, {rank_, peer, tag, const_cast<void*>(buf), bytes, &slots_[r]});
    return r;
  }
  Request irecv(int peer, int tag, void* buf, std::size_t bytes) override {
    const Request r = allocate();
    world_->post(false, {peer, rank_, tag, buf, bytes, &slots_[r]});
    return r;
  }

  void poll(std::vector<Request>& done) override {
    bool any = false;
    for (std::size_t k = 0; k < active_.size();) {
      const Request r = active_[k];
      if (slots_[r].done.load(std::memory_order_acquire)) {
        done.push_back(r);
        free_.push_back(r);
        active_[k] = active_.back();
        active_.pop_back();
        any = true;
      } else {
        ++k;
      }
    }
    if (!any) std::this_thread::yield();  // threads may outnumber cores
  }

  void cancel_all() override {
    for (Request r : active_) world_->forget(&slots_[r]);
    for (Request r : active_) free_.push_back(r);
    active_.clear();
  }

 private:
  Request allocate() {
    Request r;
    if (!free_.empty()) {
      r = free_.back();
      free_.pop_back();
    } else {
      slots_.emplace_back();  // a deque: existing slots never move
      r = static_cast<Request>(slots_.size() - 1);
    }
    slots_[r].done.store(false, std::memory_order_relaxed);
    active_.push_back(r);
    return r;
  }

  std::shared_ptr<LoopbackWorld> world_;
  int rank_;
  std::deque<Slot> slots_;
  std::vector<Request> active_, free_;
};

}  // namespace

std::shared_ptr<LoopbackWorld> make_loopback_world(int nranks) {
  return std::make_shared<LoopbackWorld>(nranks);
}

std::unique_ptr<Transport> make_loopback_transport(std::shared_ptr<LoopbackWorld> world, int rank) {
  return std::make_unique<LoopbackTransport>(std::move(world), rank);
}

std::shared_ptr<LoopbackWorld> loopback_sibling(const std::shared_ptr<LoopbackWorld>& world, int k) {
  return world->sibling(k);
}

}  // namespace arlab::detail

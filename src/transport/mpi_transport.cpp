#include "transport/mpi_transport.hpp"

#include <algorithm>
#include <bit>
#include <climits>
#include <sched.h>
#include <string>

#include "arlab/arlab.hpp"
#include "transport/slot_pool.hpp"

namespace arlab::detail {

namespace {

std::string mpi_error(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, len);
}

class MpiTransport final : public Transport {
 public:
  MpiTransport(MPI_Comm comm, double timeout_s) : comm_(comm), timeout_s_(timeout_s) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
    // Tags: the message index below kIndexBits, as many bits of the call's signature above it
    // as MPI_TAG_UB leaves (11 with Open MPI's 2^31 - 1; none at the standard's minimum 32767,
    // where the index may use every bit).
    int* ub = nullptr;
    int flag = 0;
    MPI_Comm_get_attr(comm_, MPI_TAG_UB, &ub, &flag);
    tag_ub_ = flag && ub ? *ub : 32767;
    const int bits = std::bit_width(static_cast<unsigned>(tag_ub_));  // tags [0, 2^bits) are valid
    signature_bits_ = bits > kIndexBits ? std::min(bits - kIndexBits, 16) : 0;
    // Shutdown's barriers after a failed call get a communicator of their own (see settle).
    MPI_Comm_dup(comm_, &settle_comm_);
  }
  ~MpiTransport() override {
    cancel_all();
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
      settle();  // on every rank, failed or not: the barriers must match
      for (MPI_Request& r : unfinished_sends_)
        if (r != MPI_REQUEST_NULL) MPI_Request_free(&r);
      if (!barrier_abandoned_) MPI_Comm_free(&settle_comm_);
    }
    for (auto& [bytes, type] : large_types_) MPI_Type_free(&type);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "mpi"; }

  void begin_run(std::span<const Region>, std::uint32_t signature) override {
    signature_tag_ = signature_bits_ ? static_cast<int>(signature & ((1u << signature_bits_) - 1)) << kIndexBits : 0;
  }

  std::string explain_wait(int peer, int index) override {
    // A message of that peer waiting here for the same step under another signature: the
    // peer called allreduce with other arguments.
    int flag = 0;
    MPI_Status st;
    if (!signature_bits_ || MPI_Iprobe(peer, MPI_ANY_TAG, comm_, &flag, &st) != MPI_SUCCESS || !flag) return {};
    if ((st.MPI_TAG & ((1 << kIndexBits) - 1)) != index || (st.MPI_TAG & ~((1 << kIndexBits) - 1)) == signature_tag_)
      return {};
    return "rank " + std::to_string(peer) + " did send message " + std::to_string(index) +
           ", but for an allreduce with other arguments (count, type, op or algorithm): the ranks disagree";
  }

  Request isend(int peer, int tag, const void* buf, std::size_t bytes) override {
    const Request slot = allocate();
    auto [type, count] = message_type(bytes);
    check(MPI_Isend(buf, count, type, peer, message_tag(tag), comm_, &reqs_[slot]), "MPI_Isend to", peer);
    return slot;
  }

  Request irecv(int peer, int tag, void* buf, std::size_t bytes) override {
    const Request slot = allocate();
    auto [type, count] = message_type(bytes);
    expect_[slot] = {peer, count, type};
    check(MPI_Irecv(buf, count, type, peer, message_tag(tag), comm_, &reqs_[slot]), "MPI_Irecv from", peer);
    return slot;
  }

  void poll(std::vector<Request>& done) override {
    if (slots_.active() == 0) return;
    int outcount = 0;
    indices_.resize(slots_.high());
    statuses_.resize(slots_.high());
    const int rc = MPI_Testsome(slots_.high(), reqs_.data(), &outcount, indices_.data(), statuses_.data());
    if (rc != MPI_SUCCESS) check(rc, "MPI_Testsome with", -1);
    if (outcount == MPI_UNDEFINED) return;
    for (int k = 0; k < outcount; ++k) {
      const int slot = indices_[k];
      // MPI accepts a shorter message into a longer receive; a collective must not.
      if (expect_[slot].peer >= 0) {
        int got = -1;
        MPI_Get_count(&statuses_[k], expect_[slot].type, &got);
        if (got != expect_[slot].count)
          throw Error(Error::Code::Transport,
                      "arlab: message size mismatch on rank " + std::to_string(rank_) + " over mpi: rank " +
                          std::to_string(expect_[slot].peer) + " sent " +
                          (got == MPI_UNDEFINED ? std::string("a different size") : std::to_string(got)) +
                          " where " + std::to_string(expect_[slot].count) +
                          " were expected (the ranks called allreduce with different arguments)");
      }
      done.push_back(slot);
      release(slot);
    }
  }

  // Receives are cancelled; a send cannot be (Open MPI ignores MPI_Cancel of a send) and is
  // kept until shutdown, where settle() lets it finish: freed unfinished, it would hold its
  // buffer and the communicator for good.
  void cancel_all() override {
    for (int i = 0; i < slots_.high(); ++i) {
      if (reqs_[i] == MPI_REQUEST_NULL) continue;
      if (expect_[i].peer >= 0) {
        MPI_Cancel(&reqs_[i]);
        MPI_Request_free(&reqs_[i]);
      } else {
        unfinished_sends_.push_back(reqs_[i]);
        reqs_[i] = MPI_REQUEST_NULL;
      }
    }
    slots_.reset();
  }

 private:
  static constexpr int kIndexBits = 20;

  // At destruction, for a failed call: peers may still be inside it, and sends of either side
  // may wait for receives that will never be posted. Every rank (failed or not: a rank that
  // never called must match the others' barriers) meets in a barrier (at most 2 x the
  // timeout: a peer's clock restarts when a rank that gave up first drains its messages),
  // receiving and dropping whatever arrives meanwhile; then waits (at most the timeout) for
  // its own sends, still draining, and meets the others again. A barrier a rank never joins
  // is left to MPI with its communicator, which is then never freed.
  void settle() {
    std::vector<std::byte> sink;
    const auto drain = [&] {
      int flag = 0;
      MPI_Status st;
      if (MPI_Iprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm_, &flag, &st) != MPI_SUCCESS || !flag) return false;
      MPI_Count bytes = 0;
      MPI_Get_elements_x(&st, MPI_BYTE, &bytes);
      sink.resize(std::max<std::size_t>(static_cast<std::size_t>(bytes), 1));
      auto [type, count] = message_type(static_cast<std::size_t>(bytes));
      MPI_Recv(sink.data(), count, type, st.MPI_SOURCE, st.MPI_TAG, comm_, MPI_STATUS_IGNORE);
      return true;
    };
    const auto within = [](double limit_s, auto done, auto step) {
      const double start = MPI_Wtime();
      while (!done()) {
        if (MPI_Wtime() - start > limit_s) return false;
        if (!step()) sched_yield();
      }
      return true;
    };
    const auto barrier = [&](double limit_s) {
      MPI_Request b = MPI_REQUEST_NULL;
      if (MPI_Ibarrier(settle_comm_, &b) != MPI_SUCCESS) return false;
      const bool met = within(limit_s, [&] {
        int done = 0;
        MPI_Test(&b, &done, MPI_STATUS_IGNORE);
        return done != 0;
      }, drain);
      if (!met) barrier_abandoned_ = true;
      return met;
    };
    if (!barrier(2 * timeout_s_)) return;
    const auto sends_done = [&] {
      int done = 0;
      MPI_Testall(static_cast<int>(unfinished_sends_.size()), unfinished_sends_.data(), &done, MPI_STATUSES_IGNORE);
      return done != 0;
    };
    if (!unfinished_sends_.empty()) within(timeout_s_, sends_done, drain);
    barrier(timeout_s_);
  }

  int message_tag(int index) const {
    if (signature_bits_ ? index >= (1 << kIndexBits) : index > tag_ub_)
      throw Error(Error::Code::Internal, "arlab: mpi message index " + std::to_string(index) +
                                             " exceeds the tag space; raise ARLAB_CHUNK_BYTES or ARLAB_SEGMENT_BYTES");
    return signature_tag_ | index;
  }

  // Ids stay dense (SlotPool), keeping Testsome short.
  Request allocate() {
    const Request r = slots_.acquire();
    if (r == static_cast<int>(reqs_.size())) {
      reqs_.resize(reqs_.size() * 2 + 16, MPI_REQUEST_NULL);
      expect_.resize(reqs_.size());
    }
    expect_[r] = {};
    return r;
  }

  void release(int slot) {
    reqs_[slot] = MPI_REQUEST_NULL;
    slots_.release(slot);
  }

  // MPI counts are int: messages over 2 GiB travel as one element of a derived type.
  std::pair<MPI_Datatype, int> message_type(std::size_t bytes) {
    if (bytes <= static_cast<std::size_t>(INT_MAX)) return {MPI_BYTE, static_cast<int>(bytes)};
    auto it = large_types_.find(bytes);
    if (it == large_types_.end()) {
      constexpr std::size_t kBlock = std::size_t{1} << 20;
      MPI_Datatype block, type;
      MPI_Type_contiguous(static_cast<int>(kBlock), MPI_BYTE, &block);
      int lens[2] = {static_cast<int>(bytes / kBlock), static_cast<int>(bytes % kBlock)};
      MPI_Aint displs[2] = {0, static_cast<MPI_Aint>(bytes / kBlock * kBlock)};
      MPI_Datatype types[2] = {block, MPI_BYTE};
      MPI_Type_create_struct(2, lens, displs, types, &type);
      MPI_Type_commit(&type);
      MPI_Type_free(&block);
      it = large_types_.emplace(bytes, type).first;
    }
    return {it->second, 1};
  }

  void check(int rc, const char* what, int peer) {
    if (rc == MPI_SUCCESS) return;
    throw Error(Error::Code::Transport, "arlab: " + std::string(what) +
                                            (peer >= 0 ? " rank " + std::to_string(peer) : "") +
                                            " failed on rank " + std::to_string(rank_) + ": " +
                                            mpi_error(rc));
  }

  MPI_Comm comm_;
  double timeout_s_;
  MPI_Comm settle_comm_ = MPI_COMM_NULL;
  bool barrier_abandoned_ = false;
  std::vector<MPI_Request> unfinished_sends_;  // of failed calls, until settle()
  int rank_ = 0, size_ = 1;
  int tag_ub_ = 32767, signature_bits_ = 0, signature_tag_ = 0;
  std::vector<MPI_Request> reqs_;
  std::vector<int> indices_;
  std::vector<MPI_Status> statuses_;
  struct Expected {  // receives only: what the matching send must carry
    int peer = -1;
    int count = 0;
    MPI_Datatype type = MPI_BYTE;
  };
  std::vector<Expected> expect_;
  SlotPool slots_;
  std::map<std::size_t, MPI_Datatype> large_types_;
};

}  // namespace

std::unique_ptr<Transport> make_mpi_transport(MPI_Comm comm, double timeout_s) {
  return std::make_unique<MpiTransport>(comm, timeout_s);
}

}  // namespace arlab::detail

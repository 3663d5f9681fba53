// A transport for device buffers over a transport that only reads and writes host memory
// (Debian's Open MPI and UCX are not CUDA-aware): every message is staged through page-locked
// host memory with the copies of a DeviceMemory (device_memory.hpp), in pieces, so that the
// copies and the wire overlap.
//
//   send:    piece 0: D2H --> isend ------------------>
//            piece 1:         D2H --> isend ---------->       (the to-host stream runs the D2Hs in
//            piece 2:                 D2H --> isend -->        order; each piece goes out as
//                                                              soon as its copy is done)
//   receive: piece 0: irecv --> H2D
//            piece 1: irecv ------> H2D                       (every piece's irecv is posted at
//            piece 2: irecv ----------> H2D                    once; each is copied in as it lands)
//
// A message's pieces share its tag and are posted in order, so they match in order (the
// Transport contract). Receives land in a mirror of the run's receive regions (the output and
// scratch buffers, as begin_run names them) at the same offsets, so a transport that registers
// the receive regions (ucx-rma) registers the mirror; it grows to the largest run and is kept.
// Sends take pieces from a pool that grows to the most pieces in flight and is kept, so no
// send ever waits for staging memory (a bounded pool could deadlock: a piece held by a send
// that waits for a peer's receive the peer posts only after another of our sends).
//
// Completion order is the executor's business: a step that reads a received region starts
// only once the receive's last H2D is done, and a send of a region starts only once the
// reduction that wrote it is done, so no stream waits on another.
#pragma once

#include <memory>
#include <vector>

#include "device/device_memory.hpp"
#include "transport/transport.hpp"

namespace arlab::detail {

class StagedTransport final : public Transport {
 public:
  static constexpr std::size_t kDefaultPieceBytes = std::size_t{512} << 10;

  StagedTransport(Transport& inner, DeviceMemory& memory, std::size_t piece_bytes = kDefaultPieceBytes);
  ~StagedTransport() override;

  int rank() const override { return inner_.rank(); }
  int size() const override { return inner_.size(); }
  std::string name() const override { return inner_.name() + " (staged through host memory)"; }

  void begin_run(std::span<const Region> receive_regions, std::uint32_t signature) override;
  void end_run() noexcept override { inner_.end_run(); }
  Request isend(int peer, int tag, const void* buf, std::size_t bytes) override;
  Request irecv(int peer, int tag, void* buf, std::size_t bytes) override;
  void poll(std::vector<Request>& done) override;
  std::string explain_wait(int peer, int index) override { return inner_.explain_wait(peer, index); }
  void suspect(int peer) override { inner_.suspect(peer); }
  void cancel_all() override;

  // Staging memory held now: the receive mirror and the send pieces (tests check it is reused).
  std::size_t staging_bytes() const;
  // Bytes copied so far, device to host (sends) and host to device (receives): what crosses
  // PCIe because the inner transport cannot touch device memory.
  std::size_t copied_to_host() const { return copied_to_host_; }
  std::size_t copied_to_device() const { return copied_to_device_; }

 private:
  struct Piece {
    std::size_t offset = 0, bytes = 0;
    char* staging = nullptr;  // send: a pooled piece; receive: in the mirror
    Request inner = -1;
    DeviceMemory::Event copy = DeviceMemory::kDone;
    enum class State : std::uint8_t { Copying, OnWire, Landed, Done } state = State::Copying;
  };
  struct Op {
    bool send = false, active = false;
    int peer = 0, tag = 0;
    char* device = nullptr;
    std::vector<Piece> pieces;
    std::size_t posted = 0;  // send: pieces handed to the inner transport, in order
    std::size_t done = 0;
  };

  Request new_op(bool send, int peer, int tag, const void* buf, std::size_t bytes);
  char* mirror_of(const void* device, std::size_t bytes) const;
  char* take_piece();
  bool advance(Op& op);

  Transport& inner_;
  DeviceMemory& memory_;
  std::size_t copied_to_host_ = 0, copied_to_device_ = 0;
  std::size_t piece_bytes_;
  std::vector<Op> ops_;
  std::vector<Request> free_ops_, active_;
  struct InnerRef {
    Request op = -1;
    std::uint32_t piece = 0;
  };
  std::vector<InnerRef> by_inner_;
  std::vector<Request> inner_done_;
  // The receive mirror: one staging allocation per receive region of the run.
  struct Mirror {
    const char* device = nullptr;
    std::size_t bytes = 0;
    char* host = nullptr;
    std::size_t capacity = 0;
  };
  std::vector<Mirror> mirrors_;
  std::vector<char*> pieces_free_, pieces_all_;
  std::vector<char*> quarantined_;  // staging a cancelled run may still touch: freed at the end
};

}  // namespace arlab::detail

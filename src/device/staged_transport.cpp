#include "device/staged_transport.hpp"

#include <algorithm>

#include "arlab/arlab.hpp"

namespace arlab::detail {

StagedTransport::StagedTransport(Transport& inner, DeviceMemory& memory, std::size_t piece_bytes)
    : inner_(inner), memory_(memory), piece_bytes_(std::max<std::size_t>(piece_bytes, 1)) {}

StagedTransport::~StagedTransport() {
  memory_.synchronize();  // no copy may still read or write staging memory
  for (auto& m : mirrors_) memory_.free_staging(m.host);
  for (char* p : pieces_all_) memory_.free_staging(p);
  for (char* p : quarantined_) memory_.free_staging(p);
}

void StagedTransport::begin_run(std::span<const Region> receive_regions, std::uint32_t signature) {
  if (mirrors_.size() < receive_regions.size()) mirrors_.resize(receive_regions.size());
  std::vector<Region> staged(receive_regions.size());
  for (std::size_t i = 0; i < receive_regions.size(); ++i) {
    Mirror& m = mirrors_[i];
    m.device = static_cast<const char*>(receive_regions[i].base);
    m.bytes = receive_regions[i].bytes;
    if (m.capacity < m.bytes) {
      if (m.host) memory_.free_staging(m.host);
      m.host = nullptr;
      m.capacity = 0;
      m.host = static_cast<char*>(memory_.alloc_staging(m.bytes));
      m.capacity = m.bytes;
    }
    staged[i] = {m.host, m.bytes};
  }
  for (std::size_t i = receive_regions.size(); i < mirrors_.size(); ++i) mirrors_[i].bytes = 0;
  inner_.begin_run(staged, signature);
}

char* StagedTransport::mirror_of(const void* device, std::size_t bytes) const {
  const char* p = static_cast<const char*>(device);
  for (const Mirror& m : mirrors_)
    if (m.bytes && p >= m.device && p + bytes <= m.device + m.bytes) return m.host + (p - m.device);
  throw Error(Error::Code::Internal, "staged transport: a receive into memory outside the run's receive regions");
}

char* StagedTransport::take_piece() {
  if (pieces_free_.empty()) {
    pieces_all_.push_back(static_cast<char*>(memory_.alloc_staging(piece_bytes_)));
    return pieces_all_.back();
  }
  char* p = pieces_free_.back();
  pieces_free_.pop_back();
  return p;
}

Transport::Request StagedTransport::new_op(bool send, int peer, int tag, const void* buf, std::size_t bytes) {
  Request id;
  if (!free_ops_.empty()) {
    id = free_ops_.back();
    free_ops_.pop_back();
  } else {
    id = static_cast<Request>(ops_.size());
    ops_.emplace_back();
  }
  Op& op = ops_[id];
  op.send = send;
  op.active = true;
  op.peer = peer;
  op.tag = tag;
  op.device = const_cast<char*>(static_cast<const char*>(buf));
  op.posted = op.done = 0;
  const std::size_t n = bytes == 0 ? 1 : (bytes + piece_bytes_ - 1) / piece_bytes_;  // an empty message is one piece
  op.pieces.assign(n, Piece{});
  for (std::size_t k = 0; k < n; ++k) {
    Piece& p = op.pieces[k];
    p.offset = k * piece_bytes_;
    p.bytes = std::min(piece_bytes_, bytes - std::min(bytes, p.offset));
  }
  active_.push_back(id);
  return id;
}

Transport::Request StagedTransport::isend(int peer, int tag, const void* buf, std::size_t bytes) {
  const Request id = new_op(true, peer, tag, buf, bytes);
  for (Piece& p : ops_[id].pieces) {  // every copy out at once: the to-host stream runs them in order
    p.staging = take_piece();
    p.copy = p.bytes ? memory_.to_host(p.staging, ops_[id].device + p.offset, p.bytes) : DeviceMemory::kDone;
    copied_to_host_ += p.bytes;
    p.state = Piece::State::Copying;
  }
  advance(ops_[id]);
  return id;
}

Transport::Request StagedTransport::irecv(int peer, int tag, void* buf, std::size_t bytes) {
  char* mirror = mirror_of(buf, bytes);
  const Request id = new_op(false, peer, tag, buf, bytes);
  Op& op = ops_[id];
  for (std::uint32_t k = 0; k < op.pieces.size(); ++k) {  // every piece's receive posted now, in order
    Piece& p = op.pieces[k];
    p.staging = mirror + p.offset;
    p.inner = inner_.irecv(peer, tag, p.staging, p.bytes);
    p.state = Piece::State::OnWire;
    if (static_cast<std::size_t>(p.inner) >= by_inner_.size()) by_inner_.resize(p.inner + 64);
    by_inner_[p.inner] = {id, k};
  }
  return id;
}

// Moves `op` on as far as it can; true once every piece is done.
bool StagedTransport::advance(Op& op) {
  if (op.send) {
    // Hand the pieces whose copy has finished to the wire, in order.
    while (op.posted < op.pieces.size()) {
      Piece& p = op.pieces[op.posted];
      if (!memory_.done(p.copy)) break;
      const auto id = static_cast<Request>(&op - ops_.data());
      p.inner = inner_.isend(op.peer, op.tag, p.staging, p.bytes);
      p.state = Piece::State::OnWire;
      if (static_cast<std::size_t>(p.inner) >= by_inner_.size()) by_inner_.resize(p.inner + 64);
      by_inner_[p.inner] = {id, static_cast<std::uint32_t>(op.posted)};
      ++op.posted;
    }
  } else {
    for (Piece& p : op.pieces)
      if (p.state == Piece::State::Landed && memory_.done(p.copy)) {
        p.state = Piece::State::Done;
        ++op.done;
      }
  }
  return op.done == op.pieces.size();
}

void StagedTransport::poll(std::vector<Request>& done) {
  inner_done_.clear();
  inner_.poll(inner_done_);
  for (Request r : inner_done_) {
    const InnerRef ref = by_inner_[r];
    Op& op = ops_[ref.op];
    Piece& p = op.pieces[ref.piece];
    if (op.send) {
      pieces_free_.push_back(p.staging);
      p.state = Piece::State::Done;
      ++op.done;
    } else {
      p.copy = p.bytes ? memory_.to_device(op.device + p.offset, p.staging, p.bytes) : DeviceMemory::kDone;
      copied_to_device_ += p.bytes;
      p.state = Piece::State::Landed;
    }
  }
  for (std::size_t i = 0; i < active_.size();) {
    const Request id = active_[i];
    if (advance(ops_[id])) {
      ops_[id].active = false;
      done.push_back(id);
      free_ops_.push_back(id);
      active_[i] = active_.back();
      active_.pop_back();
    } else {
      ++i;
    }
  }
}

void StagedTransport::cancel_all() {
  inner_.cancel_all();
  memory_.synchronize();
  // The inner transport may still touch what it was given (an abandoned receive): keep that
  // staging out of use until the end.
  for (auto& m : mirrors_) {
    if (m.host) quarantined_.push_back(m.host);
    m.host = nullptr;
    m.capacity = m.bytes = 0;
  }
  for (Request id : active_)
    for (Piece& p : ops_[id].pieces)
      if (ops_[id].send && p.state != Piece::State::Done) {
        quarantined_.push_back(p.staging);
        pieces_all_.erase(std::find(pieces_all_.begin(), pieces_all_.end(), p.staging));
      }
  for (Request id : active_) {
    ops_[id].active = false;
    free_ops_.push_back(id);
  }
  active_.clear();
}

std::size_t StagedTransport::staging_bytes() const {
  std::size_t bytes = pieces_all_.size() * piece_bytes_;
  for (const Mirror& m : mirrors_) bytes += m.capacity;
  return bytes;
}

}  // namespace arlab::detail

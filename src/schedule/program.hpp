// A schedule compiled for walking: who waits on whom, and which message is which.
// The executor, the symbolic validator and the cost walk all start from this.
#pragma once

#include <cstdint>
#include <vector>

#include "schedule/schedule.hpp"

namespace arlab::detail {

struct Program {
  Schedule schedule;
  std::vector<std::uint32_t> dep_count;   // per step: how many steps it waits for
  std::vector<std::uint32_t> dependents;  // CSR: dependents of step i are
  std::vector<std::uint32_t> dep_begin;   //   dependents[dep_begin[i] .. dep_begin[i+1])
  std::vector<std::uint32_t> roots;       // steps that wait for nothing
  // Per Send/Recv step: its position on its channel (k for the k-th message from this
  // rank to that peer, or from that peer to this rank). The message tag.
  std::vector<std::uint32_t> seq;

  std::size_t size() const { return schedule.steps.size(); }
  const Step& step(std::size_t i) const { return schedule.steps[i]; }
};

// Throws Error(Internal) when a step depends on itself or a later step, or names a bad peer.
Program compile(Schedule schedule, int nranks);

// For all ranks' programs: the two ends of the `seq`-th message from rank `from` to rank
// `to`: the step that sends it (at `from`) and the step that receives it (at `to`), or -1.
class MessageIndex {
 public:
  explicit MessageIndex(const std::vector<Program>& ranks);
  long send_step(int from, int to, std::uint32_t seq) const { return at(sends_[from], to, seq); }
  long recv_step(int from, int to, std::uint32_t seq) const { return at(recvs_[to], from, seq); }

 private:
  // One rank's messages to (or from) one peer, in channel order. A rank talks to few peers,
  // so each rank keeps a short list sorted by peer rather than a row of p entries.
  struct Channel {
    int peer;
    std::vector<std::uint32_t> steps;  // [seq] -> step
  };
  using Table = std::vector<std::vector<Channel>>;  // [rank] -> its channels
  static long at(const std::vector<Channel>& channels, int peer, std::uint32_t seq);
  Table sends_, recvs_;
};

}  // namespace arlab::detail

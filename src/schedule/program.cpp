#include "schedule/program.hpp"

#include <algorithm>
#include <string>

#include "arlab/arlab.hpp"

namespace arlab::detail {

Program compile(Schedule schedule, int nranks) {
  Program p;
  const std::size_t n = schedule.steps.size();
  p.dep_count.assign(n, 0);
  p.dep_begin.assign(n + 1, 0);
  p.seq.assign(n, 0);
  std::vector<std::uint32_t> sends(nranks, 0), recvs(nranks, 0);
  for (std::size_t i = 0; i < n; ++i) {
    const Step& s = schedule.steps[i];
    for (auto d : s.deps) {
      if (d >= i)
        throw Error(Error::Code::Internal, "schedule step " + std::to_string(i) +
                                               " depends on step " + std::to_string(d) +
                                               ", which is not earlier");
      ++p.dep_begin[d + 1];
    }
    p.dep_count[i] = static_cast<std::uint32_t>(s.deps.size());
    if (s.deps.empty()) p.roots.push_back(static_cast<std::uint32_t>(i));
    if (s.kind == StepKind::Send || s.kind == StepKind::Recv) {
      if (s.peer < 0 || s.peer >= nranks)
        throw Error(Error::Code::Internal,
                    "schedule step " + std::to_string(i) + " names peer " + std::to_string(s.peer));
      p.seq[i] = s.kind == StepKind::Send ? sends[s.peer]++ : recvs[s.peer]++;
    }
  }
  for (std::size_t i = 0; i < n; ++i) p.dep_begin[i + 1] += p.dep_begin[i];
  p.dependents.resize(p.dep_begin[n]);
  std::vector<std::uint32_t> fill(p.dep_begin.begin(), p.dep_begin.end() - 1);
  for (std::size_t i = 0; i < n; ++i)
    for (auto d : schedule.steps[i].deps) p.dependents[fill[d]++] = static_cast<std::uint32_t>(i);
  p.schedule = std::move(schedule);
  return p;
}

MessageIndex::MessageIndex(const std::vector<Program>& ranks) : sends_(ranks.size()), recvs_(ranks.size()) {
  const auto p = ranks.size();
  std::vector<long> slot(p, -1);  // peer -> its channel in the list being built, -1 if none
  auto index_rank = [&](std::size_t me, StepKind kind, std::vector<Channel>& out) {
    for (std::size_t i = 0; i < ranks[me].size(); ++i) {
      const Step& s = ranks[me].step(i);
      if (s.kind != kind) continue;
      const auto peer = static_cast<std::size_t>(s.peer);
      if (slot[peer] < 0) {
        slot[peer] = static_cast<long>(out.size());
        out.push_back({s.peer, {}});
      }
      out[slot[peer]].steps.push_back(static_cast<std::uint32_t>(i));
    }
    for (const Channel& c : out) slot[c.peer] = -1;
    std::sort(out.begin(), out.end(), [](const Channel& a, const Channel& b) { return a.peer < b.peer; });
  };
  for (std::size_t me = 0; me < p; ++me) {
    index_rank(me, StepKind::Send, sends_[me]);
    index_rank(me, StepKind::Recv, recvs_[me]);
  }
}

long MessageIndex::at(const std::vector<Channel>& channels, int peer, std::uint32_t seq) {
  const auto it = std::lower_bound(channels.begin(), channels.end(), peer,
                                   [](const Channel& c, int q) { return c.peer < q; });
  if (it == channels.end() || it->peer != peer || seq >= it->steps.size()) return -1;
  return static_cast<long>(it->steps[seq]);
}

}  // namespace arlab::detail

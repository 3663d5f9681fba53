#include "model/cost_walk.hpp"

#include <algorithm>
#include <queue>

#include "algorithms/registry.hpp"
#include "arlab/arlab.hpp"
#include "schedule/program.hpp"

namespace arlab::detail {

namespace {

struct Timed {
  double t;
  int rank;
  std::uint32_t step;
  bool operator>(const Timed& o) const { return t > o.t; }
};

class Walk {
 public:
  Walk(const std::vector<Schedule>& ranks, const Machine& m, std::size_t elem)
      : m_(m), elem_(static_cast<double>(elem)) {
    p_ = static_cast<int>(ranks.size());
    for (const auto& s : ranks) progs_.push_back(compile(s, p_));
    index_ = std::make_unique<MessageIndex>(progs_);
    st_.resize(p_);
    finished_.assign(p_, 0);
    for (int r = 0; r < p_; ++r) {
      const auto n = progs_[r].size();
      st_[r].waiting = progs_[r].dep_count;
      st_[r].ready.assign(n, Cost{});
      st_[r].done.assign(n, Cost{});
      st_[r].posted.assign(n, -1.0);
      for (auto i : progs_[r].roots) queue_.push({0.0, r, i});
    }
  }

  Cost run() {
    while (!queue_.empty()) {
      const Timed e = queue_.top();
      queue_.pop();
      fire(e.rank, e.step, e.t);
    }
    for (int r = 0; r < p_; ++r)
      if (finished_[r] != progs_[r].size())
        throw Error(Error::Code::Internal, "cost walk: rank " + std::to_string(r) +
                                               " cannot finish its schedule (deadlock)");
    return last_;
  }

 private:
  struct RankState {
    std::vector<std::uint32_t> waiting;
    std::vector<Cost> ready, done;   // critical path up to the step's start / end
    std::vector<double> posted;      // when a Send/Recv was posted, -1 before
    double send_free = 0, recv_free = 0, compute_free = 0;
  };

  double bytes(const Region& r) const { return static_cast<double>(r.count) * elem_; }

  void fire(int r, std::uint32_t i, double t) {
    RankState& s = st_[r];
    const Step& step = progs_[r].step(i);
    if (step.kind == StepKind::Reduce || step.kind == StepKind::Copy) {
      const double per_byte = step.kind == StepKind::Reduce ? m_.reduce_us_per_byte : m_.copy_us_per_byte;
      Cost c = s.ready[i];
      const double end = std::max(t, s.compute_free) + bytes(step.dst) * per_byte;
      c.reduce_us += end - c.total_us;
      c.total_us = end;
      s.compute_free = end;
      finish(r, i, c);
      return;
    }
    s.posted[i] = t;
    const int peer = step.peer;
    const auto seq = progs_[r].seq[i];
    const long j = step.kind == StepKind::Send ? index_->recv_step(r, peer, seq)
                                               : index_->send_step(peer, r, seq);
    if (j < 0)
      throw Error(Error::Code::Internal, "cost walk: rank " + std::to_string(r) + " step " +
                                             std::to_string(i) + " has no partner");
    if (st_[peer].posted[j] < 0) return;  // the other end posts later and moves the data
    if (step.kind == StepKind::Send)
      transfer(r, i, peer, static_cast<std::uint32_t>(j));
    else
      transfer(peer, static_cast<std::uint32_t>(j), r, i);
  }

  void transfer(int from, std::uint32_t si, int to, std::uint32_t ri) {
    RankState &a = st_[from], &b = st_[to];
    const Cost& base = a.ready[si].total_us >= b.ready[ri].total_us ? a.ready[si] : b.ready[ri];
    const LinkCost& link = m_.link(from, to);
    const double start = std::max({a.posted[si], b.posted[ri], a.send_free, b.recv_free});
    const double end = start + link.alpha_us + bytes(progs_[from].step(si).src) * link.us_per_byte;
    a.send_free = b.recv_free = end;
    Cost c = base;
    c.latency_us += link.alpha_us;
    c.bandwidth_us += end - link.alpha_us - c.total_us;
    c.total_us = end;
    finish(from, si, c);
    finish(to, ri, c);
  }

  void finish(int r, std::uint32_t i, const Cost& c) {
    RankState& s = st_[r];
    s.done[i] = c;
    ++finished_[r];
    if (c.total_us >= last_.total_us) last_ = c;
    const Program& p = progs_[r];
    for (auto k = p.dep_begin[i]; k < p.dep_begin[i + 1]; ++k) {
      const auto d = p.dependents[k];
      if (c.total_us >= s.ready[d].total_us) s.ready[d] = c;
      if (--s.waiting[d] == 0) queue_.push({s.ready[d].total_us, r, d});
    }
  }

  const Machine& m_;
  double elem_;
  int p_ = 0;
  std::vector<Program> progs_;
  std::unique_ptr<MessageIndex> index_;
  std::vector<RankState> st_;
  std::vector<std::size_t> finished_;
  std::priority_queue<Timed, std::vector<Timed>, std::greater<>> queue_;
  Cost last_;
};

}  // namespace

Cost walk_cost(const std::vector<Schedule>& ranks, const Machine& machine, std::size_t elem_size) {
  Walk w(ranks, machine, elem_size);
  return w.run();
}

Cost predict(const AlgorithmInfo& algo, Shape shape, const Machine& machine) {
  std::vector<Schedule> ranks;
  ranks.reserve(shape.nranks);
  for (int r = 0; r < shape.nranks; ++r) {
    shape.rank = r;
    ranks.push_back(algo.build(shape));
  }
  return walk_cost(ranks, machine, shape.elem_size);
}

}  // namespace arlab::detail

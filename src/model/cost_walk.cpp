#include "model/cost_walk.hpp"

#include <algorithm>
#include <array>
#include <utility>
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

// Sorted, disjoint runs of elements [begin, end), each with a tag.
class Ranges {
 public:
  // Marks [b, e) with `tag`, over whatever it held.
  void add(std::size_t b, std::size_t e, double tag) {
    if (b >= e) return;
    take(b, e, [](std::size_t, double) {});
    const auto it = std::lower_bound(runs_.begin(), runs_.end(), b, [](const Run& x, std::size_t v) { return x.begin < v; });
    runs_.insert(it, {b, e, tag});
  }
  void add(const Ranges& o) {
    for (const Run& x : o.runs_) add(x.begin, x.end, x.tag);
  }
  // Removes [b, e), calling f(elements, tag) for each part of it that was there.
  template <typename F>
  void take(std::size_t b, std::size_t e, F&& f) {
    if (b >= e || runs_.empty()) return;
    // The first run that ends after b; the runs it overlaps follow it.
    auto first = std::upper_bound(runs_.begin(), runs_.end(), b, [](std::size_t v, const Run& x) { return v < x.end; });
    auto last = first;
    while (last != runs_.end() && last->begin < e) ++last;
    if (first == last) return;
    Run head{first->begin, b, first->tag}, tail{e, (last - 1)->end, (last - 1)->tag};
    for (auto it = first; it != last; ++it) f(std::min(it->end, e) - std::max(it->begin, b), it->tag);
    auto at = runs_.erase(first, last);
    if (tail.begin < tail.end) at = runs_.insert(at, tail);
    if (head.begin < head.end) runs_.insert(at, head);
  }

 private:
  struct Run {
    std::size_t begin, end;
    double tag;
  };
  std::vector<Run> runs_;
};

class Walk {
 public:
  // `last_call_cached`: what the peers read in the last call is still in their caches.
  Walk(std::vector<Program> progs, const Machine& m, std::size_t elem, bool in_place, bool last_call_cached)
      : m_(m), progs_(std::move(progs)) {
    p_ = static_cast<int>(progs_.size());
    node_ = m.placement(p_);
    const int nodes = node_.empty() ? 1 : *std::max_element(node_.begin(), node_.end()) + 1;
    nic_out_free_.assign(static_cast<std::size_t>(std::max(nodes, 1)), 0.0);
    nic_in_free_ = nic_out_free_;
    st_.resize(p_);
    const MessageIndex index(progs_);
    const auto elem_bytes = static_cast<double>(elem);
    for (int r = 0; r < p_; ++r) {
      Program& prog = progs_[r];
      auto& steps = st_[r].steps;
      steps.resize(prog.size());
      for (std::size_t i = 0; i < steps.size(); ++i) {
        const Step& step = prog.step(i);
        StepState& x = steps[i];
        x.kind = step.kind;
        x.peer = step.peer;
        x.waiting = prog.dep_count[i];
        const bool message = step.kind == StepKind::Send || step.kind == StepKind::Recv;
        x.bytes = static_cast<double>(step.kind == StepKind::Send ? step.src.count : step.dst.count) * elem_bytes;
        // The other end of each message, looked up once.
        if (message)
          x.partner = static_cast<std::int32_t>(step.kind == StepKind::Send
                                                    ? index.recv_step(r, step.peer, prog.seq[i])
                                                    : index.send_step(step.peer, r, prog.seq[i]));
      }
      charge_writebacks(r, prog, elem_bytes, in_place, last_call_cached);
      prog.schedule.steps = {};  // the walk needs only the states above and the dependents
      for (auto i : prog.roots) queue_.push({0.0, r, i});
    }
  }

  Cost run() {
    while (!queue_.empty()) {
      const Timed e = queue_.top();
      queue_.pop();
      fire(e.rank, e.step, e.t);
    }
    for (int r = 0; r < p_; ++r)
      if (st_[r].finished != st_[r].steps.size())
        throw Error(Error::Code::Internal, "cost walk: rank " + std::to_string(r) +
                                               " cannot finish its schedule (deadlock)");
    return last_;
  }

 private:
  // Everything the walk reads or writes for one step.
  struct StepState {
    Cost ready;                  // critical path up to the step's start
    double posted = -1;          // Send/Recv: when posted, -1 before
    double bytes = 0;            // moved (Send/Recv) or written (Reduce/Copy)
    double writeback_us = 0;     // Recv, Reduce, Copy: writing over what a peer has read (below)
    std::int32_t partner = -1;   // Send/Recv: the matching step at the peer
    std::int32_t peer = -1;
    std::uint32_t waiting = 0;   // dependencies not yet done
    StepKind kind = StepKind::Send;
  };
  struct RankState {
    std::vector<StepState> steps;
    std::size_t finished = 0;
    double send_free = 0, recv_free = 0, compute_free = 0;
  };

  // Writing bytes that a peer on this node has read since this rank last wrote them pays, per
  // byte, the link's write-back cost (LinkCost::writeback): the peer's CPU copied them and may
  // hold them in its cache, so each line must first be taken back from it. Right after the
  // send that carried them, with no other send between (recursive doubling in place: its sum
  // over the buffer it has just sent), at `writeback`; later (the ring's allgather receiving
  // over the chunks its reduce-scatter sent) at `writeback_later`, looked up at the bytes the
  // rank has sent to its node's peers since (the peer read about as much more meanwhile, and
  // what it read first left its caches first). Calls repeat on the same
  // buffers, so a write also pays (later) for what the peer read of it in the last call, after
  // this rank's last write there: of the scratch always, of the output out of place (in place,
  // the caller writes its buffer anew between calls, as gradients are; its input it always
  // writes anew), unless the call is larger than the cache (`last_call_cached` false: a
  // segmented call, whose segments alone fit). The schedule's order is a topological one, and
  // a send and a write of the same bytes are ordered by dependencies, so one pass in that
  // order finds the state a call leaves (the next call's start) and a second charges each
  // Recv, Reduce and Copy.
  void charge_writebacks(int r, const Program& prog, double elem_bytes, bool in_place, bool last_call_cached) {
    const LinkCost& link = m_.intra;
    if (link.writeback.empty() && link.writeback_later.empty()) return;
    auto& steps = st_[r].steps;
    // Per Buffer, elements a peer on this node has read since this rank wrote them: by the
    // last send (recent), or before it (older), each tagged with `sent` just after its send.
    // `sent` counts the bytes this rank has sent to its node's peers since the last call's
    // start: a later write pays the write-back of its distance, the bytes sent since.
    std::array<Ranges, 3> recent, older;
    double sent = 0;
    const auto age = [&] {
      for (std::size_t b = 0; b < 3; ++b) older[b].add(recent[b]), recent[b] = {};
    };
    const auto pass = [&](bool charge) {
      for (std::uint32_t i = 0; i < steps.size(); ++i) {
        const Step& step = prog.step(i);
        if (step.kind == StepKind::Send) {
          if (node_[step.peer] != node_[r] || step.src.count == 0) continue;
          age();
          const std::size_t b = index(step.src.buffer), lo = step.src.offset, hi = lo + step.src.count;
          older[b].take(lo, hi, [](std::size_t, double) {});
          sent += static_cast<double>(step.src.count) * elem_bytes;
          recent[b].add(lo, hi, sent);
          continue;
        }
        const std::size_t b = index(step.dst.buffer), lo = step.dst.offset, hi = lo + step.dst.count;
        double now = 0, later_us = 0;
        recent[b].take(lo, hi, [&](std::size_t n, double) { now += static_cast<double>(n) * elem_bytes; });
        older[b].take(lo, hi, [&](std::size_t n, double tag) {
          later_us += static_cast<double>(n) * elem_bytes * link.writeback_later_us_per_byte(sent - tag);
        });
        if (charge) steps[i].writeback_us += now * link.writeback_us_per_byte(now) + later_us;
      }
    };
    if (last_call_cached) {
      pass(false);  // `sent` goes on counting into this call
      age();        // what the last call's peers read is the next call's older
      older[index(Buffer::Input)] = {};
      if (in_place) older[index(Buffer::Output)] = {};
    }
    pass(true);
  }
  static std::size_t index(Buffer b) { return static_cast<std::size_t>(b); }

  void fire(int r, std::uint32_t i, double t) {
    RankState& s = st_[r];
    StepState& x = s.steps[i];
    if (x.kind == StepKind::Reduce || x.kind == StepKind::Copy) {
      const double per_byte = x.kind == StepKind::Reduce ? m_.reduce_us_per_byte : m_.copy_us_per_byte;
      Cost c = x.ready;
      const double end = std::max(t, s.compute_free) + x.bytes * per_byte + x.writeback_us;
      c.reduce_us += end - c.total_us;
      c.total_us = end;
      s.compute_free = end;
      finish(r, i, c);
      return;
    }
    x.posted = t;
    if (x.partner < 0)
      throw Error(Error::Code::Internal, "cost walk: rank " + std::to_string(r) + " step " +
                                             std::to_string(i) + " has no partner");
    const auto j = static_cast<std::uint32_t>(x.partner);
    if (st_[x.peer].steps[j].posted < 0) return;  // the other end posts later and moves the data
    if (x.kind == StepKind::Send)
      transfer(r, i, x.peer, j);
    else
      transfer(x.peer, j, r, i);
  }

  void transfer(int from, std::uint32_t si, int to, std::uint32_t ri) {
    RankState &a = st_[from], &b = st_[to];
    const StepState &send = a.steps[si], &recv = b.steps[ri];
    const LinkCost& link = node_[from] == node_[to] ? m_.intra : m_.inter;
    // On a CPU-copied link the receiver's CPU pulls the bytes (a single copy out of the
    // sender's memory), so the sender's port does not serialise its messages: several
    // receivers may copy from one sender at once. A DMA link's send port streams one at a time.
    double start = std::max({send.posted, recv.posted, link.cpu_copies ? 0.0 : a.send_free, b.recv_free});
    // One port per node (a NIC): the node's messages over the link take turns on it.
    const bool nic = link.shared_by_node && node_[from] != node_[to];
    if (nic) start = std::max({start, nic_out_free_[node_[from]], nic_in_free_[node_[to]]});
    const double alpha = link.alpha_for(send.bytes);
    const double stream = send.bytes * link.us_per_byte + recv.writeback_us;
    double busy = stream;
    if (link.cpu_copies) {
      // A CPU-copied link: the receiver's CPU runs the handshake and copies the bytes in, so
      // its compute unit is busy too, and the latency is that CPU's work, not time in flight:
      // the next message on these ports cannot hide it (LogGP's overhead o, paid per message).
      start = std::max(start, b.compute_free);
      busy = alpha + stream;
      b.compute_free = start + busy;
    }
    // A DMA link: the ports stream the bytes; the latency is in flight and overlaps the next message.
    if (!link.cpu_copies) a.send_free = start + busy;
    b.recv_free = start + busy;
    if (nic) nic_out_free_[node_[from]] = nic_in_free_[node_[to]] = start + stream;
    const double end = start + alpha + stream;
    Cost c = send.ready.total_us >= recv.ready.total_us ? send.ready : recv.ready;
    if (node_[from] != node_[to]) c.inter_us += end - c.total_us;
    c.latency_us += alpha;
    c.bandwidth_us += end - alpha - c.total_us;
    c.total_us = end;
    finish(from, si, c);
    finish(to, ri, c);
  }

  void finish(int r, std::uint32_t i, const Cost& c) {
    RankState& s = st_[r];
    ++s.finished;
    if (c.total_us >= last_.total_us) last_ = c;
    const Program& p = progs_[r];
    for (auto k = p.dep_begin[i]; k < p.dep_begin[i + 1]; ++k) {
      StepState& d = s.steps[p.dependents[k]];
      if (c.total_us >= d.ready.total_us) d.ready = c;
      if (--d.waiting == 0) queue_.push({d.ready.total_us, r, p.dependents[k]});
    }
  }

  const Machine& m_;
  std::vector<Program> progs_;  // their dependents; the steps themselves are released
  int p_ = 0;
  std::vector<int> node_;  // node of each rank
  std::vector<double> nic_out_free_, nic_in_free_;  // per node: when its shared port is free
  std::vector<RankState> st_;
  std::priority_queue<Timed, std::vector<Timed>, std::greater<>> queue_;
  Cost last_;
};

}  // namespace

double working_set_bytes(const std::vector<Schedule>& ranks, const Machine& machine, std::size_t count,
                         std::size_t elem_size, bool in_place) {
  std::vector<double> bytes;
  bytes.reserve(ranks.size());
  const std::size_t buffers = in_place ? 1 : 2;
  for (const auto& s : ranks) bytes.push_back(static_cast<double>(buffers * count + s.scratch_count) * elem_size);
  return machine.node_working_set(bytes);
}

constexpr double kInterTie = 1e-3;  // relative

Algorithm choose_inter(Shape shape, const Machine& machine, bool in_place, Cost* cost) {
  const AlgorithmInfo& hierarchical = *find_schedule_algorithm(Algorithm::Hierarchical);
  Algorithm best = Algorithm::Ring;
  Cost best_cost;
  bool first = true;
  for (const AlgorithmInfo& info : schedule_algorithm_table()) {
    if (info.id == Algorithm::Hierarchical) continue;
    shape.inter = info.id;
    const Cost c = predict(hierarchical, shape, machine, in_place);
    // Another algorithm only when it is predicted faster by more than the walk's rounding: on
    // two nodes ring, tree and Rabenseifner move the same bytes and tie to within 1e-6, and
    // the table's order (the pipelined ring first) then decides, not the last bits of a sum.
    if (first || c.total_us < best_cost.total_us * (1 - kInterTie)) best = info.id, best_cost = c, first = false;
  }
  if (cost) *cost = best_cost;
  return best;
}

Cost predict(const AlgorithmInfo& algo, Shape shape, const Machine& machine, bool in_place) {
  // The schedule's nodes are the machine's unless the shape names its own.
  if (algo.id == Algorithm::Hierarchical && shape.rank_to_node.empty() && shape.ranks_per_node == 0)
    shape.rank_to_node = machine.placement(shape.nranks);
  if (algo.id == Algorithm::Hierarchical &&
      (shape.inter == Algorithm::Auto || !find_schedule_algorithm(shape.inter) || shape.inter == Algorithm::Hierarchical)) {
    Cost c;
    choose_inter(shape, machine, in_place, &c);
    return c;
  }
  std::vector<Schedule> schedules;
  schedules.reserve(shape.nranks);
  for (int r = 0; r < shape.nranks; ++r) {
    shape.rank = r;
    Schedule s = build_schedule(algo, shape);
    schedules.push_back(in_place ? std::move(s) : lower_out_of_place(s, shape.count));
  }
  // A segmented call (algorithms/segmented.cpp) holds two segments at a time, and its scratch
  // is the two halves they use.
  const std::size_t parts = shape.segments();
  const std::size_t held = parts > 1 ? 2 * ((shape.count + parts - 1) / parts) : shape.count;
  const double whole_bytes = working_set_bytes(schedules, machine, shape.count, shape.elem_size, in_place);
  const Machine rates =
      parts > 1 ? machine.at_working_set(working_set_bytes(schedules, machine, held, shape.elem_size, in_place))
                : machine.at_working_set(whole_bytes);
  // Its buffers still come from memory once and go back once: a copy's traffic (in place, the
  // buffer read and written; out of place, the input read and the output written). So a
  // segmented call pays what copying them costs beyond the cache over what it costs in it.
  double stream_us = 0;
  if (parts > 1)
    stream_us = static_cast<double>(shape.count * shape.elem_size) *
                std::max(0.0, machine.at_working_set(whole_bytes).copy_us_per_byte - rates.copy_us_per_byte);
  // What the peers read in the last call is still in their caches only if the whole call fits.
  const bool last_call_cached = machine.fits_cache(whole_bytes);
  std::vector<Program> progs;
  progs.reserve(schedules.size());
  for (auto& s : schedules) progs.push_back(compile(std::move(s), shape.nranks));
  Cost c = Walk(std::move(progs), rates, shape.elem_size, in_place, last_call_cached).run();
  c.latency_us += machine.call_us;  // a fixed cost, counted with the latencies
  c.total_us += machine.call_us;
  c.reduce_us += stream_us;
  c.total_us += stream_us;
  return c;
}

}  // namespace arlab::detail

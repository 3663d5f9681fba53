#include "schedule/validator.hpp"

#include <random>
#include <sstream>

#include "algorithms/registry.hpp"
#include "schedule/program.hpp"

namespace arlab::detail {

namespace {

using Mask = std::uint64_t;

struct RankState {
  std::vector<Mask> buf[3];                   // Input, Output, Scratch
  std::vector<std::uint32_t> waiting;         // unfinished deps per step
  std::vector<std::uint8_t> posted, done;
  std::vector<Mask> in_flight;                // a posted send's data hash at posting time
};

class Validation {
 public:
  Validation(const std::vector<Schedule>& ranks, std::size_t count, bool in_place,
             std::uint64_t seed)
      : count_(count), in_place_(in_place), rng_(seed) {
    p_ = static_cast<int>(ranks.size());
    for (const auto& s : ranks) progs_.push_back(compile(s, p_));
    index_ = std::make_unique<MessageIndex>(progs_);
    states_.resize(p_);
    for (int r = 0; r < p_; ++r) {
      RankState& st = states_[r];
      const Mask me = Mask{1} << r;
      if (!in_place) st.buf[0].assign(count, me);
      st.buf[1].assign(count, in_place ? me : 0);
      st.buf[2].assign(progs_[r].schedule.scratch_count, 0);
      st.waiting = progs_[r].dep_count;
      st.posted.assign(progs_[r].size(), 0);
      st.done.assign(progs_[r].size(), 0);
      st.in_flight.assign(progs_[r].size(), 0);
      for (auto i : progs_[r].roots) enabled_.push_back({r, i});
    }
  }

  std::string run() {
    while (!enabled_.empty() && error_.empty()) {
      std::uniform_int_distribution<std::size_t> pick(0, enabled_.size() - 1);
      std::swap(enabled_[pick(rng_)], enabled_.back());
      auto [r, i] = enabled_.back();
      enabled_.pop_back();
      fire(r, i);
    }
    if (!error_.empty()) return error_;
    return check_final();
  }

 private:
  struct Ref {
    int rank;
    std::uint32_t step;
  };

  std::string where(int r, std::size_t i) const {
    const Step& s = progs_[r].step(i);
    std::ostringstream o;
    o << "rank " << r << " step " << i << " (" << to_string(s.kind);
    if (s.peer >= 0) o << (s.kind == StepKind::Send ? " to " : " from ") << s.peer;
    o << ")";
    return o.str();
  }

  Mask* region(int r, std::size_t i, const Region& reg) {
    auto& v = states_[r].buf[static_cast<int>(reg.buffer)];
    if (reg.offset + reg.count > v.size() || reg.offset + reg.count < reg.offset) {
      error_ = where(r, i) + ": region " + std::string(to_string(reg.buffer)) + "[" +
               std::to_string(reg.offset) + ", +" + std::to_string(reg.count) +
               ") lies outside its buffer of " + std::to_string(v.size()) + " elements";
      return nullptr;
    }
    return v.data() + reg.offset;
  }

  void finish(int r, std::uint32_t i) {
    RankState& st = states_[r];
    st.done[i] = 1;
    const Program& p = progs_[r];
    for (auto k = p.dep_begin[i]; k < p.dep_begin[i + 1]; ++k)
      if (--st.waiting[p.dependents[k]] == 0) enabled_.push_back({r, p.dependents[k]});
  }

  // The step at `to` that receives the message of send (r, i), or an error.
  long partner_recv(int r, std::uint32_t i) {
    const Step& s = progs_[r].step(i);
    const long j = index_->recv_step(r, s.peer, progs_[r].seq[i]);
    if (j < 0) error_ = where(r, i) + ": message " + std::to_string(progs_[r].seq[i]) +
                        " on this channel has no matching receive at rank " + std::to_string(s.peer);
    return j;
  }

  void fire(int r, std::uint32_t i) {
    RankState& st = states_[r];
    const Step& s = progs_[r].step(i);
    switch (s.kind) {
      case StepKind::Send: {
        const Mask* src = region(r, i, s.src);
        if (!src) return;
        st.in_flight[i] = digest(src, s.src.count);
        st.posted[i] = 1;
        const long j = partner_recv(r, i);
        if (j >= 0 && states_[s.peer].posted[j]) deliver(r, i, s.peer, j);
        break;
      }
      case StepKind::Recv: {
        st.posted[i] = 1;
        // Find the send of the same sequence number at the peer, if it is posted.
        const long j = index_->send_step(s.peer, r, progs_[r].seq[i]);
        if (j >= 0 && states_[s.peer].posted[j]) deliver(s.peer, j, r, i);
        break;
      }
      case StepKind::Reduce: {
        Mask* dst = region(r, i, s.dst);
        const Mask* a = region(r, i, s.src);
        const Mask* b = region(r, i, s.aux);
        if (!dst || !a || !b) return;
        if (s.src.count != s.dst.count || s.aux.count != s.dst.count)
          return void(error_ = where(r, i) + ": operands of different sizes");
        for (std::size_t e = 0; e < s.dst.count; ++e) {
          if (a[e] & b[e]) {
            error_ = where(r, i) + ": element " + std::to_string(s.dst.offset + e) +
                     " would hold a contribution twice (masks " + hex(a[e]) + " and " +
                     hex(b[e]) + ")";
            return;
          }
          dst[e] = a[e] | b[e];
        }
        finish(r, i);
        break;
      }
      case StepKind::Copy: {
        Mask* dst = region(r, i, s.dst);
        const Mask* src = region(r, i, s.src);
        if (!dst || !src) return;
        if (s.src.count != s.dst.count) return void(error_ = where(r, i) + ": copy of different sizes");
        std::copy(src, src + s.src.count, dst);
        finish(r, i);
        break;
      }
    }
  }

  // Both ends are posted: the data moves and both steps finish.
  void deliver(int from, std::uint32_t si, int to, std::uint32_t ri) {
    const Step& s = progs_[from].step(si);
    const Step& d = progs_[to].step(ri);
    if (s.src.count != d.dst.count)
      return void(error_ = where(from, si) + " sends " + std::to_string(s.src.count) +
                           " elements but " + where(to, ri) + " expects " +
                           std::to_string(d.dst.count));
    const Mask* now = region(from, si, s.src);
    Mask* dst = region(to, ri, d.dst);
    if (!now || !dst) return;
    if (digest(now, s.src.count) != states_[from].in_flight[si])
      return void(error_ = where(from, si) + ": its buffer changed while the send was in flight");
    std::copy(now, now + s.src.count, dst);
    finish(from, si);
    finish(to, ri);
  }

  std::string check_final() {
    std::ostringstream o;
    int stuck = 0;
    for (int r = 0; r < p_; ++r)
      for (std::size_t i = 0; i < progs_[r].size(); ++i)
        if (!states_[r].done[i] && stuck++ < 4)
          o << (stuck == 1 ? "deadlock: " : "; ") << where(r, i)
            << (states_[r].posted[i] ? " posted, never matched" : " never became ready");
    if (stuck) return o.str() + (stuck > 4 ? "; and " + std::to_string(stuck - 4) + " more" : "");
    const Mask all = p_ == 64 ? ~Mask{0} : (Mask{1} << p_) - 1;
    for (int r = 0; r < p_; ++r)
      for (std::size_t e = 0; e < count_; ++e)
        if (states_[r].buf[1][e] != all)
          return "rank " + std::to_string(r) + " output element " + std::to_string(e) +
                 " holds ranks " + hex(states_[r].buf[1][e]) + ", expected " + hex(all) +
                 (in_place_ ? " (in place)" : " (out of place)");
    return "";
  }

  // Position-dependent hash of a run of masks: any change of the sent data shows.
  static Mask digest(const Mask* m, std::size_t n) {
    Mask h = 0x9e3779b97f4a7c15ULL;
    for (std::size_t i = 0; i < n; ++i) h = (h ^ m[i]) * 0x100000001b3ULL + i;
    return h;
  }

  static std::string hex(Mask m) {
    std::ostringstream o;
    o << "0x" << std::hex << m;
    return o.str();
  }

  std::size_t count_;
  bool in_place_;
  int p_ = 0;
  std::mt19937_64 rng_;
  std::vector<Program> progs_;
  std::unique_ptr<MessageIndex> index_;
  std::vector<RankState> states_;
  std::vector<Ref> enabled_;
  std::string error_;
};

}  // namespace

std::string validate(const std::vector<Schedule>& ranks, std::size_t count, bool in_place,
                     std::uint64_t seed) {
  if (ranks.empty() || ranks.size() > 64) return "the validator handles 1 to 64 ranks";
  try {
    Validation v(ranks, count, in_place, seed);
    return v.run();
  } catch (const std::exception& e) {
    return e.what();
  }
}

std::string validate_algorithm(const AlgorithmInfo& algo, Shape shape, int orders) {
  std::vector<Schedule> in_place, out_of_place;
  for (int r = 0; r < shape.nranks; ++r) {
    shape.rank = r;
    in_place.push_back(build_schedule(algo, shape));
    out_of_place.push_back(lower_out_of_place(in_place.back(), shape.count));
  }
  for (int k = 0; k < orders; ++k) {
    const auto seed = static_cast<std::uint64_t>(k) * 7919 + 1;
    for (bool ip : {true, false}) {
      std::string err = validate(ip ? in_place : out_of_place, shape.count, ip, seed);
      if (!err.empty())
        return std::string(algo.name) + " p=" + std::to_string(shape.nranks) +
               " count=" + std::to_string(shape.count) + (ip ? " in place" : " out of place") +
               ": " + err;
    }
  }
  return "";
}

}  // namespace arlab::detail

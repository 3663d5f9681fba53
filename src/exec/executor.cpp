#include "exec/executor.hpp"

#include <algorithm>
#include <chrono>
#include <sstream>
#include <thread>

#include "exec/idle_wait.hpp"

namespace arlab::detail {

std::uint32_t call_signature(int algorithm, std::size_t count, int type, int op) {
  // splitmix64 of the packed fields, folded: any difference changes every bit with even odds.
  std::uint64_t x = static_cast<std::uint64_t>(count) * 0x9e3779b97f4a7c15ull ^
                    (static_cast<std::uint64_t>(algorithm) << 16 | static_cast<std::uint64_t>(type) << 8 |
                     static_cast<std::uint64_t>(op));
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return static_cast<std::uint32_t>(x ^ (x >> 32));
}

char* Executor::address(const Region& r) const {
  char* base = r.buffer == Buffer::Output    ? static_cast<char*>(buf_->output)
               : r.buffer == Buffer::Scratch ? static_cast<char*>(buf_->scratch)
                                             : const_cast<char*>(static_cast<const char*>(buf_->input));
  return base + r.offset * call_->elem_size;
}

void Executor::run(const Program& program, const Buffers& buffers, const Call& call) {
  begin(program, buffers, call);
  // Spinning, the clock read only every kIdleRoundsPerClockRead idle rounds; after a long
  // wait, sleeping between polls (idle_wait.hpp).
  IdleWait wait(kIdleRoundsPerClockRead);
  try {
    while (!finished()) {
      if (advance()) {
        wait.moved();
        continue;
      }
      const IdleWait::Round r = wait.idle_round(/*caller_waits=*/true);
      if (!r.clock_read) continue;
      if (r.waited_s > call.timeout_s) timed_out(r.waited_s);
      if (r.nap_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(r.nap_s));
    }
  } catch (...) {
    abandon();  // a run that failed part-way leaves messages in flight
    throw;
  }
  end();
}

void Executor::begin(const Program& program, const Buffers& buffers, const Call& call) {
  // Every rank starts a run for every call, even one with no steps, so that transports that
  // number calls stay in step.
  const Transport::Region regions[2] = {
      {buffers.output, call.count * call.elem_size},
      {buffers.scratch, program.schedule.scratch_count * call.elem_size}};
  prog_ = &program;
  buf_ = &buffers;
  call_ = &call;
  done_ = 0;
  try {
    transport_.begin_run(std::span(regions, buffers.scratch && regions[1].bytes ? 2 : 1), call.signature);
  } catch (...) {
    transport_.end_run();
    done_ = program.size();
    throw;
  }
  waiting_.assign(program.dep_count.begin(), program.dep_count.end());
  state_.assign(program.size(), 0);
  ready_.assign(program.roots.begin(), program.roots.end());
  computing_.clear();
}

void Executor::abandon() noexcept {
  transport_.cancel_all();
  transport_.end_run();
}

bool Executor::advance() {
  const std::size_t before = done_;
  while (!ready_.empty()) {
    const auto i = ready_.back();
    ready_.pop_back();
    start(i);
  }
  completed_.clear();
  transport_.poll(completed_);
  for (auto req : completed_) complete(static_cast<std::uint32_t>(step_of_request_[req]));
  for (std::size_t k = 0; k < computing_.size();) {
    if (reducer_.done(computing_[k].first)) {
      const auto i = computing_[k].second;
      computing_[k] = computing_.back();
      computing_.pop_back();
      complete(i);
    } else {
      ++k;
    }
  }
  return done_ != before;
}

void Executor::start(std::uint32_t i) {
  const Step& s = prog_->step(i);
  state_[i] = 1;
  const std::size_t bytes = (s.kind == StepKind::Send ? s.src.count : s.dst.count) * call_->elem_size;
  Transport::Request req = -1;
  switch (s.kind) {
    case StepKind::Send:
      req = transport_.isend(s.peer, static_cast<int>(prog_->seq[i]), address(s.src), bytes);
      break;
    case StepKind::Recv:
      req = transport_.irecv(s.peer, static_cast<int>(prog_->seq[i]), address(s.dst), bytes);
      break;
    case StepKind::Reduce: {
      const auto ev = reducer_.reduce(call_->op, call_->type, address(s.src), address(s.aux),
                                      address(s.dst), s.dst.count);
      if (reducer_.done(ev)) complete(i); else computing_.push_back({ev, i});
      return;
    }
    case StepKind::Copy: {
      const auto ev = reducer_.copy(address(s.src), address(s.dst), bytes);
      if (reducer_.done(ev)) complete(i); else computing_.push_back({ev, i});
      return;
    }
  }
  if (static_cast<std::size_t>(req) >= step_of_request_.size()) step_of_request_.resize(req + 64);
  step_of_request_[req] = static_cast<std::int32_t>(i);
}

void Executor::complete(std::uint32_t i) {
  state_[i] = 2;
  ++done_;
  const Program& p = *prog_;
  for (auto k = p.dep_begin[i]; k < p.dep_begin[i + 1]; ++k)
    if (--waiting_[p.dependents[k]] == 0) ready_.push_back(p.dependents[k]);
}

void Executor::timed_out(double waited_s) const {
  // Name the first message still outstanding, preferring a receive: that peer is silent.
  long culprit = -1;
  for (std::size_t i = 0; i < prog_->size(); ++i) {
    if (state_[i] != 1) continue;
    const StepKind k = prog_->step(i).kind;
    if (k == StepKind::Recv) { culprit = static_cast<long>(i); break; }
    if (k == StepKind::Send && culprit < 0) culprit = static_cast<long>(i);
  }
  std::ostringstream o;
  o << "arlab: " << to_string(call_->algorithm) << " allreduce of " << call_->count << " "
    << to_string(call_->type) << " (" << to_string(call_->user_op) << ") on rank " << transport_.rank() << " over "
    << transport_.name() << " timed out: nothing completed for " << static_cast<int>(waited_s)
    << " s (ARLAB_TIMEOUT_S=" << call_->timeout_s << ")";
  if (culprit >= 0) {
    const Step& s = prog_->step(culprit);
    const bool recv = s.kind == StepKind::Recv;
    transport_.suspect(s.peer);
    o << " while waiting for rank " << s.peer << " (" << (recv ? "receive of " : "send of ")
      << (recv ? s.dst.count : s.src.count) * call_->elem_size << " bytes, message "
      << prog_->seq[culprit] << (recv ? " from" : " to") << " that rank)";
    if (recv) {
      const std::string why = transport_.explain_wait(s.peer, static_cast<int>(prog_->seq[culprit]));
      if (!why.empty()) o << "; " << why;
    }
  }
  o << "; the peer may have failed, not called allreduce, or called it with other arguments";
  throw Error(Error::Code::Timeout, o.str());
}

}  // namespace arlab::detail

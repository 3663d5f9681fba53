#include "calibrate/measure.hpp"

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <tuple>
#include <utility>

#include "schedule/schedule.hpp"

namespace arlab::calib {
namespace {

using Clock = std::chrono::steady_clock;
// Microseconds on the steady clock.
double now_us() { return std::chrono::duration<double, std::micro>(Clock::now().time_since_epoch()).count(); }

// The slowest rank's time of f(), in us.
double timed(MPI_Comm comm, const Runnable& f) {
  MPI_Barrier(comm);
  const auto t0 = Clock::now();
  f();
  double t = std::chrono::duration<double, std::micro>(Clock::now() - t0).count(), slowest = 0;
  MPI_Request req;
  MPI_Iallreduce(&t, &slowest, 1, MPI_DOUBLE, MPI_MAX, comm, &req);
  wait_leaving_the_core(req);
  return slowest;
}

constexpr std::size_t kMaxChain = 1 << 14;  // round trips or exchanges in one program
constexpr std::size_t kMaxCalls = 1 << 20;  // reductions or copies in one sample

}  // namespace

void wait_leaving_the_core(MPI_Request& req, int spins) {
  for (int done = 0, tests = 0;; ++tests) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) return;
    if (tests >= spins) std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

// Per probe: two warm-up runs with k = 1 (the first pays first touch, connections and
// registrations; the second picks k so that a sample lasts about timing.sample_ms), then
// timing.samples rounds of one sample of every probe (timing.long_samples of a probe whose
// one run already outlasts sample_ms); the median per unit. A probe whose one run fills a
// sample (k = 1) counts its second warm-up as its first sample: the same run, past its first
// touch (on the emulated 2 x 2 cluster, where 8 MiB exchanges across take 70 ms each, the
// self-calibration took 4.7-5.8 s against 5.3-7.0 s before, over mpi).
std::vector<double> median_us(MPI_Comm comm, Timing timing, const std::vector<Probe>& probes) {
  std::vector<Runnable> runs;
  std::vector<double> units;
  std::vector<int> samples;
  std::vector<std::vector<double>> t(probes.size());
  for (std::size_t i = 0; i < probes.size(); ++i) {
    const Probe& p = probes[i];
    const Runnable once = p.prepare(1);
    timed(comm, once);
    const double second = timed(comm, once);  // the slowest rank's: same on all
    const double warm = std::max(second, 0.01);
    const auto k = static_cast<std::size_t>(
        std::clamp(std::ceil(timing.sample_ms * 1e3 / warm), 1.0, static_cast<double>(p.max_k)));
    runs.push_back(k == 1 ? once : p.prepare(k));
    units.push_back(static_cast<double>(k) * p.units_per_k);
    samples.push_back(samples_for(timing, warm));
    if (k == 1) t[i].push_back(second);
  }
  for (int s = 0; s < timing.samples; ++s)
    for (std::size_t i = 0; i < runs.size(); ++i)
      if (static_cast<int>(t[i].size()) < samples[i]) t[i].push_back(timed(comm, runs[i]));
  std::vector<double> out;
  for (std::size_t i = 0; i < t.size(); ++i) {
    std::nth_element(t[i].begin(), t[i].begin() + t[i].size() / 2, t[i].end());
    out.push_back(t[i][t[i].size() / 2] / units[i]);
  }
  return out;
}

int samples_for(const Timing& timing, double run_us) {
  const bool long_run = timing.long_samples > 0 && run_us >= timing.sample_ms * 1e3;
  return long_run ? std::min(timing.long_samples, timing.samples) : timing.samples;
}

LinkBench::LinkBench(detail::Transport& transport, MPI_Comm control, Timing timing, std::size_t max_bytes,
                     double timeout_s)
    : transport_(transport), executor_(transport, reducer_), control_(control), timing_(timing),
      timeout_s_(timeout_s), send_(max_bytes, std::byte{1}), recv_(max_bytes, std::byte{0}) {}

// Rank a's and rank b's steps; every other rank gets none. Ping-pong and exchange alternate
// between the send buffer (Output) and the receive buffer (Scratch); streams send from the
// first and receive into the second.
detail::Schedule LinkBench::schedule(Pattern pattern, int a, int b, std::size_t bytes, std::size_t k,
                                     bool all_pairs) const {
  using detail::Buffer;
  using detail::ScheduleBuilder;
  ScheduleBuilder s;
  const int me = transport_.rank(), peer = peer_in(a, b, all_pairs);
  if (peer < 0) return s.finish();
  if (all_pairs) {  // played as the pair (a, b) = (first, second)
    a = std::min(me, peer);
    b = std::max(me, peer);
  }
  // Round i sends what round i - 1 received (the two buffers swap roles each round), so a
  // message carries data its sender's CPU has just written (copied in), as an all-reduce
  // step forwards what it received or reduced; never a buffer the receiver has already read
  // and may still hold in its own cache (on shared memory that would time a cache hit).
  const detail::Region first{Buffer::Output, 0, bytes}, second{Buffer::Scratch, 0, bytes};
  const auto src = [&](std::size_t i) { return i % 2 == 0 ? first : second; };
  const auto dst = [&](std::size_t i) { return i % 2 == 0 ? second : first; };
  // A round starts when the previous round's send and receive have both completed, as an
  // all-reduce step's reduction waits for both before the next step reuses the buffers.
  ScheduleBuilder::Deps last;
  ScheduleBuilder::Id reduce = 0;  // ReduceAside: its output is set below
  switch (pattern) {
    case Pattern::PingPong:  // a: send, receive the echo; b: receive, echo what came
      for (std::size_t i = 0; i < k; ++i) {
        if (me == a) {
          const auto sent = s.send(peer, src(i), last);
          last = {sent, s.recv(peer, dst(i), last)};
        } else {
          const auto got = s.recv(peer, dst(i), last);
          last = {got, s.send(peer, dst(i), {got})};
        }
      }
      break;
    case Pattern::Exchange:  // both: send and receive at once
      // A round's send waits for the last round (what it forwards has arrived, its buffer is
      // free); its receive only for the send out of the buffer it fills, so it is posted
      // before the peer's message arrives, as an algorithm posts its receives ahead (the
      // ring's at the start): a message that finds no receive posted takes the slower
      // unexpected-message path, which no algorithm step takes.
      for (std::size_t i = 0; i < k; ++i) {
        const ScheduleBuilder::Deps before_send = last;
        ScheduleBuilder::Deps before_recv;
        if (i > 0) before_recv = {last.front()};
        const auto sent = s.send(peer, src(i), before_send);
        last = {sent, s.recv(peer, dst(i), before_recv)};
      }
      break;
    case Pattern::ReduceInPlace:  // one round (k is 1): send x, receive y, x = x + y (aside: y = x + y)
    case Pattern::ReduceAside: {
      const detail::Region y{Buffer::Scratch, 0, bytes};
      const auto sent = s.send(peer, first, {});
      const auto got = s.recv(peer, y, {});
      reduce = s.reduce(first, y, {sent, got});
      break;
    }
    case Pattern::ReduceLater:  // two rounds: send x, receive y; send w, receive v; x = x + v (aside: v = x + v)
    case Pattern::ReduceLaterAside: {
      const detail::Region w{Buffer::Output, bytes, bytes}, y{Buffer::Scratch, 0, bytes}, v{Buffer::Scratch, bytes, bytes};
      const auto sent = s.send(peer, first, {});
      const auto got = s.recv(peer, y, {});
      const auto sent_w = s.send(peer, w, {sent, got});
      const auto got_v = s.recv(peer, v, {got});
      reduce = s.reduce(first, v, {sent_w, got_v});
      break;
    }
    case Pattern::Stream:
    case Pattern::StreamBothWays:  // k messages at once, from and into consecutive chunks
      for (std::size_t i = 0; i < k; ++i) {
        if (me == a || pattern == Pattern::StreamBothWays) s.send(peer, {Buffer::Output, i * bytes, bytes});
        if (me == b || pattern == Pattern::StreamBothWays) s.recv(peer, {Buffer::Scratch, i * bytes, bytes});
      }
      break;
  }
  auto sched = s.finish();
  // The builder reduces in place (over x, which the peer has read); aside, the sum goes over
  // what was just received, bytes this rank has just written and no peer has read: as hot in
  // its cache as x, so that the two differ by the write-back alone.
  if (pattern == Pattern::ReduceAside || pattern == Pattern::ReduceLaterAside)
    sched.steps[reduce].dst = sched.steps[reduce].aux;
  sched.scratch_count = pattern == Pattern::Stream || pattern == Pattern::StreamBothWays          ? k * bytes
                        : pattern == Pattern::ReduceLater || pattern == Pattern::ReduceLaterAside ? 2 * bytes
                                                                                                  : bytes;
  return sched;
}

void LinkBench::run(const detail::Program& program, std::size_t bytes_used) {
  const detail::Buffers buffers{nullptr, send_.data(), recv_.data()};
  const detail::Call call{Algorithm::Ring, bytes_used, DataType::UInt8, ReduceOp::Sum, ReduceOp::Sum, 1,
                          timeout_s_, 0};
  executor_.run(program, buffers, call);
}

Probe LinkBench::probe(Pattern pattern, int a, int b, std::size_t bytes, bool all_pairs) {
  return {[this, pattern, a, b, bytes, all_pairs](std::size_t k) -> Runnable {
            auto p = std::make_shared<detail::Program>(
                detail::compile(schedule(pattern, a, b, bytes, k, all_pairs), transport_.size()));
            return [this, p, bytes] { run(*p, bytes); };
          },
          pattern == Pattern::PingPong ? 2.0 : 1.0, kMaxChain};
}

std::pair<double, double> LinkBench::alone_and_together(int a, int b, std::size_t bytes) {
  const auto t = median_us(control_, timing_,
                           {probe(Pattern::Exchange, a, b, bytes, false), probe(Pattern::Exchange, a, b, bytes, true)});
  return {t[0], t[1]};
}

LinkBench::Sweep LinkBench::sweep(int a, int b, const std::vector<std::size_t>& sizes, bool all_pairs,
                                  bool pingpong) {
  std::vector<Probe> probes;
  for (std::size_t bytes : sizes)
    for (Pattern pattern : {Pattern::PingPong, Pattern::Exchange})
      if (pattern != Pattern::PingPong || pingpong) probes.push_back(probe(pattern, a, b, bytes, all_pairs));
  const auto t = median_us(control_, timing_, probes);
  Sweep out;
  const std::size_t per_size = pingpong ? 2 : 1;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (pingpong) out.pingpong_us.push_back(t[per_size * i]);
    out.exchange_us.push_back(t[per_size * i + per_size - 1]);
  }
  return out;
}

int LinkBench::peer_in(int a, int b, bool all_pairs) const {
  const int me = transport_.rank();
  if (all_pairs) {  // r <-> r + d in even blocks of d ranks
    const int d = b - a, peer = (me / d) % 2 == 0 ? me + d : me - d;
    return peer < transport_.size() ? peer : -1;
  }
  return me == a ? b : me == b ? a : -1;
}

std::pair<double, double> LinkBench::timed_call(const detail::Program& program, std::size_t bytes_used,
                                                std::size_t rewritten, int i, int peer) {
  // What a call sends written anew first (untimed), as arlab-bench writes its input: the
  // peer would otherwise read lines it already holds from the last call, a cache hit no
  // call of a program that computes its data meets.
  std::memset(send_.data(), i & 0x7f, rewritten);
  // A rank with no part in the call waits for the next one sleeping: spinning in the barrier,
  // even yielding, it would take a core from the pair where ranks outnumber cores, as in the
  // probes' closing collectives (wait_leaving_the_core).
  MPI_Request barrier;
  MPI_Ibarrier(control_, &barrier);
  if (peer < 0) wait_leaving_the_core(barrier, 0);
  else MPI_Wait(&barrier, MPI_STATUS_IGNORE);
  const double entry = now_us();
  run(program, bytes_used);
  return {entry, now_us()};
}

int LinkBench::calls_within(double budget_us, double round_us, double call_us, int most) const {
  const bool long_call = call_us >= timing_.sample_ms * 1e3;
  const int least = long_call ? (timing_.long_samples > 0 ? timing_.long_samples : timing_.samples) : 10;
  return static_cast<int>(std::clamp(budget_us / round_us, static_cast<double>(least),
                                     static_cast<double>(std::max(least, most))));
}

std::vector<double> LinkBench::exchange_calls(int a, int b, const std::vector<std::size_t>& sizes, bool all_pairs,
                                              bool one_clock) {
  std::vector<double> out;
  for (const std::size_t bytes : sizes) {
    const detail::Program one =
        detail::compile(schedule(Pattern::Exchange, a, b, bytes, 1, all_pairs), transport_.size());
    const int peer = peer_in(a, b, all_pairs);
    const auto call = [&](int i) { return timed_call(one, bytes, bytes, i, peer); };
    call(0);  // first touch, registrations
    const double start = now_us();
    const auto [e0, x0] = call(1);
    // The call, and the round with its barrier (a few us on one host, 100 us and more across
    // a network), the slowest rank's: every rank makes as many calls.
    std::array<double, 2> once{x0 - e0, now_us() - start};
    MPI_Allreduce(MPI_IN_PLACE, once.data(), 2, MPI_DOUBLE, MPI_MAX, control_);
    // Half the samples' time per size.
    const int calls = calls_within(timing_.samples * timing_.sample_ms * 1e3 / 2, once[1], once[0], 20000);
    std::vector<double> entry(calls), exit(calls), mine(calls);
    for (int i = 0; i < calls; ++i) {
      std::tie(entry[i], exit[i]) = call(i);
      mine[i] = exit[i] - entry[i];
      // A rank outside the pair counts for nothing: between its two clock readings around an
      // empty program the scheduler may run another process for a whole slice where ranks
      // outnumber cores.
      if (peer < 0) entry[i] = exit[i] = mine[i] = 0;
    }
    std::vector<double> last_entry(calls), last_exit(calls), slowest(calls), t(calls);
    MPI_Allreduce(entry.data(), last_entry.data(), calls, MPI_DOUBLE, MPI_MAX, control_);
    MPI_Allreduce(exit.data(), last_exit.data(), calls, MPI_DOUBLE, MPI_MAX, control_);
    MPI_Allreduce(mine.data(), slowest.data(), calls, MPI_DOUBLE, MPI_MAX, control_);
    for (int i = 0; i < calls; ++i) t[i] = one_clock ? last_exit[i] - last_entry[i] : slowest[i];
    std::nth_element(t.begin(), t.begin() + calls / 2, t.end());
    out.push_back(t[calls / 2]);
  }
  return out;
}

LinkBench::Stream LinkBench::stream(int a, int b, std::size_t chunk, std::size_t count) {
  std::vector<Probe> probes;
  for (Pattern pattern : {Pattern::Stream, Pattern::StreamBothWays}) {
    auto p = std::make_shared<detail::Program>(
        detail::compile(schedule(pattern, a, b, chunk, count), transport_.size()));
    probes.push_back({[this, p, bytes = chunk * count](std::size_t k) -> Runnable {
                        return [this, p, k, bytes] {
                          for (std::size_t i = 0; i < k; ++i) run(*p, bytes);
                        };
                      },
                      1.0, kMaxChain});
  }
  const auto t = median_us(control_, timing_, probes);
  const auto bytes = static_cast<double>(chunk * count);
  return {bytes / t[0] * 1e-3, bytes / t[1] * 1e-3};  // bytes per us -> GB/s
}

LinkBench::Writeback LinkBench::writeback(int a, int b, const std::vector<std::size_t>& sizes, bool all_pairs) {
  // Timed as calls, as a user's all-reduce runs: before each, the rank writes its send buffers
  // anew (fresh gradients; untimed), then a barrier, then the rounds. Chained rounds would not
  // do: aside, the round after next writes over the buffer sent before, so the write-back is
  // paid in both variants; per call, aside pays it only in the untimed rewrite, as an
  // out-of-place all-reduce leaves it to the user's next write of its input.
  constexpr std::array kPatterns{Pattern::ReduceInPlace, Pattern::ReduceAside, Pattern::ReduceLater,
                                 Pattern::ReduceLaterAside};
  Writeback out;
  for (std::size_t bytes : sizes) {
    std::vector<detail::Program> programs;
    for (const Pattern pattern : kPatterns)
      programs.push_back(detail::compile(schedule(pattern, a, b, bytes, 1, all_pairs), transport_.size()));
    const int peer = peer_in(a, b, all_pairs);
    const auto call = [&](const detail::Program& p, int i) {
      const auto [entry, exit] = timed_call(p, bytes, 2 * bytes, i, peer);
      return exit - entry;
    };
    for (const auto& p : programs) call(p, 0);  // first touch, registrations
    // One round of the four, timed alone (the calls) and whole (with the rewrites and barriers),
    // the slowest rank's: every rank makes as many calls.
    std::array<double, 2> once{0, now_us()};
    for (const auto& p : programs) once[0] += call(p, 1);
    once[1] = now_us() - once[1];
    MPI_Allreduce(MPI_IN_PLACE, once.data(), 2, MPI_DOUBLE, MPI_MAX, control_);
    const std::size_t n = programs.size();
    // Half the samples' time per size for the four, at most 150 calls of each: the difference
    // is 10-30% of a call, which the medians of 100-150 calls hold within a few percent.
    const int calls = calls_within(timing_.samples * timing_.sample_ms * 1e3 / 2, once[1], once[0] / n, 150);
    std::vector<double> mine(n * static_cast<std::size_t>(calls)), slowest(mine.size());
    for (int i = 0; i < calls; ++i)  // alternating, so that a drift of the machine hits them alike
      for (std::size_t v = 0; v < n; ++v) {
        const double t = call(programs[v], i);
        mine[n * i + v] = peer < 0 ? 0.0 : t;  // a rank outside the pair counts for nothing, as above
      }
    MPI_Allreduce(mine.data(), slowest.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MAX, control_);
    std::vector<std::vector<double>> t(n);
    for (std::size_t i = 0; i < slowest.size(); ++i) t[i % n].push_back(slowest[i]);
    for (auto& v : t) std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
    out.in_place_us.push_back(t[0][t[0].size() / 2]);
    out.aside_us.push_back(t[1][t[1].size() / 2]);
    out.later_us.push_back(t[2][t[2].size() / 2]);
    out.later_aside_us.push_back(t[3][t[3].size() / 2]);
  }
  return out;
}

ComputeBench::ComputeBench(MPI_Comm control, Timing timing, std::size_t max_bytes)
    : control_(control), timing_(timing), a_(max_bytes / sizeof(float), 1.0f), b_(a_.size(), 2.0f),
      out_(a_.size(), 0.0f) {}

ComputeBench::Sweep ComputeBench::sweep(const std::vector<std::size_t>& sizes, bool copies) {
  std::vector<Probe> probes;
  for (std::size_t bytes : sizes) {
    probes.push_back({[this, n = bytes / sizeof(float)](std::size_t k) -> Runnable {
                        return [this, n, k] {
                          for (std::size_t i = 0; i < k; ++i)
                            reducer_.reduce(ReduceOp::Sum, DataType::Float32, a_.data(), b_.data(), out_.data(), n);
                        };
                      },
                      1.0, kMaxCalls});
    if (!copies) continue;
    probes.push_back({[this, bytes](std::size_t k) -> Runnable {
                        return [this, bytes, k] {
                          for (std::size_t i = 0; i < k; ++i) reducer_.copy(a_.data(), out_.data(), bytes);
                        };
                      },
                      1.0, kMaxCalls});
  }
  const auto t = median_us(control_, timing_, probes);
  Sweep out;
  const std::size_t per_size = copies ? 2 : 1;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    out.reduce_us.push_back(t[per_size * i]);
    if (copies) out.copy_us.push_back(t[per_size * i + 1]);
  }
  return out;
}

LinkBench::Sweep sweep_within_time(const std::function<LinkBench::Sweep(const std::vector<std::size_t>&)>& sweep,
                                   const std::vector<std::size_t>& sizes, double max_ms,
                                   std::vector<std::size_t>& measured) {
  measured.clear();
  for (std::size_t n : sizes)
    if (n <= (std::size_t{1} << 20)) measured.push_back(n);
  if (measured.empty() && !sizes.empty()) measured.push_back(sizes.front());
  LinkBench::Sweep out = sweep(measured);
  for (std::size_t n : sizes) {
    if (n <= measured.back()) continue;
    const double per_byte = out.exchange_us.back() / static_cast<double>(measured.back());
    if (per_byte * static_cast<double>(n) > max_ms * 1e3) break;
    const LinkBench::Sweep one = sweep({n});
    measured.push_back(n);
    out.exchange_us.push_back(one.exchange_us.front());
    if (!one.pingpong_us.empty()) out.pingpong_us.push_back(one.pingpong_us.front());
  }
  return out;
}

}  // namespace arlab::calib

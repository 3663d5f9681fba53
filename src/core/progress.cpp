#include "core/progress.hpp"

#include <algorithm>
#include <thread>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include "exec/idle_wait.hpp"
#include "transport/transport.hpp"

namespace arlab::detail {

using Clock = std::chrono::steady_clock;

void AsyncOp::complete(std::exception_ptr error) noexcept {
  start_ = nullptr;  // what it captured goes now, not with the last Request
  std::lock_guard lock(m_);
  error_ = error;
  done_ = true;
  cv_.notify_all();
}

bool AsyncOp::done() const {
  std::lock_guard lock(m_);
  return done_;
}

void AsyncOp::wait() const {
  std::unique_lock lock(m_);
  if (done_) return;
  ++waiters_;
  cv_.wait(lock, [&] { return done_; });
  --waiters_;
}

void AsyncOp::rethrow() const {
  std::exception_ptr error;
  {
    std::lock_guard lock(m_);
    error = error_;
  }
  if (error) std::rethrow_exception(error);
}

Progress::~Progress() {
  {
    std::lock_guard lock(m_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();  // after it has run the whole queue
}

std::shared_ptr<AsyncOp> Progress::enqueue(StartFn start, int lane, bool exclusive) {
  auto op = std::make_shared<AsyncOp>(std::move(start), lane, exclusive, waiters_);
  {
    std::lock_guard lock(m_);
    queue_.push_back(op);
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  }
  cv_.notify_all();
  return op;
}

void Progress::run(const StartFn& start, int lane, bool exclusive) {
  {
    std::unique_lock lock(m_);
    if (queue_.empty() && !in_hand_ && !direct_) {
      direct_ = true;
      lock.unlock();
      struct Release {
        Progress& p;
        ~Release() {
          {
            std::lock_guard lock(p.m_);
            p.direct_ = false;
          }
          p.cv_.notify_all();
        }
      } release{*this};
      start(true);
      return;
    }
  }
  auto op = enqueue([&start](bool to_end) { return start(to_end); }, lane, exclusive);
  op->wait();
  op->rethrow();
}

void Progress::admit(std::unique_lock<std::mutex>& lock) {
  while (!queue_.empty() && !direct_) {
    const AsyncOp& front = *queue_.front();
    const bool lane_busy = std::any_of(active_.begin(), active_.end(),
                                       [&](const Active& a) { return a.op->lane_ == front.lane_; });
    if (front.exclusive_ ? !active_.empty() : lane_busy) return;  // the ones after it wait too
    std::shared_ptr<AsyncOp> op = std::move(queue_.front());
    queue_.pop_front();
    in_hand_ = true;
    lock.unlock();
    std::unique_ptr<InFlight> run;
    std::exception_ptr error;
    try {
      run = op->start_(false);
    } catch (...) {
      error = std::current_exception();
    }
    lock.lock();
    if (run) {
      active_.push_back({op, std::move(run), Clock::now()});
    } else {
      if (active_.empty()) in_hand_ = false;  // a blocking call after it may run directly
      op->complete(error);
    }
  }
}

void Progress::end(std::size_t k, std::exception_ptr error) {
  ended_.emplace_back(std::move(active_[k].op), error);
  active_[k] = std::move(active_.back());
  active_.pop_back();
}

bool Progress::advance_all() {
  bool any = false;
  for (std::size_t k = 0; k < active_.size();) {
    InFlight& run = *active_[k].run;
    bool finished = false;
    try {
      if (run.advance()) active_[k].moved = any = true;
      finished = run.finished();
    } catch (...) {
      run.abandon();
      end(k, std::current_exception());
      continue;
    }
    if (!finished) {
      ++k;
      continue;
    }
    std::exception_ptr error;
    try {
      run.finish();
    } catch (...) {
      error = std::current_exception();
    }
    end(k, error);
  }
  return any;
}

void Progress::check_timeouts(Clock::time_point now) {
  for (std::size_t k = 0; k < active_.size();) {
    Active& a = active_[k];
    if (a.moved) a.since = now, a.moved = false;
    const double waited = std::chrono::duration<double>(now - a.since).count();
    if (waited <= a.run->timeout_s()) {
      ++k;
      continue;
    }
    try {
      a.run->timed_out(waited);
    } catch (...) {
      a.run->abandon();
      end(k, std::current_exception());
    }
  }
}

void Progress::report_ended() {
  if (active_.empty()) {
    std::lock_guard lock(m_);
    in_hand_ = false;
  }
  for (auto& [op, error] : ended_) op->complete(error);
  ended_.clear();
}

namespace {
// Naps as long as asked: the default timer slack (50 us) would lengthen each short sleep.
// (The thread no longer asks Linux 6.12+'s EEVDF scheduler for a short time slice through
// sched_setattr: a gain never measured on its own, beside stalls in which a CPU left runnable
// threads unrun for up to a minute; see docs/ddp.md.)
void ask_for_exact_naps() noexcept {
#ifdef __linux__
  (void)prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);  // ns
#endif
}
}  // namespace

void Progress::loop() {
  ask_for_exact_naps();
  unsigned rounds = 0;
  IdleWait wait(64);  // the idle stretch starts at the 64th idle round
  std::unique_lock lock(m_);
  for (;;) {
    admit(lock);
    if (active_.empty()) {
      wait.moved();
      in_hand_ = false;
      cv_.notify_all();
      if (stop_ && queue_.empty()) return;  // stopping, nothing left
      cv_.wait(lock, [&] { return (!queue_.empty() && !direct_) || (stop_ && queue_.empty()); });
      continue;
    }
    lock.unlock();
    const bool moved = advance_all();
    // Idle for 64 rounds: rest between polls as idle_wait.hpp says (naps from the start while
    // no caller waits; only after a long wait while one does). Otherwise spin, looking at the
    // clock (the timeouts) only when IdleWait reads it, or every 4096 busy rounds.
    ++rounds;
    const bool caller_waits = waiters_.load(std::memory_order_relaxed) > 0;
    idle_yield_allowed = caller_waits;  // otherwise this thread naps (transport/transport.hpp)
    IdleWait::Round r;
    if (moved) wait.moved();
    else if (!active_.empty()) r = wait.idle_round(caller_waits);
    if (r.clock_read || rounds % 4096 == 0) check_timeouts(r.clock_read ? r.now : Clock::now());
    if (!ended_.empty()) report_ended();
    if (r.nap_s > 0) std::this_thread::sleep_for(std::chrono::duration<double>(r.nap_s));
    lock.lock();
  }
}

}  // namespace arlab::detail

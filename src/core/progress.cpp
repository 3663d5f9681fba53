#include "core/progress.hpp"

#include <cstdint>
#ifdef __linux__
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace arlab::detail {

namespace {
thread_local const std::atomic<int>* this_threads_waiters = nullptr;  // set by Progress::loop
}  // namespace

const std::atomic<int>* progress_waiters() noexcept { return this_threads_waiters; }

void AsyncOp::run() noexcept {
  std::exception_ptr error;
  try {
    job_();
  } catch (...) {
    error = std::current_exception();
  }
  job_ = nullptr;  // what it captured goes now, not with the last Request
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

std::shared_ptr<AsyncOp> Progress::enqueue(std::function<void()> job) {
  auto op = std::make_shared<AsyncOp>(std::move(job), waiters_);
  {
    std::lock_guard lock(m_);
    queue_.push_back(op);
    if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
  }
  cv_.notify_all();
  return op;
}

void Progress::run(const std::function<void()>& job) {
  {
    std::unique_lock lock(m_);
    if (queue_.empty() && !busy_) {
      busy_ = true;
      lock.unlock();
      struct Release {
        Progress& p;
        ~Release() {
          {
            std::lock_guard lock(p.m_);
            p.busy_ = false;
          }
          p.cv_.notify_all();
        }
      } release{*this};
      job();
      return;
    }
  }
  auto op = enqueue([&job] { job(); });
  op->wait();
  op->rethrow();
}

namespace {
// Asks the scheduler for a short time slice for this thread (Linux 6.12 and later, EEVDF: a
// fair task's sched_runtime is its slice, and a waking task with a shorter slice may preempt
// the one running). The progress thread wakes for moments beside a caller that computes; with
// the default slice it would wait for the computation's slice to end each time. Elsewhere the
// request is refused or ignored, and nothing changes.
void ask_for_short_slices() noexcept {
#ifdef __linux__
  struct {
    std::uint32_t size, policy;
    std::uint64_t flags;
    std::int32_t nice;
    std::uint32_t priority;
    std::uint64_t runtime, deadline, period;
  } attr{};
  attr.size = sizeof attr;
  attr.policy = 0;  // SCHED_OTHER
  attr.nice = 0;
  attr.runtime = 100'000;  // ns: the shortest slice the kernel accepts
  (void)syscall(SYS_sched_setattr, 0, &attr, 0u);
  (void)prctl(PR_SET_TIMERSLACK, 1000UL, 0UL, 0UL, 0UL);  // ns: naps as long as asked
#endif
}
}  // namespace

void Progress::loop() {
  this_threads_waiters = &waiters_;
  ask_for_short_slices();
  std::unique_lock lock(m_);
  for (;;) {
    cv_.wait(lock, [&] { return (!queue_.empty() && !busy_) || (stop_ && queue_.empty()); });
    if (queue_.empty()) return;  // stopping, nothing left
    auto op = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    op->run();
    lock.lock();
    busy_ = false;
    cv_.notify_all();
  }
}

}  // namespace arlab::detail

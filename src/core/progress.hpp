// Progress: a communicator's collectives run one at a time, in the order they were issued.
//
// allreduce_async queues its collective here and returns; a thread owned by the communicator
// (started on the first asynchronous call, so blocking-only use never has one) runs the queue
// front to back, so the caller need not poll. A blocking call runs on the caller's thread
// when nothing is queued or running (no hand-over, no extra latency), and otherwise takes its
// place at the back of the queue and waits: every rank issues its calls in the same order
// (as MPI requires of collectives), so every rank runs them in the same order, and one
// collective's messages never meet another's. One collective at a time also bounds the
// scratch memory: the communicator's one scratch buffer, however many requests are queued.
//
// The destructor runs what is still queued (each bounded by the communicator's timeout), then
// stops the thread: a request outlives its communicator only as a finished one.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

namespace arlab::detail {

// On a communicator's progress thread, its queue's count of waiting callers
// (Progress::waiters); nullptr on any other thread.
const std::atomic<int>* progress_waiters() noexcept;

// One queued collective: what runs it, and how it ended.
class AsyncOp {
 public:
  // `waiters` counts the threads blocked in wait() on any op of the queue.
  AsyncOp(std::function<void()> job, std::atomic<int>& waiters) : job_(std::move(job)), waiters_(waiters) {}
  void run() noexcept;  // the job, its exception kept; then done
  bool done() const;
  void wait() const;  // until done
  // After done(): rethrows the job's exception, if it threw.
  void rethrow() const;

 private:
  std::function<void()> job_;
  std::atomic<int>& waiters_;
  mutable std::mutex m_;
  mutable std::condition_variable cv_;
  bool done_ = false;
  std::exception_ptr error_;
};

class Progress {
 public:
  Progress() = default;
  ~Progress();
  Progress(const Progress&) = delete;
  Progress& operator=(const Progress&) = delete;

  // Queues `job` behind everything issued before it; the thread runs it.
  std::shared_ptr<AsyncOp> enqueue(std::function<void()> job);
  // Runs `job` in issue order, and returns (or throws) when it has: at once on this thread
  // when nothing is queued or running, else through the queue.
  void run(const std::function<void()>& job);

 private:
  void loop();

  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<AsyncOp>> queue_;
  bool busy_ = false;  // a job is running (on the thread, or a blocking one on its caller's)
  bool stop_ = false;
  // Threads blocked waiting for a queued job: while none is, the caller computes beside the
  // thread, whose collective then sleeps while it waits (Call::callers_waiting).
  std::atomic<int> waiters_ = 0;
  std::thread thread_;
};

}  // namespace arlab::detail

// Progress: a communicator's collectives in flight, several at once, started in issue order.
//
// allreduce_async queues its collective here and returns; a thread owned by the communicator
// (started on the first asynchronous call, so blocking-only use never has one) starts the
// queued collectives front to back and advances every one in flight in turn, so the caller
// need not poll. Each collective runs on a lane: a transport of its own, over a duplicate of
// the communicator, so the messages of collectives in flight at once never meet. The engine
// gives call n of the issue order lane n mod the lane count, the same on every rank (issue
// order must be the same on every rank, as MPI requires of collectives), and a collective
// starts only when the one before it on its lane has finished, so each lane runs one at a
// time and the scratch memory is bounded by the lanes' however many requests are queued.
//
// Some collectives cannot be advanced in pieces (the mpi and nccl baselines, device buffers):
// they are exclusive, started once nothing else is in flight, and run to their end. Every
// rank has then finished everything issued before (its sends complete, its receives done), so
// no peer still waits for this rank's progress on another lane.
//
// A blocking call runs on the caller's own thread when nothing is queued or in flight (no
// hand-over, no extra latency), and otherwise is queued like the others and waited for.
//
// While no caller waits, the thread sleeps in short naps when nothing completes, so that the
// caller's computation keeps the CPU when threads outnumber the cores, and the transports do
// not yield the core (a yield would leave it behind the computation for a time slice); once a
// caller waits, it spins, yields as they do, and after 10 ms sleeps, as a blocking call does
// (exec/idle_wait.hpp).
//
// The destructor runs what is still queued (each bounded by the communicator's timeout), then
// stops the thread: a request outlives its communicator only as a finished one.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace arlab::detail {

// A collective that has started and is advanced a round at a time, beside others.
class InFlight {
 public:
  virtual ~InFlight() = default;
  // One round of progress; whether anything completed.
  virtual bool advance() = 0;
  virtual bool finished() const = 0;
  // After finished(): ends the run (the Avg division, the transport's end of run).
  virtual void finish() = 0;
  // After a failure: abandons what is in flight.
  virtual void abandon() noexcept = 0;
  virtual double timeout_s() const = 0;
  // Error(Timeout) naming the peer it waits for.
  [[noreturn]] virtual void timed_out(double waited_s) const = 0;
};

// Starts a collective. `to_end`: run it to its end here and return nullptr (the blocking
// call on its caller's thread); otherwise return what remains to advance, or nullptr when it
// finished at once. Exclusive collectives always run to their end.
using StartFn = std::function<std::unique_ptr<InFlight>(bool to_end)>;

// One queued collective, and how it ended.
class AsyncOp {
 public:
  // `waiters` counts the threads blocked in wait() on any op of the queue.
  AsyncOp(StartFn start, int lane, bool exclusive, std::atomic<int>& waiters)
      : start_(std::move(start)), lane_(lane), exclusive_(exclusive), waiters_(waiters) {}
  bool done() const;
  void wait() const;  // until done
  // After done(): rethrows the job's exception, if it threw.
  void rethrow() const;

 private:
  friend class Progress;
  void complete(std::exception_ptr error) noexcept;

  StartFn start_;
  const int lane_;
  const bool exclusive_;
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

  // Queues a collective on `lane` behind everything issued before it; the thread runs it.
  std::shared_ptr<AsyncOp> enqueue(StartFn start, int lane, bool exclusive);
  // Runs a collective in issue order, and returns (or throws) when it has: at once on this
  // thread when nothing is queued or in flight, else through the queue.
  void run(const StartFn& start, int lane, bool exclusive);

 private:
  struct Active {
    std::shared_ptr<AsyncOp> op;
    std::unique_ptr<InFlight> run;
    std::chrono::steady_clock::time_point since;  // of its last completion, as last looked at
    bool moved = false;                           // completed something since `since`
  };
  void loop();
  // Starts the queue's front collectives while their lanes are free (lock held on entry and
  // exit, released while starting).
  void admit(std::unique_lock<std::mutex>& lock);
  // One round over everything in flight; whether anything completed. What ended goes to ended_.
  bool advance_all();
  // Fails the ones that have waited longer than their timeout (to ended_).
  void check_timeouts(std::chrono::steady_clock::time_point now);
  // Takes active_[k] out; its collective ended with `error` (none: it finished).
  void end(std::size_t k, std::exception_ptr error);
  // Tells the waiters of ended_, after clearing in_hand_ when nothing is left in flight (so
  // that a blocking call that follows runs directly).
  void report_ended();

  std::mutex m_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<AsyncOp>> queue_;
  std::vector<Active> active_;  // the thread's own
  std::vector<std::pair<std::shared_ptr<AsyncOp>, std::exception_ptr>> ended_;  // the thread's own
  bool direct_ = false;         // a blocking call runs on its caller's thread
  bool in_hand_ = false;        // the thread has collectives started or in flight
  bool stop_ = false;
  // Threads blocked waiting for a queued collective: while none is, the thread naps.
  std::atomic<int> waiters_ = 0;
  std::thread thread_;
};

}  // namespace arlab::detail

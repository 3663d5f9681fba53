#include "core/progress.hpp"

namespace arlab::detail {

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
  cv_.wait(lock, [&] { return done_; });
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
  auto op = std::make_shared<AsyncOp>(std::move(job));
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

void Progress::loop() {
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

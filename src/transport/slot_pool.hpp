// SlotPool: small integer ids for a transport's outstanding requests, reused as they
// complete. When none is outstanding the pool starts again from 0, so ids stay dense and a
// scan over [0, high()) stays short.
#pragma once

#include <vector>

namespace arlab::detail {

class SlotPool {
 public:
  // A free id; a new one (== the old high()) when none is free.
  int acquire() {
    ++active_;
    if (free_.empty()) return high_++;
    const int id = free_.back();
    free_.pop_back();
    return id;
  }
  void release(int id) {
    if (--active_ == 0) {
      free_.clear();
      high_ = 0;
    } else {
      free_.push_back(id);
    }
  }
  // Forget every id (after the requests were abandoned).
  void reset() {
    free_.clear();
    high_ = active_ = 0;
  }
  int high() const { return high_; }      // ids in use are below this
  int active() const { return active_; }  // ids acquired and not released

 private:
  std::vector<int> free_;
  int high_ = 0, active_ = 0;
};

}  // namespace arlab::detail

// arlab-bench progress on stderr (rank 0): the step, size, algorithm, transport and section
// being measured, the time elapsed and an estimate of the time left. On a terminal one line
// redrawn in place; otherwise (--progress into a file or pipe) a line at most every 2 s.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace arlab::bench {

// Whether stderr reaches a terminal: our own stderr, or, since Open MPI hands its ranks a
// pipe for stderr, that of the parent process (mpirun) when its stderr is a terminal (Linux).
bool stderr_is_terminal();

class Progress {
 public:
  // Disabled: every call does nothing.
  Progress(bool enabled, bool terminal) : enabled_(enabled), terminal_(terminal) {}

  // The whole sweep: `steps` measurements whose costs add up to `weight` (any unit).
  void plan(std::size_t steps, double weight);
  // Before a measurement of cost `weight`, described by `what`.
  void begin(const std::string& what, double weight);
  // After it (also when it failed).
  void end();
  // A step that will not run after all (its algorithm was dropped).
  void forget(double weight);
  // Erases the line before other output goes to the terminal.
  void clear();

 private:
  void draw(const std::string& what);

  bool enabled_, terminal_;
  bool drawn_ = false;
  std::size_t steps_ = 0, done_ = 0;
  double total_ = 0, finished_ = 0, current_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::chrono::steady_clock::time_point last_draw_{};
};

}  // namespace arlab::bench

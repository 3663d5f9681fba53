#include "progress.hpp"

#include <unistd.h>

#include <cstdio>
#include <string>

namespace arlab::bench {
namespace {

std::string format_duration(double s) {
  char buf[32];
  if (s < 60) std::snprintf(buf, sizeof buf, "%.0fs", s);
  else if (s < 3600) std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  else std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s) / 3600, static_cast<int>(s) / 60 % 60);
  return buf;
}

}  // namespace

bool stderr_is_terminal() {
  if (isatty(STDERR_FILENO)) return true;
  char link[256];
  const std::string path = "/proc/" + std::to_string(getppid()) + "/fd/2";
  const ssize_t n = readlink(path.c_str(), link, sizeof link - 1);
  if (n <= 0) return false;
  const std::string target(link, static_cast<std::size_t>(n));
  return target.rfind("/dev/pts/", 0) == 0 || target.rfind("/dev/tty", 0) == 0;
}

void Progress::plan(std::size_t steps, double weight) {
  steps_ = steps;
  total_ = weight;
  start_ = std::chrono::steady_clock::now();
}

void Progress::begin(const std::string& what, double weight) {
  current_ = weight;
  if (enabled_) draw(what);
}

void Progress::end() {
  ++done_;
  finished_ += current_;
  current_ = 0;
}

void Progress::forget(double weight) {
  if (steps_ > 0) --steps_;
  total_ -= weight;
}

void Progress::clear() {
  if (!enabled_ || !terminal_ || !drawn_) return;
  std::fputs("\r\033[K", stderr);
  std::fflush(stderr);
  drawn_ = false;
}

void Progress::draw(const std::string& what) {
  using clock = std::chrono::steady_clock;
  const clock::time_point now = clock::now();
  const auto min_gap = terminal_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(2000);
  if (done_ > 0 && done_ + 1 < steps_ && now - last_draw_ < min_gap) return;
  last_draw_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  // The time left, from the rate so far: cost units finished per second.
  std::string left = "?";
  if (finished_ > 0 && total_ > finished_) left = format_duration(elapsed * (total_ - finished_) / finished_).insert(0, 1, '~');
  char head[64];
  std::snprintf(head, sizeof head, "[%zu/%zu] ", done_ + 1, steps_);
  const std::string text = "arlab-bench " + std::string(head) + what + "  elapsed " + format_duration(elapsed) +
                           ", left " + left;
  if (terminal_) {
    std::fprintf(stderr, "\r%s\033[K\r", text.c_str());  // cursor left at column 0: a table line overwrites it
    drawn_ = true;
  } else {
    std::fprintf(stderr, "%s\n", text.c_str());
  }
  std::fflush(stderr);
}

}  // namespace arlab::bench

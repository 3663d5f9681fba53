#include "results.hpp"

namespace arlab::bench {

std::string label(const Line& l) {
  if (l.algorithm != Algorithm::Auto || !(l.pick || l.pick_in_place)) return to_string(l.algorithm);
  const Algorithm first = l.pick.value_or(*l.pick_in_place), second = l.pick_in_place.value_or(first);
  std::string text = "auto(";
  text += to_string(first);
  if (second != first) {
    text += '/';
    text += to_string(second);
  }
  text += ")";
  return text;
}

const std::optional<double>& predicted(const Line& l, bool in_place) {
  return in_place ? l.predicted_in_place_us : l.predicted_us;
}

std::optional<Algorithm> pick(const Line& l, bool in_place) { return in_place ? l.pick_in_place : l.pick; }

bool is_baseline(Algorithm a) { return a == Algorithm::Mpi || a == Algorithm::Nccl; }

std::string transport_label(const Line& l) { return is_baseline(l.algorithm) ? "native" : to_string(l.transport); }

std::optional<double> err_pct(const Line& l, const Section& s, bool in_place) {
  const std::optional<double>& pred = predicted(l, in_place);
  if (!pred || !(s.time_us > 0)) return std::nullopt;
  return 100.0 * (s.time_us - *pred) / s.time_us;
}

double algbw_GBps(std::size_t bytes, double time_us) {
  if (!(time_us > 0)) return 0;
  return static_cast<double>(bytes) / (time_us * 1e3);  // bytes / (us * 1e-6) / 1e9
}

double busbw_GBps(double algbw, int ranks) {
  if (ranks <= 1) return 0;
  return algbw * 2.0 * (ranks - 1) / ranks;
}

std::string format_bytes(std::size_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (unit < 4 && bytes >= 1024 && bytes % 1024 == 0) {
    bytes /= 1024;
    ++unit;
  }
  return std::to_string(bytes) + kUnits[unit];
}

}  // namespace arlab::bench

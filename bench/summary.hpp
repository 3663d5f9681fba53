// arlab-bench footer: wrong values (and where), the average bus bandwidth of each algorithm x
// transport, the fastest at each size against the model's pick, and the ARLAB_BENCH_MIN_BUSBW
// verdict.
#pragma once

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "results.hpp"

namespace arlab::bench {

struct Summary {
  std::uint64_t wrong = 0;               // wrong elements over every section
  std::vector<std::string> wrong_where;  // "ring over ucx, float sum, in-place: 8B, 32B"
  struct Average {
    std::string series;                  // "ring over mpi"
    double busbw_GBps = 0;               // over every size, type, op and section
  };
  std::vector<Average> averages;         // in the order the lines came
  std::optional<Average> best;           // the highest average
};

Summary summarize(const std::vector<Line>&);

// The machine's state over the sweep (calibrate/state_probe.hpp): the probes taken before the
// sections, against the state each line's model was calibrated in, and how many sections ran
// in another state (their err% compares two machines); "" when nothing was probed. One line,
// without the leading "# ". `crowded`: a host's ranks outnumber its cores, where the probe
// spreads 2x within one state too (the note says so).
std::string state_note(const std::vector<Line>&, bool crowded = false);

// "# Out of bounds values", the averages, the fastest per size and the state note; `checked`
// says whether -c 1 counted wrong values at all.
void print_footer(std::FILE*, const Summary&, const std::vector<Line>&, bool checked, bool crowded = false);

}  // namespace arlab::bench

// arlab-bench --plot: runs bench/plot.py on the --json output with Debian's matplotlib.
//   interpreter: ARLAB_BENCH_PYTHON, else /usr/bin/python3 (Debian's, which has
//                python3-matplotlib), else python3 on PATH
//   script:      ARLAB_BENCH_PLOT, else plot.py beside the arlab-bench binary (the build
//                copies it there), else <prefix>/share/arlab/plot.py, else the source tree's
#pragma once

#include <string>

namespace arlab::bench {

struct Plotter {
  std::string python;
  std::string script;
};

Plotter find_plotter();

// Whether the interpreter imports matplotlib and the script exists; *why says what is missing.
// Spawns a process: call before any communicator exists.
bool plotter_ready(const Plotter&, std::string* why);

// Draws json into image; returns the script's exit status (127 when it cannot start).
int run_plotter(const Plotter&, const std::string& json, const std::string& image);

}  // namespace arlab::bench

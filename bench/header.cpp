#include "header.hpp"

namespace arlab::bench {
namespace {

std::string join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string plural(int n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

}  // namespace

std::string quote_command(int argc, const char* const* argv) {
  std::string out;
  for (int i = 0; i < argc; ++i) {
    const std::string w = argv[i];
    const bool plain = !w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                                         "0123456789-_./=:,+%@") == std::string::npos;
    if (i) out.push_back(' ');
    if (plain) {
      out += w;
      continue;
    }
    out.push_back('\'');
    for (char c : w) {
      if (c == '\'') out += "'\\''";  // close, escaped quote, reopen
      else out.push_back(c);
    }
    out.push_back('\'');
  }
  return out;
}

void print_header(std::FILE* out, const RunInfo& r, const HeaderExtras& x) {
  std::fprintf(out, "# arlab-bench %s: all-reduce on %s on %s\n", r.version.c_str(), plural(r.ranks, "rank").c_str(),
               plural(r.hosts, "host").c_str());
  std::fprintf(out, "# command: %s\n", r.command.c_str());
  std::fprintf(out, "# transports: %s%s%s\n", join(r.transports).c_str(), x.settings.empty() ? "" : "; ",
               x.settings.c_str());
  std::vector<std::string> algorithms;
  for (const std::string& a : r.algorithms)
    algorithms.push_back(a == "mpi" ? "mpi (MPI_Allreduce, once per size)" : a == "auto" ? "auto (the model's pick)" : a);
  std::fprintf(out, "# algorithms: %s\n", join(algorithms).c_str());
  if (r.machines.empty()) {
    std::fprintf(out, "# model: '%s' (%s), %s as %s of %s%s%s\n", r.topology_name.c_str(), r.topology_source.c_str(),
                 plural(r.ranks, "rank").c_str(), plural(r.model_nodes, "node").c_str(),
                 plural(r.model_ranks_per_node, "rank").c_str(), x.model_note.empty() ? "" : "; ",
                 x.model_note.c_str());
  } else {
    std::fprintf(out, "# model: each transport's machine (no topology file), %s:\n", plural(r.ranks, "rank").c_str());
    for (const auto& [transport, machine] : r.machines)
      std::fprintf(out, "#   %s: %s\n", transport.c_str(), machine.c_str());
  }
  std::fprintf(out, "# sizes: %s; type: %s; op: %s; sections: %s\n", x.sizes.c_str(), join(r.dtypes).c_str(),
               join(r.ops).c_str(), x.sections.c_str());
  const std::string timed = r.iters_fill ? "at least " + std::to_string(r.iters) + " (and enough for 1 ms, at most 1000)"
                                         : std::to_string(r.iters);
  std::fprintf(out, "# iterations: %d warm-up, %s timed per line and section%s; check: %s\n", r.warmup, timed.c_str(),
               r.rounds > 1 ? (", in " + std::to_string(r.rounds) + " interleaved rounds").c_str() : "", r.check ? "one more call outside the timed loop, every element (-c 1)" : "off (-c 0)");
  std::fprintf(out, "# time: %s\n", r.timing.c_str());
  if (!r.buffers.empty()) std::fprintf(out, "# buffers: %s\n", r.buffers.c_str());
  std::fprintf(out, "# algbw = size / time (GB = 1e9 bytes); busbw = algbw x 2(p-1)/p (nccl-tests); "
                    "pred = the model's time; err%% = (time - pred) / time\n");
  if (x.memcpy_GBps > 0)
    std::fprintf(out, "# memory bandwidth: %.2f GB/s (rank 0: memcpy of 64 MiB, best of 5)\n", x.memcpy_GBps);
  for (const std::string& n : x.notes) std::fprintf(out, "# %s\n", n.c_str());
  std::fprintf(out, "#\n");
  std::fflush(out);
}

}  // namespace arlab::bench

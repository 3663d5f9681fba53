#include "calibrate_report.hpp"

#include "calibrate_options.hpp"

namespace arlab::tool {
namespace {

double err_pct(double measured, double fitted) { return 100 * (measured - fitted) / measured; }

void print_fit(std::FILE* out, const char* what, const LineFit& f) {
  std::fprintf(out, "#   %-16s %.4g us + bytes / %.4g GB/s (beta %.4g us/B); R^2 %.4f, rms err %.1f%%, max %.1f%%%s\n",
               what, f.intercept, GBps(f.slope), f.slope, f.r2, 100 * f.rms_rel, 100 * f.max_rel,
               *fallback_note(f) ? fallback_note(f) : f.marginal ? " (bandwidth: the two largest sizes' marginal rate)" : "");
  if (f.step_bytes > 0)
    std::fprintf(out, "#   %-16s above %.0f B (step before %.0f B): %.4g us + bytes / %.4g GB/s\n", "", f.step_bytes,
                 f.step_next, f.intercept_above, GBps(f.slope));
}

// "exchange" and "exchange, beyond": one line per regime, each with its own residuals.
void print_fits(std::FILE* out, const std::string& what, const RegimeFit& f) {
  print_fit(out, (what + (f.beyond ? ", in cache" : "")).c_str(), f.in_cache);
  if (f.beyond) print_fit(out, (what + ", beyond").c_str(), *f.beyond);
}

// " in" or "out": the regime a point was fitted in ("" with one regime).
const char* regime(const RegimeFit& f, std::size_t i) { return !f.beyond ? "" : f.is_beyond[i] ? " out" : "  in"; }

// How the sizes below were split, when `two` (some fit has two regimes); else why they were not.
void print_split(std::FILE* out, const Calibration& c, bool two) {
  if (two)
    std::fprintf(out, "# regimes: in = working set below the cache (%s), out = at or beyond it\n",
                 size_text(c.cache_bytes).c_str());
  else if (c.cache_bytes > 0)
    std::fprintf(out, "# one regime: too few sizes on one side of the cache (%s) to fit two\n",
                 size_text(c.cache_bytes).c_str());
}

}  // namespace

void print_header(std::FILE* out, const Calibration& c) {
  std::fprintf(out, "# arlab-calibrate: %d ranks (%d node(s) x %d), transport %s, host '%s', %s\n", c.ranks, c.nodes,
               c.ranks_per_node, c.transport.c_str(), c.host.c_str(), c.when.c_str());
  std::fprintf(out, "# %s; CPU: %s; each time is the median of %d samples of about %g ms\n", c.mpi_library.c_str(),
               c.cpu.c_str(), c.samples, c.sample_ms);
  if (c.cache_bytes > 0)
    std::fprintf(out, "# a node's cache: %s; sizes whose working set reaches it form the beyond-cache regime\n",
                 c.cache_source.c_str());
  else
    std::fprintf(out, "# one regime: %s\n", c.cache_source.c_str());
  std::fflush(out);
}

void print_link(std::FILE* out, const Calibration& c, const LinkCalibration& l) {
  if (l.active_ranks > 2)
    std::fprintf(out,
                 "#\n# link %s: %d ranks at once, pairs r <-> r + %d (--all-pairs), us per message through the executor "
                 "(slowest rank); err%% = (measured - fit) / measured\n",
                 l.link_class.c_str(), l.active_ranks, l.rank_b - l.rank_a);
  else
    std::fprintf(out, "#\n# link %s: ranks %d and %d, us per message through the executor; err%% = (measured - fit) / measured\n",
               l.link_class.c_str(), l.rank_a, l.rank_b);
  print_split(out, c, l.exchange.beyond.has_value());
  const bool chained = l.chained_exchange_us.size() == l.sizes.size();
  std::fprintf(out, "#     size(B)   working set  ping-pong     fit   err%%    exchange     fit   err%%%s\n",
               chained ? "     chained" : "");
  for (std::size_t i = 0; i < l.sizes.size(); ++i) {
    const double x = static_cast<double>(l.sizes[i]);
    const LineFit &p = l.pingpong.of(i), &e = l.exchange.of(i);
    std::fprintf(out, "%13zu %12s%s %10.3f %7.3g %6.1f %11.3f %7.3g %6.1f", l.sizes[i],
                 size_text(l.working_set[i]).c_str(), regime(l.exchange, i), l.pingpong_us[i], p.at(x),
                 err_pct(l.pingpong_us[i], p.at(x)), l.exchange_us[i], e.at(x), err_pct(l.exchange_us[i], e.at(x)));
    if (chained) std::fprintf(out, " %11.3f", l.chained_exchange_us[i]);
    std::fprintf(out, "\n");
  }
  if (l.cpu_copies)  // within a node the exchanges are timed as calls
    std::fprintf(out,
                 "# exchange: one per call, less what a call costs beyond its message (the line below), as the fit and\n"
                 "# an algorithm's step see it%s\n",
                 chained ? "; chained: in a chain, each exchange receiving into what the last one sent,\n"
                           "# which the peer has just read (docs/model.md, change 8)"
                         : "");
  std::fprintf(out, "# streams of %zu x %s: %.3f GB/s one way, %.3f GB/s per direction both ways\n", l.stream_count,
               size_text(static_cast<double>(l.stream_chunk)).c_str(), l.stream_one_way_GBps,
               l.stream_both_ways_GBps);
  std::fprintf(out, "# an exchange of %s timed as a call (a barrier, then the last rank's entry to the last exit): %.3f us, "
                    "against %.3f us each in a chain\n",
               size_text(static_cast<double>(l.sizes.front())).c_str(), l.call_us, l.chained_run_us);
  std::fprintf(out, "# least-squares fits (relative error, every size alike), per regime:\n");
  print_fits(out, "ping-pong", l.pingpong);
  print_fits(out, "exchange", l.exchange);
  std::fflush(out);
}

void print_compute(std::FILE* out, const Calibration& c) {
  const ComputeCalibration& k = c.compute;
  std::fprintf(out, "#\n# compute: CpuReducer float sum (out = a + b) and copy on %d ranks at once, us per call\n",
               k.concurrent_ranks);
  print_split(out, c, k.reduce.beyond || k.copy.beyond);
  std::fprintf(out, "#     size(B)   working set     reduce     fit   err%%      working set       copy     fit   err%%\n");
  for (std::size_t i = 0; i < k.sizes.size(); ++i) {
    const double x = static_cast<double>(k.sizes[i]);
    const LineFit &r = k.reduce.of(i), &p = k.copy.of(i);
    std::fprintf(out, "%13zu %12s%s %10.3f %7.3g %6.1f %12s%s %10.3f %7.3g %6.1f\n", k.sizes[i],
                 size_text(k.reduce_working_set[i]).c_str(), regime(k.reduce, i), k.reduce_us[i], r.at(x),
                 err_pct(k.reduce_us[i], r.at(x)), size_text(k.copy_working_set[i]).c_str(), regime(k.copy, i),
                 k.copy_us[i], p.at(x), err_pct(k.copy_us[i], p.at(x)));
  }
  std::fprintf(out, "# least-squares fits (relative error, every size alike), per regime:\n");
  print_fits(out, "reduce", k.reduce);
  print_fits(out, "copy", k.copy);
  if (!k.edge_sizes.empty()) {
    std::fprintf(out, "# the cache's edge: the float sum at working sets around the cache, us per MiB of output:");
    for (std::size_t i = 0; i < k.edge_sizes.size(); ++i)
      std::fprintf(out, " %s %.0f", size_text(3.0 * k.ranks_per_node * static_cast<double>(k.edge_sizes[i])).c_str(),
                   k.edge_reduce_us[i] / static_cast<double>(k.edge_sizes[i]) * (1 << 20));
    std::fprintf(out, "\n");
  }
  if (c.cache_edge_measured) {
    std::fprintf(out, "# the node's cache: %s; every fit uses it, the links' refitted:\n", c.cache_source.c_str());
    for (const auto* l : {&c.intra, &c.inter})
      if (*l) print_fits(out, (*l)->link_class + " exchange", (*l)->exchange);
  }
  std::fflush(out);
}

void print_summary(std::FILE* out, const Calibration& c) {
  std::fprintf(out, "#\n# fitted machine '%s' (what the topology file holds):\n", c.name.c_str());
  if (c.two_regimes()) std::fprintf(out, "#   cache_bytes %.0f (%s)\n", c.cache_bytes, size_text(c.cache_bytes).c_str());
  const auto beyond = [&](const RegimeFit& f) {
    if (f.beyond)
      std::fprintf(out, "#          beyond the cache %.4g GB/s  (R^2 %.4f, rms err %.1f%%, max %.1f%%)\n",
                   GBps(f.beyond->slope), f.beyond->r2, 100 * f.beyond->rms_rel, 100 * f.beyond->max_rel);
  };
  for (const auto* l : {&c.intra, &c.inter})
    if (*l) {
      const LineFit& f = (*l)->exchange.in_cache;
      std::fprintf(out, "#   %-6s alpha %.4g us, beta %.4g us/B = %.4g GB/s  (R^2 %.4f, rms err %.1f%%, max %.1f%%)\n",
                   (*l)->link_class.c_str(), f.intercept, f.slope, GBps(f.slope), f.r2, 100 * f.rms_rel,
                   100 * f.max_rel);
      if (f.step_bytes > 0)
        std::fprintf(out, "#          above %s (a step up before %s: eager -> rendezvous) alpha %.4g us\n",
                     size_text(f.step_bytes).c_str(), size_text(f.step_next).c_str(), f.intercept_above);
      beyond((*l)->exchange);
    }
  std::fprintf(out, "#   call overhead %.4g us (one run's cost beyond its messages)\n", c.call_overhead_us());
  if (!c.state_probes_us.empty()) {
    std::fprintf(out, "#   machine state %.4g us (8 B MPI exchange of ranks 0 and 1; probes %s us)%s\n",
                 c.state_probe_us(), c.state_probes_text().c_str(),
                 c.straddles_states() ? ": the machine changed state while measured; calibrate again" : "");
  }
  const ComputeCalibration& k = c.compute;
  std::fprintf(out, "#   reduce gamma %.4g us/B = %.4g GB/s  (R^2 %.4f, rms err %.1f%%, max %.1f%%)\n", k.reduce.in_cache.slope,
               GBps(k.reduce.in_cache.slope), k.reduce.in_cache.r2, 100 * k.reduce.in_cache.rms_rel,
               100 * k.reduce.in_cache.max_rel);
  beyond(k.reduce);
  std::fprintf(out, "#   copy   %.4g us/B = %.4g GB/s  (R^2 %.4f, rms err %.1f%%, max %.1f%%)\n", k.copy.in_cache.slope,
               GBps(k.copy.in_cache.slope), k.copy.in_cache.r2, 100 * k.copy.in_cache.rms_rel,
               100 * k.copy.in_cache.max_rel);
  beyond(k.copy);
  std::fflush(out);
}

}  // namespace arlab::tool

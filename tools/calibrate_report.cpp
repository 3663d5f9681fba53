#include "calibrate_report.hpp"

#include "calibrate_options.hpp"

namespace arlab::tool {
namespace {

double err_pct(double measured, double fitted) { return 100 * (measured - fitted) / measured; }

void print_fit(std::FILE* out, const char* what, const LineFit& f) {
  std::fprintf(out, "#   %-9s %.4g us + bytes / %.4g GB/s (beta %.4g us/B); R^2 %.4f, rms err %.1f%%, max %.1f%%%s\n",
               what, f.intercept, GBps(f.slope), f.slope, f.r2, 100 * f.rms_rel, 100 * f.max_rel,
               f.clamped ? " (intercept clamped at 0)" : "");
}

}  // namespace

void print_header(std::FILE* out, const Calibration& c) {
  std::fprintf(out, "# arlab-calibrate: %d ranks (%d node(s) x %d), transport %s, host '%s', %s\n", c.ranks, c.nodes,
               c.ranks_per_node, c.transport.c_str(), c.host.c_str(), c.when.c_str());
  std::fprintf(out, "# %s; CPU: %s; each time is the median of %d samples of about %g ms\n", c.mpi_library.c_str(),
               c.cpu.c_str(), c.samples, c.sample_ms);
  std::fflush(out);
}

void print_link(std::FILE* out, const LinkCalibration& l) {
  std::fprintf(out, "#\n# link %s: ranks %d and %d, us per message through the executor; err%% = (measured - fit) / measured\n",
               l.link_class.c_str(), l.rank_a, l.rank_b);
  std::fprintf(out, "#     size(B)   ping-pong     fit   err%%    exchange     fit   err%%\n");
  for (std::size_t i = 0; i < l.sizes.size(); ++i) {
    const double x = static_cast<double>(l.sizes[i]);
    std::fprintf(out, "%13zu %11.3f %7.3g %6.1f %11.3f %7.3g %6.1f\n", l.sizes[i], l.pingpong_us[i],
                 l.pingpong.at(x), err_pct(l.pingpong_us[i], l.pingpong.at(x)), l.exchange_us[i], l.exchange.at(x),
                 err_pct(l.exchange_us[i], l.exchange.at(x)));
  }
  std::fprintf(out, "# streams of %zu x %s: %.3f GB/s one way, %.3f GB/s per direction both ways\n", l.stream_count,
               size_text(static_cast<double>(l.stream_chunk)).c_str(), l.stream_one_way_GBps,
               l.stream_both_ways_GBps);
  std::fprintf(out, "# least-squares fits over %zu sizes (relative error, every size alike):\n", l.sizes.size());
  print_fit(out, "ping-pong", l.pingpong);
  print_fit(out, "exchange", l.exchange);
  std::fflush(out);
}

void print_compute(std::FILE* out, const ComputeCalibration& k) {
  std::fprintf(out, "#\n# compute: CpuReducer float sum (out = a + b) and copy on %d ranks at once, us per call\n",
               k.concurrent_ranks);
  std::fprintf(out, "#     size(B)      reduce     fit   err%%        copy     fit   err%%\n");
  for (std::size_t i = 0; i < k.sizes.size(); ++i) {
    const double x = static_cast<double>(k.sizes[i]);
    std::fprintf(out, "%13zu %11.3f %7.3g %6.1f %11.3f %7.3g %6.1f\n", k.sizes[i], k.reduce_us[i], k.reduce.at(x),
                 err_pct(k.reduce_us[i], k.reduce.at(x)), k.copy_us[i], k.copy.at(x),
                 err_pct(k.copy_us[i], k.copy.at(x)));
  }
  std::fprintf(out, "# least-squares fits over %zu sizes (relative error, every size alike):\n", k.sizes.size());
  print_fit(out, "reduce", k.reduce);
  print_fit(out, "copy", k.copy);
  std::fflush(out);
}

void print_summary(std::FILE* out, const Calibration& c) {
  std::fprintf(out, "#\n# fitted machine '%s' (what the topology file holds):\n", c.name.c_str());
  for (const auto* l : {&c.intra, &c.inter})
    if (*l)
      std::fprintf(out, "#   %-6s alpha %.4g us, beta %.4g us/B = %.4g GB/s  (R^2 %.4f, rms err %.1f%%)\n",
                   (*l)->link_class.c_str(), (*l)->exchange.intercept, (*l)->exchange.slope,
                   GBps((*l)->exchange.slope), (*l)->exchange.r2, 100 * (*l)->exchange.rms_rel);
  const ComputeCalibration& k = c.compute;
  std::fprintf(out, "#   reduce gamma %.4g us/B = %.4g GB/s  (R^2 %.4f, rms err %.1f%%)\n", k.reduce.slope,
               GBps(k.reduce.slope), k.reduce.r2, 100 * k.reduce.rms_rel);
  std::fprintf(out, "#   copy   %.4g us/B = %.4g GB/s  (R^2 %.4f, rms err %.1f%%)\n", k.copy.slope, GBps(k.copy.slope),
               k.copy.r2, 100 * k.copy.rms_rel);
  std::fflush(out);
}

}  // namespace arlab::tool

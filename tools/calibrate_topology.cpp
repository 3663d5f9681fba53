#include "calibrate_topology.hpp"

#include <cstdarg>
#include <cstdio>

#include "calibrate_options.hpp"

namespace arlab::tool {
namespace {

std::string format(const char* fmt, ...) {
  char buf[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return buf;
}

std::string span(const std::vector<std::size_t>& sizes) {
  if (sizes.empty()) return "no sizes";
  return std::to_string(sizes.size()) + " sizes " + size_text(static_cast<double>(sizes.front())) + ".." +
         size_text(static_cast<double>(sizes.back()));
}

std::string residual(const LineFit& f) {
  return format("R^2 %.4f, rms error %.1f%%, max %.1f%%", f.r2, 100 * f.rms_rel, 100 * f.max_rel);
}

std::string link_block(const LinkCalibration& l) {
  std::string o = "  " + l.link_class + ":\n";
  o += format("    # Exchange between ranks %d and %d (each sends and receives at once, as in every\n", l.rank_a,
              l.rank_b);
  o += "    # all-reduce step), " + span(l.sizes) + ": t = alpha + bytes / bandwidth, " + residual(l.exchange) +
       (l.exchange.clamped ? " (alpha clamped at 0)" : "") + ".\n";
  if (!l.pingpong_us.empty())
    o += format("    # Ping-pong, one way: %.3g us at %s; its own fit %.3g us + bytes / %.3g GB/s (%s).\n",
                l.pingpong_us.front(), size_text(static_cast<double>(l.sizes.front())).c_str(),
                l.pingpong.intercept, GBps(l.pingpong.slope), residual(l.pingpong).c_str());
  o += format("    # Streams of %zu x %s messages: %.3g GB/s one way, %.3g GB/s per direction both ways.\n",
              l.stream_count, size_text(static_cast<double>(l.stream_chunk)).c_str(), l.stream_one_way_GBps,
              l.stream_both_ways_GBps);
  o += format("    alpha_us: %.4g\n", l.exchange.intercept);
  o += format("    bandwidth_GBps: %.4g\n", GBps(l.exchange.slope));
  return o;
}

}  // namespace

double GBps(double us_per_byte) { return 1e-3 / us_per_byte; }

std::string topology_yaml(const Calibration& c) {
  std::string o;
  o += "# Calibrated by arlab-calibrate on host '" + c.host + "' at " + c.when + ":\n";
  o += "#   " + c.command + "\n";
  o += format("# %d ranks, %d node(s) x %d ranks per node, transport %s (%s); CPU: %s.\n", c.ranks, c.nodes,
              c.ranks_per_node, c.transport.c_str(), c.mpi_library.c_str(), c.cpu.c_str());
  o += "# Every number is a least-squares fit (relative error, every size weighted alike) of point-to-point\n"
       "# and compute measurements made through arlab's own executor, transport and CPU reducer; none is\n"
       "# fitted to all-reduce results. Each time is the median of " +
       std::to_string(c.samples) + format(" samples of about %g ms.\n", c.sample_ms) +
       "# Rerun arlab-calibrate to refresh it; docs/model.md says how it measures.\n";
  o += "name: \"" + c.name + "\"\n";
  o += format("description: \"calibrated by arlab-calibrate: %d ranks over %s on %s\"\n", c.ranks,
              c.transport.c_str(), c.host.c_str());
  o += format("nodes: %d\nranks_per_node: %d\nlinks:\n", c.nodes, c.ranks_per_node);
  if (c.intra) o += link_block(*c.intra);
  if (c.inter) o += link_block(*c.inter);
  const ComputeCalibration& k = c.compute;
  o += "reduce:\n";
  o += format("  # CpuReducer float sum, out = a + b (bytes of output), on %d ranks at once, ", k.concurrent_ranks) +
       span(k.sizes) + ":\n";
  o += "  # t = bytes / bandwidth, " + residual(k.reduce) +
       format("; a per-call cost of %.3g us is not modelled.\n", k.reduce.intercept);
  o += format("  bandwidth_GBps: %.4g\n", GBps(k.reduce.slope));
  o += "copy:\n";
  o += format("  # CpuReducer copy (memcpy), on %d ranks at once, ", k.concurrent_ranks) + span(k.sizes) + ":\n";
  o += "  # t = bytes / bandwidth, " + residual(k.copy) +
       format("; a per-call cost of %.3g us is not modelled.\n", k.copy.intercept);
  o += format("  bandwidth_GBps: %.4g\n", GBps(k.copy.slope));
  return o;
}

}  // namespace arlab::tool

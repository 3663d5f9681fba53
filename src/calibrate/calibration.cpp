#include "calibrate/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <limits>

#include "calibrate/calibration.hpp"
#include "calibrate/state_probe.hpp"

namespace arlab::calib {
namespace {

std::string format(const char* fmt, ...) {
  char buf[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(buf, sizeof buf, fmt, args);
  va_end(args);
  return buf;
}

// "10 sizes 8 B..2 MiB": the sizes of one regime (all of them when `fit` has one).
std::string span(const std::vector<std::size_t>& sizes, const RegimeFit& fit, bool beyond) {
  std::vector<std::size_t> in;
  for (std::size_t i = 0; i < sizes.size(); ++i)
    if (i >= fit.is_beyond.size() || fit.is_beyond[i] == beyond) in.push_back(sizes[i]);
  if (in.empty()) return "no sizes";
  return std::to_string(in.size()) + (in.size() == 1 ? " size " : " sizes ") +
         size_text(static_cast<double>(in.front())) +
         (in.size() == 1 ? "" : ".." + size_text(static_cast<double>(in.back())));
}

std::string residual(const LineFit& f) {
  return format("R^2 %.4f, rms error %.1f%%, max %.1f%%", f.r2, 100 * f.rms_rel, 100 * f.max_rel);
}

// "in cache, 10 sizes 8 B..2 MiB" or, with one regime, "12 sizes 8 B..32 MiB".
std::string in_cache_span(const std::vector<std::size_t>& sizes, const RegimeFit& fit) {
  return (fit.beyond ? "in cache, " : "") + span(sizes, fit, false);
}

// The beyond-cache comment line and field, or nothing with one regime.
std::string beyond_lines(const std::vector<std::size_t>& sizes, const RegimeFit& fit, const char* indent,
                         const char* what) {
  if (!fit.beyond) return "";
  return std::string(indent) + "# Beyond the cache, " + span(sizes, fit, true) + ": " + what + ", " +
         residual(*fit.beyond) + ".\n" + indent +
         format("bandwidth_GBps_beyond_cache: %.4g\n", GBps(fit.beyond->slope));
}

std::string link_block(const LinkCalibration& l) {
  std::string o = "  " + l.link_class + ":\n";
  if (l.active_ranks > 2)
    o += format("    # Exchanges of %d ranks at once, in pairs r <-> r + %d (each sends and receives at once, as in every\n",
                l.active_ranks, l.rank_b - l.rank_a);
  else
    o += format("    # Exchange between ranks %d and %d (each sends and receives at once, as in every\n", l.rank_a,
                l.rank_b);
  o += std::string("    # all-reduce step") +
       (!l.cpu_copies      ? std::string("), ")
        : l.calls_drowned ? format(";\n    # in a chain: one per call, less the call's own cost, %.3g us, would drown in its spread),\n    # ",
                                   l.call_us - l.chained_run_us)
                          : std::string("; one per call, less the call's own cost: docs/model.md, change 8),\n    # ")) +
       in_cache_span(l.sizes, l.exchange) + ": t = alpha + bytes / bandwidth, " + residual(l.exchange.in_cache) +
       fallback_note(l.exchange.in_cache) + ".\n";
  if (l.exchange.in_cache.marginal)
    o += "    # The bandwidth is the two largest sizes' marginal rate (what passes faster at a message's start,\n"
         "    # a token bucket's burst or a window opening, cancels); alpha is the least-squares fit's.\n";
  if (!l.pingpong_us.empty())
    o += format("    # Ping-pong, one way: %.3g us at %s; its own fit %.3g us + bytes / %.3g GB/s (%s).\n",
                l.pingpong_us.front(), size_text(static_cast<double>(l.sizes.front())).c_str(),
                l.pingpong.in_cache.intercept, GBps(l.pingpong.in_cache.slope), residual(l.pingpong.in_cache).c_str());
  if (l.stream_count > 0)
    o += format("    # Streams of %zu x %s messages: %.3g GB/s one way, %.3g GB/s per direction both ways.\n",
              l.stream_count, size_text(static_cast<double>(l.stream_chunk)).c_str(), l.stream_one_way_GBps,
              l.stream_both_ways_GBps);
  o += format("    alpha_us: %.4g\n", l.exchange.in_cache.intercept);
  o += format("    bandwidth_GBps: %.4g\n", GBps(l.exchange.in_cache.slope));
  if (l.exchange.in_cache.step_bytes > 0) {
    o += format("    # A protocol switch (eager -> rendezvous): the exchange times step up between %s and %s;\n",
                size_text(l.exchange.in_cache.step_bytes).c_str(), size_text(l.exchange.in_cache.step_next).c_str());
    o += "    # messages of more than the last size below the step pay the intercept fitted above it.\n";
    o += format("    rendezvous_bytes: %.0f\n", l.exchange.in_cache.step_bytes);
    o += format("    alpha_us_rendezvous: %.4g\n", l.exchange.in_cache.intercept_above);
  }
  const std::vector<double> x(l.sizes.begin(), l.sizes.end());
  if (const auto points = latency_points(x, l.exchange_us, l.exchange.in_cache.slope); points.size() >= 2) {
    o += "    # Latency per message size: each exchange time less bytes / bandwidth, up to the first size\n"
         "    # that is half transfer; between sizes interpolated in log(bytes), above them alpha_us as above.\n"
         "    latency_us: {";
    for (std::size_t i = 0; i < points.size(); ++i)
      o += format("%s%.0f: %.4g", i ? ", " : " ", points[i].bytes, points[i].alpha_us);
    o += " }\n";
  }
  if (!l.writeback_sizes.empty()) {
    const std::vector<double> wx(l.writeback_sizes.begin(), l.writeback_sizes.end());
    const auto table = [&](const char* field, const std::vector<double>& written, const std::vector<double>& aside) {
      std::string t = "    # us per call:";
      for (std::size_t i = 0; i < wx.size(); ++i)
        t += format("%s %s %.3g/%.3g", i ? "," : "", size_text(wx[i]).c_str(), written[i], aside[i]);
      t += std::string(".\n    ") + field + ": {";
      const auto points = writeback_points(wx, written, aside);
      for (std::size_t i = 0; i < points.size(); ++i)
        t += format("%s%.0f: %.4g", i ? ", " : " ", points[i].bytes, points[i].us_per_byte);
      return t + " }\n";
    };
    o += "    # Writing what the peer has just read: an exchange then a reduction over the bytes just sent\n"
         "    # (as recursive doubling in place), against one over the bytes just received; the difference per byte.\n"
         "    # A write right after the send that carried the bytes pays it (docs/model.md, change 6).\n" +
         table("writeback_us_per_byte", l.writeback_in_place_us, l.writeback_aside_us);
    if (l.writeback_later_us.size() == wx.size())
      o += "    # The same an exchange later (another buffer of the size sent between, as the ring's allgather\n"
           "    # receives over what its reduce-scatter sent); a later write pays it at the bytes sent between.\n" +
           table("writeback_later_us_per_byte", l.writeback_later_us, l.writeback_later_aside_us);
  }
  o += beyond_lines(l.sizes, l.exchange, "    ", "t = alpha + bytes / bandwidth_beyond_cache");
  if (l.shared_ratio > 0)
    o += format("    # Every rank of a node exchanging across at once took %.2fx one pair's time (4 MiB): %s.\n",
                l.shared_ratio, l.shared_by_node ? "the node's ranks share one port (a NIC); the rates above are one pair's"
                                                 : "each rank has a port of its own");
  if (l.shared_by_node) o += "    shared_by: node\n";
  if (l.cpu_copies)
    o += "    # Shared memory between processes: the receiving rank's CPU copies each message in, so in\n"
         "    # the walk a receive also occupies that rank's compute unit (docs/model.md).\n"
         "    copied_by: cpu\n";
  return o;
}

std::string compute_block(const char* name, const char* what, const ComputeCalibration& k, const RegimeFit& fit) {
  std::string o = std::string(name) + ":\n";
  o += format("  # CpuReducer %s, on %d ranks at once, ", what, k.concurrent_ranks) + in_cache_span(k.sizes, fit) +
       ":\n";
  o += "  # t = bytes / bandwidth, " + residual(fit.in_cache) +
       format("; a per-call cost of %.3g us is not modelled.\n", fit.in_cache.intercept);
  o += format("  bandwidth_GBps: %.4g\n", GBps(fit.in_cache.slope));
  o += beyond_lines(k.sizes, fit, "  ", "t = bytes / bandwidth_beyond_cache");
  return o;
}

// `text` inside a one-line comment: control characters (a newline in an argument would end
// the comment and put the rest into the file as YAML) written as \xNN.
std::string comment_safe(const std::string& text) {
  std::string out;
  for (unsigned char ch : text) out += ch < 0x20 || ch == 0x7f ? format("\\x%02x", ch) : std::string(1, static_cast<char>(ch));
  return out;
}

}  // namespace

std::vector<std::size_t> geometric_sizes(std::size_t min_bytes, std::size_t max_bytes, std::size_t factor,
                                         std::size_t multiple) {
  std::vector<std::size_t> out;
  for (std::size_t b = min_bytes; b <= max_bytes; b *= factor) {
    const std::size_t bytes = b / multiple * multiple;
    if (bytes > 0 && (out.empty() || out.back() != bytes)) out.push_back(bytes);
    if (b > std::numeric_limits<std::size_t>::max() / factor) break;
  }
  return out;
}

std::vector<std::size_t> calibrate_sizes(const Settings& o, std::size_t multiple) {
  return geometric_sizes(o.min_bytes, o.max_bytes, o.factor, multiple);
}

std::string size_text(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (bytes >= 1024 && u < 4) {
    bytes /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0 || std::fabs(bytes - std::round(bytes)) < 0.05)
    std::snprintf(buf, sizeof buf, "%.0f %s", bytes, kUnits[u]);
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", bytes, kUnits[u]);
  return buf;
}

double GBps(double us_per_byte) { return 1e-3 / us_per_byte; }

bool Calibration::two_regimes() const {
  bool any = compute.reduce.beyond || compute.copy.beyond;
  for (const auto* l : {&intra, &inter}) any = any || (*l && (*l)->exchange.beyond);
  return any;
}

double Calibration::call_overhead_us() const {
  const auto& l = intra ? intra : inter;
  if (!l || l->call_us <= 0) return 0;
  return std::max(0.0, l->call_us - l->chained_run_us);
}

double Calibration::state_probe_us() const {
  if (state_probes_us.empty()) return 0;
  std::vector<double> v = state_probes_us;
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

bool Calibration::straddles_states() const {
  const auto [lo, hi] = std::minmax_element(state_probes_us.begin(), state_probes_us.end());
  return lo != state_probes_us.end() && other_state(*hi, *lo);
}

std::string Calibration::state_probes_text() const {
  std::string each;
  for (const double t : state_probes_us) each += (each.empty() ? "" : ", ") + format("%.3g", t);
  return each;
}

std::string topology_yaml(const Calibration& c) {
  std::string o;
  o += "# Calibrated on host '" + comment_safe(c.host) + "' at " + c.when + " by:\n";
  o += "#   " + comment_safe(c.command) + "\n";
  o += format("# %d ranks, %d node(s) x %d ranks per node, transport %s (%s); CPU: %s.\n", c.ranks, c.nodes,
              c.ranks_per_node, c.transport.c_str(), comment_safe(c.mpi_library).c_str(), comment_safe(c.cpu).c_str());
  o += "# Every number is a least-squares fit (relative error, every size weighted alike) of point-to-point\n"
       "# and compute measurements made through arlab's own executor, transport and CPU reducer; none is\n"
       "# fitted to all-reduce results. Each time is the median of " +
       std::to_string(c.samples) + format(" samples of about %g ms", c.sample_ms) +
       (c.long_samples > 0 && c.long_samples < c.samples
            ? " (" + std::to_string(c.long_samples) + " of a size whose one run is longer)"
            : std::string()) +
       (c.compute_samples > 0 && c.compute_samples != c.samples
            ? "; the reducer's and the copy's, of " + std::to_string(c.compute_samples) + ".\n"
            : std::string(".\n")) +
       "# Rerun arlab-calibrate (or ARLAB_CALIBRATE=force) to refresh it; docs/model.md says how it measures.\n";
  o += "name: \"" + c.name + "\"\n";
  o += format("description: \"calibrated: %d ranks over %s on %s\"\n", c.ranks,
              c.transport.c_str(), c.host.c_str());
  o += format("nodes: %d\nranks_per_node: %d\n", c.nodes, c.ranks_per_node);
  if (c.two_regimes()) {
    o += "# A node's cache, " + c.cache_source + ".\n"
         "# Sizes whose working set reaches it (exchange: send and receive buffers on every exchanging\n"
         "# rank of the node, 4n for one pair; reduce 3n and copy 2n on every rank of the node) are fitted as the beyond-cache\n"
         "# regime; an all-reduce runs at those rates when its input, output and scratch on all ranks\n"
         "# of a node reach it (docs/model.md).\n";
    o += format("cache_bytes: %.0f\n", c.cache_bytes);
  }
  if (const auto& l = c.intra ? c.intra : c.inter; l && l->call_us > 0) {
    o += format("# Per call, beyond its messages (entering, starting and finishing the executor and transport,\n"
                "# leaving): one exchange of %s timed as a call (after a barrier, from the last rank's entry\n"
                "# to the last rank's exit) took %.3g us, against %.3g us each in a chain of exchanges.\n",
                size_text(static_cast<double>(l->sizes.front())).c_str(), l->call_us, l->chained_run_us);
    o += format("call_overhead_us: %.4g\n", c.call_overhead_us());
  }
  if (const double probe = c.state_probe_us(); probe > 0) {
    o += "# The machine's state while measured: ranks 0 and 1 exchanging 8 B through plain MPI, per exchange\n"
         "# (before the links, after them, after the compute: " + c.state_probes_text() + " us" +
         (c.straddles_states() ? "; the machine changed state during the calibration" : "") +
         "); arlab-bench\n"
         "# probes the same before each line and compares (docs/model.md, \"The machine's state\").\n";
    o += format("state_probe_us: %.4g\n", probe);
  }
  o += "links:\n";
  if (c.intra) o += link_block(*c.intra);
  if (c.inter) o += link_block(*c.inter);
  o += compute_block("reduce", "float sum, out = a + b (bytes of output)", c.compute, c.compute.reduce);
  o += compute_block("copy", "copy (memcpy)", c.compute, c.compute.copy);
  return o;
}

}  // namespace arlab::calib

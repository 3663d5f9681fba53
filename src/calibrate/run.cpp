#include "calibrate/run.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <ctime>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include "calibrate/node_cache.hpp"
#include "calibrate/measure.hpp"
#include "calibrate/state_probe.hpp"
#include "transport/mpi_transport.hpp"
#ifdef ARLAB_HAVE_UCX
#include "transport/ucx_transports.hpp"
#endif

namespace arlab::calib {
namespace {

constexpr std::size_t kStreamChunk = std::size_t{256} << 10;  // the executor's default chunk

// `sizes` (ascending) with the geometric midpoint of each consecutive pair below `below`
// that is a factor of 4 or more apart.
std::vector<std::size_t> with_midpoints(const std::vector<std::size_t>& sizes, std::size_t below) {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (i > 0 && sizes[i] <= below && sizes[i] >= 4 * sizes[i - 1])
      out.push_back(static_cast<std::size_t>(std::llround(std::sqrt(static_cast<double>(sizes[i - 1]) * sizes[i]))));
    out.push_back(sizes[i]);
  }
  return out;
}

std::unique_ptr<detail::Transport> make_transport(const Settings& o, MPI_Comm comm, double timeout_s) {
  switch (o.transport) {
    case TransportKind::Mpi: return detail::make_mpi_transport(comm, timeout_s);
#ifdef ARLAB_HAVE_UCX
    case TransportKind::Ucx: return detail::make_ucx_transport(comm, timeout_s);
    case TransportKind::UcxRma: return detail::make_ucx_rma_transport(comm, timeout_s);
#endif
    default: break;
  }
  throw CalibrateError{1, "transport '" + o.transport_name + "' is not built into this arlab (UCX was not found at build time)"};
}

std::string mpi_library() {
  char buf[MPI_MAX_LIBRARY_VERSION_STRING];
  int len = 0;
  MPI_Get_library_version(buf, &len);
  const std::string s(buf, static_cast<std::size_t>(len));
  return s.substr(0, std::min(s.find(','), s.find('\n')));
}

// A link's fits with the node's cache at `cache_bytes`: ping-pong (when measured) and
// exchange, and across nodes the exchange's bandwidth the network's steady rate.
void fit_link(LinkCalibration& l, double cache_bytes) {
  const std::vector<double> x(l.sizes.begin(), l.sizes.end());
  if (!l.pingpong_us.empty()) l.pingpong = fit_regimes(x, l.pingpong_us, l.working_set, cache_bytes, true);
  l.exchange = fit_regimes(x, l.exchange_us, l.working_set, cache_bytes, true);
  if (!l.cpu_copies) use_marginal_slope(l.exchange, x, l.exchange_us);
}

// Ranks 0 and b, `same_node` or not; a send and a receive buffer of n bytes on each. Within a
// node every size; between nodes, with o.slow_size_ms, those that sweep_within_time affords.
LinkCalibration measure_link(LinkBench& bench, const char* link_class, int b, bool same_node,
                             const Settings& o, const std::vector<std::size_t>& sizes, double cache_bytes,
                             int ranks, int per_node) {
  LinkCalibration l;
  l.link_class = link_class;
  l.rank_b = b;
  l.cpu_copies = same_node;  // processes of one node share memory: their CPUs copy the messages
  // Ranks exchanging at once: the pair, or with --all-pairs every rank r with a pair r +- b
  // (LinkBench::sweep); node 0's of them share its cache, each with a send and a receive buffer.
  int on_node = same_node ? 2 : 1;
  l.active_ranks = 2;
  if (o.all_pairs) {
    l.active_ranks = on_node = 0;
    for (int r = 0; r < ranks; ++r) {
      const int peer = (r / b) % 2 == 0 ? r + b : r - b;
      if (peer >= ranks) continue;
      ++l.active_ranks;
      if (r < per_node) ++on_node;
    }
  }
  const auto measure = [&](const std::vector<std::size_t>& some) { return bench.sweep(0, b, some, o.all_pairs, o.comparisons); };
  const bool one_clock = per_node == ranks;
  if (same_node) {
    // Exchanges timed as calls, less what a call costs beyond its message (c: the smallest
    // size's call against the same exchange in a chain). A chain's exchange receives into
    // what its last one sent, bytes the peer's CPU has just read: every line written takes
    // them back from the peer's cache first, which an algorithm's step, receiving into its
    // scratch, does not pay (2x the time at 32-128 KiB here; docs/model.md, change 8). The
    // chained times are kept for the report.
    l.sizes = with_midpoints(sizes, static_cast<std::size_t>(kLatencyTableBytes));  // where protocols switch
    if (o.comparisons) {
      auto chained = measure(l.sizes);
      l.pingpong_us = std::move(chained.pingpong_us);
      l.chained_exchange_us = std::move(chained.exchange_us);
    }
    l.call_us = bench.exchange_calls(0, b, {l.sizes.front()}, o.all_pairs, one_clock).front();
    l.chained_run_us = o.comparisons ? l.chained_exchange_us.front()
                                     : bench.sweep(0, b, {l.sizes.front()}, o.all_pairs, false).exchange_us.front();
    // Where a call's own cost outweighs a whole small exchange, the calls' differences from size
    // to size drown in its spread, and the fit in them: on the emulated cluster (4 ranks on 2
    // cores, calls timed after a barrier across the hosts) it was 18-55 us against 0.5-5.9 us
    // per exchange in a chain, and the calls less it fitted alpha 0.001 us and 10^3-10^7 GB/s over
    // ucx. Then the chain is fitted, and the call's cost still charged once per call.
    l.calls_drowned = l.call_us - l.chained_run_us > l.chained_run_us;
    if (l.calls_drowned) {
      if (!o.comparisons) {  // the smallest size's chain is timed above
        l.chained_exchange_us = {l.chained_run_us};
        const std::vector<std::size_t> rest(l.sizes.begin() + 1, l.sizes.end());
        for (const double t : measure(rest).exchange_us) l.chained_exchange_us.push_back(t);
      }
      l.exchange_us = l.chained_exchange_us;
    } else {
      std::vector<double> calls{l.call_us};  // the smallest size's, timed above
      const std::vector<std::size_t> rest(l.sizes.begin() + 1, l.sizes.end());
      for (const double t : bench.exchange_calls(0, b, rest, o.all_pairs, one_clock)) calls.push_back(t);
      const double c = std::max(0.0, l.call_us - l.chained_run_us);
      for (const double t : calls) l.exchange_us.push_back(std::max(t - c, 1e-3));
    }
  } else {
    auto sweep = o.slow_size_ms <= 0 ? measure(sizes) : sweep_within_time(measure, sizes, o.slow_size_ms, l.sizes);
    if (o.slow_size_ms <= 0) l.sizes = sizes;
    l.pingpong_us = std::move(sweep.pingpong_us);
    l.exchange_us = std::move(sweep.exchange_us);  // chained: its first is the call's comparison
    l.call_us = bench.exchange_calls(0, b, {l.sizes.front()}, o.all_pairs, one_clock).front();
    l.chained_run_us = l.exchange_us.front();
  }
  for (std::size_t n : l.sizes) l.working_set.push_back(on_node * 2.0 * static_cast<double>(n));
  fit_link(l, cache_bytes);
  if (same_node) {
    // The write-back cost, where a peer's CPU reads the bytes: from 8 KiB (below, under half
    // a microsecond a call) to 8 MiB (where a core's last level is its own it has not faded
    // by 2 MiB), sizes a factor of 4 or more apart; the walk holds the end values beyond them.
    for (const std::size_t n : sizes)
      if (n >= (std::size_t{8} << 10) && n <= (std::size_t{8} << 20) && 2 * n <= o.max_bytes &&
          (l.writeback_sizes.empty() || n >= 4 * l.writeback_sizes.back()))
        l.writeback_sizes.push_back(n);
    if (!l.writeback_sizes.empty()) {
      const auto wb = bench.writeback(0, b, l.writeback_sizes, o.all_pairs);
      l.writeback_in_place_us = wb.in_place_us;
      l.writeback_aside_us = wb.aside_us;
      l.writeback_later_us = wb.later_us;
      l.writeback_later_aside_us = wb.later_aside_us;
    }
  }
  if (!o.comparisons) return l;
  l.stream_chunk = std::min(kStreamChunk, o.max_bytes);
  l.stream_count = std::max<std::size_t>(1, o.max_bytes / l.stream_chunk);
  const auto stream = bench.stream(0, b, l.stream_chunk, l.stream_count);
  l.stream_one_way_GBps = stream.one_way_GBps;
  l.stream_both_ways_GBps = stream.both_ways_GBps;
  return l;
}

// Whether a node's ranks share one port to the other nodes: a 4 MiB exchange with every rank
// paired across at once, over one pair alone (4 MiB also where the sweep stops below it: a
// token bucket's burst lets the first 256 KB of a smaller one pass at once, which made 2 MiB
// read 1.39x in one of two runs where 4 MiB read 2.06-2.08x). With one port (a NIC per node)
// each of the per_node pairs gets about 1/per_node of it, with a port per rank about all of
// it; the verdict is the side of the midpoint the ratio falls on. The two are timed in the same
// rounds, so that a change of the machine's pace meets both (timed one after the other, one
// launch over Open MPI's TCP path read 1.40x where those around it read 1.98-2.81x; in the
// same rounds that path still reads a stray 1.05x now and then: docs/hierarchical.md).
// Measured before the link's sweep, so that the sweep runs once, as the verdict needs:
// shared, the link's rates must be the lone pair's (the walk then lets the node's messages
// take turns on the port).
double shared_port_ratio(LinkBench& bench, int b, const std::vector<std::size_t>& sizes) {
  const auto [alone, together] = bench.alone_and_together(0, b, std::min<std::size_t>(sizes.back(), std::size_t{4} << 20));
  return alone > 0 ? together / alone : 0;
}

// Every rank at once; the `per_node` ranks of a node share its cache: out = a + b touches 3n
// bytes per rank, a copy 2n.
ComputeCalibration measure_compute(ComputeBench& bench, const Settings& o, int ranks, int per_node,
                                   double cache_bytes) {
  ComputeCalibration k;
  k.sizes = calibrate_sizes(o, sizeof(float));
  k.concurrent_ranks = ranks;
  k.ranks_per_node = per_node;
  for (std::size_t n : k.sizes) {
    k.reduce_working_set.push_back(3.0 * per_node * static_cast<double>(n));
    k.copy_working_set.push_back(2.0 * per_node * static_cast<double>(n));
  }
  auto sweep = bench.sweep(k.sizes);
  k.reduce_us = std::move(sweep.reduce_us);
  k.copy_us = std::move(sweep.copy_us);
  const std::vector<double> x(k.sizes.begin(), k.sizes.end());
  k.reduce = fit_regimes(x, k.reduce_us, k.reduce_working_set, cache_bytes);
  k.copy = fit_regimes(x, k.copy_us, k.copy_working_set, cache_bytes);
  return k;
}

// Every fit redone with `edge` as the node's cache, which `why` explains.
void use_cache_edge(Calibration& c, double edge, const std::string& why) {
  c.cache_source = why;
  c.cache_bytes = edge;
  c.cache_edge_measured = true;
  for (auto* l : {&c.intra, &c.inter})
    if (*l) fit_link(**l, edge);
  ComputeCalibration& k = c.compute;
  const std::vector<double> x(k.sizes.begin(), k.sizes.end());
  k.reduce = fit_regimes(x, k.reduce_us, k.reduce_working_set, edge);
  k.copy = fit_regimes(x, k.copy_us, k.copy_working_set, edge);
}

// The cache a node's ranks effectively have, which on a shared machine (other tenants in the
// same last-level cache, a replacement policy that is not LRU) is less than sysfs says: the
// float sum is timed at working sets of 1/8 .. 2 x the sysfs size, in factors of 2, and the
// edge is where its time per byte first reaches the geometric midpoint of the in-cache and
// beyond-cache rates fitted from the main sweep; cache_bytes becomes the geometric mean of the
// working sets on either side, and every fit is redone with it. Without a crossing, sysfs stays.
void find_cache_edge(ComputeBench& bench, Calibration& c, std::size_t max_bytes) {
  ComputeCalibration& k = c.compute;
  const double per_rank_factor = 3.0 * k.ranks_per_node;  // out = a + b: 3n per rank
  std::vector<std::size_t> sizes;
  for (double f : {0.125, 0.25, 0.5, 1.0, 2.0}) {
    const auto n = static_cast<std::size_t>(c.cache_bytes * f / per_rank_factor) / 4096 * 4096;
    if (n >= 4096 && n <= max_bytes && (sizes.empty() || sizes.back() != n)) sizes.push_back(n);
  }
  if (sizes.size() < 2) return;
  k.edge_sizes = sizes;
  k.edge_reduce_us = bench.sweep(sizes, /*copies=*/false).reduce_us;
  const double midpoint = std::sqrt(k.reduce.in_cache.slope * k.reduce.beyond->slope);
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    if (k.edge_reduce_us[i] / static_cast<double>(sizes[i]) < midpoint) continue;
    const double out = per_rank_factor * static_cast<double>(sizes[i]);
    const double in = i > 0 ? per_rank_factor * static_cast<double>(sizes[i - 1]) : out;
    const double edge = std::sqrt(in * out);
    if (edge >= c.cache_bytes) return;  // sysfs was right
    const std::string where = i > 0 ? "between working sets of " + size_text(in) + " and " + size_text(out)
                                    : "at the smallest working set timed, " + size_text(out) + " (the edge is there or below)";
    use_cache_edge(c, edge,
                   size_text(edge) + " in effect: the float sum's time per byte reached halfway (geometric) from its " +
                       "in-cache to its beyond-cache rate " + where + " (the " + c.cache_source + ")");
    return;
  }
}

}  // namespace

std::string host_name() {
  char buf[256] = {};
  return gethostname(buf, sizeof buf - 1) == 0 && buf[0] ? buf : "unknown";
}

// "AMD EPYC, 2 cores": the model name from /proc/cpuinfo (Linux) and the cores this process may use.
std::string cpu_text() {
  std::ifstream in("/proc/cpuinfo");
  std::string model = "unknown CPU";
  for (std::string l; std::getline(in, l);)
    if (l.rfind("model name", 0) == 0 && l.find(':') != std::string::npos) {
      model = l.substr(l.find_first_not_of(" \t", l.find(':') + 1));
      break;
    }
  return model + ", " + std::to_string(std::thread::hardware_concurrency()) + " cores";
}

std::string utc_now() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M UTC", &tm);
  return buf;
}

Calibration calibrate(const Settings& o, MPI_Comm world, const std::string& command, const Observer& observe) {
  int rank = 0, size = 1;
  MPI_Comm_rank(world, &rank);
  MPI_Comm_size(world, &size);
  if (size < 2) throw CalibrateError{2, "needs at least 2 ranks: mpirun -np 2 arlab-calibrate ..."};
  const int per_node = o.ranks_per_node ? o.ranks_per_node : size;
  if (size % per_node != 0)
    throw CalibrateError{2, "--ranks-per-node " + std::to_string(per_node) + " does not divide the " + std::to_string(size) +
                      " ranks into whole nodes"};

  Calibration c;
  c.host = host_name();
  c.name = o.name.empty() ? c.host : o.name;
  c.when = utc_now();
  c.transport = o.transport_name;
  c.mpi_library = mpi_library();
  c.cpu = cpu_text();
  c.command = command;
  c.ranks = size;
  c.nodes = size / per_node;
  c.ranks_per_node = per_node;
  c.samples = o.samples;
  c.sample_ms = o.sample_ms;
  c.long_samples = o.long_samples;
  c.compute_samples = o.compute_samples;
  if (o.cache_bytes) {
    c.cache_bytes = static_cast<double>(*o.cache_bytes);
    c.cache_source = c.cache_bytes > 0 ? size_text(c.cache_bytes) + ", from --cache-bytes" : "--cache-bytes 0";
  } else {
    const NodeCache cache = node_cache();
    c.cache_bytes = cache.bytes;
    c.cache_source = cache.bytes > 0 ? cache.source : "the cache size is unknown (no sysfs, no sysconf)";
  }

  MPI_Comm control, comm;  // timing collectives, and the transport's own communicator
  MPI_Comm_dup(world, &control);
  MPI_Comm_dup(world, &comm);
  const double timeout_s = o.timeout_s;
  const Timing timing{o.sample_ms, o.samples, o.long_samples};
  if (observe) observe(Stage::Started, c);
  c.state_probes_us.push_back(state_probe_us(control));
  {
    auto transport = make_transport(o, comm, timeout_s);
    LinkBench bench(*transport, control, timing, o.max_bytes, timeout_s);
    const auto sizes = calibrate_sizes(o);
    if (per_node >= 2) {
      c.intra = measure_link(bench, "intra", 1, true, o, sizes, c.cache_bytes, size, per_node);
      if (observe) observe(Stage::Link, c);
    }
    if (c.nodes >= 2) {
      Settings across = o;
      double ratio = 0;
      const bool shared = per_node >= 2 && (ratio = shared_port_ratio(bench, per_node, sizes)) >= 0.5 * (1.0 + per_node);
      if (shared) across.all_pairs = false;
      c.inter = measure_link(bench, "inter", per_node, false, across, sizes, c.cache_bytes, size, per_node);
      c.inter->shared_ratio = ratio;
      c.inter->shared_by_node = shared;
      if (observe) observe(Stage::Link, c);
    }
  }  // the transport's shutdown is collective: every rank is here
  c.state_probes_us.push_back(state_probe_us(control));
  {
    Timing compute_timing = timing;
    if (o.compute_samples > 0) compute_timing.samples = o.compute_samples;
    ComputeBench bench(control, compute_timing, o.max_bytes);
    c.compute = measure_compute(bench, o, size, per_node, c.cache_bytes);
    if (!o.cache_bytes && c.cache_bytes > 0 && c.compute.reduce.beyond) find_cache_edge(bench, c, o.max_bytes);
  }
  c.state_probes_us.push_back(state_probe_us(control));
  MPI_Comm_free(&comm);
  MPI_Comm_free(&control);
  if (observe) observe(Stage::Compute, c);
  return c;
}

}  // namespace arlab::calib

#include "model/machine.hpp"

#include <algorithm>
#include <cmath>

#include "arlab/arlab.hpp"

namespace arlab::detail {

namespace {

// The value at `bytes` of a table ascending in bytes, linear in log(bytes) between its points,
// the end values held beyond its ends.
template <typename Point>
double log_interpolated(const std::vector<Point>& table, double bytes, double Point::*value) {
  if (bytes <= table.front().bytes) return table.front().*value;
  if (bytes >= table.back().bytes) return table.back().*value;
  const auto hi = std::lower_bound(table.begin(), table.end(), bytes,
                                   [](const Point& p, double b) { return p.bytes < b; });
  const Point& lo = *(hi - 1);
  const double w = std::log(bytes / lo.bytes) / std::log(hi->bytes / lo.bytes);
  return lo.*value + w * ((*hi).*value - lo.*value);
}

// A write-back table's value at `bytes`; 0 without one.
double per_byte(const std::vector<LinkCost::WritebackPoint>& table, double bytes) {
  return table.empty() ? 0 : log_interpolated(table, bytes, &LinkCost::WritebackPoint::us_per_byte);
}

}  // namespace

double LinkCost::alpha_for(double bytes) const {
  if (!latency.empty() && bytes <= latency.back().bytes) {
    // Across the protocol switch the latency steps rather than ramps: a message above
    // rendezvous_bytes pays the first measured size above the switch.
    if (rendezvous_bytes > 0 && bytes > rendezvous_bytes && bytes > latency.front().bytes) {
      const auto hi = std::lower_bound(latency.begin(), latency.end(), bytes,
                                       [](const LatencyPoint& p, double b) { return p.bytes < b; });
      if ((hi - 1)->bytes <= rendezvous_bytes) return hi->alpha_us;
    }
    return log_interpolated(latency, bytes, &LatencyPoint::alpha_us);
  }
  return rendezvous_bytes > 0 && bytes > rendezvous_bytes ? alpha_us_rendezvous : alpha_us;
}

double LinkCost::writeback_us_per_byte(double bytes) const { return per_byte(writeback, bytes); }

double LinkCost::writeback_later_us_per_byte(double bytes) const { return per_byte(writeback_later, bytes); }

int Machine::ranks() const {
  if (!rank_to_node.empty()) return static_cast<int>(rank_to_node.size());
  return ranks_per_node > 0 ? nodes * ranks_per_node : 0;
}

int Machine::node_of(int rank) const {
  if (!rank_to_node.empty())
    return rank >= 0 && static_cast<std::size_t>(rank) < rank_to_node.size() ? rank_to_node[rank] : -1 - rank;
  return ranks_per_node > 0 ? rank / ranks_per_node : 0;
}

std::vector<int> Machine::placement(int p) const {
  if (!rank_to_node.empty() && static_cast<std::size_t>(p) != rank_to_node.size())
    throw Error(Error::Code::InvalidArgument,
                "machine '" + name + "' (" + source + ") places " + std::to_string(rank_to_node.size()) +
                    " ranks with rank_to_node, but " + std::to_string(p) + " ranks were asked for");
  std::vector<int> node(static_cast<std::size_t>(p));
  for (int r = 0; r < p; ++r) node[r] = node_of(r);
  return node;
}

double Machine::node_working_set(const std::vector<double>& bytes_per_rank) const {
  const auto node = placement(static_cast<int>(bytes_per_rank.size()));
  std::vector<double> sum;
  for (std::size_t r = 0; r < node.size(); ++r) {
    const auto n = static_cast<std::size_t>(node[r]);
    if (sum.size() <= n) sum.resize(n + 1, 0.0);
    sum[n] += bytes_per_rank[r];
  }
  return sum.empty() ? 0.0 : *std::max_element(sum.begin(), sum.end());
}

bool Machine::fits_cache(double working_set) const { return cache_bytes <= 0 || working_set < cache_bytes; }

Machine Machine::at_working_set(double working_set) const {
  Machine m = *this;
  m.cache_bytes = 0;
  m.beyond_cache = {};
  if (fits_cache(working_set)) return m;
  const auto pick = [](double beyond, double in_cache) { return beyond > 0 ? beyond : in_cache; };
  m.intra.us_per_byte = pick(beyond_cache.intra_us_per_byte, intra.us_per_byte);
  m.inter.us_per_byte = pick(beyond_cache.inter_us_per_byte, inter.us_per_byte);
  m.reduce_us_per_byte = pick(beyond_cache.reduce_us_per_byte, reduce_us_per_byte);
  m.copy_us_per_byte = pick(beyond_cache.copy_us_per_byte, copy_us_per_byte);
  // What the peer read before the last exchange, the call's own traffic (more than the cache)
  // has pushed out by the time it is written: only the write right after the send still pays.
  m.intra.writeback_later.clear();
  m.inter.writeback_later.clear();
  return m;
}

Machine Machine::uniform(double alpha_us, double beta, double gamma) {
  Machine m;
  m.name = "uniform";
  m.source = "built-in";
  m.intra.alpha_us = alpha_us;
  m.intra.us_per_byte = beta;
  m.inter = m.intra;
  m.reduce_us_per_byte = gamma;
  m.copy_us_per_byte = gamma;
  return m;
}

// The numbers of topology/local.yaml: arlab-calibrate's least-squares fit on the development
// machine (2 cores sharing a 32 MiB L3, Open MPI 4.1 over shared memory, 2 ranks) of exchanges
// through the executor, each timed as a call (with the step where Open MPI switches from eager
// to rendezvous, and the latency measured at each size below 64 KiB), of the write-back a
// write over what the peer has read pays, and of the CPU reducer's float sum and copy, in cache
// and beyond it; the link is copied by the CPUs; docs/model.md, "arlab-calibrate". After
// recalibrating, copy the file's numbers here (Topology.LocalFileEqualsTheBuiltInDefaults holds
// the two equal). 1e-3 / bandwidth in GB/s is microseconds per byte.
Machine Machine::local_default() {
  Machine m;
  m.name = "one shared-memory node (built-in defaults)";
  m.source = "built-in";
  // copied_by: cpu; Open MPI's eager -> rendezvous switch: above 2048 B, alpha 3.646 us.
  m.intra.alpha_us = 0.5218;
  m.intra.us_per_byte = 1e-3 / 6.623;
  m.intra.cpu_copies = true;
  m.intra.rendezvous_bytes = 2048;
  m.intra.alpha_us_rendezvous = 3.646;
  m.intra.latency = {{8, 0.4573},   {16, 0.4849},  {32, 0.4849},   {64, 0.4857},   {128, 0.4857},
                     {256, 0.4857}, {512, 0.8926}, {1024, 0.8926}, {2048, 1.341},  {4096, 3.592},
                     {8192, 3.592}, {16384, 3.592}, {32768, 3.592}};
  m.intra.writeback = {{8192, 0.0003275},   {32768, 0.0003683},   {131072, 0.0003713},
                       {524288, 0.000367},  {2097152, 0.0003725}, {8388608, 0.0002239}};
  m.intra.writeback_later = {{8192, 0.0003496},  {32768, 0.0003649},   {131072, 0.0003745},
                             {524288, 0.000359}, {2097152, 0.0003525}, {8388608, 3.947e-05}};
  m.inter = m.intra;
  m.reduce_us_per_byte = 1e-3 / 30.41;
  m.copy_us_per_byte = 1e-3 / 75.55;
  m.call_us = 0.03244;
  m.cache_bytes = 33554432;
  m.beyond_cache = {1e-3 / 5.156, 1e-3 / 5.156, 1e-3 / 11.2, 1e-3 / 29.22};
  return m;
}

}  // namespace arlab::detail

// Fuzzes the topology file reader (src/model/topology.cpp): parse_topology() on the input as a
// file's text. Error(InvalidArgument), its message naming the file, is the normal outcome for
// a bad file. A bug: a crash, a sanitizer report, a hang, any other exception, or a machine
// that breaks what the reader promises (model/topology.hpp): at least one node and one rank
// per node, a placement that fits them, rates and latencies finite and not negative, rates
// positive; and topology_yaml() of it, which must not throw, reading back into the same machine.
#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include <arlab/arlab.hpp>

#include "fuzz_check.hpp"
#include "model/topology.hpp"

namespace {

using arlab::detail::LinkCost;
using arlab::detail::Machine;
using arlab::fuzz::bug;
using arlab::fuzz::require;

bool finite_at_least_zero(double v) { return std::isfinite(v) && v >= 0; }
bool positive_rate(double v) { return std::isfinite(v) && v > 0; }

void check_link(const LinkCost& l) {
  require(finite_at_least_zero(l.alpha_us) && finite_at_least_zero(l.alpha_us_rendezvous), "bad latency");
  require(positive_rate(l.us_per_byte), "bad link rate");
  require(finite_at_least_zero(l.rendezvous_bytes), "bad rendezvous_bytes");
  for (std::size_t i = 0; i < l.latency.size(); ++i) {
    require(l.latency[i].bytes >= 1 && finite_at_least_zero(l.latency[i].alpha_us), "bad latency_us point");
    require(i == 0 || l.latency[i].bytes > l.latency[i - 1].bytes, "latency_us sizes not ascending");
    require(finite_at_least_zero(l.alpha_for(l.latency[i].bytes * 1.5)), "alpha_for not finite");
  }
  for (std::size_t i = 0; i < l.writeback.size(); ++i) {
    require(l.writeback[i].bytes >= 1 && finite_at_least_zero(l.writeback[i].us_per_byte), "bad writeback point");
    require(i == 0 || l.writeback[i].bytes > l.writeback[i - 1].bytes, "writeback sizes not ascending");
    require(finite_at_least_zero(l.writeback_us_per_byte(l.writeback[i].bytes * 1.5)), "writeback not finite");
  }
}

void check(const Machine& m) {
  require(m.nodes >= 1 && m.ranks_per_node >= 1, "fewer than one node or rank per node");
  require(m.rank_to_node.empty() || m.rank_to_node.size() == static_cast<std::size_t>(m.ranks()),
          "placement does not name every rank");
  for (int n : m.rank_to_node) require(n >= 0 && n < m.nodes, "placement names a node that is not there");
  check_link(m.intra);
  check_link(m.inter);
  require(positive_rate(m.reduce_us_per_byte) && positive_rate(m.copy_us_per_byte), "bad reduce or copy rate");
  require(finite_at_least_zero(m.call_us) && finite_at_least_zero(m.cache_bytes), "bad call_us or cache_bytes");
  const Machine::BeyondCache& b = m.beyond_cache;
  for (double v : {b.intra_us_per_byte, b.inter_us_per_byte, b.reduce_us_per_byte, b.copy_us_per_byte})
    require(finite_at_least_zero(v) && (v == 0 || m.cache_bytes > 0), "bad beyond-cache rate");
}

// A number written with 17 digits and read back: equal, but a rate passes through its
// bandwidth (1 / rate) both ways, which may move it by an ulp or two.
bool near(double a, double b) {
  return std::fabs(a - b) <= 1e-14 * std::fmax(std::fabs(a), std::fabs(b)) + 4 * std::numeric_limits<double>::denorm_min();
}

bool same_link(const LinkCost& a, const LinkCost& b) {
  return near(a.alpha_us, b.alpha_us) && near(a.us_per_byte, b.us_per_byte) && a.cpu_copies == b.cpu_copies &&
         a.rendezvous_bytes == b.rendezvous_bytes && near(a.alpha_us_rendezvous, b.alpha_us_rendezvous) &&
         std::equal(a.latency.begin(), a.latency.end(), b.latency.begin(), b.latency.end(),
                    [](const auto& x, const auto& y) { return x.bytes == y.bytes && near(x.alpha_us, y.alpha_us); }) &&
         std::equal(a.writeback.begin(), a.writeback.end(), b.writeback.begin(), b.writeback.end(),
                    [](const auto& x, const auto& y) { return x.bytes == y.bytes && near(x.us_per_byte, y.us_per_byte); });
}

void check_round_trip(const Machine& m) {
  const std::string yaml = arlab::detail::topology_yaml(m);
  Machine back;
  try {
    back = arlab::detail::parse_topology(yaml, "round-trip.yaml");
  } catch (const arlab::Error& e) {
    bug(std::string("topology_yaml() wrote a file parse_topology() rejects: ") + e.what() + "\n" + yaml);
  }
  const Machine::BeyondCache &x = m.beyond_cache, &y = back.beyond_cache;
  const bool same = m.name == back.name && m.description == back.description && m.nodes == back.nodes &&
                    m.ranks_per_node == back.ranks_per_node && m.rank_to_node == back.rank_to_node &&
                    same_link(m.intra, back.intra) && same_link(m.inter, back.inter) &&
                    near(m.reduce_us_per_byte, back.reduce_us_per_byte) &&
                    near(m.copy_us_per_byte, back.copy_us_per_byte) && near(m.call_us, back.call_us) &&
                    m.cache_bytes == back.cache_bytes && near(x.intra_us_per_byte, y.intra_us_per_byte) &&
                    near(x.inter_us_per_byte, y.inter_us_per_byte) &&
                    near(x.reduce_us_per_byte, y.reduce_us_per_byte) && near(x.copy_us_per_byte, y.copy_us_per_byte);
  if (!same) bug("topology_yaml() wrote a file that reads back into another machine:\n" + yaml);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  return arlab::fuzz::guarded([&] {
    const std::string text(reinterpret_cast<const char*>(data), size);
    Machine m;
    try {
      m = arlab::detail::parse_topology(text, "fuzz.yaml");
    } catch (const arlab::Error& e) {
      require(e.code() == arlab::Error::Code::InvalidArgument, "error code is not InvalidArgument");
      require(std::string_view(e.what()).starts_with("fuzz.yaml"), "error message does not name the file");
      return;
    }
    check(m);
    check_round_trip(m);
  });
}

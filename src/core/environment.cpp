#include "core/environment.hpp"

#include <charconv>
#include <cstdint>
#include <cstdlib>
#include <limits>

#include "arlab/arlab.hpp"

namespace arlab::detail {

const Knob kKnobs[11] = {
    {"ARLAB_ALGO", "algorithm used where a call asks for auto", "auto"},
    {"ARLAB_TRANSPORT", "mpi | ucx | ucx-rma", "mpi"},
    {"ARLAB_CHUNK_BYTES", "pipelining unit in bytes (K/M/G suffixes)", "256K"},
    {"ARLAB_SEGMENT_BYTES", "calls of 16 or more segments of this size run one segment after another (0: never)",
     "1M"},
    {"ARLAB_TIMEOUT_S", "seconds a collective may wait without progress", "300"},
    {"ARLAB_DEBUG", "WARN | INFO | TRACE", "WARN"},
    {"ARLAB_TOPOLOGY", "topology file (YAML) describing the machine for auto", "none: this machine, calibrated"},
    {"ARLAB_CALIBRATE", "1 | 0 | force: without a topology, the cached calibration of this machine (measured "
                        "once), the built-in description, or measured again", "1"},
    {"ARLAB_CACHE_DIR", "where calibrations are cached", "$XDG_CACHE_HOME/arlab, else ~/.cache/arlab"},
    {"ARLAB_RANKS_PER_NODE", "nodes as consecutive groups of K ranks (hierarchical, the model's placement)",
     "the topology's placement, else the ranks sharing memory"},
    {"ARLAB_MAX_IN_FLIGHT", "collectives of one communicator running at once (1-8; 1: one at a time)", "4"},
};

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

std::optional<std::size_t> parse_size(std::string_view s) {
  std::uint64_t mult = 1;
  if (!s.empty()) {
    switch (s.back()) {
      case 'k': case 'K': mult = std::uint64_t{1} << 10; break;
      case 'm': case 'M': mult = std::uint64_t{1} << 20; break;
      case 'g': case 'G': mult = std::uint64_t{1} << 30; break;
      default: break;
    }
    if (mult != 1) s.remove_suffix(1);
  }
  std::uint64_t n = 0;
  if (s.empty()) return std::nullopt;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
  if (ec != std::errc{} || end != s.data() + s.size()) return std::nullopt;
  if (n > std::numeric_limits<std::size_t>::max() / mult) return std::nullopt;
  return static_cast<std::size_t>(n * mult);
}

std::size_t parse_bytes(const std::string& text, const std::string& what) {
  if (auto n = parse_size(text)) return *n;
  throw Error(Error::Code::InvalidArgument,
              "bad " + what + " '" + text + "': expected a byte count such as 4096, 256K, 4M or 1G");
}

}  // namespace arlab::detail

namespace arlab {

Options Options::resolved() const {
  using detail::env;
  Options o = *this;
  if (!o.algorithm)
    o.algorithm = env("ARLAB_ALGO") ? algorithm_from_string(*env("ARLAB_ALGO")) : Algorithm::Auto;
  if (!o.transport)
    o.transport = env("ARLAB_TRANSPORT") ? transport_from_string(*env("ARLAB_TRANSPORT")) : TransportKind::Mpi;
  if (!o.chunk_bytes)
    o.chunk_bytes = env("ARLAB_CHUNK_BYTES") ? detail::parse_bytes(*env("ARLAB_CHUNK_BYTES"), "ARLAB_CHUNK_BYTES")
                                             : std::size_t{256} << 10;
  if (!o.segment_bytes)
    o.segment_bytes = env("ARLAB_SEGMENT_BYTES")
                          ? detail::parse_bytes(*env("ARLAB_SEGMENT_BYTES"), "ARLAB_SEGMENT_BYTES")
                          : std::size_t{1} << 20;
  if (!o.timeout_s) {
    o.timeout_s = 300;
    if (auto t = env("ARLAB_TIMEOUT_S")) {
      char* end = nullptr;
      const double v = std::strtod(t->c_str(), &end);
      if (end == t->c_str() || *end || !(v > 0))
        throw Error(Error::Code::InvalidArgument,
                    "bad ARLAB_TIMEOUT_S '" + *t + "': expected a positive number of seconds");
      o.timeout_s = v;
    }
  }
  if (!o.log_level) {
    o.log_level = LogLevel::Warn;
    if (auto d = env("ARLAB_DEBUG")) {
      if (*d == "NONE") o.log_level = LogLevel::None;
      else if (*d == "WARN") o.log_level = LogLevel::Warn;
      else if (*d == "INFO") o.log_level = LogLevel::Info;
      else if (*d == "TRACE") o.log_level = LogLevel::Trace;
      else
        throw Error(Error::Code::InvalidArgument,
                    "bad ARLAB_DEBUG '" + *d + "'; valid: NONE, WARN, INFO, TRACE");
    }
  }
  if (!o.topology) o.topology = env("ARLAB_TOPOLOGY");  // stays unset: calibrated
  if (!o.self_calibration) {
    o.self_calibration = SelfCalibration::Cached;
    if (auto c = env("ARLAB_CALIBRATE")) {
      if (*c == "1" || *c == "cached") o.self_calibration = SelfCalibration::Cached;
      else if (*c == "0" || *c == "off") o.self_calibration = SelfCalibration::Off;
      else if (*c == "force") o.self_calibration = SelfCalibration::Force;
      else
        throw Error(Error::Code::InvalidArgument,
                    "bad ARLAB_CALIBRATE '" + *c + "'; valid: 1 (cached), 0 (off: the built-in description), force");
    }
  }
  if (!o.cache_dir) o.cache_dir = env("ARLAB_CACHE_DIR");  // stays unset: XDG_CACHE_HOME or ~/.cache
  if (!o.ranks_per_node) {  // stays unset: the topology's placement or the shared-memory nodes
    if (auto k = env("ARLAB_RANKS_PER_NODE")) {
      int v = 0;
      auto [end, ec] = std::from_chars(k->data(), k->data() + k->size(), v);
      if (ec != std::errc{} || end != k->data() + k->size() || v < 1)
        throw Error(Error::Code::InvalidArgument,
                    "bad ARLAB_RANKS_PER_NODE '" + *k + "': expected a whole number of ranks >= 1");
      o.ranks_per_node = v;
    }
  }
  if (!o.max_in_flight) {
    o.max_in_flight = 4;
    if (auto k = env("ARLAB_MAX_IN_FLIGHT")) {
      int v = 0;
      auto [end, ec] = std::from_chars(k->data(), k->data() + k->size(), v);
      if (ec != std::errc{} || end != k->data() + k->size() || v < 1 || v > 8)
        throw Error(Error::Code::InvalidArgument,
                    "bad ARLAB_MAX_IN_FLIGHT '" + *k + "': expected a whole number from 1 to 8");
      o.max_in_flight = v;
    }
  }
  if (*o.max_in_flight < 1 || *o.max_in_flight > 8)
    throw Error(Error::Code::InvalidArgument, "Options::max_in_flight must be from 1 to 8");
  if (o.ranks_per_node && *o.ranks_per_node < 1)
    throw Error(Error::Code::InvalidArgument, "Options::ranks_per_node must be at least 1");
  if (*o.timeout_s <= 0)
    throw Error(Error::Code::InvalidArgument, "Options::timeout_s must be positive");
  return o;
}

}  // namespace arlab

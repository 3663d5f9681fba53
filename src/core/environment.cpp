#include "core/environment.hpp"

#include <cstdlib>

#include "arlab/arlab.hpp"

namespace arlab::detail {

const Knob kKnobs[6] = {
    {"ARLAB_ALGO", "algorithm used where a call asks for auto", "auto"},
    {"ARLAB_TRANSPORT", "mpi | ucx | ucx-rma", "mpi"},
    {"ARLAB_CHUNK_BYTES", "pipelining unit in bytes (K/M/G suffixes)", "256K"},
    {"ARLAB_TIMEOUT_S", "seconds a collective may wait without progress", "300"},
    {"ARLAB_DEBUG", "WARN | INFO | TRACE", "WARN"},
    {"ARLAB_TOPOLOGY", "topology file (YAML) describing the machine for auto", "built-in: one shared-memory node"},
};

std::optional<std::string> env(const char* name) {
  const char* v = std::getenv(name);
  if (!v || !*v) return std::nullopt;
  return std::string(v);
}

std::size_t parse_bytes(const std::string& text, const std::string& what) {
  std::size_t pos = 0;
  unsigned long long value = 0;
  try {
    value = std::stoull(text, &pos);
  } catch (const std::exception&) {
    pos = 0;
  }
  std::string rest = text.substr(pos);
  unsigned shift = 0;
  if (rest == "K" || rest == "k") shift = 10;
  else if (rest == "M" || rest == "m") shift = 20;
  else if (rest == "G" || rest == "g") shift = 30;
  else if (!rest.empty()) pos = 0;
  if (pos == 0 || text[0] == '-' || (shift && value > (~0ULL >> shift)))
    throw Error(Error::Code::InvalidArgument,
                "bad " + what + " '" + text + "': expected a byte count such as 4096, 256K, 4M or 1G");
  return static_cast<std::size_t>(value << shift);
}

}  // namespace arlab::detail

namespace arlab {

Options Options::resolved() const {
  using detail::env;
  Options o = *this;
  if (!o.algorithm)
    o.algorithm = env("ARLAB_ALGO") ? algorithm_from_string(*env("ARLAB_ALGO")) : Algorithm::Auto;
  if (auto t = env("ARLAB_TRANSPORT"); t && transport == TransportKind::Mpi)
    o.transport = transport_from_string(*t);
  if (!o.chunk_bytes)
    o.chunk_bytes = env("ARLAB_CHUNK_BYTES") ? detail::parse_bytes(*env("ARLAB_CHUNK_BYTES"), "ARLAB_CHUNK_BYTES")
                                             : std::size_t{256} << 10;
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
  if (!o.topology) o.topology = env("ARLAB_TOPOLOGY");  // stays unset: the built-in machine
  if (*o.timeout_s <= 0)
    throw Error(Error::Code::InvalidArgument, "Options::timeout_s must be positive");
  return o;
}

}  // namespace arlab

// The environment knobs, in one table. Each is also an Options field, and every field
// resolves in the same order: a field set in code wins, the variable fills a field left
// unset, the default comes last.
//
//   ARLAB_ALGO         algorithm used where a call asks for auto   (auto: the cost model picks)
//   ARLAB_TRANSPORT    mpi | ucx | ucx-rma                          (mpi)
//   ARLAB_CHUNK_BYTES  pipelining unit, bytes, K/M suffixes          (256K)
//   ARLAB_TIMEOUT_S    seconds a wait may last before it fails      (300)
//   ARLAB_DEBUG        WARN | INFO | TRACE                          (WARN)
//   ARLAB_TOPOLOGY     topology file for Auto's cost model          (none: calibrated)
//   ARLAB_CALIBRATE    1 | 0 | force: without a topology, this machine's cached calibration (1),
//                      the built-in description (0), or measured again (force)   (1)
//   ARLAB_CACHE_DIR    where calibrations are cached    ($XDG_CACHE_HOME/arlab, ~/.cache/arlab)
//   ARLAB_RANKS_PER_NODE  nodes as groups of K consecutive ranks  (the topology's, else shared memory)
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace arlab::detail {

struct Knob {
  const char* name;
  const char* meaning;
  const char* default_value;
};
extern const Knob kKnobs[11];

// The variable's value, or nullopt when unset or empty.
std::optional<std::string> env(const char* name);

// "100", "64K", "4M", "1G" (powers of 1024, either case) -> bytes; nullopt on bad text or
// overflow. Shared by the knobs and the tools' command lines.
std::optional<std::size_t> parse_size(std::string_view text);

// parse_size, throwing Error naming `what` on bad text.
std::size_t parse_bytes(const std::string& text, const std::string& what);

}  // namespace arlab::detail

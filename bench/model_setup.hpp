// arlab-bench: the machine the cost model (pred column) describes. --topology or
// ARLAB_TOPOLOGY names a file, else the library's built-in one-node machine; --ranks-per-node
// K re-places the ranks in blocks of K per node. Options has no such field, so the bench
// writes the modified machine to a temporary topology file for the communicators to load.
#pragma once

#include <optional>
#include <string>

namespace arlab::bench {

struct ModelSetup {
  std::optional<std::string> topology;  // for Options::topology: the file, or the temporary one
  std::string name, source;             // the machine's name; its file or "built-in"
  int nodes = 1, ranks_per_node = 1;    // as the model places the ranks
  std::string note;                     // what --ranks-per-node did, for the header
  std::string temporary;                // the file to remove once the communicators exist

  ModelSetup() = default;
  ModelSetup(const ModelSetup&) = delete;
  ModelSetup& operator=(const ModelSetup&) = delete;
  ~ModelSetup();  // removes `temporary`
};

// Local; every rank does the same. Throws arlab::Error(InvalidArgument) naming the flag or the
// file (with line and column) when either is bad.
void setup_model(const std::optional<std::string>& topology_flag, int ranks_per_node, int nranks,
                 ModelSetup& out);

// Writes `yaml` to a new file in $TMPDIR (else /tmp) named arlab-bench-`what`-XXXXXX and returns
// its path. Throws arlab::Error(InvalidArgument) naming `flag` when it cannot (and then leaves no
// file behind).
std::string write_temporary_topology(const std::string& yaml, const std::string& what, const std::string& flag);

}  // namespace arlab::bench

#include "model_setup.hpp"

#include <unistd.h>

#include <arlab/arlab.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "model/machine.hpp"   // the library's machine description (internal)
#include "model/topology.hpp"

namespace arlab::bench {
namespace {

std::string count_of(int n, const char* word) { return std::to_string(n) + " " + word + (n == 1 ? "" : "s"); }

// The machine with consecutive groups of k ranks as nodes: every other field as it was.
std::string to_yaml(const detail::Machine& m, int nodes, int k) {
  detail::Machine regrouped = m;
  regrouped.nodes = nodes;
  regrouped.ranks_per_node = k;
  regrouped.name = m.name + ", " + count_of(k, "rank") + " per node";
  return "# written by arlab-bench --ranks-per-node " + std::to_string(k) + " from " + m.source + "\n" +
         detail::topology_yaml(regrouped);
}

[[noreturn]] void bad(const std::string& message) { throw Error(Error::Code::InvalidArgument, message); }

}  // namespace

ModelSetup::~ModelSetup() {
  if (!temporary.empty()) std::remove(temporary.c_str());
}

void setup_model(const std::optional<std::string>& topology_flag, int k, int nranks, ModelSetup& out) {
  Options o;
  o.topology = topology_flag;
  out.topology = o.resolved().topology;  // the flag, else ARLAB_TOPOLOGY
  const detail::Machine m = out.topology ? detail::load_topology(*out.topology) : detail::Machine::local_default();
  out.name = m.name;
  out.source = m.source;
  const std::vector<int> placement = m.placement(nranks);  // throws when rank_to_node disagrees
  out.nodes = static_cast<int>(std::set<int>(placement.begin(), placement.end()).size());
  out.ranks_per_node = m.ranks_per_node > 0 ? std::min(m.ranks_per_node, nranks) : nranks;
  if (k == 0) return;

  if (nranks % k != 0)
    bad("bad value '" + std::to_string(k) + "' for --ranks-per-node: expected a divisor of the rank count " +
        std::to_string(nranks));
  if (!m.rank_to_node.empty())
    bad("--ranks-per-node cannot re-place the ranks of " + m.source + ": it places them itself (rank_to_node)");
  out.nodes = nranks / k;
  out.ranks_per_node = k;
  out.note = "--ranks-per-node " + std::to_string(k) + ": " + count_of(out.nodes, "node") + " of " +
             count_of(k, "rank") + ", joined by " +
             (m.nodes > 1 ? std::string("the topology's inter-node link")
                          : std::string("its intra-node link (it describes one node)"));

  out.temporary = write_temporary_topology(to_yaml(m, out.nodes, k), "topology", "--ranks-per-node");
  out.topology = out.temporary;
  out.name = m.name + ", " + count_of(k, "rank") + " per node";
}

std::string write_temporary_topology(const std::string& yaml, const std::string& what, const std::string& flag) {
  const char* dir = std::getenv("TMPDIR");
  std::string path = std::string(dir && *dir ? dir : "/tmp") + "/arlab-bench-" + what + "-XXXXXX";
  const int fd = mkstemp(path.data());
  if (fd < 0) bad(flag + ": cannot create a temporary topology file in " + path);
  const bool ok = write(fd, yaml.data(), yaml.size()) == static_cast<ssize_t>(yaml.size());
  close(fd);
  if (!ok) {
    std::remove(path.c_str());
    bad(flag + ": cannot write the temporary topology file " + path);
  }
  return path;
}

}  // namespace arlab::bench

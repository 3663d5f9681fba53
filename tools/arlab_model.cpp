// arlab-model: what each all-reduce algorithm costs on a described machine, which one wins at
// each message size, where the winner changes, and why.
//
//   arlab-model --topology topology/h100-8gpu-nvlink.yaml --sizes 8:1G:4 --explain
//
// Every number comes from the cost walk (src/model/cost_walk.hpp): each algorithm's own
// schedules, built for every rank and run on the clock of the machine in the topology file.
// The tool links arlab but never initialises MPI; it runs as a plain program.
#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>

#include "algorithms/registry.hpp"
#include "model/cost_walk.hpp"
#include "model/topology.hpp"
#include "model_options.hpp"
#include "model_report.hpp"

namespace arlab::tool {
namespace {

constexpr std::size_t kElem = sizeof(float);

class Model {
 public:
  // Segments as a communicator cuts them (Machine::segment_bytes).
  Model(const detail::Machine& machine, int ranks, std::size_t chunk_bytes, std::size_t segment_bytes)
      : machine_(machine), ranks_(ranks), chunk_bytes_(chunk_bytes), segment_bytes_(machine.segment_bytes(segment_bytes)) {}

  detail::Cost predict(Algorithm a, std::size_t bytes) const {
    detail::Shape s;
    s.nranks = ranks_;
    s.count = bytes / kElem;
    s.elem_size = kElem;
    s.chunk_bytes = chunk_bytes_;
    s.segment_bytes = segment_bytes_;
    return detail::predict(*detail::find_schedule_algorithm(a), s, machine_);
  }

  SizeRow row(std::size_t bytes, const std::vector<Algorithm>& algorithms) const {
    SizeRow r;
    r.bytes = bytes;
    for (Algorithm a : algorithms) r.predictions.push_back({a, predict(a, bytes)});
    std::vector<std::size_t> order(r.predictions.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
      return r.predictions[a].cost.total_us < r.predictions[b].cost.total_us;
    });
    r.pick = order[0];
    r.runner_up = order.size() > 1 ? order[1] : order[0];
    return r;
  }

  // Bisection between two sizes of the sweep (in whole elements, geometrically) for the
  // smallest size where `to` is faster than `from`, to within 1%.
  Crossover crossover(Algorithm from, Algorithm to, std::size_t below, std::size_t above) const {
    std::size_t lo = below / kElem, hi = above / kElem;
    while (hi - lo > 1 && static_cast<double>(hi) > 1.01 * static_cast<double>(lo)) {
      auto mid = static_cast<std::size_t>(std::sqrt(static_cast<double>(lo) * static_cast<double>(hi)));
      mid = std::clamp(mid, lo + 1, hi - 1);
      if (predict(to, mid * kElem).total_us < predict(from, mid * kElem).total_us)
        hi = mid;
      else
        lo = mid;
    }
    return {from, to, below, above, hi * kElem};
  }

 private:
  const detail::Machine& machine_;
  int ranks_;
  std::size_t chunk_bytes_;
  std::size_t segment_bytes_;
};

int run(const ModelOptions& o) {
  const detail::Machine machine = detail::load_topology(o.topology);
  const int ranks = o.ranks ? o.ranks : machine.ranks();
  if (ranks > kMaxModelRanks)
    throw Error(Error::Code::InvalidArgument, "the file places " + std::to_string(ranks) +
                                                  " ranks (nodes x ranks_per_node); arlab-model walks at most " +
                                                  std::to_string(kMaxModelRanks) + ": give --ranks");
  machine.placement(ranks);  // an explicit rank_to_node must match --ranks
  const Model model(machine, ranks, o.chunk_bytes, o.segment_bytes);
  // Checked before the walk (which can take minutes), so that a path that cannot be written
  // fails at once; written after it.
  std::string why;
  if (o.json && *o.json != "-" && !cli::can_write(*o.json, &why)) {
    std::fprintf(stderr, "arlab-model: cannot write --json file '%s': %s\n", o.json->c_str(), why.c_str());
    return 2;
  }
  // As Auto: hierarchical only where there are several nodes (on one it is the ring), unless asked for.
  std::vector<Algorithm> algorithms = o.algorithms;
  const auto nodes = machine.placement(ranks);
  if (!o.algorithms_given && std::adjacent_find(nodes.begin(), nodes.end(), std::not_equal_to<>()) == nodes.end())
    algorithms.erase(std::remove(algorithms.begin(), algorithms.end(), Algorithm::Hierarchical), algorithms.end());

  std::vector<SizeRow> rows;
  for (std::size_t bytes : sweep_sizes(o)) rows.push_back(model.row(bytes, algorithms));
  std::vector<Crossover> crossovers;
  for (std::size_t i = 1; i < rows.size(); ++i) {
    const Algorithm before = rows[i - 1].predictions[rows[i - 1].pick].algorithm;
    const Algorithm after = rows[i].predictions[rows[i].pick].algorithm;
    if (before != after) crossovers.push_back(model.crossover(before, after, rows[i - 1].bytes, rows[i].bytes));
  }

  if (o.json) {
    const std::string records = json_records(rows, ranks);
    if (*o.json == "-") {
      std::fputs(records.c_str(), stdout);
      return 0;
    }
    std::ofstream file(*o.json);
    if (!(file << records) || !file.flush()) {
      std::fprintf(stderr, "arlab-model: cannot write --json file '%s': %s\n", o.json->c_str(), std::strerror(errno));
      return 2;
    }
  }
  print_header(stdout, machine, ranks, o);
  print_table(stdout, rows, ranks);
  print_crossovers(stdout, rows, crossovers);
  if (o.explain) print_explain(stdout, rows);
  if (o.json)
    std::printf("#\n# %zu records written to %s\n", rows.size() * algorithms.size(), o.json->c_str());
  return 0;
}

}  // namespace
}  // namespace arlab::tool

int main(int argc, char** argv) {
  using arlab::tool::ParseResult;
  const ParseResult parsed = arlab::tool::parse_options(argc, argv);
  if (parsed.status == ParseResult::Status::Help) {
    std::fputs(arlab::tool::usage().c_str(), stdout);
    return 0;
  }
  if (parsed.status == ParseResult::Status::Error) {
    std::fprintf(stderr, "arlab-model: %s\n", parsed.message.c_str());
    return 2;
  }
  try {
    return arlab::tool::run(parsed.options);
  } catch (const arlab::Error& e) {
    std::fprintf(stderr, "arlab-model: %s\n", e.what());
    return 1;
  }
}

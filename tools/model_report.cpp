#include "model_report.hpp"

#include <algorithm>
#include <cmath>

namespace arlab::tool {
namespace {

constexpr int kColumn = 22;  // one algorithm's "time(us)* busbw" column

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

struct Term {
  const char* name;
  double detail::Cost::*field;
};
constexpr Term kTerms[] = {{"latency (alpha)", &detail::Cost::latency_us},
                           {"bandwidth (beta)", &detail::Cost::bandwidth_us},
                           {"reduction (gamma)", &detail::Cost::reduce_us}};

}  // namespace

double busbw_GBps(std::size_t bytes, double time_us, int ranks) {
  if (time_us <= 0 || ranks < 2) return 0;
  return static_cast<double>(bytes) / time_us * 1e-3 * 2.0 * (ranks - 1) / ranks;
}

void print_header(std::FILE* out, const detail::Machine& m, int ranks, const ModelOptions& o) {
  std::fprintf(out, "# arlab-model: %s (%s)\n", m.name.c_str(), m.source.c_str());
  if (!m.description.empty()) std::fprintf(out, "# %s\n", m.description.c_str());
  const auto nodes = m.placement(ranks);
  const int used = nodes.empty() ? 0 : *std::max_element(nodes.begin(), nodes.end()) + 1;
  std::fprintf(out, "# %d rank%s on %d node%s; intra %.2f us, %.4g GB/s", ranks, ranks == 1 ? "" : "s", used, used == 1 ? "" : "s",
               m.intra.alpha_us, 1e-3 / m.intra.us_per_byte);
  if (used > 1) std::fprintf(out, "; inter %.2f us, %.4g GB/s", m.inter.alpha_us, 1e-3 / m.inter.us_per_byte);
  std::fprintf(out, "; reduce %.4g GB/s; copy %.4g GB/s\n", 1e-3 / m.reduce_us_per_byte, 1e-3 / m.copy_us_per_byte);
  if (m.cache_bytes > 0) {
    // The rates of a call whose working set on a node (input, output, scratch) fills the cache.
    const detail::Machine b = m.at_working_set(m.cache_bytes);
    std::fprintf(out, "# beyond the cache (a node's working set of %s or more): intra %.4g GB/s",
                 human_bytes(m.cache_bytes).c_str(), 1e-3 / b.intra.us_per_byte);
    if (used > 1) std::fprintf(out, "; inter %.4g GB/s", 1e-3 / b.inter.us_per_byte);
    std::fprintf(out, "; reduce %.4g GB/s; copy %.4g GB/s\n", 1e-3 / b.reduce_us_per_byte, 1e-3 / b.copy_us_per_byte);
  }
  const std::size_t segment = m.segment_bytes(o.segment_bytes);
  const std::string segments = segment ? "calls of " + std::to_string(detail::Shape::kMinSegments) +
                                             " segments or more cut into segments of " +
                                             human_bytes(static_cast<double>(segment))
                                       : "no segments";
  std::fprintf(out,
               "# float elements, %s chunks, %s; time: predicted us; busbw: bytes / time x 2(p-1)/p in GB/s; "
               "* marks the pick\n#\n",
               o.chunk_bytes ? human_bytes(static_cast<double>(o.chunk_bytes)).c_str() : "no", segments.c_str());
}

void print_table(std::FILE* out, const std::vector<SizeRow>& rows, int ranks) {
  if (rows.empty()) return;
  std::string names = "#        size", units = "#         (B)";
  for (const auto& p : rows.front().predictions) {
    std::string n = to_string(p.algorithm);
    names += std::string(kColumn - std::min<std::size_t>(n.size(), kColumn - 1), ' ') + n;
    units += "     time(us)   busbw";
  }
  std::fprintf(out, "%s   pick\n%s\n", names.c_str(), units.c_str());
  for (const auto& row : rows) {
    std::fprintf(out, "%13zu", row.bytes);
    for (std::size_t i = 0; i < row.predictions.size(); ++i) {
      const double t = row.predictions[i].cost.total_us;
      std::fprintf(out, " %12.2f%c %7.2f", t, i == row.pick ? '*' : ' ', busbw_GBps(row.bytes, t, ranks));
    }
    std::fprintf(out, "   %s\n", to_string(row.predictions[row.pick].algorithm).c_str());
  }
}

void print_crossovers(std::FILE* out, const std::vector<SizeRow>& rows, const std::vector<Crossover>& crossovers) {
  if (rows.empty()) return;
  if (crossovers.empty()) {
    std::fprintf(out, "#\n# Crossovers: none; %s is the pick at every size\n",
                 to_string(rows.front().predictions[rows.front().pick].algorithm).c_str());
    return;
  }
  std::fprintf(out, "#\n# Crossovers (where the pick changes):\n");
  for (const auto& c : crossovers)
    std::fprintf(out, "#   %s -> %s at about %s (%zu B; between %s and %s)\n", to_string(c.from).c_str(),
                 to_string(c.to).c_str(), human_bytes(static_cast<double>(c.bytes)).c_str(), c.bytes,
                 human_bytes(static_cast<double>(c.below)).c_str(), human_bytes(static_cast<double>(c.above)).c_str());
}

std::string verdict(const SizeRow& row) {
  const Prediction& p = row.predictions[row.pick];
  const std::string pick = to_string(p.algorithm);
  // The term that makes up most of the pick's own time.
  const Term* own = &kTerms[0];
  for (const Term& t : kTerms)
    if (p.cost.*t.field > p.cost.*own->field) own = &t;
  const double share = p.cost.total_us > 0 ? 100 * (p.cost.*own->field) / p.cost.total_us : 0;
  const std::string own_text = pick + "'s time is " + fmt("%.0f", share) + "% " + own->name;
  if (row.runner_up == row.pick) return pick + " is the only algorithm asked for; " + own_text + ".";
  const Prediction& r = row.predictions[row.runner_up];
  const std::string runner = to_string(r.algorithm);
  const double gap = r.cost.total_us - p.cost.total_us;
  if (gap <= 0) return pick + " ties with " + runner + "; " + own_text + ".";
  // The term in which the pick saves the most against the runner-up decides.
  const Term* decides = &kTerms[0];
  for (const Term& t : kTerms)
    if (r.cost.*t.field - p.cost.*t.field > r.cost.*decides->field - p.cost.*decides->field) decides = &t;
  return pick + " beats " + runner + " by " + fmt("%.2f", gap) + " us (" +
         fmt("%.0f", 100 * gap / r.cost.total_us) + "%): the " + decides->name + " term decides (" +
         fmt("%.2f", p.cost.*decides->field) + " us against " + fmt("%.2f", r.cost.*decides->field) + " us); " +
         own_text + ".";
}

void print_explain(std::FILE* out, const std::vector<SizeRow>& rows) {
  std::fprintf(out,
               "#\n# Breakdown along each algorithm's critical path: latency = alpha terms, bandwidth = beta terms\n"
               "# (with waits for a busy port), reduce = gamma terms (reductions and copies).\n"
               "#        size  algorithm            total(us)  latency(us)  bandwidth(us)  reduce(us)\n");
  for (const auto& row : rows) {
    for (std::size_t i = 0; i < row.predictions.size(); ++i) {
      const auto& p = row.predictions[i];
      std::fprintf(out, "%13s  %-19s %11.2f%c %11.2f  %13.2f  %10.2f\n", i == 0 ? std::to_string(row.bytes).c_str() : "",
                   to_string(p.algorithm).c_str(), p.cost.total_us, i == row.pick ? '*' : ' ', p.cost.latency_us,
                   p.cost.bandwidth_us, p.cost.reduce_us);
    }
    std::fprintf(out, "%13s  %s: %s\n", "", human_bytes(static_cast<double>(row.bytes)).c_str(), verdict(row).c_str());
  }
}

std::string json_records(const std::vector<SizeRow>& rows, int ranks) {
  std::string out = "[";
  bool first = true;
  for (const auto& row : rows)
    for (std::size_t i = 0; i < row.predictions.size(); ++i) {
      const auto& p = row.predictions[i];
      out += first ? "\n" : ",\n";
      first = false;
      out += "  {\"algorithm\": \"" + to_string(p.algorithm) + "\", \"bytes\": " + std::to_string(row.bytes) +
             ", \"ranks\": " + std::to_string(ranks) + ", \"predicted_us\": " + fmt("%.9g", p.cost.total_us) +
             ", \"latency_us\": " + fmt("%.9g", p.cost.latency_us) +
             ", \"bandwidth_us\": " + fmt("%.9g", p.cost.bandwidth_us) +
             ", \"reduce_us\": " + fmt("%.9g", p.cost.reduce_us) +
             ", \"busbw_GBps\": " + fmt("%.9g", busbw_GBps(row.bytes, p.cost.total_us, ranks)) +
             ", \"pick\": " + (i == row.pick ? "true" : "false") + "}";
    }
  out += first ? "]\n" : "\n]\n";
  return out;
}

}  // namespace arlab::tool

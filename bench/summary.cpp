#include "summary.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "calibrate/state_probe.hpp"

namespace arlab::bench {
namespace {

std::string series_of(const Line& l) {
  return to_string(l.algorithm) + (is_baseline(l.algorithm) ? " baseline" : " over " + to_string(l.transport));
}

// Lines of one size, type and op: the rows the fastest is chosen from.
using SizeKey = std::tuple<DataType, ReduceOp, std::size_t>;

template <class T>
void push_unique(std::vector<T>& v, const T& x) {
  if (std::find(v.begin(), v.end(), x) == v.end()) v.push_back(x);
}

}  // namespace

std::string state_note(const std::vector<Line>& lines, bool crowded) {
  double lo = 0, hi = 0, ref_lo = 0, ref_hi = 0;
  int probed = 0, compared = 0, other = 0;
  for (const Line& l : lines)
    for (const std::optional<Section>* sec : {&l.out_of_place, &l.in_place}) {
      if (!*sec || (*sec)->state_probe_us <= 0) continue;
      const double t = (*sec)->state_probe_us, ref = l.calibrated_state_probe_us;
      lo = probed ? std::min(lo, t) : t;
      hi = probed ? std::max(hi, t) : t;
      ++probed;
      if (ref <= 0) continue;
      ref_lo = compared ? std::min(ref_lo, ref) : ref;
      ref_hi = compared ? std::max(ref_hi, ref) : ref;
      ++compared;
      other += calib::other_state(t, ref) ? 1 : 0;
    }
  if (probed == 0) return "";
  char text[512];
  const int n = std::snprintf(text, sizeof text,
                              "Machine state (ranks 0 and 1 exchanging 8 B through MPI; docs/model.md, \"The machine's "
                              "state\"): %.3g-%.3g us before the sections",
                              lo, hi);
  std::string note(text, static_cast<std::size_t>(std::max(n, 0)));
  if (compared == 0) return note + "; the model's machine holds no calibrated state to compare with";
  if (ref_lo == ref_hi) std::snprintf(text, sizeof text, ", %.3g us when the model was calibrated", ref_lo);
  else std::snprintf(text, sizeof text, ", %.3g-%.3g us when the models were calibrated", ref_lo, ref_hi);
  note += text;
  std::snprintf(text, sizeof text, "; %d of %d sections ran in another state (over %gx apart)%s", other, compared,
                calib::kOtherStateRatio, other ? ": their err% compares two machines" : "");
  note += text;
  if (crowded) note += " (more ranks than cores on a host: the probe spreads 2x within a state as well)";
  return note;
}

Summary summarize(const std::vector<Line>& lines) {
  Summary s;
  // Wrong values, grouped by series, type, op and section, sizes in order.
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> sizes;
  std::map<std::string, std::pair<double, int>> sums;
  std::vector<std::string> order;
  for (const Line& l : lines) {
    const std::string series = series_of(l);
    for (bool in_place : {false, true}) {
      const std::optional<Section>& sec = in_place ? l.in_place : l.out_of_place;
      if (!sec) continue;
      auto& [sum, n] = sums[series];
      push_unique(order, series);
      if (std::isfinite(sec->busbw_GBps)) {
        sum += sec->busbw_GBps;
        ++n;
      }
      if (!sec->wrong || *sec->wrong == 0) continue;
      s.wrong += *sec->wrong;
      const std::string group = series + ", " + to_string(l.dtype) + " " + to_string(l.op) + ", " +
                                (in_place ? "in-place" : "out-of-place");
      push_unique(groups, group);
      sizes[group].push_back(format_bytes(l.size));
    }
  }
  for (const std::string& g : groups) {
    std::string where = g + ": ";
    for (std::size_t i = 0; i < sizes[g].size(); ++i) where += (i ? ", " : "") + sizes[g][i];
    s.wrong_where.push_back(where);
  }
  for (const std::string& series : order) {
    const auto& [sum, n] = sums[series];
    Summary::Average a{series, n ? sum / n : 0};
    s.averages.push_back(a);
    if (!s.best || a.busbw_GBps > s.best->busbw_GBps) s.best = a;
  }
  return s;
}

void print_footer(std::FILE* out, const Summary& s, const std::vector<Line>& lines, bool checked, bool crowded) {
  std::fprintf(out, "#\n# Out of bounds values : %llu %s%s\n", static_cast<unsigned long long>(s.wrong),
               s.wrong == 0 ? "OK" : "FAILED", checked ? "" : " (not checked: -c 0)");
  for (const std::string& w : s.wrong_where) std::fprintf(out, "#   wrong: %s\n", w.c_str());

  std::size_t width = 0;
  for (const auto& a : s.averages) width = std::max(width, a.series.size());
  std::fprintf(out, "#\n");
  for (const auto& a : s.averages)
    std::fprintf(out, "# Avg bus bandwidth %-*s : %8.3f GB/s%s\n", static_cast<int>(width), a.series.c_str(),
                 a.busbw_GBps, s.best && s.best->series == a.series ? "  (best)" : "");
  std::fprintf(out, "#   (the average over every size%s and section)\n",
               lines.size() > 1 && (lines.front().dtype != lines.back().dtype || lines.front().op != lines.back().op)
                   ? ", type, op" : "");

  // The fastest line of each size (auto not counted: it runs one of the others), and the
  // model's pick: its best time over the transports.
  std::vector<SizeKey> keys;
  std::map<SizeKey, const Line*> fastest;
  bool many_kinds = false;
  for (const Line& l : lines) {
    if (l.algorithm == Algorithm::Auto || !l.main()) continue;
    const SizeKey k{l.dtype, l.op, l.size};
    many_kinds |= l.dtype != lines.front().dtype || l.op != lines.front().op;
    push_unique(keys, k);
    const Line*& best = fastest[k];
    if (!best || l.main()->time_us < best->main()->time_us) best = &l;
  }
  if (keys.empty()) return;
  std::fprintf(out, "#\n# Fastest per size (%s time; auto not counted) and the model's pick (its best transport):\n",
               lines.front().out_of_place ? "out-of-place" : "in-place");
  auto name_of = [&](const Line& w) {
    return series_of(w) + (many_kinds ? " (" + to_string(w.dtype) + " " + to_string(w.op) + ")" : std::string());
  };
  int name_width = 7;
  for (const SizeKey& k : keys) name_width = std::max(name_width, static_cast<int>(name_of(*fastest[k]).size()));
  std::fprintf(out, "#%11s  %-*s %9s %11s  %s\n", "size", name_width, "fastest", "time(us)", "busbw(GB/s)", "model's pick");
  for (const SizeKey& k : keys) {
    const Line& w = *fastest[k];
    const std::string name = name_of(w);
    std::string model = "-";
    if (w.model_pick) {
      const Line* pick = nullptr;
      for (const Line& l : lines) {
        if (l.dtype == w.dtype && l.op == w.op && l.size == w.size && l.algorithm == *w.model_pick && l.main() &&
            (!pick || l.main()->time_us < pick->main()->time_us))
          pick = &l;
      }
      model = to_string(*w.model_pick);
      if (pick) {
        char ratio[96];
        std::snprintf(ratio, sizeof ratio, " over %s, %.2f us (%.2fx)", transport_label(*pick).c_str(),
                      pick->main()->time_us, pick->main()->time_us / w.main()->time_us);
        model += ratio;
      }
    }
    std::fprintf(out, "#%11s  %-*s %9.2f %11.2f  %s\n", format_bytes(w.size).c_str(), name_width, name.c_str(),
                 w.main()->time_us, w.main()->busbw_GBps, model.c_str());
  }
  if (const std::string state = state_note(lines, crowded); !state.empty()) std::fprintf(out, "#\n# %s\n", state.c_str());
  std::fflush(out);
}

}  // namespace arlab::bench

#include "records.hpp"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <optional>

#include "calibrate/state_probe.hpp"

namespace arlab::bench {
namespace {

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

// A number with enough digits to round-trip what the table shows; null when not finite.
std::string number(double v) {
  if (!std::isfinite(v)) return "null";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

std::string string_list(const std::vector<std::string>& items) {
  std::string out = "[";
  for (std::size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + json_string(items[i]);
  return out + "]";
}

// One record as (key, JSON value) pairs, in record_keys() order; "null" for absent values.
std::vector<std::pair<std::string, std::string>> record(const Line& l, const Section& s, bool in_place,
                                                        int iters, int warmup) {
  const auto opt = [](const std::optional<double>& v) { return v ? number(*v) : std::string("null"); };
  return {{"size", std::to_string(l.size)},
          {"count", std::to_string(l.count)},
          {"dtype", json_string(to_string(l.dtype))},
          {"op", json_string(to_string(l.op))},
          {"algorithm", json_string(to_string(l.algorithm))},
          {"pick", json_string(to_string(pick(l, in_place).value_or(l.algorithm)))},
          {"transport", json_string(transport_label(l))},
          {"ranks", std::to_string(l.ranks)},
          {"inplace", in_place ? "true" : "false"},
          {"iters", std::to_string(s.iters > 0 ? s.iters : iters)},
          {"warmup", std::to_string(warmup)},
          {"time_us", number(s.time_us)},
          {"time_min_us", number(s.min_us)},
          {"time_max_us", number(s.max_us)},
          {"algbw_GBps", number(s.algbw_GBps)},
          {"busbw_GBps", number(s.busbw_GBps)},
          {"wrong", s.wrong ? std::to_string(*s.wrong) : std::string("null")},
          {"predicted_us", opt(predicted(l, in_place))},
          {"err_pct", opt(err_pct(l, s, in_place))},
          {"state_probe_us", s.state_probe_us > 0 ? number(s.state_probe_us) : std::string("null")},
          {"calibrated_state_probe_us",
           l.calibrated_state_probe_us > 0 ? number(l.calibrated_state_probe_us) : std::string("null")}};
}

template <class F>
void for_each_record(const std::vector<Line>& lines, F&& f) {
  for (const Line& l : lines) {
    if (l.out_of_place) f(l, *l.out_of_place, false);
    if (l.in_place) f(l, *l.in_place, true);
  }
}

}  // namespace

const std::vector<std::string>& record_keys() {
  static const std::vector<std::string> keys = [] {
    std::vector<std::string> k;
    for (auto& [key, value] : record(Line{}, Section{}, false, 0, 0)) k.push_back(key);
    return k;
  }();
  return keys;
}

std::string to_json(const RunInfo& info, const std::vector<Line>& lines) {
  std::string out = "{\"arlab_bench\": {";
  out += "\"version\": " + json_string(info.version);
  out += ", \"command\": " + json_string(info.command);
  out += ", \"ranks\": " + std::to_string(info.ranks);
  out += ", \"hosts\": " + std::to_string(info.hosts);
  out += ", \"model_nodes\": " + std::to_string(info.model_nodes);
  out += ", \"model_ranks_per_node\": " + std::to_string(info.model_ranks_per_node);
  out += ", \"topology\": " + json_string(info.topology_name);
  out += ", \"topology_source\": " + json_string(info.topology_source);
  if (!info.machines.empty()) {
    out += ", \"machines\": {";
    for (std::size_t i = 0; i < info.machines.size(); ++i)
      out += (i ? ", " : "") + json_string(info.machines[i].first) + ": " + json_string(info.machines[i].second);
    out += "}";
  }
  out += ", \"transports\": " + string_list(info.transports);
  out += ", \"algorithms\": " + string_list(info.algorithms);
  out += ", \"dtypes\": " + string_list(info.dtypes);
  out += ", \"ops\": " + string_list(info.ops);
  out += ", \"iters\": " + std::to_string(info.iters);
  out += ", \"warmup\": " + std::to_string(info.warmup);
  out += ", \"rounds\": " + std::to_string(info.rounds);
  out += ", \"fresh_input\": " + std::string(info.fresh_input ? "true" : "false");
  out += ", \"check\": " + std::string(info.check ? "true" : "false");
  out += ", \"buffers\": " + json_string(info.device ? "device" : "host");
  out += ", \"timing\": " + json_string(info.timing);
  out += ", \"state_ratio\": " + number(calib::kOtherStateRatio);  // calib::other_state's
  out += "},\n\"records\": [";
  bool first = true;
  for_each_record(lines, [&](const Line& l, const Section& s, bool in_place) {
    out += first ? "\n {" : ",\n {";
    first = false;
    bool first_key = true;
    for (auto& [key, value] : record(l, s, in_place, info.iters, info.warmup)) {
      out += (first_key ? "\"" : ", \"") + key + "\": " + value;
      first_key = false;
    }
    out += "}";
  });
  out += first ? "]}\n" : "\n]}\n";
  return out;
}

std::string to_csv(const RunInfo& info, const std::vector<Line>& lines) {
  std::string out;
  for (const std::string& k : record_keys()) out += (out.empty() ? "" : ",") + k;
  out += "\n";
  for_each_record(lines, [&](const Line& l, const Section& s, bool in_place) {
    bool first = true;
    for (auto& [key, value] : record(l, s, in_place, info.iters, info.warmup)) {
      std::string v = value == "null" ? std::string() : value;
      if (v.size() >= 2 && v.front() == '"') v = v.substr(1, v.size() - 2);  // names need no quotes
      out += (first ? "" : ",") + v;
      first = false;
    }
    out += "\n";
  });
  return out;
}

bool write_file(const std::string& path, const std::string& text, std::string* error) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    if (error) *error = std::strerror(errno);
    return false;
  }
  const bool ok = std::fwrite(text.data(), 1, text.size(), f) == text.size();
  const int saved = errno;
  if (std::fclose(f) != 0 || !ok) {
    if (error) *error = std::strerror(ok ? errno : saved);
    return false;
  }
  return true;
}

}  // namespace arlab::bench

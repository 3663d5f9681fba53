#include "calibrate/node_cache.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include "calibrate/calibration.hpp"

namespace arlab::calib {
namespace {

std::string first_line(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::string s;
  std::getline(in, s);
  return s;
}

// sysfs sizes: "32768K", "1024K", "32M", or plain bytes.
double size_of(const std::string& s) {
  std::size_t used = 0;
  double v = 0;
  try {
    v = std::stod(s, &used);
  } catch (...) {
    return 0;
  }
  const char unit = used < s.size() ? s[used] : '\0';
  return unit == 'K' ? v * 1024 : unit == 'M' ? v * 1024 * 1024 : unit == 'G' ? v * 1024 * 1024 * 1024 : v;
}

}  // namespace

NodeCache read_node_cache(const std::string& cpu_dir) {
  namespace fs = std::filesystem;
  // level -> (shared_cpu_list -> size): each instance once, however many CPUs list it.
  std::map<int, std::map<std::string, double>> levels;
  std::error_code ec;
  for (int cpu = 0;; ++cpu) {
    const fs::path dir = fs::path(cpu_dir) / ("cpu" + std::to_string(cpu)) / "cache";
    if (!fs::is_directory(dir, ec)) break;
    for (const auto& entry : fs::directory_iterator(dir, ec)) {
      if (entry.path().filename().string().rfind("index", 0) != 0) continue;
      const std::string type = first_line(entry.path() / "type");
      if (type != "Unified" && type != "Data") continue;
      const std::string level = first_line(entry.path() / "level");
      const double bytes = size_of(first_line(entry.path() / "size"));
      if (level.empty() || bytes <= 0) continue;
      levels[std::stoi(level)][first_line(entry.path() / "shared_cpu_list")] = bytes;
    }
  }
  NodeCache c;
  if (levels.empty()) return c;
  const auto& [level, instances] = *levels.rbegin();
  std::string cpus;
  for (const auto& [list, bytes] : instances) {
    c.bytes += bytes;
    cpus += (cpus.empty() ? "" : "; ") + list;
  }
  c.source = std::string("L").append(std::to_string(level)).append(": ").append(size_text(c.bytes));
  c.source.append(" in ").append(std::to_string(instances.size()));
  c.source.append(instances.size() == 1 ? " instance" : " instances").append(" (CPUs ").append(cpus);
  c.source.append("), from ").append(cpu_dir);
  return c;
}

NodeCache node_cache() {
  NodeCache c = read_node_cache("/sys/devices/system/cpu");
  if (c.bytes > 0) return c;
  for (auto [name, level] : {std::pair{_SC_LEVEL3_CACHE_SIZE, "L3"}, std::pair{_SC_LEVEL2_CACHE_SIZE, "L2"}}) {
    const long v = sysconf(name);
    if (v > 0) return {static_cast<double>(v), std::string(level) + ": " + size_text(static_cast<double>(v)) + ", from sysconf"};
  }
  return c;
}

}  // namespace arlab::calib

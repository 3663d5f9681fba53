// The cache a node's ranks share, for arlab-calibrate's second regime: the last-level cache as
// Linux describes it in sysfs (/sys/devices/system/cpu/cpuN/cache/indexK: level, type, size,
// shared_cpu_list), summed over its distinct instances (one per socket or core complex).
//
// sysfs, not sysconf(_SC_LEVEL3_CACHE_SIZE): glibc derives the latter from CPUID, which in a
// virtual machine can describe the host's package (384 MiB on the development VM, whose two
// CPUs share one 32 MiB L3 according to sysfs). sysconf is the fallback when sysfs is absent.
#pragma once

#include <string>

namespace arlab::calib {

struct NodeCache {
  double bytes = 0;    // 0: unknown
  std::string source;  // "L3: 32 MiB in 1 instance (CPUs 0-1), from /sys/devices/system/cpu"
};

// Reads `cpu_dir` (normally /sys/devices/system/cpu): the highest cache level that holds data
// (Unified or Data), summed over the distinct shared_cpu_list sets of cpu0, cpu1, ...
NodeCache read_node_cache(const std::string& cpu_dir);

// read_node_cache("/sys/devices/system/cpu"), else sysconf's largest level, else bytes = 0.
NodeCache node_cache();

}  // namespace arlab::calib

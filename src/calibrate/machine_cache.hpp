// The machine cache: a communicator's self-calibration, kept on disk per machine so that later
// launches read it instead of measuring again (docs/model.md, "Auto out of the box").
//
// Where: $ARLAB_CACHE_DIR (Options::cache_dir), else $XDG_CACHE_HOME/arlab, else
// $HOME/.cache/arlab. One file per host, transport and placement (ranks per node, nodes):
//
//   <dir>/<host>-<transport>-<ranks per node>x<nodes>.yaml
//
// The file is a topology file (model/topology.hpp) after two comment lines that say what it
// was measured for; the second is the key, every field the fit depends on:
//
//   # arlab machine cache, written 2026-12-03 19:02 UTC
//   # key: arlab 0.1.0 | host vm | machine-id 3f2a... | cpu AMD EPYC 9B14, 2 cores | transport mpi | 2 ranks per node | 1 node
//
// A file whose key differs (another arlab version, another machine under the same host name,
// a file copied from elsewhere), that cannot be read, or that does not parse is reported and
// measured again. Writes go to a temporary file in the same directory, then rename(2) it into
// place, so a reader sees the old file or the new one, never a part; a lock file
// (<file>.lock, flock) lets a second job on the host wait for the first one's measurement
// instead of measuring alongside it.
#pragma once

#include <optional>
#include <string>

namespace arlab::calib {

struct CacheKey {
  std::string version;     // arlab's, and the kind of calibration ("0.1.0 calibration 4")
  std::string host;        // gethostname
  std::string machine_id;  // /etc/machine-id ("" when absent)
  std::string cpu;         // "AMD EPYC 9B14, 2 cores"
  std::string transport;   // "mpi", "ucx", "ucx-rma"
  int ranks_per_node = 1;
  int nodes = 1;

  // This machine, this process: version, host, machine id and CPU filled in.
  static CacheKey here(const std::string& transport, int ranks_per_node, int nodes);
  // "arlab 0.1.0 calibration 4 | host vm | machine-id ... | cpu ... | transport mpi | 2 ranks per node | 1 node"
  std::string text() const;
  // "vm-mpi-2x1.yaml": characters outside [A-Za-z0-9._-] become '_'.
  std::string file_name() const;
};

// The cache directory for an explicit setting (Options::cache_dir or ARLAB_CACHE_DIR), else
// XDG_CACHE_HOME/arlab, else HOME/.cache/arlab; nullopt when none can be named.
std::optional<std::string> cache_dir(const std::optional<std::string>& explicit_dir);

// What reading a cache file found.
struct CacheRead {
  std::optional<std::string> yaml;  // the topology text, when the file is valid for the key
  std::string when;                 // when it was written ("" when unknown)
  std::string problem;              // why it is not used; "" when absent or valid
};

// Reads `path` and checks it against `key`: a missing file is no problem (nothing found); an
// unreadable one, one without the header, with another key, or whose topology does not parse
// returns its problem.
CacheRead read_cache(const std::string& path, const CacheKey& key);

// Writes the header and `yaml` to `path` atomically (temporary file in the same directory,
// then rename), creating the directory. Returns "" or what went wrong.
std::string write_cache(const std::string& path, const CacheKey& key, const std::string& yaml);

// An exclusive flock on `path` + ".lock", waited for at most `wait_s` seconds; released when
// destroyed. held() is false when the lock file cannot be made or the wait ran out (the
// caller then goes on without it: the atomic write still keeps the file whole).
class CacheLock {
 public:
  CacheLock(const std::string& path, double wait_s);
  ~CacheLock();
  CacheLock(const CacheLock&) = delete;
  CacheLock& operator=(const CacheLock&) = delete;
  bool held() const { return fd_ >= 0; }

 private:
  int fd_ = -1;
};

}  // namespace arlab::calib

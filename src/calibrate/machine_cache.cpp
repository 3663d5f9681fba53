#include "calibrate/machine_cache.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

#include "arlab/arlab.hpp"
#include "calibrate/run.hpp"
#include "core/environment.hpp"
#include "model/topology.hpp"

namespace arlab::calib {
namespace {

constexpr const char* kTitle = "# arlab machine cache, written ";
constexpr const char* kKey = "# key: ";

std::string first_line_of(const char* path) {
  std::ifstream in(path);
  std::string s;
  std::getline(in, s);
  return s;
}

// "arlab 0.1.0" from a key's text: its first field.
std::string version_field(const std::string& key) { return key.substr(0, key.find(" | ")); }

}  // namespace

// What a calibration measures, by number: raised when that changes (2: the write-back
// probe; 3: exchanges within a node timed as calls, the later write-back; 4: the
// machine's state probed, state_probe.hpp), so that the files
// of earlier kinds count as another version and are measured again.
constexpr int kCalibrationKind = 4;

CacheKey CacheKey::here(const std::string& transport, int ranks_per_node, int nodes) {
  CacheKey k;
  k.version = std::string(arlab::version()) + " calibration " + std::to_string(kCalibrationKind);
  k.host = host_name();
  k.machine_id = first_line_of("/etc/machine-id");
  if (k.machine_id.empty()) k.machine_id = first_line_of("/var/lib/dbus/machine-id");
  k.cpu = cpu_text();
  k.transport = transport;
  k.ranks_per_node = ranks_per_node;
  k.nodes = nodes;
  return k;
}

std::string CacheKey::text() const {
  std::string s = "arlab " + version + " | host " + host + " | machine-id " + (machine_id.empty() ? "none" : machine_id) +
                  " | cpu " + cpu + " | transport " + transport + " | " + std::to_string(ranks_per_node) +
                  (ranks_per_node == 1 ? " rank" : " ranks") + " per node | " + std::to_string(nodes) +
                  (nodes == 1 ? " node" : " nodes");
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  return s;
}

std::string CacheKey::file_name() const {
  std::string s = host + "-" + transport + "-" + std::to_string(ranks_per_node) + "x" + std::to_string(nodes);
  for (char& c : s)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) c = '_';
  if (!s.empty() && s.front() == '.') s.front() = '_';  // never a hidden file
  return s + ".yaml";
}

std::optional<std::string> cache_dir(const std::optional<std::string>& explicit_dir) {
  if (explicit_dir && !explicit_dir->empty()) return explicit_dir;
  if (auto xdg = detail::env("XDG_CACHE_HOME")) return *xdg + "/arlab";
  if (auto home = detail::env("HOME")) return *home + "/.cache/arlab";
  return std::nullopt;
}

CacheRead read_cache(const std::string& path, const CacheKey& key) {
  CacheRead r;
  std::error_code ec;
  if (!std::filesystem::exists(path, ec)) return r;  // nothing cached yet
  if (!std::filesystem::is_regular_file(path, ec)) {
    r.problem = "cannot read it (not a regular file)";
    return r;
  }
  std::ifstream in(path, std::ios::binary);
  std::string all;
  try {
    if (in) all.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  } catch (const std::exception&) {
    in.setstate(std::ios::badbit);
  }
  if (!in || in.bad()) {
    r.problem = "cannot read it (" + std::string(std::strerror(errno)) + ")";
    return r;
  }
  std::istringstream lines(all);
  std::string title, key_line;
  std::getline(lines, title);
  std::getline(lines, key_line);
  if (title.rfind(kTitle, 0) != 0 || key_line.rfind(kKey, 0) != 0) {
    r.problem = "it is not an arlab machine cache file (no '" + std::string(kTitle) + "...' header)";
    return r;
  }
  const std::string theirs = key_line.substr(std::strlen(kKey)), mine = key.text();
  if (theirs != mine) {
    if (version_field(theirs) != version_field(mine))
      r.problem = "it was written by " + version_field(theirs) + ", this is " + version_field(mine);
    else
      r.problem = "it was measured for another machine or placement (" + theirs + "; this is " + mine + ")";
    return r;
  }
  try {
    detail::parse_topology(all, path);
  } catch (const Error& e) {
    r.problem = "it does not parse: " + std::string(e.what());
    return r;
  }
  r.when = title.substr(std::strlen(kTitle));
  r.yaml = all;
  return r;
}

std::string write_cache(const std::string& path, const CacheKey& key, const std::string& yaml) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir = fs::path(path).parent_path();
  if (!dir.empty()) fs::create_directories(dir, ec);
  if (ec) return "cannot create the directory " + dir.string() + ": " + ec.message();
  std::string tmp = path + ".tmp-XXXXXX";
  const int fd = mkstemp(tmp.data());
  if (fd < 0) return "cannot create a temporary file beside " + path + ": " + std::strerror(errno);
  const std::string text = kTitle + utc_now() + "\n" + kKey + key.text() + "\n" + yaml;
  bool ok = true;
  for (std::size_t done = 0; ok && done < text.size();) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    ok = n > 0;
    if (ok) done += static_cast<std::size_t>(n);
  }
  const int saved = errno;
  ok = ok && fchmod(fd, 0644) == 0 && fsync(fd) == 0;
  close(fd);
  if (ok && std::rename(tmp.c_str(), path.c_str()) == 0) return "";
  const std::string why = std::strerror(ok ? errno : saved);
  std::remove(tmp.c_str());
  return "cannot write " + path + ": " + why;
}

CacheLock::CacheLock(const std::string& path, double wait_s) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  fd_ = open((path + ".lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) return;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  while (flock(fd_, LOCK_EX | LOCK_NB) != 0) {
    if ((errno != EWOULDBLOCK && errno != EINTR) || std::chrono::steady_clock::now() > deadline) {
      close(fd_);
      fd_ = -1;
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
}

CacheLock::~CacheLock() {
  if (fd_ >= 0) close(fd_);  // releases the flock
}

}  // namespace arlab::calib

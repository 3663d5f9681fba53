// The machine cache (src/calibrate/machine_cache.hpp): its key and file name, where it lives,
// what it accepts and what it reports, the atomic write, and the lock. No MPI: the
// collective part is tests/mpi/test_mpi_calibration.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "arlab/arlab.hpp"
#include "calibrate/machine_cache.hpp"
#include "model/machine.hpp"
#include "model/topology.hpp"

namespace arlab::calib {
namespace {

namespace fs = std::filesystem;

// A fresh directory, removed afterwards.
struct TempDir {
  fs::path path;
  TempDir() {
    std::string t = (fs::temp_directory_path() / "arlab-cache-test-XXXXXX").string();
    path = mkdtemp(t.data());
  }
  ~TempDir() { fs::remove_all(path); }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

CacheKey key(const std::string& transport = "mpi", int per_node = 2, int nodes = 1) {
  CacheKey k;
  k.version = "0.1.0";
  k.host = "vm";
  k.machine_id = "abc123";
  k.cpu = "AMD EPYC, 2 cores";
  k.transport = transport;
  k.ranks_per_node = per_node;
  k.nodes = nodes;
  return k;
}

// A topology as the self-calibration writes it (numbers distinct per `link_GBps`).
std::string machine_yaml(double link_GBps) {
  detail::Machine m = detail::Machine::uniform(0.5, 1e-3 / link_GBps, 1e-4);
  m.name = "vm";
  m.nodes = 1;
  m.ranks_per_node = 2;
  return detail::topology_yaml(m);
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(MachineCache, KeyNamesEveryFieldTheFitDependsOn) {
  EXPECT_EQ(key().text(),
            "arlab 0.1.0 | host vm | machine-id abc123 | cpu AMD EPYC, 2 cores | transport mpi | 2 ranks per node | 1 node");
  CacheKey k = key("ucx-rma", 1, 4);
  k.machine_id.clear();
  EXPECT_EQ(k.text(),
            "arlab 0.1.0 | host vm | machine-id none | cpu AMD EPYC, 2 cores | transport ucx-rma | 1 rank per node | 4 nodes");
  // One file per host, transport and placement; the version and CPU are checked inside.
  EXPECT_EQ(key().file_name(), "vm-mpi-2x1.yaml");
  EXPECT_EQ(key("ucx", 4, 2).file_name(), "vm-ucx-4x2.yaml");
  CacheKey odd = key();
  odd.host = "../etc/pass wd";
  EXPECT_EQ(odd.file_name(), "_._etc_pass_wd-mpi-2x1.yaml");  // no directories, no hidden file
}

TEST(MachineCache, HereDescribesThisProcess) {
  const CacheKey k = CacheKey::here("mpi", 3, 1);
  // arlab's version and the kind of calibration: a file of an earlier kind (before the
  // write-back probe) is another version's, measured again.
  EXPECT_EQ(k.version, std::string(version()) + " calibration 4");
  EXPECT_FALSE(k.host.empty());
  EXPECT_NE(k.cpu.find("cores"), std::string::npos);
  EXPECT_EQ(k.ranks_per_node, 3);
}

TEST(MachineCache, DirectoryComesFromTheSettingThenXdgThenHome) {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  const std::string saved_xdg = xdg ? xdg : "";
  setenv("XDG_CACHE_HOME", "/xdg", 1);
  EXPECT_EQ(cache_dir(std::string("/explicit")), "/explicit");
  EXPECT_EQ(cache_dir(std::nullopt), "/xdg/arlab");
  unsetenv("XDG_CACHE_HOME");
  setenv("HOME", "/home/u", 1);
  EXPECT_EQ(cache_dir(std::nullopt), "/home/u/.cache/arlab");
  if (!saved_xdg.empty()) setenv("XDG_CACHE_HOME", saved_xdg.c_str(), 1);
}

TEST(MachineCache, WrittenFileReadsBackWithItsTime) {
  TempDir d;
  const std::string path = d.file("sub/dir/vm-mpi-2x1.yaml");  // directories are made
  ASSERT_EQ(write_cache(path, key(), machine_yaml(9.5)), "");
  const CacheRead r = read_cache(path, key());
  ASSERT_TRUE(r.yaml) << r.problem;
  EXPECT_EQ(r.problem, "");
  EXPECT_NE(r.when.find("UTC"), std::string::npos);
  const detail::Machine m = detail::parse_topology(*r.yaml);
  EXPECT_NEAR(1e-3 / m.intra.us_per_byte, 9.5, 1e-9);
  // Nothing but the file: the temporary one was renamed into place.
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(d.path / "sub/dir")) files += e.is_regular_file();
  EXPECT_EQ(files, 1u);
}

TEST(MachineCache, MissingFileIsNoProblem) {
  TempDir d;
  const CacheRead r = read_cache(d.file("none.yaml"), key());
  EXPECT_FALSE(r.yaml);
  EXPECT_EQ(r.problem, "");
}

TEST(MachineCache, CorruptOldAndForeignFilesAreReportedNotUsed) {
  TempDir d;
  const std::string path = d.file("vm-mpi-2x1.yaml");
  auto problem_with = [&](const std::string& text) {
    std::ofstream(path) << text;
    const CacheRead r = read_cache(path, key());
    EXPECT_FALSE(r.yaml);
    return r.problem;
  };
  const std::string header = "# arlab machine cache, written 2026-12-03 19:00 UTC\n# key: ";
  EXPECT_NE(problem_with("name: vm\nnodes: 1\n").find("not an arlab machine cache file"), std::string::npos);
  EXPECT_NE(problem_with("").find("not an arlab machine cache file"), std::string::npos);
  // Cut short by a crash of a writer that did not write atomically, or edited by hand.
  const std::string whole = header + key().text() + "\n" + machine_yaml(9.5);
  EXPECT_NE(problem_with(whole.substr(0, whole.size() / 2)).find("does not parse"), std::string::npos);
  EXPECT_NE(problem_with(header + key().text() + "\nlinks: [\n").find("does not parse"), std::string::npos);
  CacheKey old = key();
  old.version = "0.0.9";
  EXPECT_EQ(problem_with(header + old.text() + "\n" + machine_yaml(9.5)),
            "it was written by arlab 0.0.9, this is arlab 0.1.0");
  CacheKey foreign = key();
  foreign.cpu = "Intel Xeon, 64 cores";
  EXPECT_NE(problem_with(header + foreign.text() + "\n" + machine_yaml(9.5)).find("another machine or placement"),
            std::string::npos);
  // A path that cannot be read as a file.
  fs::remove(path);
  fs::create_directory(path);
  EXPECT_NE(read_cache(path, key()).problem.find("cannot read"), std::string::npos);
  // And writing over such a file replaces it with a valid one.
  fs::remove(path);
  std::ofstream(path) << "garbage";
  ASSERT_EQ(write_cache(path, key(), machine_yaml(7)), "");
  EXPECT_TRUE(read_cache(path, key()).yaml);
}

TEST(MachineCache, WriteToAnUnwritablePlaceSaysWhy) {
  TempDir d;
  std::ofstream(d.file("file")) << "x";
  const std::string problem = write_cache(d.file("file/sub/m.yaml"), key(), machine_yaml(1));
  EXPECT_NE(problem.find("cannot create the directory"), std::string::npos) << problem;
}

// Writers replace the file over and over while readers read it: every read finds a whole file
// of one writer or another, never a part (what several jobs starting at once on a host do).
TEST(MachineCache, ConcurrentWritersNeverLeaveAPartialFile) {
  TempDir d;
  const std::string path = d.file("vm-mpi-2x1.yaml");
  ASSERT_EQ(write_cache(path, key(), machine_yaml(1)), "");
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0}, bad{0};
  std::vector<std::thread> threads;
  for (int w = 0; w < 3; ++w)
    threads.emplace_back([&, w] {
      for (int i = 0; i < 100; ++i)
        if (!write_cache(path, key(), machine_yaml(1 + w + i * 0.01)).empty()) ++bad;
    });
  std::thread reader([&] {
    while (!stop) {
      const CacheRead r = read_cache(path, key());
      ++reads;
      if (!r.yaml) ++bad;
    }
  });
  for (auto& t : threads) t.join();
  stop = true;
  reader.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(reads.load(), 0);
  std::size_t files = 0;
  for (const auto& e : fs::directory_iterator(d.path)) files += e.is_regular_file();
  EXPECT_EQ(files, 1u);  // no temporary file left behind
}

TEST(MachineCache, LockMakesASecondHolderWait) {
  TempDir d;
  const std::string path = d.file("vm-mpi-2x1.yaml");
  {
    CacheLock first(path, 1);
    ASSERT_TRUE(first.held());
    CacheLock second(path, 0.05);  // another open file description: it conflicts
    EXPECT_FALSE(second.held());
  }
  CacheLock third(path, 0.05);
  EXPECT_TRUE(third.held());
}

}  // namespace
}  // namespace arlab::calib

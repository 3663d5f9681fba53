// Self-calibration under mpirun (src/calibrate/self_calibration.hpp): an empty cache directory
// is filled by the first communicator's first Auto call, later communicators read the file,
// every rank walks the same machine, ARLAB_CALIBRATE's modes, a corrupt file measured again,
// and all of it interleaved with the user's own MPI calls and several live communicators; and
// how the calibration samples a probe (how many runs, which count).
#include <gtest/gtest.h>
#include <mpi.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "arlab/arlab.hpp"
#include "calibrate/measure.hpp"
#include "calibrate/self_calibration.hpp"
#include "common/mpi_world.hpp"

namespace {

using arlab::test::everywhere;
using arlab::test::world_rank;

using arlab::Algorithm;
using arlab::DataType;
using arlab::ReduceOp;
using arlab::SelfCalibration;
namespace fs = std::filesystem;

// A fresh directory named by rank 0 for every rank (one host: all see it).
std::string fresh_dir() {
  std::string path(256, '\0');
  if (world_rank() == 0) {
    std::string t = (fs::temp_directory_path() / "arlab-calibration-test-XXXXXX").string();
    path = mkdtemp(t.data());
    path.resize(256, '\0');
  }
  MPI_Bcast(path.data(), 256, MPI_CHAR, 0, MPI_COMM_WORLD);
  return path.c_str();
}

std::vector<fs::path> yaml_files(const std::string& dir) {
  std::vector<fs::path> out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.path().extension() == ".yaml") out.push_back(e.path());
  return out;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

arlab::Options options(const std::string& dir, SelfCalibration mode = SelfCalibration::Cached) {
  arlab::Options o;
  o.cache_dir = dir;
  o.self_calibration = mode;
  o.timeout_s = 60;
  return o;
}

// The same plan on every rank: the pick and every prediction, to the bit.
bool same_everywhere(const arlab::Plan& plan) {
  std::vector<double> mine{static_cast<double>(plan.algorithm)};
  for (const auto& c : plan.candidates) mine.insert(mine.end(), {static_cast<double>(c.algorithm), c.predicted_us});
  std::vector<double> lo(mine.size()), hi(mine.size());
  MPI_Allreduce(mine.data(), lo.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);
  MPI_Allreduce(mine.data(), hi.data(), static_cast<int>(mine.size()), MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
  return lo == hi;
}

std::vector<double> predictions(const arlab::Plan& plan) {
  std::vector<double> out;
  for (const auto& c : plan.candidates) out.push_back(c.predicted_us);
  return out;
}

// A user's loop: arlab calls of varying sizes, plain MPI between them; the first Auto call
// calibrates. Returns whether every result was exact on every rank.
bool user_loop(arlab::Communicator& comm, int calls) {
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  bool ok = true;
  for (int i = 0; i < calls; ++i) {
    const std::size_t count = std::size_t{1} << (3 + 3 * (i % 5));  // 8 .. 32768 elements
    std::vector<float> x(count, static_cast<float>(world_rank() + 1));
    comm.allreduce(x.data(), x.data(), count, DataType::Float32, ReduceOp::Sum);
    ok = ok && x.front() == static_cast<float>(p * (p + 1) / 2) && x.back() == x.front();
    int token = i, sum = 0;
    MPI_Allreduce(&token, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);  // the user's own traffic
    ok = ok && sum == i * p;
  }
  return everywhere(ok);
}

// The calibration's sampling (calibrate/measure.hpp): a probe whose one run fills a sample
// runs twice to warm up, the second run counted as its first sample, then until it has
// long_samples; a short one runs twice with k = 1, then `samples` samples of k runs each.
TEST(CalibrationSampling, ALongProbesSecondWarmUpIsItsFirstSample) {
  using namespace std::chrono_literals;
  int long_runs = 0, short_runs = 0;
  std::size_t short_k = 0;
  const arlab::calib::Probe slow{[&](std::size_t k) -> arlab::calib::Runnable {
                                   return [&, k] {
                                     ++long_runs;
                                     std::this_thread::sleep_for(k * 30ms);
                                   };
                                 },
                                 1.0, 1 << 10};
  const arlab::calib::Probe fast{[&](std::size_t k) -> arlab::calib::Runnable {
                                   short_k = std::max(short_k, k);
                                   return [&] { ++short_runs; };
                                 },
                                 1.0, 1 << 10};
  const arlab::calib::Timing timing{20, 5, 3};  // 20 ms samples, 5 of them, 3 of a long probe
  const auto t = arlab::calib::median_us(MPI_COMM_WORLD, timing, {slow, fast});
  EXPECT_EQ(long_runs, 4);  // 2 warm-ups, the second a sample, and 2 more samples
  EXPECT_EQ(short_runs, 2 + 5);
  EXPECT_GT(short_k, 1u);
  EXPECT_GE(t[0], 30e3);  // us per run of the long probe
}

// An unusable fit (a machine too busy while it was measured) is measured once more; rank 0's
// verdict decides for every rank, so all measure equally often, whatever the others return.
TEST(Calibration, AnUnusableFitIsMeasuredOnceMore) {
  const bool root = world_rank() == 0;
  int calls = 0, lasts = 0;
  const auto usable_on = [&](int call) {
    return [&calls, &lasts, call, root](bool last) {
      lasts += last;
      return ++calls == call && root ? std::string("yaml") : std::string(root ? "" : "x");
    };
  };
  EXPECT_EQ(arlab::calib::first_usable(MPI_COMM_WORLD, 2, usable_on(1)), root ? "yaml" : "");
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(lasts, 0);
  calls = 0;
  EXPECT_EQ(arlab::calib::first_usable(MPI_COMM_WORLD, 2, usable_on(2)), root ? "yaml" : "");
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(lasts, 1);  // the second of two is the last try
  calls = lasts = 0;
  EXPECT_EQ(arlab::calib::first_usable(MPI_COMM_WORLD, 2, usable_on(3)), "");  // never usable within 2
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(lasts, 1);
}

TEST(Calibration, EmptyCacheIsFilledOnceThenRead) {
  const std::string dir = fresh_dir();
  arlab::Communicator first(MPI_COMM_WORLD, options(dir));
  EXPECT_TRUE(everywhere(yaml_files(dir).empty()));  // nothing measured before the model is needed
  EXPECT_TRUE(user_loop(first, 10));                   // the first Auto call measures
  const arlab::Plan measured = first.plan(1 << 20, DataType::Float32);
  EXPECT_NE(measured.machine.find("calibrated now over"), std::string::npos) << measured.machine;
  EXPECT_NE(measured.reason.find(measured.machine), std::string::npos) << measured.reason;
  EXPECT_TRUE(same_everywhere(measured));
  const auto files = yaml_files(dir);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_NE(measured.machine.find(files.front().string()), std::string::npos);
  const std::string text = slurp(files.front());
  // The quick sampling, recorded: 5 samples of the links' sizes, 3 of the reducer's.
  EXPECT_NE(text.find("median of 5 samples of about 12 ms"), std::string::npos) << text;
  EXPECT_NE(text.find("the reducer's and the copy's, of 3."), std::string::npos) << text;
  // The machine's state while calibrated, probed three times, in the file and the plan.
  EXPECT_NE(text.find("(before the links, after them, after the compute: "), std::string::npos) << text;
  EXPECT_GT(measured.machine_state_probe_us, 0);
  EXPECT_NE(text.find("state_probe_us: "), std::string::npos) << text;

  // Another communicator, alive beside the first: the file, not a new measurement.
  arlab::Communicator second(MPI_COMM_WORLD, options(dir));
  const arlab::Plan cached = second.plan(1 << 20, DataType::Float32);
  EXPECT_NE(cached.machine.find("from the cache " + files.front().string()), std::string::npos) << cached.machine;
  EXPECT_TRUE(same_everywhere(cached));
  EXPECT_EQ(predictions(cached), predictions(measured));  // the same machine, to the bit
  EXPECT_EQ(cached.machine_state_probe_us, measured.machine_state_probe_us);
  EXPECT_EQ(slurp(files.front()), text);                  // not rewritten
  EXPECT_TRUE(user_loop(second, 5));
  EXPECT_TRUE(user_loop(first, 5));
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(dir);
}

TEST(Calibration, OffUsesTheBuiltInDescriptionAndWritesNothing) {
  const std::string dir = fresh_dir();
  arlab::Communicator comm(MPI_COMM_WORLD, options(dir, SelfCalibration::Off));
  EXPECT_TRUE(user_loop(comm, 5));
  const arlab::Plan plan = comm.plan(1024, DataType::Float32);
  EXPECT_NE(plan.machine.find("the built-in description (ARLAB_CALIBRATE=0)"), std::string::npos) << plan.machine;
  EXPECT_TRUE(everywhere(yaml_files(dir).empty()));
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(dir);
}

TEST(Calibration, ForceMeasuresAgainAndReplacesTheFile) {
  const std::string dir = fresh_dir();
  {
    arlab::Communicator comm(MPI_COMM_WORLD, options(dir));
    comm.plan(8, DataType::Float32);
  }
  arlab::Communicator comm(MPI_COMM_WORLD, options(dir, SelfCalibration::Force));
  const arlab::Plan plan = comm.plan(8, DataType::Float32);
  EXPECT_NE(plan.machine.find("calibrated now over"), std::string::npos) << plan.machine;
  EXPECT_TRUE(same_everywhere(plan));
  EXPECT_TRUE(everywhere(yaml_files(dir).size() == 1));
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(dir);
}

TEST(Calibration, CorruptOrForeignFileIsMeasuredAgain) {
  const std::string dir = fresh_dir();
  {
    arlab::Communicator comm(MPI_COMM_WORLD, options(dir));
    comm.plan(8, DataType::Float32);
  }
  const fs::path file = yaml_files(dir).front();
  const std::string good = slurp(file);
  for (const std::string& bad : {good.substr(0, good.size() / 3),
                                 "# arlab machine cache, written 2026-01-01 00:00 UTC\n# key: arlab 0.0.1 | host x\n" +
                                     good.substr(good.find("\n", good.find("\n") + 1) + 1)}) {
    if (world_rank() == 0) std::ofstream(file) << bad;
    MPI_Barrier(MPI_COMM_WORLD);
    arlab::Communicator comm(MPI_COMM_WORLD, options(dir));
    const arlab::Plan plan = comm.plan(8, DataType::Float32);
    EXPECT_NE(plan.machine.find("calibrated now over"), std::string::npos) << plan.machine;
    EXPECT_TRUE(same_everywhere(plan));
    arlab::Communicator again(MPI_COMM_WORLD, options(dir));  // the file is whole again
    EXPECT_NE(again.plan(8, DataType::Float32).machine.find("from the cache"), std::string::npos);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(dir);
}

TEST(Calibration, ExplicitAlgorithmsNeverMeasure) {
  const std::string dir = fresh_dir();
  arlab::Communicator comm(MPI_COMM_WORLD, options(dir));
  std::vector<int> x(1000, 1);
  for (Algorithm a : {Algorithm::Ring, Algorithm::RecursiveDoubling, Algorithm::Mpi})
    comm.allreduce(x.data(), x.data(), x.size(), DataType::Int32, ReduceOp::Sum, a);
  EXPECT_TRUE(everywhere(yaml_files(dir).empty()));
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(dir);
}

// One rank calls plan() alone: it times out (the first model lookup is collective) and says
// so; the communicator stays usable, and the first Auto call of every rank, later, finds the
// machine together. The lone rank's wait stays posted, on a communicator of its own, and is
// met then: a fresh wait would meet the others' first and leave its own behind their next
// collective (an MPI error that aborted the job, MPI_ERR_TRUNCATE, until the wait was kept),
// as would a wait on a communicator that carries other collectives (Algorithm::Mpi's).
TEST(Calibration, APlanAloneTimesOutAndLeavesTheCommunicatorWhole) {
  const std::string dir = fresh_dir();
  arlab::Options o = options(dir);
  o.timeout_s = 5;
  arlab::Communicator comm(MPI_COMM_WORLD, o);
  int p = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const bool alone = world_rank() == p - 1;
  bool timed_out = false;
  if (alone) {
    try {
      comm.plan(1000, DataType::Float32);
    } catch (const arlab::Error& e) {
      timed_out = e.code() == arlab::Error::Code::Timeout &&
                  std::string(e.what()).find("every rank must make it") != std::string::npos;
    }
    EXPECT_TRUE(timed_out);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  std::vector<int> x(1000);
  // (The same with an asynchronous call first, whose lanes' MPI_Comm_dup must not meet the
  // lone rank's wait: Async.AfterALonePlanTimedOutTheLanesStillOpen.)
  for (Algorithm a : {Algorithm::Mpi, Algorithm::Ring, Algorithm::Auto, Algorithm::Auto}) {
    std::fill(x.begin(), x.end(), world_rank() + 1);
    comm.allreduce(x.data(), x.data(), x.size(), DataType::Int32, ReduceOp::Sum, a);
    EXPECT_TRUE(everywhere(x.front() == p * (p + 1) / 2 && x.back() == x.front())) << arlab::to_string(a);
  }
  EXPECT_TRUE(same_everywhere(comm.plan(1000, DataType::Float32)));
  EXPECT_TRUE(user_loop(comm, 5));
  MPI_Barrier(MPI_COMM_WORLD);
  if (world_rank() == 0) fs::remove_all(dir);
}

}  // namespace

// arlab-calibrate's pieces without MPI: the least-squares fit recovers alpha and beta exactly
// from exact data, in one regime or two (in cache and beyond), and reports its residuals; the
// topology file it writes loads with the library's own loader and holds the fitted numbers;
// the node's cache read from a sysfs tree; the command line.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <vector>

#include "calibrate_options.hpp"
#include "calibrate/measure.hpp"
#include "calibrate/node_cache.hpp"
#include "calibrate/self_calibration.hpp"
#include "calibrate/state_probe.hpp"
#include "model/topology.hpp"

namespace arlab::tool {
namespace {

std::vector<double> sweep(double lo, double hi, double factor) {
  std::vector<double> x;
  for (double b = lo; b <= hi; b *= factor) x.push_back(b);
  return x;
}

std::vector<double> line(const std::vector<double>& x, double alpha, double beta) {
  std::vector<double> y;
  for (double b : x) y.push_back(alpha + b * beta);
  return y;
}

TEST(CalibrateFit, RecoversAlphaAndBetaExactly) {
  const auto x = sweep(8, 64 << 20, 4);
  // (alpha us, beta us/B): this machine's order, an NDR link, a slow network, pure bandwidth.
  const double cases[][2] = {{0.7, 1e-3 / 5}, {14, 1e-3 / 47}, {50, 1e-3 / 0.1}, {3.4, 1e-3 / 372}};
  for (const auto& c : cases) {
    const LineFit f = fit_line(x, line(x, c[0], c[1]));
    EXPECT_NEAR(f.intercept, c[0], 1e-9 * c[0]) << c[0];
    EXPECT_NEAR(f.slope, c[1], 1e-9 * c[1]) << c[1];
    EXPECT_FALSE(f.clamped);
    EXPECT_NEAR(f.r2, 1, 1e-12);
    EXPECT_LT(f.rms_rel, 1e-9);
    EXPECT_LT(f.max_rel, 1e-9);
    EXPECT_EQ(f.points, x.size());
  }
}

TEST(CalibrateFit, RecoversAPureSlopeThroughTheOrigin) {
  const auto x = sweep(64, 16 << 20, 2);
  const LineFit f = fit_line(x, line(x, 0, 1e-3 / 30));
  EXPECT_NEAR(f.intercept, 0, 1e-9);
  EXPECT_NEAR(f.slope, 1e-3 / 30, 1e-12);
  EXPECT_LT(f.rms_rel, 1e-9);
}

TEST(CalibrateFit, WeighsEverySizeAlike) {
  // +-10% on alternate sizes: the relative fit stays within a few percent of the truth at both
  // ends, where an ordinary least-squares fit would let the largest times set alpha.
  const auto x = sweep(8, 64 << 20, 4);
  auto y = line(x, 0.5, 1e-3 / 8);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] *= i % 2 ? 1.1 : 0.9;
  const LineFit f = fit_line(x, y);
  EXPECT_NEAR(f.intercept, 0.5, 0.05);
  EXPECT_NEAR(f.slope, 1e-3 / 8, 0.05 * 1e-3 / 8);
  EXPECT_NEAR(f.rms_rel, 0.1, 0.02);
  EXPECT_NEAR(f.max_rel, 0.11, 0.02);
  EXPECT_GT(f.r2, 0.95);
}

TEST(CalibrateFit, ClampsANegativeInterceptToZero) {
  const std::vector<double> x = {1024, 4096, 16384, 65536};
  const LineFit f = fit_line(x, line(x, -0.5, 1e-3));  // 0.524 .. 65.0 us
  EXPECT_TRUE(f.clamped);
  EXPECT_EQ(f.intercept, 0);
  EXPECT_GT(f.slope, 0);
  EXPECT_LT(f.slope, 1e-3);  // through the origin, below the true slope
  // The slope minimises the relative error: no small change of it does better.
  auto rel = [&](double s) {
    double e = 0;
    for (std::size_t i = 0; i < x.size(); ++i) e += std::pow(1 - s * x[i] / (-0.5 + 1e-3 * x[i]), 2);
    return e;
  };
  EXPECT_LE(rel(f.slope), rel(f.slope * 1.001));
  EXPECT_LE(rel(f.slope), rel(f.slope * 0.999));
}

// Times that fall with the size (a slow spell during the small sizes, on a busy machine:
// measured so by a self-calibration that then wrote a negative bandwidth): the free line's
// slope is negative, so the fit goes through the origin instead, with a positive slope; and a
// beyond-cache slope whose times sit below the given intercept likewise.
TEST(CalibrateFit, TimesThatDoNotGrowStillGiveAPositiveBandwidth) {
  const std::vector<double> x = {8, 64, 512, 4096, 32768, 262144, 2097152, 16777216};
  const std::vector<double> y = {2400, 2400, 2400, 2400, 2400, 2400, 2300, 1500};
  const LineFit f = fit_line(x, y);
  EXPECT_TRUE(f.clamped);
  EXPECT_TRUE(f.flat);  // and marked, so that the self-calibration refuses it
  EXPECT_EQ(f.intercept, 0);
  EXPECT_GT(f.slope, 0);
  EXPECT_TRUE(fit_step_line(x, y).slope > 0);
  const std::vector<double> big = {1024, 4096, 16384, 65536};
  const LineFit negative = fit_line(big, line(big, -0.5, 1e-3));
  EXPECT_TRUE(negative.clamped);
  EXPECT_FALSE(negative.flat);  // a negative intercept alone is not flat
  const LineFit beyond = fit_slope(std::vector<double>{1 << 23, 1 << 24}, std::vector<double>{900, 950}, 1000);
  EXPECT_TRUE(beyond.flat);
  EXPECT_GT(beyond.slope, 0);
}

TEST(CalibrateFit, RejectsWhatItCannotFit) {
  const std::vector<double> one = {8}, two = {8, 64}, same = {8, 8};
  EXPECT_THROW(fit_line(one, std::vector<double>{1}), std::invalid_argument);
  EXPECT_THROW(fit_line(same, std::vector<double>{1, 2}), std::invalid_argument);
  EXPECT_THROW(fit_line(two, std::vector<double>{1}), std::invalid_argument);
  EXPECT_THROW(fit_line(two, std::vector<double>{1, 0}), std::invalid_argument);
  EXPECT_THROW(fit_line(two, std::vector<double>{1, NAN}), std::invalid_argument);
}

// Two regimes: in cache below `cache` (0: no cache), beyond it the same intercept, another slope.
std::vector<double> two_lines(const std::vector<double>& x, const std::vector<double>& ws, double cache,
                              double alpha, double in, double beyond) {
  std::vector<double> y;
  for (std::size_t i = 0; i < x.size(); ++i) y.push_back(alpha + x[i] * (cache > 0 && ws[i] >= cache ? beyond : in));
  return y;
}

TEST(CalibrateFit, FitsTheSlopeWithTheInterceptGiven) {
  const std::vector<double> x = {8 << 20, 32 << 20};
  const LineFit f = fit_slope(x, line(x, 0.3, 1e-3 / 4.6), 0.3);
  EXPECT_EQ(f.intercept, 0.3);
  EXPECT_NEAR(f.slope, 1e-3 / 4.6, 1e-12);
  EXPECT_LT(f.max_rel, 1e-9);
  EXPECT_EQ(f.points, 2u);
  // One point: the slope through it.
  const std::vector<double> one = {1 << 20};
  EXPECT_NEAR(fit_slope(one, std::vector<double>{100.3}, 0.3).slope, 100.0 / (1 << 20), 1e-15);
  EXPECT_THROW(fit_slope(std::vector<double>{}, std::vector<double>{}, 0), std::invalid_argument);
}

TEST(CalibrateFit, RecoversBothRegimesExactly) {
  const auto x = sweep(8, 32 << 20, 4);
  std::vector<double> ws;
  for (double b : x) ws.push_back(4 * b);  // an exchange on one node
  const double cache = 32 << 20;
  const RegimeFit f = fit_regimes(x, two_lines(x, ws, cache, 0.28, 1e-3 / 10, 1e-3 / 4.6), ws, cache);
  ASSERT_TRUE(f.beyond);
  EXPECT_EQ(f.cache_bytes, cache);
  EXPECT_NEAR(f.in_cache.intercept, 0.28, 1e-9);
  EXPECT_NEAR(f.in_cache.slope, 1e-3 / 10, 1e-12);
  EXPECT_EQ(f.in_cache.points, 10u);  // 8 B .. 2 MiB: working sets up to 8 MiB
  EXPECT_EQ(f.beyond->intercept, f.in_cache.intercept);
  EXPECT_NEAR(f.beyond->slope, 1e-3 / 4.6, 1e-12);
  EXPECT_EQ(f.beyond->points, 2u);  // 8 MiB (working set 32 MiB, the cache itself) and 32 MiB
  EXPECT_LT(f.in_cache.max_rel, 1e-9);
  EXPECT_LT(f.beyond->max_rel, 1e-9);
  for (std::size_t i = 0; i < x.size(); ++i) {
    EXPECT_EQ(f.is_beyond[i], ws[i] >= cache) << x[i];
    EXPECT_EQ(&f.of(i), f.is_beyond[i] ? &*f.beyond : &f.in_cache);
  }
}

// The latency at each size: time less bytes x slope, up to the first size that is half
// transfer; a size whose latency falls below the one before is pooled with it.
TEST(CalibrateFit, LatencyPointsStopAtHalfTransferAndNeverFall) {
  const auto x = sweep(8, 2 << 20, 4);  // 8 B .. 2 MiB
  const double slope = 1e-3 / 10;       // 10 GB/s
  const std::vector<double> alpha{0.3, 0.35, 0.4, 0.8, 1.2, 1.0, 2.0, 2.5, 2.5, 2.5};
  std::vector<double> y;
  for (std::size_t i = 0; i < x.size(); ++i) y.push_back(alpha[i] + x[i] * slope);
  const auto p = latency_points(x, y, slope);
  // 32 KiB moves in 3.3 us against 2.0 us of latency: the last point.
  ASSERT_EQ(p.size(), 7u);
  for (std::size_t i = 0; i < p.size(); ++i) EXPECT_EQ(p[i].bytes, x[i]);
  EXPECT_NEAR(p[0].alpha_us, 0.3, 1e-9);
  EXPECT_NEAR(p[3].alpha_us, 0.8, 1e-9);
  EXPECT_NEAR(p[4].alpha_us, 1.1, 1e-9);  // 1.2 and 1.0 pooled
  EXPECT_NEAR(p[5].alpha_us, 1.1, 1e-9);
  EXPECT_NEAR(p[6].alpha_us, 2.0, 1e-9);
  // A first size slower than the rest (a warm-up) is pooled down, not kept.
  std::vector<double> cold = y;
  cold[0] = 1.9 + x[0] * slope;
  const auto q = latency_points(x, cold, slope);
  EXPECT_NEAR(q[0].alpha_us, (1.9 + 0.35 + 0.4 + 0.8) / 4, 1e-9);  // above 0.8 too: four pooled
  EXPECT_NEAR(q[3].alpha_us, q[0].alpha_us, 1e-12);
  EXPECT_NEAR(q[4].alpha_us, 1.1, 1e-9);
  // A time at or below its transfer has no latency to give.
  std::vector<double> fast = y;
  fast[2] = x[2] * slope;
  const auto r = latency_points(x, fast, slope);
  EXPECT_EQ(r.size(), 6u);
  EXPECT_EQ(r[2].bytes, x[3]);
  // Above kLatencyTableBytes a slow size is bandwidth, not latency: no point, however slow.
  std::vector<double> slow = y;
  for (std::size_t i = 7; i < x.size(); ++i) slow[i] = 50 * y[i];
  slow[6] = x[6] * slope * 0.9;  // 32 KiB all transfer: skipped, the table goes on
  const auto t = latency_points(x, slow, slope);
  ASSERT_EQ(t.size(), 6u);
  EXPECT_LE(t.back().bytes, kLatencyTableBytes);
}

TEST(CalibrateFit, FindsAnEagerToRendezvousStep) {
  const auto x = sweep(8, 2 << 20, 4);  // 8 B .. 2 MiB, 10 sizes
  std::vector<double> y;
  for (double b : x) y.push_back((b <= 2048 ? 0.3 : 2.7) + b * 1e-3 / 9);
  const LineFit f = fit_step_line(x, y);
  EXPECT_EQ(f.step_bytes, 2048);
  EXPECT_EQ(f.step_next, 8192);
  EXPECT_NEAR(f.intercept, 0.3, 1e-9);
  EXPECT_NEAR(f.intercept_above, 2.7, 1e-9);
  EXPECT_NEAR(f.slope, 1e-3 / 9, 1e-12);
  EXPECT_LT(f.max_rel, 1e-9);
  EXPECT_NEAR(f.at(8192), 2.7 + 8192e-3 / 9, 1e-9);
  // A plain line has no step, nor has a step down.
  EXPECT_EQ(fit_step_line(x, line(x, 0.3, 1e-3 / 9)).step_bytes, 0);
  std::vector<double> down;
  for (double b : x) down.push_back((b <= 2048 ? 2.7 : 0.3) + b * 1e-3 / 9);
  EXPECT_EQ(fit_step_line(x, down).step_bytes, 0);
  // With two regimes the beyond-cache slope shares the intercept above the step.
  std::vector<double> ws, y2 = y;
  for (double b : x) ws.push_back(4 * b);
  ws.push_back(4.0 * (8 << 20));
  std::vector<double> x2 = x;
  x2.push_back(8 << 20);
  y2.push_back(2.7 + (8 << 20) * 1e-3 / 4);
  const RegimeFit r = fit_regimes(x2, y2, ws, 32 << 20, true);
  ASSERT_TRUE(r.beyond);
  EXPECT_EQ(r.in_cache.step_bytes, 2048);
  EXPECT_NEAR(r.beyond->intercept, 2.7, 1e-9);
  EXPECT_NEAR(r.beyond->slope, 1e-3 / 4, 1e-12);
  EXPECT_EQ(fit_regimes(x2, y2, ws, 32 << 20).in_cache.step_bytes, 0);  // no step unless asked
}

TEST(CalibrateFit, OneRegimeWithoutACacheOrWithoutSizesOnBothSides) {
  const auto x = sweep(8, 32 << 20, 4);
  std::vector<double> ws;
  for (double b : x) ws.push_back(4 * b);
  const auto y = two_lines(x, ws, 32 << 20, 0.28, 1e-3 / 10, 1e-3 / 4.6);
  for (double cache : {0.0, 1e12, 16.0}) {  // no cache; every size in it; only 8 B in it
    const RegimeFit f = fit_regimes(x, y, ws, cache);
    EXPECT_FALSE(f.beyond) << cache;
    EXPECT_EQ(f.cache_bytes, 0) << cache;
    EXPECT_EQ(f.in_cache.points, x.size());
    EXPECT_EQ(f.in_cache.slope, fit_line(x, y).slope);
    for (std::size_t i = 0; i < x.size(); ++i) EXPECT_FALSE(f.is_beyond[i]);
  }
  EXPECT_THROW(fit_regimes(x, y, std::vector<double>{1, 2}, 32 << 20), std::invalid_argument);
}

LinkCalibration link(const char* cls, int b, double alpha, double gbps, double cache = 0, double beyond_gbps = 0) {
  LinkCalibration l;
  l.link_class = cls;
  l.rank_b = b;
  l.sizes = {8, 4096, 1 << 20, 16 << 20};
  const std::vector<double> x(l.sizes.begin(), l.sizes.end());
  for (double n : x) l.working_set.push_back(4 * n);
  l.exchange_us = two_lines(x, l.working_set, cache, alpha, 1e-3 / gbps, 1e-3 / (beyond_gbps ? beyond_gbps : gbps));
  l.pingpong_us = line(x, alpha * 0.8, 1e-3 / gbps);
  l.exchange = fit_regimes(x, l.exchange_us, l.working_set, cache);
  l.pingpong = fit_regimes(x, l.pingpong_us, l.working_set, cache);
  l.stream_chunk = 256 << 10;
  l.stream_count = 4;
  l.stream_one_way_GBps = gbps;
  l.stream_both_ways_GBps = gbps * 0.9;
  return l;
}

Calibration calibration(int nodes, int per_node, double cache = 0) {
  Calibration c;
  c.name = "calibrated-test";
  c.host = "testhost";
  c.when = "2025-01-01 00:00 UTC";
  c.transport = "mpi";
  c.mpi_library = "Open MPI v4.1.4";
  c.cpu = "Test CPU, 2 cores";
  c.command = "mpirun -np 4 arlab-calibrate -o x.yaml";
  c.nodes = nodes;
  c.ranks_per_node = per_node;
  c.ranks = nodes * per_node;
  c.cache_bytes = cache;
  c.cache_source = "L3: 32 MiB in 1 instance (CPUs 0-1), from /sys/devices/system/cpu";
  if (per_node > 1) c.intra = link("intra", 1, 0.42, 7.5, cache, 4.5);
  if (nodes > 1) c.inter = link("inter", per_node, 3.25, 1.25, cache, 1.25);
  c.compute.sizes = {8, 4096, 1 << 20, 16 << 20};
  const std::vector<double> x(c.compute.sizes.begin(), c.compute.sizes.end());
  for (double n : x) {
    c.compute.reduce_working_set.push_back(3 * per_node * n);
    c.compute.copy_working_set.push_back(2 * per_node * n);
  }
  c.compute.reduce_us = two_lines(x, c.compute.reduce_working_set, cache, 0.01, 1e-3 / 30, 1e-3 / 9);
  c.compute.copy_us = two_lines(x, c.compute.copy_working_set, cache, 0.005, 1e-3 / 60, 1e-3 / 20);
  c.compute.reduce = fit_regimes(x, c.compute.reduce_us, c.compute.reduce_working_set, cache);
  c.compute.copy = fit_regimes(x, c.compute.copy_us, c.compute.copy_working_set, cache);
  c.compute.concurrent_ranks = c.ranks;
  c.compute.ranks_per_node = per_node;
  return c;
}

void expect_link(const detail::LinkCost& got, double alpha, double gbps) {
  EXPECT_NEAR(got.alpha_us, alpha, 1e-3 * alpha);
  EXPECT_NEAR(got.us_per_byte, 1e-3 / gbps, 1e-3 * 1e-3 / gbps);
}

TEST(CalibrateTopology, TheWrittenFileLoadsWithTheLibrarysLoader) {
  for (auto [nodes, per_node] : {std::pair{1, 2}, std::pair{2, 2}, std::pair{4, 1}}) {
    const Calibration c = calibration(nodes, per_node);
    const std::string yaml = topology_yaml(c);
    const detail::Machine m = detail::parse_topology(yaml, "calibrated.yaml");
    EXPECT_EQ(m.name, "calibrated-test");
    EXPECT_EQ(m.nodes, nodes);
    EXPECT_EQ(m.ranks_per_node, per_node);
    if (per_node > 1) expect_link(m.intra, 0.42, 7.5);
    if (nodes > 1) expect_link(m.inter, 3.25, 1.25);
    if (per_node == 1) expect_link(m.intra, 3.25, 1.25);  // the loader copies the one class given
    if (nodes == 1) expect_link(m.inter, 0.42, 7.5);
    EXPECT_NEAR(m.reduce_us_per_byte, 1e-3 / 30, 1e-3 * 1e-3 / 30);
    EXPECT_NEAR(m.copy_us_per_byte, 1e-3 / 60, 1e-3 * 1e-3 / 60);
    // The provenance is in the comments: host, time, command, method, residuals.
    for (const char* s : {"# Calibrated on host 'testhost' at 2025-01-01 00:00 UTC by:",
                          "#   mpirun -np 4 arlab-calibrate -o x.yaml", "transport mpi (Open MPI v4.1.4); CPU: Test CPU, 2 cores.",
                          "none is\n# fitted to all-reduce results", "R^2 1.0000, rms error 0.0%"})
      EXPECT_NE(yaml.find(s), std::string::npos) << s << "\n" << yaml;
  }
}

// The self-calibration's guards: a machine whose file would not load (here a negative
// bandwidth, as the free fit once made of a busy machine's times), and one fitted from times
// that did not grow with the size, are refused with the reason, so that the caller's first
// Auto call goes on with the built-in description and nothing is cached.
TEST(CalibrateTopology, AnUnusableFitIsRefusedWithTheReason) {
  std::string problem;
  EXPECT_FALSE(calib::usable_topology_yaml(calibration(1, 2), "vm-mpi-2x1.yaml", problem).empty());
  EXPECT_EQ(problem, "");
  Calibration bad = calibration(1, 2);
  bad.intra->exchange.in_cache.slope = -0.00698;
  EXPECT_EQ(calib::usable_topology_yaml(bad, "vm-mpi-2x1.yaml", problem), "");
  EXPECT_NE(problem.find("vm-mpi-2x1.yaml"), std::string::npos) << problem;
  EXPECT_NE(problem.find("bandwidth_GBps must be positive"), std::string::npos) << problem;
  // A fit whose times did not grow with the size (fit.hpp's flat) loads, but is no rate.
  for (int which = 0; which < 3; ++which) {
    Calibration flat = calibration(2, 2);
    (which == 0 ? flat.intra->exchange.in_cache : which == 1 ? flat.inter->exchange.in_cache : flat.compute.copy.in_cache)
        .flat = true;
    problem.clear();
    EXPECT_EQ(calib::usable_topology_yaml(flat, "vm-mpi-2x2.yaml", problem), "") << which;
    EXPECT_NE(problem.find("did not grow with the"), std::string::npos) << problem;
  }
}

TEST(CalibrateTopology, AnArgumentWithANewlineStaysInsideItsComment) {
  Calibration c = calibration(1, 2);
  c.command = "mpirun -np 2 arlab-calibrate -o x\nnodes: 9";  // a shell passes one through
  c.cpu = "Test\rCPU";
  const std::string yaml = topology_yaml(c);
  EXPECT_NE(yaml.find("#   mpirun -np 2 arlab-calibrate -o x\\x0anodes: 9\n"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("CPU: Test\\x0dCPU."), std::string::npos) << yaml;
  EXPECT_EQ(detail::parse_topology(yaml, "calibrated.yaml").nodes, 1);
}

TEST(CalibrateTopology, BothRegimesReachTheFile) {
  const double cache = 32 << 20;
  const Calibration c = calibration(1, 2, cache);
  ASSERT_TRUE(c.two_regimes());
  const std::string yaml = topology_yaml(c);
  const detail::Machine m = detail::parse_topology(yaml, "calibrated.yaml");
  EXPECT_EQ(m.cache_bytes, cache);
  expect_link(m.intra, 0.42, 7.5);
  EXPECT_NEAR(m.beyond_cache.intra_us_per_byte, 1e-3 / 4.5, 1e-9);
  EXPECT_NEAR(m.beyond_cache.inter_us_per_byte, 1e-3 / 4.5, 1e-9);  // one node: inter = intra
  EXPECT_NEAR(m.reduce_us_per_byte, 1e-3 / 30, 1e-3 * 1e-3 / 30);
  EXPECT_NEAR(m.beyond_cache.reduce_us_per_byte, 1e-3 / 9, 1e-3 * 1e-3 / 9);
  EXPECT_NEAR(m.copy_us_per_byte, 1e-3 / 60, 1e-3 * 1e-3 / 60);
  EXPECT_NEAR(m.beyond_cache.copy_us_per_byte, 1e-3 / 20, 1e-3 * 1e-3 / 20);
  for (const char* s : {"cache_bytes: 33554432\n", "# A node's cache, L3: 32 MiB in 1 instance (CPUs 0-1), from /sys/devices/system/cpu.\n# Sizes",
                        "in cache, 3 sizes 8 B..1 MiB", "# Beyond the cache, 1 size 16 MiB: t = alpha + bytes / "})
    EXPECT_NE(yaml.find(s), std::string::npos) << s << "\n" << yaml;
  // Without a cache, or with every size in it: one regime, no cache_bytes.
  for (double none : {0.0, 1e12}) {
    const Calibration one = calibration(1, 2, none);
    EXPECT_FALSE(one.two_regimes());
    const std::string text = topology_yaml(one);
    EXPECT_EQ(text.find("cache"), std::string::npos) << text;
    EXPECT_EQ(detail::parse_topology(text, "one.yaml").cache_bytes, 0);
  }
}

TEST(CalibrateTopology, TheStepAndCpuCopiesReachTheFile) {
  Calibration c = calibration(2, 2);
  LineFit& f = c.intra->exchange.in_cache;
  f.step_bytes = 2048;
  f.step_next = 8192;
  f.intercept_above = 2.75;
  c.intra->cpu_copies = true;
  const std::string yaml = topology_yaml(c);
  const detail::Machine m = detail::parse_topology(yaml, "calibrated.yaml");
  EXPECT_TRUE(m.intra.cpu_copies);
  EXPECT_FALSE(m.inter.cpu_copies);
  EXPECT_EQ(m.intra.rendezvous_bytes, 2048);
  EXPECT_NEAR(m.intra.alpha_us_rendezvous, 2.75, 1e-9);
  EXPECT_EQ(m.inter.rendezvous_bytes, 0);
  for (const char* s : {"copied_by: cpu\n", "step up between 2 KiB and 8 KiB"})
    EXPECT_NE(yaml.find(s), std::string::npos) << s << "\n" << yaml;
}

TEST(CalibrateTopology, TheMeasuredLatenciesReachTheFile) {
  Calibration c = calibration(1, 2);
  LinkCalibration& l = *c.intra;
  const double slope = l.exchange.in_cache.slope;
  for (std::size_t i = 0; i < l.sizes.size(); ++i)
    l.exchange_us[i] = (i == 0 ? 0.4 : i == 1 ? 0.9 : 2.0) + static_cast<double>(l.sizes[i]) * slope;
  const std::vector<double> x(l.sizes.begin(), l.sizes.end());
  const auto expected = latency_points(x, l.exchange_us, slope);
  ASSERT_GE(expected.size(), 2u);
  const std::string yaml = topology_yaml(c);
  EXPECT_NE(yaml.find("latency_us: { 8: 0.4, "), std::string::npos) << yaml;
  const detail::Machine m = detail::parse_topology(yaml, "calibrated.yaml");
  ASSERT_EQ(m.intra.latency.size(), expected.size());
  for (std::size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(m.intra.latency[i].bytes, expected[i].bytes);
    EXPECT_NEAR(m.intra.latency[i].alpha_us, expected[i].alpha_us, 1e-3 * expected[i].alpha_us);
  }
  EXPECT_NEAR(m.intra.alpha_for(8), 0.4, 1e-3);
}

TEST(CalibrateTopology, TheWriteBackReachesTheFileAsTheDifferencePerByte) {
  Calibration c = calibration(1, 2);
  EXPECT_EQ(topology_yaml(c).find("writeback_us_per_byte"), std::string::npos);  // not measured: not written
  LinkCalibration& l = *c.intra;
  l.writeback_sizes = {8192, 131072, 2097152};
  l.writeback_in_place_us = {5.0, 40.0, 350.0};
  l.writeback_aside_us = {4.5, 28.0, 420.0};  // in place faster: nothing, not a negative cost
  const std::string yaml = topology_yaml(c);
  const detail::Machine m = detail::parse_topology(yaml, "calibrated.yaml");
  ASSERT_EQ(m.intra.writeback.size(), 3u);
  EXPECT_NEAR(m.intra.writeback[0].us_per_byte, 0.5 / 8192, 1e-3 * 0.5 / 8192);
  EXPECT_NEAR(m.intra.writeback[1].us_per_byte, 12.0 / 131072, 1e-3 * 12.0 / 131072);
  EXPECT_EQ(m.intra.writeback[2].us_per_byte, 0);
  EXPECT_NE(yaml.find("8 KiB 5/4.5, 128 KiB 40/28, 2 MiB 350/420"), std::string::npos) << yaml;
  EXPECT_TRUE(m.intra.writeback_later.empty());  // not measured: not written
  l.writeback_later_us = {9.0, 60.0, 700.0};
  l.writeback_later_aside_us = {8.0, 59.0, 720.0};
  const detail::Machine later = detail::parse_topology(topology_yaml(c), "calibrated.yaml");
  ASSERT_EQ(later.intra.writeback_later.size(), 3u);
  EXPECT_NEAR(later.intra.writeback_later[0].us_per_byte, 1.0 / 8192, 1e-3 / 8192);
  EXPECT_NEAR(later.intra.writeback_later[1].us_per_byte, 1.0 / 131072, 1e-3 / 131072);
  EXPECT_EQ(later.intra.writeback_later[2].us_per_byte, 0);
  EXPECT_NEAR(later.intra.writeback[1].us_per_byte, 12.0 / 131072, 1e-3 * 12.0 / 131072);
}

TEST(CalibrateTopology, TheCallOverheadReachesTheFile) {
  Calibration c = calibration(2, 2);
  EXPECT_EQ(topology_yaml(c).find("call_overhead_us"), std::string::npos);  // not measured: not written
  c.intra->chained_run_us = 0.25;       // in a chain
  c.intra->call_us = 0.40;      // one per run
  EXPECT_NEAR(c.call_overhead_us(), 0.15, 1e-12);
  const std::string yaml = topology_yaml(c);
  EXPECT_NEAR(detail::parse_topology(yaml, "calibrated.yaml").call_us, 0.15, 1e-9);
  EXPECT_NE(yaml.find("to the last rank's exit) took 0.4 us, against 0.25 us each in a chain"), std::string::npos)
      << yaml;
  c.intra->call_us = 0.2;  // faster alone than in a chain (noise): no negative overhead
  EXPECT_EQ(c.call_overhead_us(), 0);
  // A call's own cost beyond a chained exchange: the link was fitted to the chain, and says so.
  c.intra->call_us = 26.0;
  c.intra->chained_run_us = 4.5;
  c.intra->calls_drowned = true;
  c.intra->cpu_copies = true;  // shared memory: the calls were timed
  const std::string drowned = topology_yaml(c);
  EXPECT_NE(drowned.find("# in a chain: one per call, less the call's own cost, 21.5 us, would drown in its spread),"),
            std::string::npos)
      << drowned;
  EXPECT_NEAR(detail::parse_topology(drowned, "calibrated.yaml").call_us, 21.5, 1e-9);  // still charged
}

TEST(CalibrateTopology, TheMachinesStateReachesTheFile) {
  Calibration c = calibration(2, 2);
  EXPECT_EQ(topology_yaml(c).find("state_probe_us"), std::string::npos);  // not probed: not written
  c.state_probes_us = {0.17, 0.16, 0.2};
  EXPECT_DOUBLE_EQ(c.state_probe_us(), 0.17);  // the median
  EXPECT_FALSE(c.straddles_states());
  std::string yaml = topology_yaml(c);
  EXPECT_DOUBLE_EQ(detail::parse_topology(yaml, "calibrated.yaml").state_probe_us, 0.17);
  EXPECT_NE(yaml.find("after the compute: 0.17, 0.16, 0.2 us); arlab-bench"), std::string::npos) << yaml;
  c.state_probes_us = {0.16, 0.41, 0.4};  // the machine changed state after the first probe
  EXPECT_TRUE(c.straddles_states());
  yaml = topology_yaml(c);
  EXPECT_DOUBLE_EQ(detail::parse_topology(yaml, "calibrated.yaml").state_probe_us, 0.4);
  EXPECT_NE(yaml.find("0.16, 0.41, 0.4 us; the machine changed state during the calibration)"), std::string::npos)
      << yaml;
}

TEST(StateProbe, TwoStatesAreMoreThanOnePointSixApart) {
  EXPECT_FALSE(other_state(0.21, 0.15));  // within one state here: 1.4x
  EXPECT_TRUE(other_state(0.39, 0.21));   // across: 1.86x
  EXPECT_TRUE(other_state(0.16, 0.40));   // either way
  EXPECT_FALSE(other_state(0.40, 0.0));   // unknown
  EXPECT_FALSE(other_state(0.0, 0.40));
}

// A sysfs tree: cpuN/cache/indexK/{level,type,size,shared_cpu_list}.
struct FakeSysfs {
  std::filesystem::path root = std::filesystem::temp_directory_path() / "arlab-test-sysfs-cpu";
  FakeSysfs() { std::filesystem::remove_all(root); }
  ~FakeSysfs() { std::filesystem::remove_all(root); }
  void add(int cpu, int index, int level, const char* type, const char* size, const char* shared) {
    const auto dir = root / ("cpu" + std::to_string(cpu)) / "cache" / ("index" + std::to_string(index));
    std::filesystem::create_directories(dir);
    std::ofstream(dir / "level") << level << "\n";
    std::ofstream(dir / "type") << type << "\n";
    std::ofstream(dir / "size") << size << "\n";
    std::ofstream(dir / "shared_cpu_list") << shared << "\n";
  }
};

// A slow link's sweep stops where one exchange would pass a tenth of a second; a fast one's
// measures every size. The sizes up to 1 MiB go in one sweep (their rounds interleaved), the
// larger ones one at a time.
// A token bucket lets a message's first 256 KB through at once: t = alpha + (bytes - burst) / R
// above the burst. The least-squares slope takes part of the burst for rate; the marginal rate
// of the two largest sizes is R exactly.
TEST(CalibrateFit, TheMarginalRateCancelsATokenBucketsBurst) {
  const auto x = sweep(8, 8 << 20, 4);
  const double burst = 256 << 10, per_byte = 1e-3 / 0.125;  // 1 Gbit/s
  std::vector<double> y, ws;
  for (double b : x) {
    y.push_back(12 + std::max(0.0, b - burst) * per_byte + std::min(b, burst) * 1e-3 / 3);  // the burst at 3 GB/s
    ws.push_back(2 * b);
  }
  RegimeFit f = fit_regimes(x, y, ws, 0, true);
  EXPECT_LT(f.in_cache.slope, 0.97 * per_byte);  // the burst read as rate
  ASSERT_TRUE(use_marginal_slope(f, x, y));
  EXPECT_NEAR(f.in_cache.slope, per_byte, 1e-9 * per_byte);
  EXPECT_TRUE(f.in_cache.marginal);
  EXPECT_EQ(f.in_cache.step_bytes, 0);  // the burst had passed for a protocol step: gone
  // alpha + bytes x R: above the time by what the burst saved (2 ms of 65), never below it.
  EXPECT_GE(f.in_cache.at(x.back()), y.back());
  EXPECT_LT(f.in_cache.at(x.back()), 1.04 * y.back());
  // Small sizes only (latency-bound): left alone.
  const std::vector<double> xs(x.begin(), x.begin() + 4), ys(y.begin(), y.begin() + 4), wss(ws.begin(), ws.begin() + 4);
  RegimeFit small = fit_regimes(xs, ys, wss, 0, true);
  const double before = small.in_cache.slope;
  EXPECT_FALSE(use_marginal_slope(small, xs, ys));
  EXPECT_EQ(small.in_cache.slope, before);
  EXPECT_FALSE(small.in_cache.marginal);
}

TEST(CalibrateSweep, ASlowLinkStopsWhereAnExchangeWouldTakeTooLong) {
  std::vector<std::size_t> sizes;
  for (const double b : sweep(8, 32 << 20, 4)) sizes.push_back(static_cast<std::size_t>(b));
  const auto run = [&](double gbps, bool pingpong, std::vector<std::vector<std::size_t>>& calls) {
    std::vector<std::size_t> measured;
    const auto fake = [&](const std::vector<std::size_t>& some) {
      calls.push_back(some);
      LinkBench::Sweep out;
      for (std::size_t n : some) {
        out.exchange_us.push_back(10 + static_cast<double>(n) * 1e-3 / gbps);
        if (pingpong) out.pingpong_us.push_back(8 + static_cast<double>(n) * 1e-3 / gbps);
      }
      return out;
    };
    const LinkBench::Sweep got = sweep_within_time(fake, sizes, 100, measured);
    EXPECT_EQ(got.exchange_us.size(), measured.size());
    EXPECT_EQ(got.pingpong_us.size(), pingpong ? measured.size() : 0u);
    for (std::size_t i = 0; i < measured.size(); ++i)
      EXPECT_DOUBLE_EQ(got.exchange_us[i], 10 + static_cast<double>(measured[i]) * 1e-3 / gbps);
    return measured;
  };
  std::vector<std::vector<std::size_t>> calls;
  auto measured = run(0.125, true, calls);  // 1 Gbit/s: 8 MiB takes 67 ms, 32 MiB 268 ms
  ASSERT_FALSE(measured.empty());
  EXPECT_EQ(measured.back(), std::size_t{8} << 20);
  EXPECT_EQ(measured.size(), 11u);
  ASSERT_EQ(calls.size(), 3u);
  EXPECT_EQ(calls[0].back(), std::size_t{512} << 10);  // 8 B .. 512 KiB at once, then one by one
  EXPECT_EQ(calls[1], std::vector<std::size_t>{std::size_t{2} << 20});
  EXPECT_EQ(calls[2], std::vector<std::size_t>{std::size_t{8} << 20});
  calls.clear();
  measured = run(10, false, calls);  // shared memory: every size
  EXPECT_EQ(measured, sizes);
  calls.clear();
  measured = run(0.002, false, calls);  // 16 Mbit/s: 512 KiB already takes 262 ms
  EXPECT_EQ(measured.back(), std::size_t{512} << 10);
  EXPECT_EQ(calls.size(), 1u);
}

TEST(CalibrateSweep, ALongRunIsSampledFewerTimes) {
  const Timing self{12, 5, 3};  // the self-calibration's
  EXPECT_EQ(samples_for(self, 11999), 5);
  EXPECT_EQ(samples_for(self, 12000), 3);
  EXPECT_EQ(samples_for(self, 70000), 3);
  const Timing tool{20, 5, 0};  // arlab-calibrate's: every size alike
  EXPECT_EQ(samples_for(tool, 1e6), 5);
  const Timing few{12, 2, 3};  // never more than `samples`
  EXPECT_EQ(samples_for(few, 1e6), 2);
}

TEST(CalibrateCache, ReadsTheLastLevelFromSysfs) {
  {
    FakeSysfs fs;  // this machine: two CPUs, private L1 and L2, one shared L3
    for (int cpu : {0, 1}) {
      fs.add(cpu, 0, 1, "Data", "48K", cpu ? "1" : "0");
      fs.add(cpu, 1, 1, "Instruction", "32K", cpu ? "1" : "0");
      fs.add(cpu, 2, 2, "Unified", "1024K", cpu ? "1" : "0");
      fs.add(cpu, 3, 3, "Unified", "32768K", "0-1");
    }
    const NodeCache c = read_node_cache(fs.root.string());
    EXPECT_EQ(c.bytes, 32 << 20);
    EXPECT_EQ(c.source, "L3: 32 MiB in 1 instance (CPUs 0-1), from " + fs.root.string());
  }
  {
    FakeSysfs fs;  // two core complexes of two CPUs, an L3 each: the node holds both
    for (int cpu = 0; cpu < 4; ++cpu) fs.add(cpu, 3, 3, "Unified", "16M", cpu < 2 ? "0-1" : "2-3");
    const NodeCache c = read_node_cache(fs.root.string());
    EXPECT_EQ(c.bytes, 32 << 20);
    EXPECT_EQ(c.source, "L3: 32 MiB in 2 instances (CPUs 0-1; 2-3), from " + fs.root.string());
  }
  EXPECT_EQ(read_node_cache("/nonexistent/arlab/cpu").bytes, 0);
}

TEST(CalibrateOptions, DefaultsQuickAndSizes) {
  const char* none[] = {"arlab-calibrate"};
  const auto d = parse_calibrate_options(1, none);
  ASSERT_EQ(d.status, CalibrateParse::Status::Run);
  EXPECT_EQ(d.options.transport, TransportKind::Mpi);
  EXPECT_EQ(calibrate_sizes(d.options).size(), 12u);  // 8 B .. 32 MiB, x4
  EXPECT_EQ(calibrate_sizes(d.options).back(), std::size_t{32} << 20);

  const char* quick[] = {"arlab-calibrate", "--quick", "-t", "ucx-rma", "-o", "x.yaml", "--ranks-per-node=2"};
  const auto q = parse_calibrate_options(7, quick);
  ASSERT_EQ(q.status, CalibrateParse::Status::Run) << q.message;
  EXPECT_EQ(q.options.transport, TransportKind::UcxRma);
  EXPECT_EQ(*q.options.output, "x.yaml");
  EXPECT_EQ(q.options.ranks_per_node, 2);
  EXPECT_EQ(q.options.samples, 3);
  EXPECT_EQ(calibrate_sizes(q.options), (std::vector<std::size_t>{8, 64, 512, 4096, 32768, 262144}));

  const char* floats[] = {"arlab-calibrate", "--sizes", "2:2K:4"};
  const auto f = parse_calibrate_options(3, floats);
  ASSERT_EQ(f.status, CalibrateParse::Status::Run);
  EXPECT_EQ(calibrate_sizes(f.options, 4), (std::vector<std::size_t>{8, 32, 128, 512, 2048}));  // 2 B: no float

  EXPECT_FALSE(d.options.cache_bytes);  // from sysfs
  const char* cache[] = {"arlab-calibrate", "--cache-bytes", "32M"};
  EXPECT_EQ(*parse_calibrate_options(3, cache).options.cache_bytes, std::size_t{32} << 20);
  const char* one[] = {"arlab-calibrate", "--cache-bytes=0"};
  EXPECT_EQ(*parse_calibrate_options(2, one).options.cache_bytes, 0u);

  EXPECT_FALSE(d.options.all_pairs);  // ranks 0 and 1 alone
  const char* pairs[] = {"arlab-calibrate", "--all-pairs"};
  EXPECT_TRUE(parse_calibrate_options(2, pairs).options.all_pairs);
  EXPECT_NE(calibrate_usage().find("--all-pairs"), std::string::npos);
}

TEST(CalibrateOptions, BadFlagsAreOneLineNamingTheFlag) {
  auto error = [](std::vector<const char*> args) {
    args.insert(args.begin(), "arlab-calibrate");
    const auto r = parse_calibrate_options(static_cast<int>(args.size()), args.data());
    EXPECT_EQ(r.status, CalibrateParse::Status::Error);
    EXPECT_EQ(r.message.find('\n'), std::string::npos);
    return r.message;
  };
  EXPECT_EQ(error({"-t", "tcp"}), "bad value 'tcp' for --transport: expected mpi, ucx or ucx-rma");
  EXPECT_EQ(error({"--ranks-per-node", "0"}), "bad value '0' for --ranks-per-node: expected an integer from 1 to 16777216");
  EXPECT_NE(error({"--sizes", "64:8"}).find("bad value '64:8' for --sizes"), std::string::npos);
  EXPECT_NE(error({"--sizes", "8:16:4"}).find("at least two sizes"), std::string::npos);
  EXPECT_NE(error({"--bogus"}).find("unknown argument '--bogus'; flags: --transport, --output"), std::string::npos);
  EXPECT_EQ(error({"-o"}).rfind("--output needs a value: FILE", 0), 0u);
  EXPECT_EQ(error({"--quick=1"}), "--quick takes no value");
  EXPECT_EQ(error({"--cache-bytes", "big"}),
            "bad value 'big' for --cache-bytes: expected a size in bytes (K, M, G suffixes), 0 for one regime");
  const char* help[] = {"arlab-calibrate", "-h"};
  EXPECT_EQ(parse_calibrate_options(2, help).status, CalibrateParse::Status::Help);
}

}  // namespace
}  // namespace arlab::tool

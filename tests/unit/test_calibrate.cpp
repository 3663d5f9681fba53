// arlab-calibrate's pieces without MPI: the least-squares fit recovers alpha and beta exactly
// from exact data and reports its residuals; the topology file it writes loads with the
// library's own loader and holds the fitted numbers; the command line.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <vector>

#include "calibrate_fit.hpp"
#include "calibrate_options.hpp"
#include "calibrate_topology.hpp"
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

TEST(CalibrateFit, RejectsWhatItCannotFit) {
  const std::vector<double> one = {8}, two = {8, 64}, same = {8, 8};
  EXPECT_THROW(fit_line(one, std::vector<double>{1}), std::invalid_argument);
  EXPECT_THROW(fit_line(same, std::vector<double>{1, 2}), std::invalid_argument);
  EXPECT_THROW(fit_line(two, std::vector<double>{1}), std::invalid_argument);
  EXPECT_THROW(fit_line(two, std::vector<double>{1, 0}), std::invalid_argument);
  EXPECT_THROW(fit_line(two, std::vector<double>{1, NAN}), std::invalid_argument);
}

LinkCalibration link(const char* cls, int b, double alpha, double gbps) {
  LinkCalibration l;
  l.link_class = cls;
  l.rank_b = b;
  l.sizes = {8, 4096, 1 << 20};
  const std::vector<double> x(l.sizes.begin(), l.sizes.end());
  l.exchange_us = line(x, alpha, 1e-3 / gbps);
  l.pingpong_us = line(x, alpha * 0.8, 1e-3 / gbps);
  l.exchange = fit_line(x, l.exchange_us);
  l.pingpong = fit_line(x, l.pingpong_us);
  l.stream_chunk = 256 << 10;
  l.stream_count = 4;
  l.stream_one_way_GBps = gbps;
  l.stream_both_ways_GBps = gbps * 0.9;
  return l;
}

Calibration calibration(int nodes, int per_node) {
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
  if (per_node > 1) c.intra = link("intra", 1, 0.42, 7.5);
  if (nodes > 1) c.inter = link("inter", per_node, 3.25, 1.25);
  c.compute.sizes = {8, 4096, 1 << 20};
  const std::vector<double> x(c.compute.sizes.begin(), c.compute.sizes.end());
  c.compute.reduce_us = line(x, 0.01, 1e-3 / 30);
  c.compute.copy_us = line(x, 0.005, 1e-3 / 60);
  c.compute.reduce = fit_line(x, c.compute.reduce_us);
  c.compute.copy = fit_line(x, c.compute.copy_us);
  c.compute.concurrent_ranks = c.ranks;
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
    for (const char* s : {"# Calibrated by arlab-calibrate on host 'testhost' at 2025-01-01 00:00 UTC",
                          "#   mpirun -np 4 arlab-calibrate -o x.yaml", "transport mpi (Open MPI v4.1.4); CPU: Test CPU, 2 cores.",
                          "none is\n# fitted to all-reduce results", "R^2 1.0000, rms error 0.0%"})
      EXPECT_NE(yaml.find(s), std::string::npos) << s << "\n" << yaml;
  }
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
  const char* help[] = {"arlab-calibrate", "-h"};
  EXPECT_EQ(parse_calibrate_options(2, help).status, CalibrateParse::Status::Help);
}

}  // namespace
}  // namespace arlab::tool

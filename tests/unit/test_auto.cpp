// Auto on a topology: Options::topology (or ARLAB_TOPOLOGY) names the machine the cost model
// walks; the plan cache answers repeated sizes without walking again; ARLAB_DEBUG=INFO prints
// the pick and the runner-up with both predicted times.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <thread>

#include "algorithms/registry.hpp"
#include "common/loopback_ranks.hpp"
#include "core/engine.hpp"
#include "model/cost_walk.hpp"
#include "model/topology.hpp"
#include "transport/loopback_transport.hpp"

namespace arlab::detail {
namespace {

const std::string kH100 = std::string(ARLAB_TOPOLOGY_DIR) + "/h100-8gpu-nvlink.yaml";

Options quiet() {
  Options o;
  o.timeout_s = 60;
  o.log_level = LogLevel::None;
  return o;
}

// One engine, rank 0 of a p-rank loopback world whose other ranks never run: enough for
// plan(), which is local.
std::unique_ptr<Engine> lone_engine(int p, const Options& options) {
  return std::make_unique<Engine>(make_loopback_transport(make_loopback_world(p), 0), options.resolved(),
                                  MPI_COMM_NULL);
}

using arlab::test::on_threads;

std::string construction_error(const Options& options, int p = 8) {
  try {
    lone_engine(p, options);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Error::Code::InvalidArgument);
    return e.what();
  }
  return "";
}

TEST(Auto, WithoutTopologyTheBuiltInMachine) {
  unsetenv("ARLAB_TOPOLOGY");
  EXPECT_FALSE(quiet().resolved().topology);
  EXPECT_EQ(lone_engine(4, quiet())->machine().source, "built-in");
}

TEST(Auto, TopologyOptionAndKnob) {
  setenv("ARLAB_TOPOLOGY", kH100.c_str(), 1);
  EXPECT_EQ(quiet().resolved().topology, kH100);
  Options set = quiet();
  set.topology = "/elsewhere.yaml";
  EXPECT_EQ(set.resolved().topology, "/elsewhere.yaml");  // the field wins over the variable
  EXPECT_EQ(lone_engine(8, quiet())->machine().name, "h100-8gpu-nvlink");
  unsetenv("ARLAB_TOPOLOGY");
}

TEST(Auto, PlansWalkTheTopology) {
  Options o = quiet();
  o.topology = kH100;
  const auto engine = lone_engine(8, o);
  const Machine h100 = load_topology(kH100);
  for (std::size_t count : {std::size_t{2}, std::size_t{1} << 24}) {
    const Plan plan = engine->plan(count, DataType::Float32);
    Shape s;
    s.nranks = 8;
    s.count = count;
    s.chunk_bytes = *o.resolved().chunk_bytes;
    for (const auto& c : plan.candidates)
      EXPECT_DOUBLE_EQ(c.predicted_us, predict(*find_schedule_algorithm(c.algorithm), s, h100).total_us);
  }
  // 8 bytes on NVLink: three exchanges of recursive doubling beat 14 ring steps of 3.4 us.
  EXPECT_EQ(engine->plan(2, DataType::Float32).algorithm, Algorithm::RecursiveDoubling);
  EXPECT_EQ(engine->plan(std::size_t{1} << 24, DataType::Float32).algorithm, Algorithm::Ring);
}

TEST(Auto, NoElementsArePredictedToCostNothing) {
  // A call of 0 elements returns at once on every algorithm: its plan says so, not a latency.
  Options o = quiet();
  o.topology = kH100;
  const auto engine = lone_engine(8, o);
  const Plan plan = engine->plan(0, DataType::Float32);
  EXPECT_EQ(plan.predicted_us, 0.0);
  EXPECT_EQ(plan.candidates.size(), schedule_algorithms().size() - 1);  // one node: no hierarchical
  for (const auto& c : plan.candidates) EXPECT_EQ(c.predicted_us, 0.0) << to_string(c.algorithm);
  EXPECT_NE(plan.reason.find("no elements"), std::string::npos) << plan.reason;
  EXPECT_EQ(engine->model_walks(), 0u);
}

TEST(Auto, BadTopologyFailsAtConstructionNamingTheFile) {
  Options o = quiet();
  o.topology = "/nonexistent/arlab-topology.yaml";
  EXPECT_EQ(construction_error(o), "cannot open topology file '/nonexistent/arlab-topology.yaml': No such file or directory");
  const auto path = std::filesystem::temp_directory_path() / "arlab-test-auto-topology.yaml";
  std::ofstream(path) << "name: bad\nnodes: 1\nranks_per_node: 8\nlinks: { intra: { alpha_us: 1 } }\n"
                         "reduce: { bandwidth_GBps: 10 }\n";
  o.topology = path.string();
  EXPECT_EQ(construction_error(o), path.string() +
                                       ":4:17: links.intra: missing field 'bandwidth_GBps' (required: alpha_us, "
                                       "bandwidth_GBps)");
  std::ofstream(path) << "name: placed\nnodes: 2\nranks_per_node: 2\nrank_to_node: [0, 1, 0, 1]\n"
                         "links: { intra: { alpha_us: 1, bandwidth_GBps: 10 }, inter: { alpha_us: 5, bandwidth_GBps: 1 } }\n"
                         "reduce: { bandwidth_GBps: 10 }\n";
  EXPECT_EQ(construction_error(o, 8), "arlab: topology " + path.string() +
                                          " places 4 ranks (rank_to_node), but the communicator has 8");
  EXPECT_EQ(construction_error(o, 4), "");
  std::filesystem::remove(path);
}

TEST(Auto, RepeatedSizesAreAnsweredFromTheCache) {
  // 10^5 plan() calls over five sizes walk the schedules only for the first call of each size.
  Options o = quiet();
  o.topology = kH100;
  const auto engine = lone_engine(8, o);
  const std::size_t sizes[] = {1, 1000, 65536, 1 << 20, 12345};
  // One node: every schedule algorithm but hierarchical (which is the ring there) is walked.
  const std::size_t algorithms = schedule_algorithm_table().size() - 1;
  const std::size_t before = engine->model_walks();
  const auto start = std::chrono::steady_clock::now();
  constexpr int kCalls = 100000;
  for (int i = 0; i < kCalls; ++i) (void)engine->plan(sizes[i % 5], DataType::Float32);
  const double mean_us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count() / kCalls;
  EXPECT_EQ(engine->model_walks() - before, 5 * algorithms);
  RecordProperty("mean_plan_us_including_first_walks", std::to_string(mean_us));  // informative only

  // The allreduce path: Auto calls of alternating sizes walk once per size and engine.
  on_threads(2, quiet(), [&](Engine& e, int) {
    std::vector<float> a(100, 1.0f), b(1000, 1.0f);
    const std::size_t walks = e.model_walks();
    for (int i = 0; i < 200; ++i) {
      auto& v = i % 2 ? a : b;
      e.allreduce(v.data(), v.data(), v.size(), DataType::Float32, ReduceOp::Max, Algorithm::Auto);
    }
    EXPECT_EQ(e.model_walks() - walks, 2 * algorithms);
  });
}

TEST(Auto, InfoLogNamesPickAndRunnerUpWithBothTimes) {
  Options o = quiet();
  o.log_level = LogLevel::Info;
  o.topology = std::string(ARLAB_TOPOLOGY_DIR) + "/local.yaml";
  Plan plan;
  testing::internal::CaptureStderr();
  on_threads(2, o, [&](Engine& e, int rank) {
    std::vector<float> v(4096, 1.0f);
    e.allreduce(v.data(), v.data(), v.size(), DataType::Float32, ReduceOp::Sum, Algorithm::Auto);
    if (rank == 0) plan = e.plan(v.size(), DataType::Float32, /*in_place=*/true);
  });
  const std::string log = testing::internal::GetCapturedStderr();
  ASSERT_GE(plan.candidates.size(), 2u);
  char times[128];
  std::snprintf(times, sizeof times, "predicted %.2f us; runner-up %s, predicted %.2f us", plan.predicted_us,
                to_string(plan.candidates[1].algorithm).c_str(), plan.candidates[1].predicted_us);
  EXPECT_NE(log.find("arlab INFO: allreduce 16384 B (float, in place) on 2 ranks of 'local': auto -> " +
                     to_string(plan.algorithm)),
            std::string::npos)
      << log;
  EXPECT_NE(log.find(times), std::string::npos) << log << "\nexpected: " << times;
  EXPECT_EQ(std::count(log.begin(), log.end(), '\n'), 1) << log;  // rank 0 only, once per size class
}

}  // namespace
}  // namespace arlab::detail

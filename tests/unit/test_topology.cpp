// Topology files and the cost walk on them: every shipped file loads; every kind of error names
// the file, line and column; on uniform topologies the walk reproduces the closed forms for
// p = 2..1024; on two-level topologies messages between nodes pay the inter-node link.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>

#include "algorithms/registry.hpp"
#include "closed_forms.hpp"
#include "model/cost_walk.hpp"
#include "model/topology.hpp"

namespace arlab::detail {
namespace {

const char* const kMinimal = R"(name: two-node-example
nodes: 2
ranks_per_node: 4
links:
  intra: { alpha_us: 0.7, bandwidth_GBps: 150 }   # one direction, per rank
  inter: { alpha_us: 5.0, bandwidth_GBps: 25 }
reduce: { bandwidth_GBps: 1000 }                  # gamma = 1 / bandwidth
)";

// The error message of parsing `text`, or "" when it parses.
std::string error_of(const std::string& text) {
  try {
    parse_topology(text, "t.yaml");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Error::Code::InvalidArgument);
    return e.what();
  }
  return "";
}

// kMinimal with the first occurrence of `from` replaced by `to`.
std::string edited(const std::string& from, const std::string& to) {
  std::string s = kMinimal;
  const auto at = s.find(from);
  EXPECT_NE(at, std::string::npos) << from;
  return s.replace(at, from.size(), to);
}

TEST(Topology, MinimalFormLoads) {
  const Machine m = parse_topology(kMinimal, "t.yaml");
  EXPECT_EQ(m.name, "two-node-example");
  EXPECT_EQ(m.source, "t.yaml");
  EXPECT_EQ(m.nodes, 2);
  EXPECT_EQ(m.ranks_per_node, 4);
  EXPECT_EQ(m.ranks(), 8);
  EXPECT_DOUBLE_EQ(m.intra.alpha_us, 0.7);
  EXPECT_DOUBLE_EQ(m.intra.us_per_byte, 1e-3 / 150);
  EXPECT_DOUBLE_EQ(m.inter.alpha_us, 5.0);
  EXPECT_DOUBLE_EQ(m.inter.us_per_byte, 1e-3 / 25);
  EXPECT_DOUBLE_EQ(m.reduce_us_per_byte, 1e-3 / 1000);
  EXPECT_DOUBLE_EQ(m.copy_us_per_byte, m.reduce_us_per_byte);  // copy defaults to reduce
  EXPECT_EQ(m.placement(8), (std::vector<int>{0, 0, 0, 0, 1, 1, 1, 1}));
  EXPECT_EQ(m.placement(10).back(), 2);  // block placement extends to more ranks
}

TEST(Topology, EveryShippedFileLoads) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(ARLAB_TOPOLOGY_DIR)) {
    if (entry.path().extension() != ".yaml") continue;
    ++files;
    SCOPED_TRACE(entry.path().string());
    const Machine m = load_topology(entry.path().string());
    EXPECT_EQ(m.name + ".yaml", entry.path().filename().string());
    EXPECT_GT(m.ranks(), 0);
    EXPECT_GT(m.intra.us_per_byte, 0);
    EXPECT_GT(m.inter.us_per_byte, 0);
    EXPECT_GT(m.reduce_us_per_byte, 0);
    EXPECT_GT(m.copy_us_per_byte, 0);
    // Every algorithm can be walked on the machine as described.
    Shape s;
    s.nranks = m.ranks();
    s.count = 1 << 16;
    for (const auto& info : schedule_algorithm_table()) EXPECT_GT(predict(info, s, m).total_us, 0) << info.name;
  }
  EXPECT_EQ(files, 8);  // with emulated-2x2-1gbit.yaml, topology/emulate/cluster's calibration
  const Machine h100 = load_topology(std::string(ARLAB_TOPOLOGY_DIR) + "/h100-2node-ndr.yaml");
  EXPECT_EQ(h100.nodes, 2);
  EXPECT_EQ(h100.ranks_per_node, 8);
  EXPECT_GT(h100.inter.us_per_byte, h100.intra.us_per_byte);
}

// Every field the walk reads, compared.
void expect_same_machine(const Machine& a, const Machine& b) {
  EXPECT_EQ(a.nodes, b.nodes);
  EXPECT_EQ(a.ranks_per_node, b.ranks_per_node);
  EXPECT_EQ(a.rank_to_node, b.rank_to_node);
  for (const auto& [x, y] : {std::pair{a.intra, b.intra}, std::pair{a.inter, b.inter}}) {
    EXPECT_DOUBLE_EQ(x.alpha_us, y.alpha_us);
    EXPECT_DOUBLE_EQ(x.us_per_byte, y.us_per_byte);
    EXPECT_EQ(x.cpu_copies, y.cpu_copies);
    EXPECT_EQ(x.shared_by_node, y.shared_by_node);
    EXPECT_DOUBLE_EQ(x.rendezvous_bytes, y.rendezvous_bytes);
    EXPECT_DOUBLE_EQ(x.alpha_us_rendezvous, y.alpha_us_rendezvous);
    ASSERT_EQ(x.latency.size(), y.latency.size());
    for (std::size_t i = 0; i < x.latency.size(); ++i) {
      EXPECT_DOUBLE_EQ(x.latency[i].bytes, y.latency[i].bytes);
      EXPECT_DOUBLE_EQ(x.latency[i].alpha_us, y.latency[i].alpha_us);
    }
    for (const auto table : {&LinkCost::writeback, &LinkCost::writeback_later}) {
      ASSERT_EQ((x.*table).size(), (y.*table).size());
      for (std::size_t i = 0; i < (x.*table).size(); ++i) {
        EXPECT_DOUBLE_EQ((x.*table)[i].bytes, (y.*table)[i].bytes);
        EXPECT_DOUBLE_EQ((x.*table)[i].us_per_byte, (y.*table)[i].us_per_byte);
      }
    }
  }
  EXPECT_DOUBLE_EQ(a.reduce_us_per_byte, b.reduce_us_per_byte);
  EXPECT_DOUBLE_EQ(a.copy_us_per_byte, b.copy_us_per_byte);
  EXPECT_DOUBLE_EQ(a.call_us, b.call_us);
  EXPECT_DOUBLE_EQ(a.cache_bytes, b.cache_bytes);
  EXPECT_DOUBLE_EQ(a.beyond_cache.intra_us_per_byte, b.beyond_cache.intra_us_per_byte);
  EXPECT_DOUBLE_EQ(a.beyond_cache.inter_us_per_byte, b.beyond_cache.inter_us_per_byte);
  EXPECT_DOUBLE_EQ(a.beyond_cache.reduce_us_per_byte, b.beyond_cache.reduce_us_per_byte);
  EXPECT_DOUBLE_EQ(a.beyond_cache.copy_us_per_byte, b.beyond_cache.copy_us_per_byte);
}

TEST(Topology, LocalFileEqualsTheBuiltInDefaults) {
  const Machine file = load_topology(std::string(ARLAB_TOPOLOGY_DIR) + "/local.yaml");
  Machine built_in = Machine::local_default();
  EXPECT_EQ(built_in.ranks_per_node, 0);  // any number of ranks on its one node; the file names 2
  built_in.ranks_per_node = 2;
  expect_same_machine(file, built_in);
  EXPECT_TRUE(file.intra.cpu_copies);  // shared memory: the receiving CPU copies
}

// topology_yaml() writes what parse_topology() reads back into the same machine: every
// shipped file and the built-in one.
TEST(Topology, WrittenFilesReadBackTheSameMachine) {
  Machine local = Machine::local_default();
  local.ranks_per_node = 2;  // the built-in places any number of ranks (0), which a file cannot say
  std::vector<Machine> machines{local};
  for (const auto& entry : std::filesystem::directory_iterator(ARLAB_TOPOLOGY_DIR))
    if (entry.path().extension() == ".yaml") machines.push_back(load_topology(entry.path().string()));
  Machine placed = parse_topology(std::string(kMinimal) + "rank_to_node: [0, 1, 0, 1, 0, 1, 0, 1]\n");
  placed.name = "a \"quoted\" name\nover two lines,\ta tab and a \\ backslash";
  machines.push_back(placed);
  Machine measured = local;
  measured.intra.latency = {{8, 0.34}, {512, 0.76}, {2048, 1.1}, {8192, 2.3}};
  measured.intra.writeback = {{8192, 6.8e-05}, {131072, 9.3e-05}, {2097152, 0}};
  measured.intra.writeback_later = {{8192, 6.1e-05}, {131072, 4.2e-05}, {2097152, 0}};
  machines.push_back(measured);
  for (const Machine& m : machines) {
    const Machine back = parse_topology(topology_yaml(m));
    SCOPED_TRACE(m.source);
    expect_same_machine(back, m);
    EXPECT_EQ(back.name, m.name);
    EXPECT_EQ(back.description, m.description);
  }
}

TEST(Topology, WhatAFileCannotSayIsRefused) {
  Machine m = Machine::local_default();  // ranks_per_node 0: any number of ranks on one node
  EXPECT_THROW(topology_yaml(m), Error);
  m.ranks_per_node = 2;
  EXPECT_NO_THROW(topology_yaml(m));
  m.reduce_us_per_byte = 0;
  EXPECT_THROW(topology_yaml(m), Error);
}

TEST(Topology, CallOverhead) {
  EXPECT_DOUBLE_EQ(parse_topology(kMinimal).call_us, 0);
  EXPECT_DOUBLE_EQ(parse_topology(std::string(kMinimal) + "call_overhead_us: 0.15\n").call_us, 0.15);
  EXPECT_EQ(error_of(std::string(kMinimal) + "call_overhead_us: -1\n"),
            "t.yaml:8:19: call_overhead_us must be zero or positive, got '-1'");
}

TEST(Topology, StateProbeIsReadWrittenAndNotInTheModel) {
  EXPECT_DOUBLE_EQ(parse_topology(kMinimal).state_probe_us, 0);
  const Machine m = parse_topology(std::string(kMinimal) + "state_probe_us: 0.16\n");
  EXPECT_DOUBLE_EQ(m.state_probe_us, 0.16);
  EXPECT_DOUBLE_EQ(parse_topology(topology_yaml(m)).state_probe_us, 0.16);
  EXPECT_EQ(topology_yaml(parse_topology(kMinimal)).find("state_probe_us"), std::string::npos);
  EXPECT_EQ(error_of(std::string(kMinimal) + "state_probe_us: 0\n"),
            "t.yaml:8:17: state_probe_us must be positive, got '0'");
}

TEST(Topology, CopiedByNamesWhoMovesAMessagesBytes) {
  EXPECT_FALSE(parse_topology(edited("", "")).intra.cpu_copies);  // default: DMA, ports only
  const Machine cpu = parse_topology(edited("bandwidth_GBps: 150", "bandwidth_GBps: 150, copied_by: cpu"));
  EXPECT_TRUE(cpu.intra.cpu_copies);
  EXPECT_FALSE(cpu.inter.cpu_copies);
  EXPECT_FALSE(parse_topology(edited("bandwidth_GBps: 150", "bandwidth_GBps: 150, copied_by: dma")).intra.cpu_copies);
  EXPECT_NE(error_of(edited("bandwidth_GBps: 150", "bandwidth_GBps: 150, copied_by: gpu"))
                .find("links.intra.copied_by must be 'cpu' or 'dma', got 'gpu'"),
            std::string::npos);
}

TEST(Topology, SharedByNodeNamesALinkWhoseNodePortIsOne) {
  EXPECT_FALSE(parse_topology(edited("", "")).inter.shared_by_node);  // default: a port per rank
  const Machine nic = parse_topology(edited("bandwidth_GBps: 25", "bandwidth_GBps: 25, shared_by: node"));
  EXPECT_TRUE(nic.inter.shared_by_node);
  EXPECT_FALSE(nic.intra.shared_by_node);
  EXPECT_FALSE(parse_topology(edited("bandwidth_GBps: 25", "bandwidth_GBps: 25, shared_by: rank")).inter.shared_by_node);
  EXPECT_NE(error_of(edited("bandwidth_GBps: 25", "bandwidth_GBps: 25, shared_by: switch"))
                .find("links.inter.shared_by must be 'node' (one port for the node's ranks: a NIC) or 'rank', got 'switch'"),
            std::string::npos);
}

TEST(Topology, ARendezvousThresholdNeedsItsAlpha) {
  const Machine m = parse_topology(
      edited("bandwidth_GBps: 150", "bandwidth_GBps: 150, rendezvous_bytes: 4096, alpha_us_rendezvous: 3.5"));
  EXPECT_DOUBLE_EQ(m.intra.rendezvous_bytes, 4096);
  EXPECT_DOUBLE_EQ(m.intra.alpha_us_rendezvous, 3.5);
  EXPECT_DOUBLE_EQ(m.intra.alpha_for(4096), 0.7);
  EXPECT_DOUBLE_EQ(m.intra.alpha_for(4097), 3.5);
  EXPECT_DOUBLE_EQ(m.inter.rendezvous_bytes, 0);
  EXPECT_DOUBLE_EQ(m.inter.alpha_for(1e9), 5.0);
  EXPECT_EQ(error_of(edited("bandwidth_GBps: 150", "bandwidth_GBps: 150, rendezvous_bytes: 4096")),
            "t.yaml:5:66: links.intra.rendezvous_bytes needs alpha_us_rendezvous (messages of more than "
            "rendezvous_bytes pay alpha_us_rendezvous)");
  EXPECT_NE(error_of(edited("bandwidth_GBps: 150", "bandwidth_GBps: 150, alpha_us_rendezvous: 3")).find("needs rendezvous_bytes"),
            std::string::npos);
  EXPECT_NE(error_of(edited("bandwidth_GBps: 150", "bandwidth_GBps: 150, rendezvous_bytes: 0, alpha_us_rendezvous: 3"))
                .find("rendezvous_bytes must be at least 1"),
            std::string::npos);
}

// Measured latencies: interpolated in log(bytes) between the sizes, the first below them, the
// intercept and the switch above the last.
TEST(Topology, MeasuredLatenciesAreInterpolatedUpToTheLastSize) {
  const Machine m = parse_topology(edited(
      "bandwidth_GBps: 150", "bandwidth_GBps: 150, rendezvous_bytes: 4096, alpha_us_rendezvous: 3.5, "
                             "latency_us: { 8: 0.3, 512: 0.9, 2048: 1.5 }"));
  ASSERT_EQ(m.intra.latency.size(), 3u);
  EXPECT_DOUBLE_EQ(m.intra.alpha_for(1), 0.3);
  EXPECT_DOUBLE_EQ(m.intra.alpha_for(8), 0.3);
  EXPECT_DOUBLE_EQ(m.intra.alpha_for(64), 0.6);  // halfway from 8 to 512 in log(bytes)
  EXPECT_DOUBLE_EQ(m.intra.alpha_for(512), 0.9);
  EXPECT_DOUBLE_EQ(m.intra.alpha_for(1024), 1.2);
  EXPECT_DOUBLE_EQ(m.intra.alpha_for(2048), 1.5);
  EXPECT_DOUBLE_EQ(m.intra.alpha_for(4096), 0.7);   // above the table: alpha_us below the switch
  EXPECT_DOUBLE_EQ(m.intra.alpha_for(4097), 3.5);   // and alpha_us_rendezvous above it
  EXPECT_TRUE(m.inter.latency.empty());
  EXPECT_DOUBLE_EQ(m.inter.alpha_for(8), 5.0);
  // A table that spans the switch steps there rather than ramping: above rendezvous_bytes a
  // message pays the first measured size above it.
  const Machine across = parse_topology(edited(
      "bandwidth_GBps: 150", "bandwidth_GBps: 150, rendezvous_bytes: 2048, alpha_us_rendezvous: 3.5, "
                             "latency_us: { 8: 0.3, 2048: 0.5, 8192: 2.5, 32768: 3.0 }"));
  EXPECT_DOUBLE_EQ(across.intra.alpha_for(2048), 0.5);
  EXPECT_DOUBLE_EQ(across.intra.alpha_for(2049), 2.5);
  EXPECT_DOUBLE_EQ(across.intra.alpha_for(4096), 2.5);
  EXPECT_DOUBLE_EQ(across.intra.alpha_for(8192), 2.5);
  EXPECT_DOUBLE_EQ(across.intra.alpha_for(16384), 2.75);  // above the switch, interpolated again
  EXPECT_DOUBLE_EQ(across.intra.alpha_for(128), 0.4);     // and below it
  const auto bad = [](const std::string& table) {
    return error_of(edited("bandwidth_GBps: 150", "bandwidth_GBps: 150, latency_us: " + table));
  };
  EXPECT_NE(bad("{ 512: 0.9, 8: 0.3 }").find("links.intra.latency_us: message sizes must ascend, each once; 8 comes "
                                            "after 512"),
            std::string::npos);
  EXPECT_NE(bad("{ 8: -1 }").find("links.intra.latency_us[8] must be zero or positive"), std::string::npos);
  EXPECT_NE(bad("{ 0: 1 }").find("must be at least 1"), std::string::npos);
  EXPECT_NE(bad("{}").find("must be a mapping of message sizes in bytes to latencies in us"), std::string::npos);
  EXPECT_NE(bad("[1, 2]").find("must be a mapping of message sizes"), std::string::npos);
}

TEST(Topology, TheWriteBackTableIsReadWithItsSizesAscending) {
  const Machine m = parse_topology(
      edited("bandwidth_GBps: 150", "bandwidth_GBps: 150, writeback_us_per_byte: { 8192: 7e-05, 2097152: 0 }"));
  ASSERT_EQ(m.intra.writeback.size(), 2u);
  EXPECT_DOUBLE_EQ(m.intra.writeback_us_per_byte(8192), 7e-05);
  EXPECT_DOUBLE_EQ(m.intra.writeback_us_per_byte(4e6), 0);
  EXPECT_TRUE(m.inter.writeback.empty());
  EXPECT_TRUE(m.intra.writeback_later.empty());
  const Machine later = parse_topology(edited(
      "bandwidth_GBps: 150", "bandwidth_GBps: 150, writeback_later_us_per_byte: { 8192: 5e-05, 2097152: 1e-05 }"));
  EXPECT_TRUE(later.intra.writeback.empty());
  EXPECT_DOUBLE_EQ(later.intra.writeback_later_us_per_byte(8192), 5e-05);
  EXPECT_DOUBLE_EQ(later.intra.writeback_later_us_per_byte(4e6), 1e-05);
  EXPECT_NE(error_of(edited("bandwidth_GBps: 150", "bandwidth_GBps: 150, writeback_later_us_per_byte: { 8: -1 }"))
                .find("links.intra.writeback_later_us_per_byte[8] must be zero or positive"),
            std::string::npos);
  const auto bad = [](const std::string& table) {
    return error_of(edited("bandwidth_GBps: 150", "bandwidth_GBps: 150, writeback_us_per_byte: " + table));
  };
  EXPECT_NE(bad("{ 512: 1e-5, 8: 1e-5 }").find("links.intra.writeback_us_per_byte: message sizes must ascend"),
            std::string::npos);
  EXPECT_NE(bad("{ 8: -1e-5 }").find("links.intra.writeback_us_per_byte[8] must be zero or positive"), std::string::npos);
  EXPECT_NE(bad("{}").find("must be a mapping of message sizes in bytes to us per byte"), std::string::npos);
}

TEST(Topology, ShippedGpuAndClusterFilesAreCopiedByDma) {
  for (const char* f : {"h100-8gpu-nvlink.yaml", "h100-2node-ndr.yaml", "h100-16node-ndr.yaml", "pcie-gen5-8gpu.yaml",
                        "cpu-32node-100gbe.yaml"}) {
    const Machine m = load_topology(std::string(ARLAB_TOPOLOGY_DIR) + "/" + f);
    EXPECT_FALSE(m.intra.cpu_copies) << f;
    EXPECT_FALSE(m.inter.cpu_copies) << f;
    EXPECT_EQ(m.intra.rendezvous_bytes, 0) << f;  // one alpha per link: the walk as before
    EXPECT_EQ(m.inter.rendezvous_bytes, 0) << f;
  }
}

TEST(Topology, OptionalFields) {
  const Machine m = parse_topology(edited("reduce: {", "description: \"a test\"\ncopy: { bandwidth_GBps: 4000 }\nreduce: {") +
                                   "rank_to_node: [0, 1, 0, 1, 0, 1, 0, 1]\n");
  EXPECT_EQ(m.description, "a test");
  EXPECT_DOUBLE_EQ(m.copy_us_per_byte, 1e-3 / 4000);
  EXPECT_EQ(m.placement(8), (std::vector<int>{0, 1, 0, 1, 0, 1, 0, 1}));
  EXPECT_THROW(m.placement(16), Error);  // an explicit placement covers exactly its ranks
  // One node: inter may be left out; one rank per node: intra may be left out.
  std::string one_node = edited("nodes: 2", "nodes: 1");
  one_node.erase(one_node.find("  inter"), one_node.find("reduce") - one_node.find("  inter"));
  const Machine one = parse_topology(one_node);
  const Machine single = parse_topology(
      "name: x\nnodes: 4\nranks_per_node: 1\nlinks: { inter: { alpha_us: 2, bandwidth_GBps: 10 } }\n"
      "reduce: { bandwidth_GBps: 5 }\n");
  EXPECT_DOUBLE_EQ(single.intra.us_per_byte, single.inter.us_per_byte);
  EXPECT_EQ(one.nodes, 1);
}

// The second regime: cache_bytes and the beyond-cache bandwidths, each optional; a rate without
// its own beyond-cache figure keeps its in-cache one (0 in Machine::beyond_cache).
TEST(Topology, CacheRegimeFields) {
  const std::string cached = edited("links:", "cache_bytes: 33554432\nlinks:");
  const std::string text = cached.substr(0, cached.find("reduce")) +
                           "reduce: { bandwidth_GBps: 20, bandwidth_GBps_beyond_cache: 8 }\n";
  std::string with_beyond = text;
  with_beyond.replace(with_beyond.find("bandwidth_GBps: 150"), 19, "bandwidth_GBps: 150, bandwidth_GBps_beyond_cache: 50");
  const Machine m = parse_topology(with_beyond, "t.yaml");
  EXPECT_EQ(m.cache_bytes, 33554432);
  EXPECT_DOUBLE_EQ(m.intra.us_per_byte, 1e-3 / 150);
  EXPECT_DOUBLE_EQ(m.beyond_cache.intra_us_per_byte, 1e-3 / 50);
  EXPECT_EQ(m.beyond_cache.inter_us_per_byte, 0);  // none given: as in cache
  EXPECT_DOUBLE_EQ(m.reduce_us_per_byte, 1e-3 / 20);
  EXPECT_DOUBLE_EQ(m.beyond_cache.reduce_us_per_byte, 1e-3 / 8);
  EXPECT_DOUBLE_EQ(m.beyond_cache.copy_us_per_byte, 1e-3 / 8);  // copy defaults to reduce, both regimes
  const Machine copy = parse_topology(text + "copy: { bandwidth_GBps: 40 }\n");
  EXPECT_EQ(copy.beyond_cache.copy_us_per_byte, 0);
  // One link class given: the other takes both its rates.
  const Machine single = parse_topology(
      "name: x\nnodes: 4\nranks_per_node: 1\ncache_bytes: 1024\n"
      "links: { inter: { alpha_us: 2, bandwidth_GBps: 10, bandwidth_GBps_beyond_cache: 4 } }\n"
      "reduce: { bandwidth_GBps: 5 }\n");
  EXPECT_DOUBLE_EQ(single.beyond_cache.intra_us_per_byte, 1e-3 / 4);
  EXPECT_DOUBLE_EQ(single.beyond_cache.inter_us_per_byte, 1e-3 / 4);
  // Files without it have one regime.
  const Machine plain = parse_topology(kMinimal);
  EXPECT_EQ(plain.cache_bytes, 0);
  EXPECT_EQ(plain.beyond_cache.intra_us_per_byte + plain.beyond_cache.inter_us_per_byte +
                plain.beyond_cache.reduce_us_per_byte + plain.beyond_cache.copy_us_per_byte,
            0);

  // Errors name the line and column.
  EXPECT_EQ(error_of(edited("bandwidth_GBps: 150", "bandwidth_GBps: 150, bandwidth_GBps_beyond_cache: 50")),
            "t.yaml:5:77: links.intra.bandwidth_GBps_beyond_cache needs cache_bytes at the top level (the working "
            "set where it starts to apply)");
  EXPECT_EQ(error_of(edited("reduce: { bandwidth_GBps: 1000 }", "reduce: { bandwidth_GBps: 1000, bandwidth_GBps_beyond_cache: 400 }")),
            "t.yaml:7:62: reduce.bandwidth_GBps_beyond_cache needs cache_bytes at the top level (the working set "
            "where it starts to apply)");
  EXPECT_EQ(error_of(edited("links:", "cache_bytes: 0\nlinks:")), "t.yaml:4:14: cache_bytes must be at least 1, got '0'");
  EXPECT_EQ(error_of(edited("links:", "cache_bytes: 32M\nlinks:")), "t.yaml:4:14: cache_bytes must be an integer, got '32M'");
  EXPECT_EQ(error_of(edited("links:", "cache_bytes: [1]\nlinks:")), "t.yaml:4:14: cache_bytes must be an integer, got a list");
  EXPECT_EQ(error_of(edited("bandwidth_GBps: 25", "bandwidth_GBps: 25, bandwidth_GBps_beyond_cache: -5")),
            "t.yaml:6:76: links.inter.bandwidth_GBps_beyond_cache must be positive, got '-5'");
  EXPECT_EQ(error_of(text.substr(0, text.find("reduce")) + "reduce: { bandwidth_GBps: 20, bandwidth_GBps_beyond: 8 }\n"),
            "t.yaml:8:31: unknown key 'bandwidth_GBps_beyond' in reduce; valid keys: bandwidth_GBps, "
            "bandwidth_GBps_beyond_cache");
  EXPECT_EQ(error_of(cached + "cache_bytes: 1024\n"), "t.yaml:9:1: key 'cache_bytes' appears twice in the topology");
}

TEST(Topology, UnknownKeysListTheValidOnes) {
  EXPECT_EQ(error_of(edited("nodes: 2", "nodez: 2")),
            "t.yaml:2:1: unknown key 'nodez' in the topology; valid keys: name, description, nodes, "
            "ranks_per_node, rank_to_node, cache_bytes, call_overhead_us, state_probe_us, links, reduce, copy");
  EXPECT_EQ(error_of(edited("bandwidth_GBps: 150", "bandwith_GBps: 150")),
            "t.yaml:5:27: unknown key 'bandwith_GBps' in links.intra; valid keys: alpha_us, bandwidth_GBps, "
            "bandwidth_GBps_beyond_cache, copied_by, shared_by, rendezvous_bytes, alpha_us_rendezvous, latency_us, "
            "writeback_us_per_byte, writeback_later_us_per_byte");
  EXPECT_EQ(error_of(edited("  inter:", "  intre:")),
            "t.yaml:6:3: unknown key 'intre' in links; valid keys: intra, inter");
  EXPECT_EQ(error_of(edited("nodes: 2", "nodes: 2\nnodes: 3")), "t.yaml:3:1: key 'nodes' appears twice in the topology");
}

TEST(Topology, MissingFields) {
  EXPECT_EQ(error_of(edited(", bandwidth_GBps: 25", "")),
            "t.yaml:6:10: links.inter: missing field 'bandwidth_GBps' (required: alpha_us, bandwidth_GBps)");
  EXPECT_EQ(error_of(edited("name: two-node-example\n", "")),
            "t.yaml:1:1: the topology: missing field 'name' (required: name, nodes, ranks_per_node, links, reduce)");
  // Two nodes need the inter-node link.
  const std::string no_inter = edited("  inter: { alpha_us: 5.0, bandwidth_GBps: 25 }\n", "");
  EXPECT_EQ(error_of(no_inter), "t.yaml:5:3: links: missing field 'inter' (required: intra, inter)");
  // One rank uses no link: either may describe it (docs/model.md), but not neither.
  const std::string one_rank = edited("ranks_per_node: 4", "ranks_per_node: 1");
  const std::string one = one_rank.substr(0, one_rank.find("nodes: 2")) + "nodes: 1" +
                          one_rank.substr(one_rank.find("nodes: 2") + 8);
  EXPECT_EQ(error_of(one), "");
  const std::string intra_line = "  intra: { alpha_us: 0.7, bandwidth_GBps: 150 }   # one direction, per rank\n";
  const std::string only_inter = one.substr(0, one.find(intra_line)) + one.substr(one.find(intra_line) + intra_line.size());
  EXPECT_EQ(error_of(only_inter), "");
  const std::string inter_line = "  inter: { alpha_us: 5.0, bandwidth_GBps: 25 }\n";
  const std::string neither = only_inter.substr(0, only_inter.find(inter_line)) + "  {}\n" +
                              only_inter.substr(only_inter.find(inter_line) + inter_line.size());
  EXPECT_NE(error_of(neither).find("links must hold intra or inter (one rank: either)"), std::string::npos)
      << error_of(neither);
}

TEST(Topology, BadValues) {
  EXPECT_EQ(error_of(edited("bandwidth_GBps: 25", "bandwidth_GBps: -25")),
            "t.yaml:6:43: links.inter.bandwidth_GBps must be positive, got '-25'");
  EXPECT_EQ(error_of(edited("bandwidth_GBps: 1000", "bandwidth_GBps: 0")),
            "t.yaml:7:27: reduce.bandwidth_GBps must be positive, got '0'");
  EXPECT_EQ(error_of(edited("alpha_us: 0.7", "alpha_us: -1")),
            "t.yaml:5:22: links.intra.alpha_us must be zero or positive, got '-1'");
  EXPECT_EQ(error_of(edited("nodes: 2", "nodes: 0")), "t.yaml:2:8: nodes must be at least 1, got '0'");
  EXPECT_EQ(error_of(edited("bandwidth_GBps: 25", "bandwidth_GBps: .inf")),
            "t.yaml:6:43: links.inter.bandwidth_GBps must be a number, got '.inf'");
  EXPECT_EQ(error_of(std::string(kMinimal) + "rank_to_node: [0, 1, 0, 1, 0, 1, 0, 2]\n"),
            "t.yaml:8:37: rank_to_node[7] is node 2, but nodes = 2 (valid: 0..1)");
  EXPECT_EQ(error_of(std::string(kMinimal) + "rank_to_node: [0, 0, 0, 0, 0, 1, 1, 1]\n"),
            "t.yaml:8:28: rank_to_node puts more than ranks_per_node = 4 ranks on node 0");
  EXPECT_EQ(error_of(std::string(kMinimal) + "rank_to_node: [0, 1]\n"),
            "t.yaml:8:15: rank_to_node has 2 entries; nodes x ranks_per_node = 8");
}

// Found by tests/fuzz (regressions/topology): a bandwidth so small or large that its rate, or
// the bandwidth written back from it, was infinite or subnormal; a byte count above 2^53,
// which the double rounded up to one that topology_yaml() wrote above what a long holds.
TEST(Topology, NumbersAFileCannotWriteBackAreRefused) {
  EXPECT_EQ(error_of(edited("bandwidth_GBps: 25", "bandwidth_GBps: 1e-320")),
            "t.yaml:6:43: links.inter.bandwidth_GBps must be from 1e-300 to 1e300, got '1e-320'");
  EXPECT_EQ(error_of(edited("bandwidth_GBps: 1000", "bandwidth_GBps: 1.7e308")),
            "t.yaml:7:27: reduce.bandwidth_GBps must be from 1e-300 to 1e300, got '1.7e308'");
  EXPECT_EQ(error_of(edited("links:", "cache_bytes: 9223372036854775807\nlinks:")),
            "t.yaml:4:14: cache_bytes must be at most 9007199254740992, got '9223372036854775807'");
  EXPECT_EQ(error_of(edited("bandwidth_GBps: 25 }", "bandwidth_GBps: 25, rendezvous_bytes: 9007199254740993, "
                                                    "alpha_us_rendezvous: 9 }")),
            "t.yaml:6:65: links.inter.rendezvous_bytes must be at most 9007199254740992, got '9007199254740993'");
  // The limits themselves load, and write back the same machine.
  const Machine cache = parse_topology(edited("links:", "cache_bytes: 9007199254740992\nlinks:"));
  const Machine edge = parse_topology(
      "name: x\nnodes: 2\nranks_per_node: 1\nlinks: { inter: { alpha_us: 2, bandwidth_GBps: 1e-300, "
      "rendezvous_bytes: 9007199254740992, alpha_us_rendezvous: 3 } }\nreduce: { bandwidth_GBps: 1e300 }\n");
  for (const Machine& x : {cache, edge}) expect_same_machine(parse_topology(topology_yaml(x)), x);
}

TEST(Topology, WrongTypes) {
  EXPECT_EQ(error_of(edited("nodes: 2", "nodes: two")), "t.yaml:2:8: nodes must be an integer, got 'two'");
  EXPECT_EQ(error_of(edited("ranks_per_node: 4", "ranks_per_node: 2.5")),
            "t.yaml:3:17: ranks_per_node must be an integer, got '2.5'");
  EXPECT_EQ(error_of(edited("alpha_us: 5.0", "alpha_us: fast")),
            "t.yaml:6:22: links.inter.alpha_us must be a number, got 'fast'");
  EXPECT_EQ(error_of(edited("reduce: { bandwidth_GBps: 1000 }", "reduce: 1000")),
            "t.yaml:7:9: reduce must be a mapping with keys bandwidth_GBps, bandwidth_GBps_beyond_cache, got '1000'");
  EXPECT_EQ(error_of(edited("name: two-node-example", "name: [a, b]")), "t.yaml:1:7: name must be a string, got a list");
  EXPECT_EQ(error_of("- just\n- a list\n"),
            "t.yaml:1:1: the topology must be a mapping with keys name, description, nodes, ranks_per_node, "
            "rank_to_node, cache_bytes, call_overhead_us, state_probe_us, links, reduce, copy, got a list");
}

TEST(Topology, MalformedYaml) {
  const std::string e = error_of(edited("{ alpha_us: 5.0, bandwidth_GBps: 25 }", "{ alpha_us: 5.0, bandwidth_GBps: 25"));
  EXPECT_EQ(e.rfind("t.yaml:7:7: malformed YAML: ", 0), 0u) << e;
  EXPECT_EQ(error_of(""), "t.yaml:1:1: the file is empty; expected a topology mapping");
}

TEST(Topology, FileErrorsNameTheFile) {
  EXPECT_THROW(load_topology("/nonexistent/arlab.yaml"), Error);
  try {
    load_topology("/nonexistent/arlab.yaml");
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "cannot open topology file '/nonexistent/arlab.yaml': No such file or directory");
  }
  const std::string dir = std::filesystem::temp_directory_path().string();
  try {
    load_topology(dir);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "topology file '" + dir + "' is a directory");
  }
  const auto path = std::filesystem::temp_directory_path() / "arlab-test-bad-topology.yaml";
  std::ofstream(path) << edited("nodes: 2", "nodes: -2");
  try {
    load_topology(path.string());
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), path.string() + ":2:8: nodes must be at least 1, got '-2'");
  }
  std::filesystem::remove(path);
}

// ---- The walk on topologies -------------------------------------------------------------

constexpr test::Uniform kUniform{2.0, 1e-3, 2.5e-4};  // 1 GB/s links, 4 GB/s reduction

// A uniform machine from a file: one rank per node, so every message crosses the inter link.
Machine uniform_topology() {
  return parse_topology(
      "name: uniform\nnodes: 1024\nranks_per_node: 1\n"
      "links: { inter: { alpha_us: 2.0, bandwidth_GBps: 1 } }\nreduce: { bandwidth_GBps: 4 }\n");
}

Cost walk(Algorithm a, int p, std::size_t count, const Machine& m) {
  Shape s;
  s.nranks = p;
  s.count = count;
  s.elem_size = 4;
  s.chunk_bytes = 0;  // pipelining off: the closed forms describe the plain algorithms
  return predict(*find_schedule_algorithm(a), s, m);
}

// One test per rank count, so that each stays short (the ring at p = 1024 walks 5 million steps).
class TopologyWalkClosedForms : public ::testing::TestWithParam<int> {};

TEST_P(TopologyWalkClosedForms, RingRecursiveDoublingRabenseifner) {
  static const Machine m = uniform_topology();
  const int p = GetParam();
  const std::size_t count = 720720 * 4;  // 11.5 MB: divisible by 1..16, large enough for rounding
  const double n = static_cast<double>(count) * 4;
  for (Algorithm a : {Algorithm::Ring, Algorithm::RecursiveDoubling, Algorithm::Rabenseifner}) {
    const double expected = test::closed_form(a, p, n, kUniform), got = walk(a, p, count, m).total_us;
    EXPECT_NEAR(got, expected, 0.01 * expected) << to_string(a) << " p=" << p;
  }
}

INSTANTIATE_TEST_SUITE_P(P, TopologyWalkClosedForms,
                         ::testing::Values(2, 3, 4, 5, 6, 7, 8, 9, 12, 15, 16, 17, 24, 31, 32, 33, 63, 64, 100, 127,
                                           128, 255, 256, 257, 500, 511, 512, 1000, 1023, 1024));

TEST(TopologyWalk, BreakdownMatchesTheClosedFormTerms) {
  // Ring, 64 ranks: 126 alpha on the critical path, 2n(p-1)/p beta, n(p-1)/p gamma.
  const int p = 64;
  const std::size_t count = 1 << 20;
  const double n = static_cast<double>(count) * 4;
  const Cost c = walk(Algorithm::Ring, p, count, uniform_topology());
  EXPECT_NEAR(c.latency_us, 2 * (p - 1) * kUniform.alpha, 1e-6);
  EXPECT_NEAR(c.bandwidth_us, 2 * n * (p - 1) / p * kUniform.beta, 0.01 * c.bandwidth_us);
  EXPECT_NEAR(c.reduce_us, n * (p - 1) / p * kUniform.gamma, 0.01 * c.reduce_us);
  EXPECT_NEAR(c.latency_us + c.bandwidth_us + c.reduce_us, c.total_us, 1e-9 * c.total_us);
}

// Two link classes: fast inside a node, slow between nodes; reductions free so that the ring's
// time is its transfers alone.
Machine two_level(int nodes, int per_node) {
  return parse_topology("name: two-level\nnodes: " + std::to_string(nodes) +
                        "\nranks_per_node: " + std::to_string(per_node) +
                        "\nlinks:\n  intra: { alpha_us: 1.0, bandwidth_GBps: 100 }\n"
                        "  inter: { alpha_us: 5.0, bandwidth_GBps: 10 }\nreduce: { bandwidth_GBps: 1e9 }\n");
}

TEST(TopologyWalk, InterNodeMessagesPayTheInterLink) {
  // Recursive doubling on 2 ranks is one exchange: alpha + n beta of the link between them.
  const std::size_t count = 1 << 20;
  const double n = static_cast<double>(count) * 4;
  EXPECT_NEAR(walk(Algorithm::RecursiveDoubling, 2, count, two_level(1, 2)).total_us, 1.0 + n * 1e-3 / 100, 1e-3);
  EXPECT_NEAR(walk(Algorithm::RecursiveDoubling, 2, count, two_level(2, 1)).total_us, 5.0 + n * 1e-3 / 10, 1e-3);
}

TEST(TopologyWalk, RingAcrossTwoNodesRunsAtTheSlowLinksPace) {
  // 8 ranks on one node: 2(p-1) dependent steps of alpha + n/p beta on the fast link. On two
  // nodes of 4 the ring crosses between nodes twice; the rank in front of each crossing sends
  // all its 2(p-1) blocks over the slow link one after the other, and since each of those
  // sends waits only for data that came over fast links, the blocks stream back to back: its
  // port is busy 2(p-1) n/p beta_inter, plus one alpha_inter for the last block to land.
  // Every block pays the slow link: the difference is 2(p-1) n/p (beta_inter - beta_intra)
  // + alpha_inter - 2(p-1) alpha_intra.
  const int p = 8;
  const std::size_t count = 1 << 22;
  const double n = static_cast<double>(count) * 4;
  const double one_node = walk(Algorithm::Ring, p, count, two_level(1, 8)).total_us;
  const double two_nodes = walk(Algorithm::Ring, p, count, two_level(2, 4)).total_us;
  const double fast = 2 * (p - 1) * (1.0 + n / p * 1e-3 / 100), slow = 5.0 + 2 * (p - 1) * n / p * 1e-3 / 10;
  EXPECT_NEAR(one_node, fast, 0.01 * fast);
  EXPECT_NEAR(two_nodes, slow, 0.01 * slow);
  EXPECT_NEAR(two_nodes - one_node, slow - fast, 0.01 * (slow - fast));
  EXPECT_GT(two_nodes, 9 * one_node);  // the slow link is 10x slower
}

TEST(TopologyWalk, PlacementDecidesWhichMessagesCrossNodes) {
  // Cyclic placement puts every ring neighbour on the other node: every step now waits for a
  // slow message, so the ring pays alpha_inter at each of its 2(p-1) steps, the closed form
  // of a uniform network of slow links.
  Machine cyclic = two_level(2, 4);
  cyclic.rank_to_node = {0, 1, 0, 1, 0, 1, 0, 1};
  const std::size_t count = 1 << 22;
  const double n = static_cast<double>(count) * 4;
  const double uniform_slow = test::closed_form(Algorithm::Ring, 8, n, {5.0, 1e-4, 0});
  EXPECT_NEAR(walk(Algorithm::Ring, 8, count, cyclic).total_us, uniform_slow, 0.01 * uniform_slow);
  // Recursive doubling exchanges with rank ^ 1, ^ 2, ^ 4. Block placement keeps the first two
  // inside a node; placing ranks by the parity of their bits makes all three cross.
  Machine parity = two_level(2, 4);
  parity.rank_to_node = {0, 1, 1, 0, 1, 0, 0, 1};
  const double intra = 1.0 + n * 1e-3 / 100, inter = 5.0 + n * 1e-3 / 10;
  EXPECT_NEAR(walk(Algorithm::RecursiveDoubling, 8, count, two_level(2, 4)).total_us, 2 * intra + inter, 1e-3);
  EXPECT_NEAR(walk(Algorithm::RecursiveDoubling, 8, count, parity).total_us, 3 * inter, 1e-3);
  EXPECT_THROW(walk(Algorithm::Ring, 16, count, cyclic), Error);
}

}  // namespace
}  // namespace arlab::detail

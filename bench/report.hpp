// arlab-bench output: the nccl-tests style table on stdout and the JSON records.
#pragma once

#include <arlab/arlab.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

namespace arlab::bench {

struct Row {
  std::size_t size = 0;   // bytes
  std::size_t count = 0;  // elements
  DataType dtype = DataType::Float32;
  ReduceOp op = ReduceOp::Sum;
  Algorithm algorithm = Algorithm::Auto;
  std::string label;      // as shown in the table: "ring", or "auto(ring)" with Auto's pick
  TransportKind transport = TransportKind::Mpi;
  int ranks = 1;
  bool inplace = false;
  double time_us = 0;     // per call: the average over the timed calls, the slowest rank's
  double algbw_GBps = 0;  // size / time, GB = 1e9 bytes
  double busbw_GBps = 0;  // algbw * 2(p-1)/p
  std::optional<std::uint64_t> wrong;        // absent when not checked (-c 0)
  std::optional<double> predicted_us;        // the cost model's time, when it has one
};

// size / time in GB/s (1e9 bytes per second); 0 for a non-positive time.
double algbw_GBps(std::size_t bytes, double time_us);
// nccl-tests' bus bandwidth for all-reduce: algbw * 2(p-1)/p (0 for one rank).
double busbw_GBps(double algbw, int ranks);

// "8B", "1KiB", "64MiB", "3GiB"; sizes that are not a whole unit keep the smaller unit.
std::string format_bytes(std::size_t bytes);

void print_columns(std::FILE*);
void print_row(std::FILE*, const Row&);
// "# Avg bus bandwidth <algo>: X GB/s" for each algorithm of `order` that has rows.
void print_averages(std::FILE*, const std::vector<Row>& rows, const std::vector<Algorithm>& order);

// The rows as a JSON array of records (keys: size, count, dtype, op, algorithm, transport,
// ranks, inplace, time_us, algbw_GBps, busbw_GBps, wrong, predicted_us).
std::string to_json(const std::vector<Row>& rows);
// Writes to_json(rows) to path; false (with *error set) when the file cannot be written.
bool write_json(const std::string& path, const std::vector<Row>& rows, std::string* error);

}  // namespace arlab::bench

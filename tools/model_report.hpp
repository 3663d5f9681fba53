// arlab-model output: the table of predictions, the crossovers, the --explain breakdown and
// the JSON records. Everything here formats numbers the cost walk produced; nothing predicts.
#pragma once

#include <cstddef>
#include <cstdio>
#include <string>
#include <vector>

#include "model/cost_walk.hpp"
#include "model/machine.hpp"
#include "model_options.hpp"

namespace arlab::tool {

struct Prediction {
  Algorithm algorithm;
  detail::Cost cost;
};

struct SizeRow {
  std::size_t bytes = 0;
  std::vector<Prediction> predictions;  // in the order of --algorithms
  std::size_t pick = 0;                 // index of the fastest (first on ties)
  std::size_t runner_up = 0;            // index of the second fastest (== pick with one algorithm)
};

// Where the fastest algorithm changes between two sizes of the sweep: `to` first beats `from`
// at about `bytes` (found by bisection between `below` and `above`, to within 1%).
struct Crossover {
  Algorithm from, to;
  std::size_t below, above;
  std::size_t bytes;
};

double busbw_GBps(std::size_t bytes, double time_us, int ranks);

void print_header(std::FILE* out, const detail::Machine& m, int ranks, const ModelOptions& o);
void print_table(std::FILE* out, const std::vector<SizeRow>& rows, int ranks);
void print_crossovers(std::FILE* out, const std::vector<SizeRow>& rows, const std::vector<Crossover>& crossovers);
void print_explain(std::FILE* out, const std::vector<SizeRow>& rows);

// One sentence: why the pick wins at this size (which term of the cost decides).
std::string verdict(const SizeRow& row);

// A JSON array, one record per size and algorithm: algorithm, bytes, ranks, predicted_us,
// latency_us, bandwidth_us, reduce_us, busbw_GBps, pick.
std::string json_records(const std::vector<SizeRow>& rows, int ranks);

}  // namespace arlab::tool

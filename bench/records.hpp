// arlab-bench --json and --csv: one record per table line and section.
//
// JSON: {"arlab_bench": {header}, "records": [record, ...]}; CSV: a header row of the record
// keys, then one row per record (an empty field for null). Record keys, in order:
//   size count dtype op algorithm pick transport ranks inplace iters warmup
//   time_us time_min_us time_max_us algbw_GBps busbw_GBps wrong predicted_us err_pct
// pick is the algorithm auto ran (the algorithm itself otherwise); transport is "native" for
// the baselines (mpi, nccl), which run once per size over their own communication; wrong is null when not
// checked (-c 0); predicted_us and err_pct are null where the model has no prediction (the
// mpi and nccl baselines). Every number is finite.
#pragma once

#include <string>
#include <vector>

#include "results.hpp"

namespace arlab::bench {

// The record keys above, in order.
const std::vector<std::string>& record_keys();

std::string to_json(const RunInfo&, const std::vector<Line>&);
std::string to_csv(const RunInfo&, const std::vector<Line>&);

// Writes text to path (replacing it); false with *error set when it cannot.
bool write_file(const std::string& path, const std::string& text, std::string* error);

}  // namespace arlab::bench

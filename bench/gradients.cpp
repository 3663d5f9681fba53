#include "gradients.hpp"

#include <arlab/ddp.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <vector>

#include "gradient_models.hpp"
#include "measure.hpp"
#include "sweep.hpp"

namespace arlab::bench {
namespace {

const char* const kModes[] = {"per-tensor", "flat", "bucketed", "bucketed-fp16"};

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Integer-valued gradients (k % 13 + rank): the average is exact in float whatever the order
// of summation, so every uncompressed mode must give it bit for bit.
float input(std::size_t k, int rank) { return static_cast<float>(k % 13 + static_cast<std::size_t>(rank)); }
float expected(std::size_t k, int p) {
  float sum = 0;
  for (int r = 0; r < p; ++r) sum += input(k, r);
  return sum / static_cast<float>(p);
}

struct Record {
  std::string transport, mode;
  std::size_t buckets = 0;
  double time_us = 0, min_us = 0, max_us = 0;
  long long wrong = 0;
  std::vector<double> rounds_us;  // each round's average (--rounds)
};

// One mode on one communicator: `steps` timed steps after `warmup`, each between barriers;
// the slowest rank's average, min and max. Then one checked step on fresh input.
Record run_mode(Communicator& comm, MPI_Comm mpi, const GradientModel& model, int mode, int warmup, int steps) {
  const int rank = comm.rank(), p = comm.size();
  const std::size_t n = model.counts.size();
  const std::size_t total = std::accumulate(model.counts.begin(), model.counts.end(), std::size_t{0});
  std::vector<std::size_t> offset(n);
  std::exclusive_scan(model.counts.begin(), model.counts.end(), offset.begin(), std::size_t{0});

  // The gradients: one allocation holds them all (as a model's .grad tensors would lie
  // anywhere, each is used through its own pointer); bucket views live in the bucketer.
  std::vector<float> grads(total), flat;
  std::unique_ptr<GradientBucketer> sync;
  if (mode >= 2) {
    std::vector<Gradient> views(n);
    for (std::size_t i = 0; i < n; ++i) views[i] = {nullptr, model.counts[i], DataType::Float32};
    BucketOptions o;
    o.gradient_as_bucket_view = true;
    if (mode == 3) o.hook = make_fp16_compression_hook();
    sync = std::make_unique<GradientBucketer>(comm, views, o);
  }
  if (mode == 1) flat.resize(total);
  auto where = [&](std::size_t i) {
    return sync ? static_cast<float*>(sync->gradient(i)) : grads.data() + offset[i];
  };
  auto fill = [&] {
    for (std::size_t i = 0; i < n; ++i) {
      float* g = where(i);
      for (std::size_t k = 0; k < model.counts[i]; ++k) g[k] = input(offset[i] + k, rank);
    }
  };
  auto step = [&] {  // backward's order: the last parameter's gradient first
    if (mode == 0) {
      for (std::size_t i = n; i-- > 0;)
        comm.allreduce(where(i), where(i), model.counts[i], DataType::Float32, ReduceOp::Avg);
    } else if (mode == 1) {
      comm.allreduce(flat.data(), flat.data(), total, DataType::Float32, ReduceOp::Avg);
    } else {
      for (std::size_t i = n; i-- > 0;) sync->mark_ready(i);
      sync->finish();
    }
  };

  fill();
  std::vector<double> t;
  for (int s = -warmup; s < steps; ++s) {
    MPI_Barrier(mpi);
    const double t0 = now_us();
    step();
    const double dt = now_us() - t0;
    if (s >= 0) t.push_back(dt);
  }
  double mine[3] = {std::accumulate(t.begin(), t.end(), 0.0) / static_cast<double>(t.size()),
                    -*std::min_element(t.begin(), t.end()), *std::max_element(t.begin(), t.end())};
  double slowest[3];
  MPI_Allreduce(mine, slowest, 3, MPI_DOUBLE, MPI_MAX, mpi);

  // The check: fresh input, one step, every element against the exact average (fp16: within
  // its precision: each contribution and partial sum rounded to 11 bits).
  fill();
  if (mode == 1)
    for (std::size_t i = 0; i < n; ++i) std::memcpy(flat.data() + offset[i], where(i), model.counts[i] * sizeof(float));
  step();
  long long wrong = 0;
  for (std::size_t i = 0; i < n; ++i) {
    const float* g = mode == 1 ? flat.data() + offset[i] : where(i);
    for (std::size_t k = 0; k < model.counts[i]; ++k) {
      const float want = expected(offset[i] + k, p);
      const bool ok = mode == 3 ? std::abs(g[k] - want) <= std::abs(want) * 2.0f * static_cast<float>(p) / 2048 + 1e-3f
                                : g[k] == want;
      wrong += !ok;
    }
  }
  long long all_wrong = 0;
  MPI_Allreduce(&wrong, &all_wrong, 1, MPI_LONG_LONG, MPI_SUM, mpi);
  return {"", kModes[mode], sync ? sync->bucket_count() : mode == 0 ? n : 1, slowest[0], -slowest[1], slowest[2],
          all_wrong, {}};
}

}  // namespace

int run_gradients(const BenchOptions& o, MPI_Comm mpi, const std::string& command) {
  const GradientModel model = gradient_model(o.gradients);
  int rank = 0, p = 1;
  MPI_Comm_rank(mpi, &rank);
  MPI_Comm_size(mpi, &p);
  const std::size_t total = std::accumulate(model.counts.begin(), model.counts.end(), std::size_t{0});
  const int steps = o.iters_given ? o.iters : 10;
  const double bytes = static_cast<double>(total) * sizeof(float);
  if (rank == 0 && !o.quiet) {
    std::printf("# arlab-bench %s: gradient synchronisation per training step on %d ranks\n", version(), p);
    std::printf("# command: %s\n", command.c_str());
    std::printf("# gradients: %s, %zu tensors, %zu float parameters (%.1f MiB): %s\n", model.name.c_str(),
                model.counts.size(), total, bytes / 1048576.0, model.description.c_str());
    std::printf("# modes: per-tensor (one allreduce per tensor), flat (one allreduce of all, copies untimed), "
                "bucketed (GradientBucketer: 25 MiB buckets, 1 MiB first, bucket views), bucketed-fp16 (and the "
                "fp16 compression hook); Algorithm::Auto, ReduceOp::Avg\n");
    std::printf("# time: per step, %d timed after %d warm-up, each between barriers; the slowest rank's average "
                "(min and max in --json)%s; #wrong: elements off the exact average after one more step (fp16: beyond "
                "its precision)\n",
                steps, o.warmup,
                o.rounds > 1 ? ("; the median of " + std::to_string(o.rounds) + " rounds, the modes in turn, #wrong summed over them").c_str()
                             : "");
    std::printf("#\n# %-13s %-9s %8s %12s %9s %8s %7s\n", "mode", "transport", "buckets", "time(us)", "algbw",
                "vs flat", "#wrong");
    std::printf("# %-13s %-9s %8s %12s %9s %8s %7s\n", "", "", "", "", "(GB/s)", "", "");
  }
  std::vector<Record> records;
  int status = kExitOk;
  for (TransportKind t : o.transports) {
    Options opt;
    opt.transport = t;
    if (o.topology) opt.topology = *o.topology;
    try {
      Communicator comm(mpi, opt);
      // The four modes in turn, `rounds` times (so that the machine's drift falls on every mode
      // alike); each mode's time is the median of its rounds.
      std::vector<Record> mine(4);
      for (int round = 0; round < o.rounds; ++round)
        for (int mode = 0; mode < 4; ++mode) {
          Record r = run_mode(comm, mpi, model, mode, o.warmup, steps);
          Record& m = mine[static_cast<std::size_t>(mode)];
          if (round == 0) {
            m = r;
          } else {
            m.min_us = std::min(m.min_us, r.min_us);
            m.max_us = std::max(m.max_us, r.max_us);
            m.wrong += r.wrong;
          }
          m.rounds_us.push_back(r.time_us);
        }
      for (Record& r : mine) r.time_us = median_round(r.rounds_us);
      const double flat_us = mine[1].time_us;
      for (Record& r : mine) {
        r.transport = to_string(t);
        if (r.wrong) status = kExitFailed;
        if (rank == 0)
          std::printf("  %-13s %-9s %8zu %12.1f %9.2f %8.2f %7lld\n", r.mode.c_str(), r.transport.c_str(), r.buckets,
                      r.time_us, bytes / r.time_us / 1e3, r.time_us / flat_us, r.wrong);
        records.push_back(r);
      }
      if (rank == 0 && o.rounds > 1) {  // the ratios round by round: is a difference larger than the drift?
        std::printf("  # per round, against flat:");
        for (int mode : {0, 2}) {
          std::printf(" %s", kModes[mode]);
          for (std::size_t k = 0; k < mine[1].rounds_us.size(); ++k)
            std::printf(" %.2f", mine[static_cast<std::size_t>(mode)].rounds_us[k] / mine[1].rounds_us[k]);
          std::printf(";");
        }
        std::printf(" bucketed / per-tensor");
        for (std::size_t k = 0; k < mine[0].rounds_us.size(); ++k)
          std::printf(" %.2f", mine[2].rounds_us[k] / mine[0].rounds_us[k]);
        std::printf("\n");
      }
    } catch (const Error& e) {
      if (rank == 0) std::fprintf(stderr, "arlab-bench: --gradients over %s: %s\n", to_string(t).c_str(), e.what());
      status = kExitFailed;
    }
  }
  if (rank == 0 && !o.json_path.empty()) {
    std::FILE* f = std::fopen(o.json_path.c_str(), "w");
    if (!f) {
      std::fprintf(stderr, "arlab-bench: cannot write --json %s\n", o.json_path.c_str());
      return kExitFailed;
    }
    std::fprintf(f, "{\n  \"arlab_bench\": {\"version\": \"%s\", \"ranks\": %d, \"gradients\": \"%s\", \"tensors\": %zu, "
                    "\"parameters\": %zu, \"bytes\": %.0f, \"steps\": %d, \"warmup\": %d, \"rounds\": %d},\n  \"records\": [",
                 version(), p, model.name.c_str(), model.counts.size(), total, bytes, steps, o.warmup, o.rounds);
    for (std::size_t i = 0; i < records.size(); ++i) {
      const Record& r = records[i];
      std::fprintf(f, "%s\n    {\"mode\": \"%s\", \"transport\": \"%s\", \"buckets\": %zu, \"time_us\": %.3f, "
                      "\"time_min_us\": %.3f, \"time_max_us\": %.3f, \"wrong\": %lld, \"rounds_us\": [",
                   i ? "," : "", r.mode.c_str(), r.transport.c_str(), r.buckets, r.time_us, r.min_us, r.max_us, r.wrong);
      for (std::size_t k = 0; k < r.rounds_us.size(); ++k) std::fprintf(f, "%s%.3f", k ? ", " : "", r.rounds_us[k]);
      std::fprintf(f, "]}");
    }
    std::fprintf(f, "\n  ]\n}\n");
    std::fclose(f);
  }
  return status;
}

}  // namespace arlab::bench

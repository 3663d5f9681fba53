// arlab-bench: all-reduce bandwidth sweeps under mpirun, in the manner of nccl-tests'
// all_reduce_perf.
//
//   mpirun -np 4 arlab-bench -b 8 -e 64M -f 2 -a ring,rabenseifner,mpi -d float -o sum
//
// For each transport: one Communicator; for each size, for each algorithm: fill, warm up,
// time `-n` calls (per-rank average, the slowest rank's is reported), then (with -c 1) one
// more call on fresh data whose every element is checked. Rank 0 prints the table and,
// with --json, the same rows as JSON records (bench/plot.py draws them).
//
// Every decision that changes the sequence of collective calls (an error on some rank, a
// wrong count) is first agreed on by all ranks, so the ranks never disagree on what to run
// next and all exit with the same status.

#include <arlab/arlab.hpp>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "check.hpp"
#include "options.hpp"
#include "report.hpp"

namespace arlab::bench {
namespace {

constexpr int kExitOk = 0, kExitFailed = 1, kExitUsage = 2;

struct Failure {
  Error::Code code = Error::Code::Internal;
  std::string message;
};

int comm_rank(MPI_Comm c) {
  int r = 0;
  MPI_Comm_rank(c, &r);
  return r;
}
int comm_size(MPI_Comm c) {
  int s = 0;
  MPI_Comm_size(c, &s);
  return s;
}

// Collective. Returns, on every rank, the text that the lowest rank with one holds (or
// nothing when no rank has one), with that rank's number. A rank with `secondary` set only
// wins when no rank without it has a text.
std::optional<std::pair<int, std::string>> agree_text(MPI_Comm c, const std::optional<std::string>& mine,
                                                      bool secondary = false) {
  const int size = comm_size(c);
  int candidate = mine ? comm_rank(c) + (secondary ? size : 0) : 2 * size, best = 2 * size;
  MPI_Allreduce(&candidate, &best, 1, MPI_INT, MPI_MIN, c);
  if (best == 2 * size) return std::nullopt;
  const int root = best % size;
  std::string text = comm_rank(c) == root ? *mine : std::string();
  int length = static_cast<int>(text.size());
  MPI_Bcast(&length, 1, MPI_INT, root, c);
  text.resize(static_cast<std::size_t>(length));
  MPI_Bcast(text.data(), length, MPI_CHAR, root, c);
  return std::make_pair(root, text);
}

// Collective: the failure of the lowest failing rank, the same on every rank. A timeout is
// usually the echo of a failure elsewhere (the peer that stopped), so it is reported only
// when no rank failed otherwise.
std::optional<Failure> agree(MPI_Comm c, const std::optional<Failure>& mine) {
  std::optional<std::string> text;
  if (mine) text = static_cast<char>('0' + static_cast<int>(mine->code)) + mine->message;
  auto agreed = agree_text(c, text, mine && mine->code == Error::Code::Timeout);
  if (!agreed) return std::nullopt;
  const std::string& t = agreed->second;
  std::string message = t.substr(1);
  const auto code = static_cast<Error::Code>(t[0] - '0');
  if (code != Error::Code::Unavailable && comm_size(c) > 1 && message.find("rank") == std::string::npos)
    message += " (on rank " + std::to_string(agreed->first) + ")";
  return Failure{code, message};
}

template <class F>
std::optional<Failure> guarded(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return Failure{e.code(), e.what()};
  } catch (const std::exception& e) {
    return Failure{Error::Code::Internal, e.what()};
  }
  return std::nullopt;
}

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<unsigned char[], FreeDeleter>;

Buffer allocate(std::size_t bytes) {
  constexpr std::size_t kAlign = 4096;
  const std::size_t rounded = (std::max<std::size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
  auto* p = static_cast<unsigned char*>(std::aligned_alloc(kAlign, rounded));
  if (p == nullptr) throw std::bad_alloc();
  std::memset(p, 0, rounded);  // touch every page before anything is timed
  return Buffer(p);
}

// Rank 0 only: the best of five memcpy of 64 MiB, in GB/s of bytes copied.
double memcpy_bandwidth_GBps() {
  constexpr std::size_t kBytes = std::size_t{64} << 20;
  Buffer src = allocate(kBytes), dst = allocate(kBytes);
  std::memset(src.get(), 1, kBytes);
  double best = 0;
  for (int i = 0; i < 5; ++i) {
    src[static_cast<std::size_t>(i)] = static_cast<unsigned char>(i);
    const double t0 = MPI_Wtime();
    std::memcpy(dst.get(), src.get(), kBytes);
    const double t1 = MPI_Wtime();
    if (static_cast<volatile unsigned char*>(dst.get())[i] != static_cast<unsigned char>(i)) return 0;
    if (t1 > t0) best = std::max(best, static_cast<double>(kBytes) / (t1 - t0) / 1e9);
  }
  return best;
}

std::string join(const std::vector<std::string>& items, const char* sep) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::optional<double> predicted_for(const Plan& plan, Algorithm a) {
  for (const Plan::Candidate& c : plan.candidates)
    if (c.algorithm == a) return c.predicted_us;
  return std::nullopt;
}

class Bench {
 public:
  Bench(const BenchOptions& o, MPI_Comm world) : o_(o), world_(world) {
    rank_ = comm_rank(world);
    nranks_ = comm_size(world);
    sizes_ = sweep_sizes(o);
  }

  int run(const std::string& command) {
    if (sizes_.empty()) {
      if (rank_ == 0) {
        std::fprintf(stderr, "arlab-bench: bad value: no size from -b %zu to -e %zu holds a whole %s (%zu bytes)\n",
                     o_.min_bytes, o_.max_bytes, to_string(o_.dtype).c_str(), size_of(o_.dtype));
      }
      return kExitUsage;
    }
    if (!json_writable()) return kExitUsage;

    double mem_bw = 0;
    if (rank_ == 0) mem_bw = memcpy_bandwidth_GBps();  // the others wait at the barrier
    MPI_Barrier(world_);
    print_header(command, mem_bw);

    const std::size_t max_bytes = sizes_.back();
    recv_ = allocate(max_bytes);
    if (!o_.inplace) send_ = allocate(max_bytes);

    for (TransportKind t : o_.transports) sweep_transport(t);

    if (rank_ == 0) {
      std::printf("#\n# Out of bounds values : %llu %s%s\n", static_cast<unsigned long long>(total_wrong_),
                  total_wrong_ == 0 ? "OK" : "FAILED", o_.check ? "" : " (not checked: -c 0)");
      if (!failed_.empty()) std::printf("# Failed: %s\n", join(failed_, ", ").c_str());
      if (rows_run_ == 0) std::printf("# Nothing ran: every transport or algorithm was skipped\n");
      std::fflush(stdout);
    }
    if (total_wrong_ > 0 || !failed_.empty() || rows_run_ == 0) return kExitFailed;
    return kExitOk;
  }

 private:
  // Creates (truncates) the --json file up front, so a bad path fails before the sweep.
  bool json_writable() {
    if (o_.json_path.empty()) return true;
    int ok = 1;
    if (rank_ == 0) {
      std::string error;
      if (!write_json(o_.json_path, {}, &error)) {
        std::fprintf(stderr, "arlab-bench: cannot write --json %s: %s\n", o_.json_path.c_str(), error.c_str());
        ok = 0;
      }
    }
    MPI_Bcast(&ok, 1, MPI_INT, 0, world_);
    return ok != 0;
  }

  void print_header(const std::string& command, double mem_bw) {
    if (rank_ != 0) return;
    std::vector<std::string> transports;
    for (TransportKind t : o_.transports) transports.push_back(to_string(t));
    std::vector<std::string> algorithms;
    for (Algorithm a : o_.algorithms) algorithms.push_back(to_string(a));
    std::printf("# arlab-bench %s  ranks: %d  transport: %s\n", version(), nranks_, join(transports, ",").c_str());
    std::printf("# command: %s\n", command.c_str());
    std::printf("# memory bandwidth (copy loop, 1 rank, 64 MiB memcpy, best of 5): %.2f GB/s\n", mem_bw);
    std::printf("# sizes: %s to %s, factor %zu  type: %s  op: %s  %s  iters: %d  warmup: %d  check: %d\n",
                format_bytes(sizes_.front()).c_str(), format_bytes(sizes_.back()).c_str(), o_.factor,
                to_string(o_.dtype).c_str(), to_string(o_.op).c_str(),
                o_.inplace ? "in-place" : "out-of-place", o_.iters, o_.warmup, o_.check ? 1 : 0);
    std::printf("# algorithms: %s\n", join(algorithms, ",").c_str());
    std::printf("# time: per call, average over the timed calls, slowest rank; GB = 1e9 bytes; "
                "busbw = algbw * 2(p-1)/p; pred: the cost model\n");
    std::fflush(stdout);
  }

  void skip_or_fail(TransportKind t, Algorithm a, std::size_t size, const Failure& f) {
    if (f.code != Error::Code::Unavailable)
      failed_.push_back(to_string(a) + " at " + std::to_string(size) + " B over " + to_string(t));
    if (rank_ != 0) return;
    if (f.code == Error::Code::Unavailable) {
      std::printf("# skipped %s: %s\n", to_string(a).c_str(), f.message.c_str());
    } else {
      std::printf("# failed %s at %zu B: %s\n", to_string(a).c_str(), size, f.message.c_str());
    }
    std::fflush(stdout);
  }

  void sweep_transport(TransportKind t) {
    Options options;
    options.transport = t;
    std::optional<Communicator> comm;
    auto failure = agree(world_, guarded([&] { comm.emplace(world_, options); }));
    if (failure) {
      comm.reset();
      if (rank_ == 0) {
        std::printf("#\n# skipped transport %s: %s\n", to_string(t).c_str(), failure->message.c_str());
        std::fflush(stdout);
      }
      if (failure->code != Error::Code::Unavailable) failed_.push_back("transport " + to_string(t));
      return;
    }

    const Options& resolved = comm->options();
    // What Auto runs when Options::algorithm / ARLAB_ALGO name an algorithm other than auto.
    std::optional<Algorithm> forced;
    if (resolved.algorithm && *resolved.algorithm != Algorithm::Auto) forced = resolved.algorithm;
    if (rank_ == 0) {
      std::printf("#\n# transport %s", to_string(resolved.transport).c_str());
      if (resolved.chunk_bytes) std::printf("  chunk: %s", format_bytes(*resolved.chunk_bytes).c_str());
      if (resolved.timeout_s) std::printf("  timeout: %g s", *resolved.timeout_s);
      std::printf("\n");
      if (forced) std::printf("# note: auto runs %s (ARLAB_ALGO)\n", to_string(*forced).c_str());
      print_columns(stdout);
    }

    std::vector<Row> rows;  // this transport's, for the averages
    std::vector<Algorithm> dropped;
    std::optional<Algorithm> last_auto_pick;
    for (std::size_t size : sizes_) {
      const std::size_t count = size / size_of(o_.dtype);
      std::optional<Plan> plan;
      if (rank_ == 0) {
        try {
          plan = comm->plan(count, o_.dtype);
        } catch (const std::exception&) {
          // No model for this call: the pred column shows "-".
        }
      }
      for (Algorithm a : o_.algorithms) {
        if (std::find(dropped.begin(), dropped.end(), a) != dropped.end()) continue;
        std::optional<Row> row = measure(*comm, t, a, size, count, &dropped);
        if (!row) continue;
        ++rows_run_;
        if (rank_ != 0) continue;
        if (plan) {
          if (a == Algorithm::Auto) {
            const Algorithm pick = forced.value_or(plan->algorithm);
            row->label = "auto(" + to_string(pick) + ")";
            row->predicted_us = forced ? predicted_for(*plan, pick) : std::optional<double>(plan->predicted_us);
            if (!forced && pick != last_auto_pick) {
              if (!plan->reason.empty())
                std::printf("# auto picks %s from %s: %s\n", to_string(pick).c_str(),
                            format_bytes(size).c_str(), plan->reason.c_str());
              last_auto_pick = pick;
            }
          } else {
            row->predicted_us = predicted_for(*plan, a);
          }
        }
        print_row(stdout, *row);
        if (!note_.empty()) std::printf("%s\n", note_.c_str());
        note_.clear();
        rows.push_back(*row);
        rows_.push_back(*row);
        if (!o_.json_path.empty()) {
          std::string error;
          if (!write_json(o_.json_path, rows_, &error))
            std::fprintf(stderr, "arlab-bench: cannot write --json %s: %s\n", o_.json_path.c_str(), error.c_str());
        }
      }
    }
    if (rank_ == 0) {
      std::printf("#\n");
      print_averages(stdout, rows, o_.algorithms);
    }
  }

  // Collective: one size, one algorithm. Returns the row on every rank (rank 0's has the
  // slowest rank's time), or nothing when the algorithm failed or is unavailable; then it
  // goes to *dropped and is not tried again on this transport.
  std::optional<Row> measure(Communicator& comm, TransportKind t, Algorithm a, std::size_t size,
                             std::size_t count, std::vector<Algorithm>* dropped) {
    const Checker checker(o_.dtype, o_.op, rank_, nranks_);
    void* recv = recv_.get();
    const void* send = o_.inplace ? recv : static_cast<const void*>(send_.get());
    auto call = [&](int n) {
      return guarded([&] {
        for (int i = 0; i < n; ++i) comm.allreduce(send, recv, count, o_.dtype, o_.op, a);
      });
    };
    auto give_up = [&](const Failure& f) {
      skip_or_fail(t, a, size, f);
      dropped->push_back(a);
      return std::nullopt;
    };

    checker.fill(o_.inplace ? recv : send_.get(), count);
    if (auto f = agree(world_, call(o_.warmup))) return give_up(*f);

    MPI_Barrier(world_);
    const double t0 = MPI_Wtime();
    auto timed = call(o_.iters);
    const double t1 = MPI_Wtime();
    if (auto f = agree(world_, timed)) return give_up(*f);
    double local_us = (t1 - t0) / o_.iters * 1e6, slowest_us = local_us;
    MPI_Reduce(&local_us, &slowest_us, 1, MPI_DOUBLE, MPI_MAX, 0, world_);

    Row row;
    row.size = size;
    row.count = count;
    row.dtype = o_.dtype;
    row.op = o_.op;
    row.algorithm = a;
    row.label = to_string(a);
    row.transport = t;
    row.ranks = nranks_;
    row.inplace = o_.inplace;
    row.time_us = slowest_us;
    row.algbw_GBps = algbw_GBps(size, slowest_us);
    row.busbw_GBps = busbw_GBps(row.algbw_GBps, nranks_);

    if (o_.check) {
      // Fresh data; out of place, the receive buffer is first overwritten with values that
      // are all wrong, so a result left over from the timed calls cannot pass.
      if (o_.inplace) {
        checker.fill(recv, count);
      } else {
        checker.fill(send_.get(), count);
        checker.poison(recv, count);
      }
      if (auto f = agree(world_, call(1))) return give_up(*f);
      Mismatch first;
      std::uint64_t local_wrong = checker.count_wrong(recv, count, &first), wrong = 0;
      MPI_Allreduce(&local_wrong, &wrong, 1, MPI_UINT64_T, MPI_SUM, world_);
      row.wrong = wrong;
      total_wrong_ += wrong;
      if (wrong > 0) {
        std::optional<std::string> mine;
        if (local_wrong > 0)
          mine = "index " + std::to_string(first.index) + ": got " + first.got + ", expected " + first.expected;
        auto where = agree_text(world_, mine);
        if (where) note_ = "#   first wrong value on rank " + std::to_string(where->first) + ", " + where->second;
      }
    }
    return row;
  }

  const BenchOptions& o_;
  MPI_Comm world_;
  int rank_ = 0, nranks_ = 1;
  std::vector<std::size_t> sizes_;
  Buffer send_, recv_;
  std::vector<Row> rows_;  // rank 0: every row so far, for --json
  std::size_t rows_run_ = 0;  // every rank
  std::string note_;          // printed under the current row (where the first wrong value is)
  std::uint64_t total_wrong_ = 0;
  std::vector<std::string> failed_;
};

}  // namespace
}  // namespace arlab::bench

int main(int argc, char** argv) {
  using namespace arlab::bench;
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);

  int status = kExitOk;
  const ParseResult parsed = parse_options(argc, argv);
  switch (parsed.status) {
    case ParseResult::Status::Help:
      if (rank == 0) std::fputs(usage().c_str(), stdout);
      break;
    case ParseResult::Status::Error:
      if (rank == 0) std::fprintf(stderr, "arlab-bench: %s\n", parsed.message.c_str());
      status = kExitUsage;
      break;
    case ParseResult::Status::Run: {
      std::vector<std::string> words(argv, argv + argc);
      Bench bench(parsed.options, MPI_COMM_WORLD);
      status = bench.run(join(words, " "));
      break;
    }
  }
  std::fflush(stdout);
  MPI_Finalize();
  return status;
}

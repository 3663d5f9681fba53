#include "calibrate/self_calibration.hpp"

#include <chrono>
#include <cstdio>
#include <thread>

#include "calibrate/machine_cache.hpp"
#include "calibrate/run.hpp"
#include "model/topology.hpp"

namespace arlab::calib {
namespace {

constexpr const char* kBuiltIn = "the built-in description";
constexpr int kAttempts = 2;  // measurements before an unusable fit falls back to kBuiltIn

void say(const Options& o, LogLevel level, int rank, const std::string& text) {
  if (rank == 0 && *o.log_level >= level)
    std::fprintf(stderr, "arlab %s: %s\n", level == LogLevel::Warn ? "WARN" : "INFO", text.c_str());
}

// Waits at most timeout_s for every rank to post meeting's barrier; whether they have. A
// barrier that timed out stays posted (a collective request cannot be cancelled) and the next
// wait goes on with it: a new one would meet the other ranks' first, and the one left behind
// would meet their next collective on the communicator. Hence a communicator of its own.
bool wait_to_meet(Meeting& meeting, double timeout_s) {
  if (meeting.met) return true;
  MPI_Request& req = meeting.request;
  if (req == MPI_REQUEST_NULL) MPI_Ibarrier(meeting.comm, &req);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(timeout_s);
  for (int done = 0, spins = 0;; ++spins) {
    MPI_Test(&req, &done, MPI_STATUS_IGNORE);
    if (done) return meeting.met = true;
    if (std::chrono::steady_clock::now() > deadline) return false;
    if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
}

// Every rank arrives, or Error(Timeout) after the timeout: a rank that calls plan() alone must
// not wait forever in the collectives below.
void meet(Meeting& meeting, double timeout_s) {
  if (wait_to_meet(meeting, timeout_s)) return;
  throw Error(Error::Code::Timeout,
              "arlab: waited " + std::to_string(timeout_s) +
                  " s for the other ranks to choose Auto's machine: a communicator's first Auto call or "
                  "plan() finds the machine collectively (cache or measurement), so every rank must make it");
}

// Ranks per node when the nodes hold equal blocks of consecutive ranks (block placement, as
// the calibration and the model place them), else 0.
int block_ranks_per_node(MPI_Comm comm, int rank, int size) {
  MPI_Comm local;
  MPI_Comm_split_type(comm, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &local);
  int local_rank = 0, local_size = 1, first = rank;
  MPI_Comm_rank(local, &local_rank);
  MPI_Comm_size(local, &local_size);
  MPI_Allreduce(&rank, &first, 1, MPI_INT, MPI_MIN, local);
  MPI_Comm_free(&local);
  int mine[2] = {local_size, rank == first + local_rank && first % local_size == 0 ? 1 : 0}, lo[2], hi[2];
  MPI_Allreduce(mine, lo, 2, MPI_INT, MPI_MIN, comm);
  MPI_Allreduce(mine, hi, 2, MPI_INT, MPI_MAX, comm);
  return lo[0] == hi[0] && lo[1] == 1 && size % lo[0] == 0 ? lo[0] : 0;
}

void broadcast(MPI_Comm comm, std::string& text) {
  unsigned long long n = text.size();
  MPI_Bcast(&n, 1, MPI_UNSIGNED_LONG_LONG, 0, comm);
  text.resize(n);
  MPI_Bcast(text.data(), static_cast<int>(n), MPI_CHAR, 0, comm);
}

}  // namespace

std::string usable_topology_yaml(const Calibration& c, const std::string& file_name, std::string& problem) {
  // A rate read from times that did not grow with the size (fit.hpp's `flat`) is no rate:
  // such a machine would mislead every pick, and once cached it would stay.
  const auto flat = [](const RegimeFit& f) { return f.in_cache.flat || (f.beyond && f.beyond->flat); };
  for (const auto* l : {&c.intra, &c.inter})
    if (*l && flat((*l)->exchange))
      problem = "the " + (*l)->link_class + "-node link's exchange times did not grow with the message size";
  if (flat(c.compute.reduce) || flat(c.compute.copy))
    problem = "the reduction's or the copy's times did not grow with the size";
  if (!problem.empty()) return "";
  // What the fit made must load as a topology file: the last guard.
  std::string yaml = topology_yaml(c);
  try {
    detail::parse_topology(yaml, file_name);
  } catch (const Error& e) {
    problem = e.what();
    yaml.clear();
  }
  return yaml;
}

std::string first_usable(MPI_Comm comm, int attempts, const std::function<std::string(bool last)>& attempt) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  std::string text;
  for (int i = 0; i < attempts; ++i) {
    text = attempt(i + 1 == attempts);
    int done = !text.empty();  // rank 0's verdict, broadcast
    MPI_Bcast(&done, 1, MPI_INT, 0, comm);
    if (done) break;
  }
  return rank == 0 ? text : std::string();
}

Settings self_calibration_settings(TransportKind transport, int ranks_per_node, double timeout_s) {
  Settings s;
  s.transport = transport;
  s.transport_name = to_string(transport);
  s.ranks_per_node = ranks_per_node;
  s.all_pairs = true;     // as an all-reduce's steps run, also with more ranks than cores
  s.comparisons = false;  // ping-pong and streams are only printed by arlab-calibrate
  // Within about 5 s on 2-4 ranks, also across nodes: 5 samples of 12 ms, 3 of a size whose
  // one run is longer (a single long run is a steadier sample), and between nodes sizes up to
  // a quarter of a second an exchange (1 Gbit/s: up to 8 MiB). On the emulated 2 x 2 cluster
  // at 1 Gbit/s this took 4.2-5.2 s, against 7.0-8.4 s with arlab-calibrate's 5 samples of
  // 20 ms; on 2 local ranks 1.5-1.6 s, against 2.5-2.8 s (docs/model.md).
  s.sample_ms = 12;
  s.long_samples = 3;
  // The reducer and the copy, 3 samples a size: their fits spread no wider than with 5 (six
  // 2-rank calibrations each way, 2026-12-07: in-cache sum 29.5-37.1 GB/s against 30.2-37.4,
  // beyond-cache alike within each of the VM's two memory phases), and the stage takes 0.8 s
  // against 1.2 s on 2 ranks.
  s.compute_samples = 3;
  s.slow_size_ms = 250;
  s.name = host_name();
  s.timeout_s = timeout_s;
  return s;
}

FoundMachine find_machine(MPI_Comm user_comm, const Options& o, Meeting& meeting) {
  int rank = 0, size = 1;
  MPI_Comm_rank(user_comm, &rank);
  MPI_Comm_size(user_comm, &size);
  if (*o.self_calibration == SelfCalibration::Off)
    return {detail::Machine::local_default(), std::string(kBuiltIn) + " (ARLAB_CALIBRATE=0)"};
  if (size < 2) return {detail::Machine::local_default(), std::string(kBuiltIn) + " (one rank: nothing to measure)"};

  const auto started = std::chrono::steady_clock::now();
  meet(meeting, *o.timeout_s);
  MPI_Comm comm;
  MPI_Comm_dup(user_comm, &comm);
  struct Free {
    MPI_Comm& c;
    ~Free() { MPI_Comm_free(&c); }
  } free_comm{comm};

  const int per_node = block_ranks_per_node(comm, rank, size);
  if (per_node == 0) {
    say(o, LogLevel::Warn, rank, "the ranks are not placed in equal blocks of consecutive ranks per node, which the "
                                 "calibration needs: Auto uses the built-in description");
    return {detail::Machine::local_default(), std::string(kBuiltIn) + " (ranks not in equal blocks per node)"};
  }
  const CacheKey key = CacheKey::here(to_string(*o.transport), per_node, size / per_node);
  const std::optional<std::string> dir = cache_dir(o.cache_dir);
  const std::string path = dir ? *dir + "/" + key.file_name() : "";

  // Rank 0: the cached text, or nothing (measure). The lock, held until the new file is
  // written, makes a second job on this host wait for the first one's measurement.
  std::string yaml, source;
  std::optional<CacheLock> lock;
  int measure = 0;
  if (rank == 0) {
    if (dir) lock.emplace(path, *o.timeout_s / 2);
    if (*o.self_calibration == SelfCalibration::Force) {
      measure = 1;
    } else if (!dir) {
      measure = 1;
    } else {
      const CacheRead got = read_cache(path, key);
      if (got.yaml) {
        yaml = *got.yaml;
        source = "from the cache " + path + " (written " + got.when + ")";
      } else {
        if (!got.problem.empty())
          say(o, LogLevel::Warn, rank, "ignoring the cached calibration " + path + ": " + got.problem + "; measuring again");
        measure = 1;
      }
    }
    if (measure)
      say(o, LogLevel::Info, rank,
          "calibrating this machine for Auto's cost model over " + key.transport + " (" + key.text() +
              "; once, a few seconds" + (dir ? ", then cached in " + path : ", not cached: no HOME or cache directory") +
              (*o.self_calibration == SelfCalibration::Force ? "; ARLAB_CALIBRATE=force" : "") + ")");
  }
  MPI_Bcast(&measure, 1, MPI_INT, 0, comm);
  if (!measure) lock.reset();

  if (measure) {
    const auto t0 = std::chrono::steady_clock::now();
    // Where the time went, for the log: each stage's seconds ("intra-node link 1.0 s, inter-node
    // link 2.2 s, compute 1.7 s"), so that a slow first call can be traced to what it measured.
    std::string stages;
    auto last = t0;
    const Observer time_stages = [&](Stage stage, const Calibration& so_far) {
      const auto now = std::chrono::steady_clock::now();
      if (stage == Stage::Started) {
        last = now;
        return;
      }
      const char* what = stage == Stage::Compute ? "compute" : so_far.inter ? "inter-node link" : "intra-node link";
      char part[64];
      std::snprintf(part, sizeof part, "%s%s %.1f s", stages.empty() ? "" : ", ", what,
                    std::chrono::duration<double>(now - last).count());
      stages += part;
      last = now;
    };
    // A machine too busy while it was measured can fit an unusable machine: measured once more
    // (the calibration tests met it under ctest -j 4 on 2 cores, four mpirun jobs at once).
    std::string problem;
    yaml = first_usable(comm, kAttempts, [&](bool last) {
      stages.clear();
      const Calibration c = calibrate(self_calibration_settings(*o.transport, per_node, *o.timeout_s), comm,
                                      "arlab " + std::string(version()) + " self-calibration (a communicator's first "
                                      "Auto call or plan(), no topology file)",
                                      time_stages);
      if (rank != 0) return std::string();
      problem.clear();
      std::string text = usable_topology_yaml(c, key.file_name(), problem);
      say(o, LogLevel::Info, rank, "the calibration's stages: " + stages);
      if (text.empty() && !last)
        say(o, LogLevel::Warn, rank,
            "the calibration over " + key.transport + " gave an unusable machine (" + problem + "); measuring again");
      return text;
    });
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (rank == 0) {
      char secs[32];
      std::snprintf(secs, sizeof secs, "%.1f s", took);
      source = "calibrated now over " + key.transport + " in " + secs;
      if (yaml.empty()) {
        say(o, LogLevel::Warn, rank,
            "the calibration over " + key.transport + " gave an unusable machine " + std::to_string(kAttempts) +
                " times (" + problem +
                "): Auto uses the built-in description in this run and nothing is cached; the next run measures again");
        source = std::string(kBuiltIn) + " (the calibration over " + key.transport + " was unusable)";
      }
      if (dir && !yaml.empty()) {
        if (const std::string not_written = write_cache(path, key, yaml); not_written.empty())
          source += ", cached in " + path;
        else
          say(o, LogLevel::Warn, rank, "the calibration is not cached: " + not_written);
      }
      if (!yaml.empty()) say(o, LogLevel::Info, rank, "machine " + source);
    }
    lock.reset();
  }
  if (!measure && rank == 0) {
    char took[48];
    std::snprintf(took, sizeof took, ", read in %.1f ms",
                  std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count());
    source += took;
  }
  broadcast(comm, yaml);
  broadcast(comm, source);
  if (yaml.empty()) return {detail::Machine::local_default(), source};
  detail::Machine m = detail::parse_topology(yaml, key.file_name());
  m.source = source;
  std::string said = "'" + m.name + "', " + source;
  return {std::move(m), std::move(said)};
}

void finish_meeting(Meeting& meeting) {
  if (meeting.comm == MPI_COMM_NULL) return;
  int done = meeting.request == MPI_REQUEST_NULL;
  if (!done) MPI_Test(&meeting.request, &done, MPI_STATUS_IGNORE);
  if (done) MPI_Comm_free(&meeting.comm);
}

}  // namespace arlab::calib

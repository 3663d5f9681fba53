#include "sweep.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <exception>
#include <map>
#include <thread>

#include "calibrate/state_probe.hpp"
#include "calibrate_here.hpp"
#include "cli.hpp"
#include "measure.hpp"
#include "plot_runner.hpp"
#include "records.hpp"
#include "report.hpp"
#include "summary.hpp"

namespace arlab::bench {
namespace {

std::string join(const std::vector<std::string>& items, const char* sep = ", ") {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : sep) + s;
  return out;
}

std::optional<double> predicted_for(const Plan& plan, Algorithm a) {
  for (const Plan::Candidate& c : plan.candidates)
    if (c.algorithm == a) return c.predicted_us;
  return std::nullopt;
}

}  // namespace

int Bench::run(std::optional<double> min_busbw) {
  std::size_t largest = 0, any = 0;
  for (DataType t : o_.dtypes) {
    sizes_[t] = sweep_sizes(o_, size_of(t));
    any += sizes_[t].size();
    for (std::size_t s : sizes_[t]) largest = std::max(largest, s);
  }
  if (any == 0) {
    if (rank_ == 0)
      std::fprintf(stderr, "arlab-bench: bad value: no size from -b %zu to -e %zu holds a whole element of the type\n",
                   o_.min_bytes, o_.max_bytes);
    return kExitUsage;
  }
  std::optional<std::string> topology = o_.topology;
  int regroup = o_.ranks_per_node;
  std::optional<CalibratedHere> here;
  // --calibrate: each transport's communicator measures its machine again (and caches it);
  // with --ranks-per-node the emulated nodes are measured here, over the first transport.
  if (o_.calibrate && nranks_ < 2) {
    if (rank_ == 0) std::fprintf(stderr, "arlab-bench: --calibrate: needs at least 2 ranks: mpirun -np 2 arlab-bench ...\n");
    return kExitUsage;
  }
  if (o_.calibrate && o_.ranks_per_node == 0) force_calibration_ = true;
  if (o_.calibrate && !force_calibration_) {
    if (auto f = agree(world_, guarded([&] { here = calibrate_here(o_, world_, info_.command); }))) {
      if (here) std::remove(here->path.c_str());
      if (rank_ == 0) std::fprintf(stderr, "arlab-bench: %s\n", f->message.c_str());
      return f->code == Error::Code::InvalidArgument ? kExitUsage : kExitFailed;
    }
    topology = here->path;
    regroup = 0;  // the calibration placed the ranks on nodes of --ranks-per-node already
  }
  if (auto f = agree(world_, guarded([&] { setup_model(topology, regroup, nranks_, model_); }))) {
    if (here) std::remove(here->path.c_str());
    if (rank_ == 0) std::fprintf(stderr, "arlab-bench: %s\n", f->message.c_str());
    return kExitUsage;
  }
  if (here) {
    model_.temporary = here->path;  // removed once the communicators have read it
    char took[64];
    std::snprintf(took, sizeof took, "%.1f s", here->seconds);
    model_.source = "measured in this launch by --calibrate over " + to_string(o_.transports.front()) + ", " + took;
    calibration_summary_ = here->summary;
  }
  if (!prepare_outputs()) return kExitUsage;
  const int hosts = count_hosts(world_);
  if (o_.device) {
    if (auto f = agree(world_, guarded([&] { buffers_ = CallBuffers::device(world_, largest, o_.out_of_place); }))) {
      if (rank_ == 0) std::fprintf(stderr, "arlab-bench: %s\n", f->message.c_str());
      return kExitFailed;
    }
    notes_.push_back("pred is the model of host buffers: the device path's copies to and from the host are not in it");
  } else if (auto f = agree(world_, guarded([&] { buffers_ = CallBuffers::host(largest, o_.out_of_place); }))) {
    if (rank_ == 0)
      std::fprintf(stderr, "arlab-bench: %s: each rank needs %s of the largest size\n", f->message.c_str(),
                   o_.out_of_place ? "a send and a receive buffer" : "a buffer");
    return kExitFailed;
  }

  if (!open_channels()) return kExitFailed;
  choose_algorithms();
  if (algorithms_.empty()) {
    if (rank_ == 0) std::fprintf(stderr, "arlab-bench: nothing to run: %s\n", join(notes_, "; ").c_str());
    return kExitFailed;
  }

  HeaderExtras x = extras();
  if (rank_ == 0 && !o_.quiet) x.memcpy_GBps = memcpy_bandwidth_GBps();  // the others wait below
  MPI_Barrier(world_);
  info_.hosts = hosts;
  fill_info();
  if (rank_ == 0) {
    if (!o_.quiet) print_header(stdout, info_, x);
    if (!o_.quiet && !calibration_summary_.empty()) std::fputs(calibration_summary_.c_str(), stdout);
    print_heading(stdout, Sections{o_.out_of_place, o_.in_place});
  }
  progress_ = Progress(rank_ == 0 && (o_.progress || stderr_is_terminal()), stderr_is_terminal());
  plan_progress();
  sweep();
  progress_.clear();
  return finish(min_busbw);
}

// Rank 0 creates the --json and --csv files (a bad path fails before the sweep) and checks
// that --plot can run; every rank learns the verdict.
bool Bench::prepare_outputs() {
  int ok = 1;
  if (rank_ == 0) {
    std::string error;
    for (const std::string* path : {&o_.json_path, &o_.csv_path}) {
      if (!ok || path->empty()) continue;
      if (!write_file(*path, "", &error)) {
        std::fprintf(stderr, "arlab-bench: cannot write %s %s: %s\n", path == &o_.json_path ? "--json" : "--csv",
                     path->c_str(), error.c_str());
        ok = 0;
      }
    }
    json_path_ = o_.json_path;
    if (ok && !o_.plot_path.empty()) {
      // The image is written after the sweep: a path that cannot be written fails now.
      if (!tool::cli::can_write(o_.plot_path, &error)) {
        std::fprintf(stderr, "arlab-bench: cannot write --plot %s: %s\n", o_.plot_path.c_str(), error.c_str());
        ok = 0;
      } else if (std::string why; !plotter_ready(find_plotter(), &why)) {
        std::fprintf(stderr, "arlab-bench: --plot %s: %s\n", o_.plot_path.c_str(), why.c_str());
        ok = 0;
      } else if (json_path_.empty()) {
        const char* dir = std::getenv("TMPDIR");
        json_path_ = std::string(dir && *dir ? dir : "/tmp") + "/arlab-bench-XXXXXX.json";
        const int fd = mkstemps(json_path_.data(), 5);
        if (fd < 0) {
          std::fprintf(stderr, "arlab-bench: --plot: cannot create a temporary JSON file %s\n", json_path_.c_str());
          ok = 0;
        } else {
          close(fd);
        }
      }
    }
  }
  MPI_Bcast(&ok, 1, MPI_INT, 0, world_);
  return ok != 0;
}

bool Bench::open_channels() {
  for (TransportKind t : o_.transports) {
    Options options;
    options.transport = t;
    options.topology = model_.topology;
    if (o_.ranks_per_node) options.ranks_per_node = o_.ranks_per_node;  // hierarchical's nodes too
    if (force_calibration_) options.self_calibration = SelfCalibration::Force;
    std::unique_ptr<Communicator> comm;
    if (auto f = agree(world_, guarded([&] { comm = std::make_unique<Communicator>(world_, options); }))) {
      comm.reset();
      const bool unavailable = f->code == Error::Code::Unavailable;
      if (!unavailable) failed_.push_back("transport " + to_string(t) + ": " + f->message);
      notes_.push_back((unavailable ? "skipped transport " : "failed transport ") + to_string(t) + ": " + f->message);
      continue;
    }
    const Options& resolved = comm->options();
    const TransportKind kind = *resolved.transport;
    const bool seen = std::any_of(channels_.begin(), channels_.end(), [&](const Channel& c) { return c.kind == kind; });
    if (seen) {  // Options::transport set explicitly: kind == t, so only a repeated -t gets here
      notes_.push_back("-t " + to_string(t) + " measured already: skipped");
      continue;
    }
    Channel ch;
    ch.kind = kind;
    if (resolved.algorithm && *resolved.algorithm != Algorithm::Auto) ch.forced = resolved.algorithm;
    ch.comm = std::move(comm);
    channels_.push_back(std::move(ch));
  }
  // The first plan() finds each communicator's machine (without a topology file its
  // calibration, cached or measured now): collectively, here, before anything is timed, and
  // with every channel open, as during the sweep (a UCX communicator's idle-progress thread
  // shares the cores with the others').
  for (auto it = channels_.begin(); it != channels_.end();) {
    std::string machine;
    if (auto f = agree(world_, guarded([&] { machine = it->comm->plan(1, o_.dtypes.front()).machine; }))) {
      failed_.push_back("transport " + to_string(it->kind) + ": " + f->message);
      notes_.push_back("failed transport " + to_string(it->kind) + ": " + f->message);
      it = channels_.erase(it);
      continue;
    }
    if (!model_.topology) info_.machines.push_back({to_string(it->kind), machine});
    ++it;
  }
  if (!model_.temporary.empty()) {  // every communicator has read it
    std::remove(model_.temporary.c_str());
    model_.temporary.clear();
  }
  if (channels_.empty() && rank_ == 0)
    std::fprintf(stderr, "arlab-bench: no transport could be used: %s\n", join(notes_, "; ").c_str());
  return !channels_.empty();
}

// Drops the algorithms this build lacks: a call with no elements tells (collectively).
void Bench::choose_algorithms() {
  Communicator& comm = *channels_.front().comm;
  std::vector<std::string> lacking;
  for (Algorithm a : o_.algorithms) {
    void* buf = buffers_.call(Side::Recv);
    auto f = agree(world_, guarded([&] { comm.allreduce(buf, buf, 0, o_.dtypes.front(), o_.ops.front(), a); }));
    switch (probe_verdict(a, f, buffers_.on_device(), o_.all_algorithms)) {
      case ProbeVerdict::Run: algorithms_.push_back(a); break;
      case ProbeVerdict::Lacking: lacking.push_back(to_string(a) + " (" + f->message + ")"); break;
      case ProbeVerdict::SkipWithNote:
        notes_.push_back(f && f->code == Error::Code::Unavailable
                             ? "skipped " + to_string(a) + ": " + f->message
                             : "skipped nccl: it reduces device buffers only (-D runs every line on them)");
        break;
      case ProbeVerdict::Failed:
        notes_.push_back("skipped " + to_string(a) + ": " + f->message);
        failed_.push_back(to_string(a) + ": " + f->message);
        break;
    }
  }
  if (!lacking.empty()) notes_.push_back("unavailable here, skipped: " + join(lacking, "; ") + " (-a all runs what there is)");
}

HeaderExtras Bench::extras() const {
  HeaderExtras x;
  const std::vector<std::size_t>& first = sizes_.at(o_.dtypes.front());
  char step[64];
  if (o_.step) std::snprintf(step, sizeof step, "step %s", format_bytes(o_.step).c_str());
  else std::snprintf(step, sizeof step, "factor %zu", o_.factor);
  // The sizes that run (a factor sweep can stop short of -e), and the flags that made them.
  x.sizes = (first.empty() ? std::string("none") : format_bytes(first.front()) + " to " + format_bytes(first.back())) +
            " (" + std::to_string(first.size()) + (first.size() == 1 ? " size" : " sizes") +
            (o_.dtypes.size() > 1 ? " of " + to_string(o_.dtypes.front()) : std::string()) + ": -b " +
            format_bytes(o_.min_bytes) + " -e " + format_bytes(o_.max_bytes) + ", " + step + ")";
  x.sections = o_.out_of_place ? "out-of-place and in-place (-z 0)" : "in-place only (-z 1)";
  x.model_note = model_.note;
  const Options& opt = channels_.front().comm->options();
  if (opt.chunk_bytes) x.settings = "chunk " + format_bytes(*opt.chunk_bytes);
  if (opt.timeout_s) x.settings += (x.settings.empty() ? "" : ", ") + std::string("timeout ") + std::to_string(static_cast<long>(*opt.timeout_s)) + " s";
  if (channels_.front().forced) x.notes.push_back("auto runs " + to_string(*channels_.front().forced) + " (ARLAB_ALGO)");
  for (DataType t : o_.dtypes)
    if (sizes_.at(t).empty()) x.notes.push_back("no size holds a whole " + to_string(t) + ": skipped");
  x.notes.insert(x.notes.end(), notes_.begin(), notes_.end());
  return x;
}

void Bench::fill_info() {
  info_.version = version();
  info_.ranks = nranks_;
  info_.model_nodes = model_.nodes;
  info_.model_ranks_per_node = model_.ranks_per_node;
  info_.topology_name = model_.name;
  info_.topology_source = model_.source;
  if (!info_.machines.empty()) {
    info_.topology_name = "each transport's own";
    info_.topology_source = info_.machines.front().second;
  }
  for (const Channel& c : channels_) info_.transports.push_back(to_string(c.kind));
  for (Algorithm a : algorithms_) info_.algorithms.push_back(to_string(a));
  for (DataType t : o_.dtypes) info_.dtypes.push_back(to_string(t));
  for (ReduceOp op : o_.ops) info_.ops.push_back(to_string(op));
  info_.iters = o_.iters;
  info_.iters_fill = !o_.iters_given;
  info_.warmup = o_.warmup;
  info_.check = o_.check;
  info_.rounds = o_.rounds;
  info_.fresh_input = o_.fresh_input;
  info_.device = buffers_.on_device();
  info_.buffers = buffers_.describe();
  info_.timing = std::string("each call timed between barriers, ") +
                 (info_.hosts == 1 ? "from the last rank's entry to the last rank's exit (one host, one clock)"
                                   : "the slowest rank's time (ranks on several hosts)") +
                 "; the average over " +
                 (o_.iters_given ? "the " + std::to_string(o_.iters) + " calls" : std::string("its calls")) +
                 " (their min and max in --json and --csv)";
  info_.timing += o_.fresh_input ? "; the input written anew before each call (untimed; --reuse-input: the same every call)"
                                 : "; the same input every call (--reuse-input)";
  if (o_.rounds > 1)
    info_.timing += "; the lines of a size measured in " + std::to_string(o_.rounds) +
                    " interleaved rounds, each line's median round shown (min and max over every round's calls)";
}

void Bench::plan_progress() {
  std::size_t steps = 0;
  double weight = 0;
  const auto baselines = static_cast<std::size_t>(std::count_if(algorithms_.begin(), algorithms_.end(), is_baseline));
  const std::size_t per_size =
      (channels_.size() * (algorithms_.size() - baselines) + baselines) * (o_.out_of_place + o_.in_place);
  for (DataType t : o_.dtypes)
    for (std::size_t s : sizes_.at(t)) {
      steps += per_size * o_.ops.size();
      weight += static_cast<double>(per_size * o_.ops.size()) * step_weight(s);
    }
  steps *= static_cast<std::size_t>(o_.rounds);
  weight *= o_.rounds;
  progress_.plan(steps, weight);
}

void Bench::sweep() {
  for (DataType dtype : o_.dtypes) {
    for (ReduceOp op : o_.ops) {
      const Checker checker(dtype, op, rank_, nranks_);
      for (std::size_t size : sizes_.at(dtype)) {
        // Rank 0: each transport's predictions, out of place and in place, from its
        // communicator's machine.
        Plans plans;
        if (rank_ == 0)
          for (Channel& ch : channels_)
            for (bool in_place : {false, true}) {
              try {
                plans[{ch.kind, in_place}] = ch.comm->plan(size / size_of(dtype), dtype, in_place);
              } catch (const std::exception&) {
                // No model for this call: pred shows "-".
              }
            }
        measure_size(dtype, op, size, checker, plans);
        write_outputs();
      }
    }
  }
}

// A line of one size while its rounds run.
struct Bench::Pending {
  Channel* ch = nullptr;
  Algorithm algorithm = Algorithm::Auto;
  std::vector<Section> rounds[2];  // out of place, in place: one per finished round
  std::vector<std::string> wrong_notes;
  bool failed = false;
};

void Bench::measure_size(DataType dtype, ReduceOp op, std::size_t size, const Checker& checker,
                         const Plans& plans) {
  const double weight = step_weight(size);
  const bool sections[] = {o_.out_of_place, o_.in_place};
  const int per_round = int{o_.out_of_place} + int{o_.in_place};
  std::vector<Pending> pending;
  for (Channel& ch : channels_)
    for (Algorithm a : algorithms_) {
      if (is_baseline(a) && &ch != &channels_.front()) continue;
      if (std::find(ch.dropped.begin(), ch.dropped.end(), a) != ch.dropped.end()) {
        for (int i = 0; i < per_round * o_.rounds; ++i) progress_.forget(weight);
        continue;
      }
      Pending& p = pending.emplace_back();
      p.ch = &ch;
      p.algorithm = a;
    }
  const std::size_t count = size / size_of(dtype);
  for (int round = 0; round < o_.rounds; ++round) {
    const bool checked = o_.check && round + 1 == o_.rounds;  // the last round checks
    for (Pending& p : pending) {
      for (int k = 0; k < 2; ++k) {
        if (!sections[k]) continue;
        if (p.failed) {
          progress_.forget(weight);
          continue;
        }
        const bool in_place = k == 1;
        progress_.begin(format_bytes(size) + " " + to_string(dtype) + " " + to_string(op) + ": " +
                            to_string(p.algorithm) + " over " +
                            (is_baseline(p.algorithm) ? std::string("native") : to_string(p.ch->kind)) +
                            (in_place ? ", in place" : ", out of place") +
                            (o_.rounds > 1 ? ", round " + std::to_string(round + 1) : std::string()),
                        weight);
        const Call call{p.algorithm, count, dtype, op, in_place};
        Loop loop{o_.iters, o_.warmup, checked, o_.fresh_input, info_.hosts == 1};
        if (!o_.iters_given) loop.fill_ms = kFillMs;
        const double state = calib::state_probe_us(world_);  // the bench's world carries no messages
        const Outcome r = measure(world_, *p.ch->comm, checker, call, loop, buffers_);
        progress_.end();
        if (r.failure) {
          drop(*p.ch, p.algorithm, size, *r.failure);
          p.failed = true;
          continue;
        }
        if (r.section->wrong) wrong_ += *r.section->wrong;
        if (!r.first_wrong.empty())
          p.wrong_notes.push_back(std::string("  first wrong value ") + (in_place ? "in place " : "out of place ") +
                                  r.first_wrong);
        p.rounds[k].push_back(*r.section);
        p.rounds[k].back().state_probe_us = state;
      }
    }
  }
  if (rank_ != 0) return;
  for (const Pending& p : pending) print_pending(p, dtype, op, size, plans);
}

void Bench::print_pending(const Pending& p, DataType dtype, ReduceOp op, std::size_t size, const Plans& plans) {
  Line line;
  line.size = size;
  line.count = size / size_of(dtype);
  line.dtype = dtype;
  line.op = op;
  line.algorithm = p.algorithm;
  line.transport = p.ch->kind;
  line.ranks = nranks_;
  // A section counts when all its rounds ran (a failure drops the rest of the line).
  for (int k = 0; k < 2; ++k)
    if (p.rounds[k].size() == static_cast<std::size_t>(o_.rounds))
      (k == 1 ? line.in_place : line.out_of_place) = combine_rounds(p.rounds[k], size, nranks_);
  if (!line.in_place && !line.out_of_place) return;
  const Algorithm a = p.algorithm;
  for (bool in_place : {false, true}) {
    std::optional<Algorithm>& pick = in_place ? line.pick_in_place : line.pick;
    std::optional<double>& pred = in_place ? line.predicted_in_place_us : line.predicted_us;
    const auto it = plans.find({p.ch->kind, in_place});
    if (it != plans.end()) {
      const Plan& plan = it->second;
      if (!in_place) line.model_pick = plan.algorithm;
      line.calibrated_state_probe_us = plan.machine_state_probe_us;
      if (a == Algorithm::Auto) {
        pick = p.ch->forced.value_or(plan.algorithm);
        pred = predicted_for(plan, *pick);
      } else {
        pred = predicted_for(plan, a);
      }
    } else if (a == Algorithm::Auto && p.ch->forced) {
      pick = p.ch->forced;
    }
  }
  progress_.clear();
  print_line(stdout, line, Sections{o_.out_of_place, o_.in_place});
  for (const std::string& n : p.wrong_notes) out(n.c_str());
  lines_.push_back(line);
}

void Bench::drop(Channel& ch, Algorithm a, std::size_t size, const Failure& f) {
  ch.dropped.push_back(a);
  const std::string what = to_string(a) + " over " + (is_baseline(a) ? std::string("native") : to_string(ch.kind));
  if (f.code == Error::Code::Unavailable) {
    out(("skipped " + what + ": " + f.message).c_str());
    return;
  }
  failed_.push_back(what + " at " + format_bytes(size) + ": " + f.message);
  out(("failed " + what + " at " + format_bytes(size) + " (not run again): " + f.message).c_str());
}

void Bench::write_outputs() {
  if (rank_ != 0 || output_failed_) return;
  std::string error;
  if (!json_path_.empty() && !write_file(json_path_, to_json(info_, lines_), &error)) {
    std::fprintf(stderr, "arlab-bench: cannot write %s: %s\n", json_path_.c_str(), error.c_str());
    output_failed_ = true;
  }
  if (!o_.csv_path.empty() && !write_file(o_.csv_path, to_csv(info_, lines_), &error)) {
    std::fprintf(stderr, "arlab-bench: cannot write --csv %s: %s\n", o_.csv_path.c_str(), error.c_str());
    output_failed_ = true;
  }
}

int Bench::finish(std::optional<double> min_busbw) {
  int status = wrong_ > 0 || !failed_.empty() ? kExitFailed : kExitOk;
  if (rank_ == 0) {
    const Summary s = summarize(lines_);
    if (!o_.quiet) {
      const bool crowded = nranks_ > info_.hosts * static_cast<int>(std::thread::hardware_concurrency());
      print_footer(stdout, s, lines_, o_.check, crowded);
      for (const std::string& f : failed_) std::printf("# failed: %s\n", f.c_str());
    }
    for (const std::string& w : s.wrong_where) std::fprintf(stderr, "arlab-bench: wrong values: %s\n", w.c_str());
    for (const std::string& f : failed_) std::fprintf(stderr, "arlab-bench: failed: %s\n", f.c_str());
    if (lines_.empty()) {
      std::fprintf(stderr, "arlab-bench: nothing ran\n");
      status = kExitFailed;
    }
    if (min_busbw && s.best) {
      char verdict[256];
      const bool low = s.best->busbw_GBps < *min_busbw;
      std::snprintf(verdict, sizeof verdict, "ARLAB_BENCH_MIN_BUSBW=%g: best average busbw %.3f GB/s (%s): %s",
                    *min_busbw, s.best->busbw_GBps, s.best->series.c_str(), low ? "below, FAILED" : "OK");
      if (!o_.quiet) std::printf("# %s\n", verdict);
      if (low) {
        std::fprintf(stderr, "arlab-bench: %s\n", verdict);
        status = kExitFailed;
      }
    }
    if (output_failed_) status = kExitFailed;
    std::fflush(stdout);
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, world_);
  return status;
}

}  // namespace arlab::bench

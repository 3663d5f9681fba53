// arlab-bench: how the ranks agree on what happened, so they never disagree on what to run
// next and all exit with the same status. Every function here is collective over `c`.
#pragma once

#include <arlab/arlab.hpp>

#include <exception>
#include <optional>
#include <string>
#include <utility>

namespace arlab::bench {

struct Failure {
  Error::Code code = Error::Code::Internal;
  std::string message;
};

// Runs f; an exception becomes a Failure (local, not collective).
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

// The text that the lowest rank with one holds (or nothing when no rank has one), with that
// rank's number, on every rank. A rank with `secondary` set only wins when no rank without it
// has a text.
std::optional<std::pair<int, std::string>> agree_text(MPI_Comm c, const std::optional<std::string>& mine,
                                                      bool secondary = false);

// The failure of the lowest failing rank, the same on every rank. A timeout is usually the
// echo of a failure elsewhere (the peer that stopped), so it counts only when no rank failed
// otherwise.
std::optional<Failure> agree(MPI_Comm c, const std::optional<Failure>& mine);

// What the bench does with an algorithm after a call of no elements has probed it (its agreed
// failure, or none): run it; skip it with a note (nccl on host buffers: NCCL reduces device
// memory only, so with a GPU it refuses them, InvalidArgument); count it among those this
// build or machine lacks (Unavailable, under -a all); or skip it and fail the run.
enum class ProbeVerdict { Run, SkipWithNote, Lacking, Failed };
ProbeVerdict probe_verdict(Algorithm a, const std::optional<Failure>& f, bool device_buffers, bool all_algorithms);

int comm_rank(MPI_Comm c);
int comm_size(MPI_Comm c);

}  // namespace arlab::bench

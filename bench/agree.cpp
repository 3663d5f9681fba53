#include "agree.hpp"

namespace arlab::bench {

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

std::optional<std::pair<int, std::string>> agree_text(MPI_Comm c, const std::optional<std::string>& mine,
                                                      bool secondary) {
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

ProbeVerdict probe_verdict(Algorithm a, const std::optional<Failure>& f, bool device_buffers, bool all_algorithms) {
  if (a == Algorithm::Nccl && !device_buffers && (!f || f->code == Error::Code::InvalidArgument))
    return ProbeVerdict::SkipWithNote;
  if (!f) return ProbeVerdict::Run;
  if (f->code == Error::Code::Unavailable) return all_algorithms ? ProbeVerdict::Lacking : ProbeVerdict::SkipWithNote;
  return ProbeVerdict::Failed;
}

}  // namespace arlab::bench

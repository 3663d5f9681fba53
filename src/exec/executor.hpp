// The executor: runs one rank's compiled schedule over a Transport with a Reducer.
// Every step whose dependencies are done is started at once, so independent chunks overlap;
// messages are tagged with their position on their channel, so they match whatever the
// order of posting. A reduction may finish later than it is started (a device reducer).
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "arlab/arlab.hpp"
#include "reduce/reducer.hpp"
#include "schedule/program.hpp"
#include "transport/transport.hpp"

namespace arlab::detail {

struct Buffers {
  const void* input = nullptr;  // the user's send buffer (out of place only)
  void* output = nullptr;       // the user's receive buffer
  void* scratch = nullptr;
};

struct Call {
  Algorithm algorithm;  // these four name the call in errors
  std::size_t count;
  DataType type;
  ReduceOp user_op;
  ReduceOp op;          // what the steps reduce with: Avg runs as Sum, the caller divides
  std::size_t elem_size;
  double timeout_s;
  std::uint32_t signature;  // call_signature of algorithm, count, type, user_op
};

class Executor {
 public:
  Executor(Transport& transport, Reducer& reducer) : transport_(transport), reducer_(reducer) {}

  // Runs `program` to its end, spinning on the transport. Throws Error(Timeout) naming the
  // peer when nothing has completed for `call.timeout_s` seconds. A run that throws has
  // abandoned the transport's requests (cancel_all) before it returns.
  void run(const Program& program, const Buffers& buffers, const Call& call);

  // The same run in pieces, for a thread that advances several runs (on several transports)
  // in turn: begin, advance until finished, then end; or abandon, once anything threw.
  // `program`, `buffers` and `call` must outlive the run.
  void begin(const Program& program, const Buffers& buffers, const Call& call);
  bool finished() const { return done_ == prog_->size(); }
  // One round: starts what is ready, polls the transport once, collects finished reductions.
  // Whether any step completed.
  bool advance();
  void end() noexcept { transport_.end_run(); }
  void abandon() noexcept;  // cancel_all, then end_run
  // Error(Timeout) naming the peer that the oldest outstanding step waits for.
  [[noreturn]] void timed_out(double waited_s) const;
  const Call& call() const { return *call_; }

 private:
  void start(std::uint32_t i);
  void complete(std::uint32_t i);
  char* address(const Region& r) const;

  Transport& transport_;
  Reducer& reducer_;
  // Per run; kept between runs so that the hot path does not allocate.
  const Program* prog_ = nullptr;
  const Buffers* buf_ = nullptr;
  const Call* call_ = nullptr;
  std::vector<std::uint32_t> waiting_, ready_;
  std::vector<std::uint8_t> state_;  // 0 waiting, 1 started, 2 done
  std::vector<std::int32_t> step_of_request_;
  std::vector<Transport::Request> completed_;
  std::vector<std::pair<Reducer::Event, std::uint32_t>> computing_;
  std::size_t done_ = 0;
};

}  // namespace arlab::detail

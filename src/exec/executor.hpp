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
  // On a thread that runs the call beside the caller's own computation (a communicator's
  // progress thread): how many threads wait for it. While none does, the executor sleeps in
  // short naps when nothing completes, so that the computation keeps the CPU when threads
  // outnumber the cores; once a caller waits, it spins, as a blocking call does (nullptr).
  const std::atomic<int>* callers_waiting = nullptr;
};

class Executor {
 public:
  Executor(Transport& transport, Reducer& reducer) : transport_(transport), reducer_(reducer) {}

  // Runs `program` to its end. Throws Error(Timeout) naming the peer when nothing has
  // completed for `call.timeout_s` seconds. A run that throws has abandoned the transport's
  // requests (cancel_all) before it returns.
  void run(const Program& program, const Buffers& buffers, const Call& call);

 private:
  void loop(double timeout_s);
  void start(std::uint32_t i);
  void complete(std::uint32_t i);
  [[noreturn]] void timed_out(double waited_s);
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

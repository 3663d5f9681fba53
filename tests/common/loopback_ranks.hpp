// Test helper: p engines on p threads over one loopback world, the first failure rethrown.
#pragma once

#include <mpi.h>

#include <exception>
#include <functional>
#include <thread>
#include <vector>

#include "core/engine.hpp"
#include "transport/loopback_transport.hpp"

namespace arlab::test {

// Options for loopback engines: the chunk size, a generous timeout, no log lines.
inline Options loopback_options(std::size_t chunk) {
  Options o;
  o.chunk_bytes = chunk;
  o.timeout_s = 60;
  o.log_level = LogLevel::None;
  return o;
}

// Rank r's lanes after the first: loopback worlds beside `world`, the k-th the same on every rank.
inline detail::LaneFactory loopback_lanes(const std::shared_ptr<detail::LoopbackWorld>& world, int r) {
  return [world, r, made = 0](MPI_Comm) mutable {
    return detail::make_loopback_transport(detail::loopback_sibling(world, ++made), r);
  };
}

inline void on_threads(int p, const Options& options, const std::function<void(detail::Engine&, int)>& body) {
  auto world = detail::make_loopback_world(p);
  std::vector<std::thread> threads;
  std::vector<std::exception_ptr> errors(p);
  for (int r = 0; r < p; ++r)
    threads.emplace_back([&, r] {
      try {
        detail::Engine engine(detail::make_loopback_transport(world, r), options.resolved(), MPI_COMM_NULL,
                              loopback_lanes(world, r));
        body(engine, r);
      } catch (...) {
        errors[r] = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) std::rethrow_exception(e);
}

}  // namespace arlab::test

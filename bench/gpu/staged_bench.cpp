// arlab-staged-bench: the device path's cost over the same call on host buffers. p ranks as
// threads over the loopback transport, sharing one GPU (each its own engine, streams and
// staging, as processes sharing a GPU would have), run each algorithm on host buffers and on
// device buffers of the same size, and rank 0's copy streams are timed alone. The bound:
//
//   bound = host time + max(D2H bytes / D2H rate, H2D bytes / H2D rate)
//
// where the bytes are what the ranks' staged transports copied in one call, summed over the
// ranks (they share the GPU's PCIe link), and the rates are page-locked copies in pieces of the
// staging size measured in this run: the copies a transport that cannot read device memory
// cannot avoid, the two directions running at once. docs/gpu.md asks for device <= 1.3 x bound.
//
//   arlab-staged-bench [--bytes 64M] [--ranks 2] [--reps 10] [--csv FILE]
//
// With ARLAB_TEST_DEVICE=host it runs on the host stand-in of a device (CPU tests of this
// program); without any device it exits 77 (skipped), saying why.
#include <algorithm>
#include <barrier>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string>
#include <thread>
#include <vector>

#include "core/engine.hpp"
#include "core/environment.hpp"
#include "device/device_memory.hpp"
#include "transport/loopback_transport.hpp"

namespace {

using arlab::Algorithm;
using arlab::DataType;
using arlab::ReduceOp;
using arlab::detail::DeviceMemory;

double now_s() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Rank 0's copy rate one way, in pieces of `piece` bytes as the staged transport copies, GB/s.
double copy_GBps(DeviceMemory& m, bool to_host, std::size_t bytes, std::size_t piece, int reps) {
  void* host = m.alloc_staging(bytes);
  void* dev = m.alloc_device(bytes);
  std::memset(host, 1, bytes);
  std::vector<double> t;
  for (int r = 0; r < reps + 1; ++r) {
    const double t0 = now_s();
    for (std::size_t at = 0; at < bytes; at += piece) {
      const std::size_t n = std::min(piece, bytes - at);
      if (to_host) m.to_host(static_cast<char*>(host) + at, static_cast<char*>(dev) + at, n);
      else m.to_device(static_cast<char*>(dev) + at, static_cast<char*>(host) + at, n);
    }
    m.synchronize();
    if (r > 0) t.push_back(now_s() - t0);  // the first is a warm-up
  }
  m.free_device(dev);
  m.free_staging(host);
  return static_cast<double>(bytes) / median(t) / 1e9;
}

struct Result {
  Algorithm algorithm;
  double host_s = 0, device_s = 0;
  std::size_t to_host = 0, to_device = 0;  // bytes per call, all ranks
};

}  // namespace

int main(int argc, char** argv) {
  std::size_t bytes = std::size_t{64} << 20;
  int ranks = 2, reps = 10;
  std::string csv;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool v = i + 1 < argc;
    if (a == "--bytes" && v) {
      const auto n = arlab::detail::parse_size(argv[++i]);
      if (!n || *n < 4) return std::fprintf(stderr, "arlab-staged-bench: bad --bytes\n"), 2;
      bytes = *n / 4 * 4;
    } else if (a == "--ranks" && v) {
      ranks = std::atoi(argv[++i]);
      if (ranks < 1 || ranks > 64) return std::fprintf(stderr, "arlab-staged-bench: --ranks 1..64\n"), 2;
    } else if (a == "--reps" && v) {
      reps = std::atoi(argv[++i]);
      if (reps < 1) return std::fprintf(stderr, "arlab-staged-bench: --reps >= 1\n"), 2;
    } else if (a == "--csv" && v) {
      csv = argv[++i];
    } else {
      std::fprintf(stderr, "usage: arlab-staged-bench [--bytes 64M] [--ranks 2] [--reps 10] [--csv FILE]\n");
      return 2;
    }
  }
  std::string why;
  auto probe = arlab::detail::make_device_memory(why);
  if (!probe) {
    std::printf("SKIPPED: %s\n", why.c_str());
    return 77;
  }
  const std::size_t piece = arlab::detail::StagedTransport::kDefaultPieceBytes;
  const double d2h = copy_GBps(*probe, true, bytes, piece, reps), h2d = copy_GBps(*probe, false, bytes, piece, reps);
  const std::string device_name = probe->name();
  probe.reset();

  const std::vector<Algorithm> algorithms{Algorithm::Ring, Algorithm::Tree, Algorithm::RecursiveDoubling,
                                          Algorithm::Rabenseifner, Algorithm::Hierarchical};
  std::vector<Result> results;
  for (Algorithm a : algorithms) results.push_back({a});
  const std::size_t count = bytes / 4;
  auto world = arlab::detail::make_loopback_world(ranks);
  std::barrier sync(ranks);
  std::vector<std::exception_ptr> errors(static_cast<std::size_t>(ranks));
  std::vector<std::size_t> to_host(static_cast<std::size_t>(ranks)), to_device(to_host.size());
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        arlab::Options o;
        o.timeout_s = 120;
        o.log_level = arlab::LogLevel::None;
        arlab::detail::Engine engine(arlab::detail::make_loopback_transport(world, r), o.resolved(), MPI_COMM_NULL);
        std::string w;
        auto mem = arlab::detail::make_device_memory(w);  // this rank's buffers on the device
        std::vector<float> host(count, 1.0f + r);
        void* dev = mem->alloc_device(bytes);
        mem->to_device(dev, host.data(), bytes);
        mem->synchronize();
        for (Result& res : results) {
          for (bool on_device : {false, true}) {
            void* buf = on_device ? dev : static_cast<void*>(host.data());
            std::vector<double> t;
            for (int i = 0; i < reps + 1; ++i) {
              const auto* staged = engine.staged_transport();
              const std::size_t h0 = staged ? staged->copied_to_host() : 0, d0 = staged ? staged->copied_to_device() : 0;
              sync.arrive_and_wait();
              const double t0 = now_s();
              engine.allreduce(buf, buf, count, DataType::Float32, ReduceOp::Avg, res.algorithm);
              sync.arrive_and_wait();  // every rank done
              if (i > 0) t.push_back(now_s() - t0);
              staged = engine.staged_transport();
              if (on_device && staged) {
                to_host[static_cast<std::size_t>(r)] = staged->copied_to_host() - h0;
                to_device[static_cast<std::size_t>(r)] = staged->copied_to_device() - d0;
              }
            }
            sync.arrive_and_wait();
            if (r == 0) {
              (on_device ? res.device_s : res.host_s) = median(t);
              if (on_device) {
                res.to_host = res.to_device = 0;
                for (int k = 0; k < ranks; ++k) {
                  res.to_host += to_host[static_cast<std::size_t>(k)];
                  res.to_device += to_device[static_cast<std::size_t>(k)];
                }
              }
            }
          }
        }
        // Every call averaged equal inputs after the first: the device buffer must hold what the
        // host buffer holds.
        std::vector<float> got(count);
        mem->to_host(got.data(), dev, bytes);
        mem->synchronize();
        const auto bad = std::mismatch(got.begin(), got.end(), host.begin());
        if (bad.first != got.end())
          throw arlab::Error(arlab::Error::Code::Internal,
                             "rank " + std::to_string(r) + ": device result " + std::to_string(*bad.first) +
                                 " at index " + std::to_string(bad.first - got.begin()) + ", host result " +
                                 std::to_string(*bad.second));
        mem->free_device(dev);
      } catch (...) {
        errors[static_cast<std::size_t>(r)] = std::current_exception();
        sync.arrive_and_drop();
      }
    });
  for (auto& t : threads) t.join();
  for (auto& e : errors)
    if (e) {
      try {
        std::rethrow_exception(e);
      } catch (const std::exception& x) {
        std::fprintf(stderr, "arlab-staged-bench: %s\n", x.what());
        return 1;
      }
    }

  std::printf("# %s; %d ranks as threads over loopback sharing it; float avg of %zu MiB, in place; median of %d\n",
              device_name.c_str(), ranks, bytes >> 20, reps);
  std::printf("# page-locked copies in %zu KiB pieces: D2H %.2f GB/s, H2D %.2f GB/s (rank 0, alone)\n", piece >> 10, d2h, h2d);
  std::printf("# bound = host + max(D2H bytes / D2H rate, H2D bytes / H2D rate), bytes of all ranks per call\n");
  std::printf("%-20s %10s %10s %9s %9s %10s %8s\n", "algorithm", "host(us)", "device(us)", "D2H(MiB)", "H2D(MiB)",
              "bound(us)", "/bound");
  std::FILE* f = csv.empty() ? nullptr : std::fopen(csv.c_str(), "w");
  if (f) std::fprintf(f, "algorithm,ranks,bytes,host_us,device_us,d2h_bytes,h2d_bytes,d2h_GBps,h2d_GBps,bound_us,ratio\n");
  for (const Result& r : results) {
    const double copies = std::max(r.to_host / (d2h * 1e9), r.to_device / (h2d * 1e9));
    const double bound = r.host_s + copies;
    std::printf("%-20s %10.1f %10.1f %9.1f %9.1f %10.1f %7.2fx\n", arlab::to_string(r.algorithm).c_str(), r.host_s * 1e6,
                r.device_s * 1e6, r.to_host / 1048576.0, r.to_device / 1048576.0, bound * 1e6, r.device_s / bound);
    if (f)
      std::fprintf(f, "%s,%d,%zu,%.2f,%.2f,%zu,%zu,%.3f,%.3f,%.2f,%.4f\n", arlab::to_string(r.algorithm).c_str(), ranks,
                   bytes, r.host_s * 1e6, r.device_s * 1e6, r.to_host, r.to_device, d2h, h2d, bound * 1e6,
                   r.device_s / bound);
  }
  if (f) std::fclose(f);
  return 0;
}

// arlab-kernel-bench: arlab's sum kernels against a device-to-device cudaMemcpyAsync, in one
// process, on the current GPU. The reduction out = a + b reads two operands and writes one, the
// copy reads one and writes one; both are memory-bound, so each is reported as bytes read plus
// written per second, and the kernel's share of the copy's rate is the figure that counts
// (docs/gpu.md: at least 90% at 64 MiB .. 1 GiB).
//
//   arlab-kernel-bench [--sizes 64M,256M,1G] [--reps 20] [--csv FILE]
//
// Each measurement: 3 untimed launches, then --reps launches each between CUDA events on one
// stream; the median. Buffers are larger than the L2 (60 MB on an H200) from 64 MiB up. Exits 77
// (skipped) without a CUDA device, saying why.
#include <cuda_runtime.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "core/environment.hpp"
#include "kernels/kernels.hpp"

namespace {

void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "arlab-kernel-bench: %s: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}

// The median time of `reps` launches of `launch`, in seconds.
double median_s(cudaStream_t s, int reps, const std::function<void()>& launch) {
  for (int i = 0; i < 3; ++i) launch();
  check(cudaStreamSynchronize(s), "warm-up");
  std::vector<cudaEvent_t> ev(static_cast<std::size_t>(reps) + 1);
  for (auto& e : ev) check(cudaEventCreate(&e), "cudaEventCreate");
  check(cudaEventRecord(ev[0], s), "cudaEventRecord");
  for (int i = 0; i < reps; ++i) {
    launch();
    check(cudaEventRecord(ev[static_cast<std::size_t>(i) + 1], s), "cudaEventRecord");
  }
  check(cudaStreamSynchronize(s), "timed launches");
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    float ms = 0;
    check(cudaEventElapsedTime(&ms, ev[static_cast<std::size_t>(i)], ev[static_cast<std::size_t>(i) + 1]), "cudaEventElapsedTime");
    t.push_back(ms * 1e-3);
  }
  for (auto& e : ev) cudaEventDestroy(e);
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

struct Row {
  std::string what;
  std::size_t bytes;   // of one operand
  double moved;        // bytes read + written per launch
  double seconds;
  double GBps() const { return moved / seconds / 1e9; }
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::size_t> sizes{std::size_t{64} << 20, std::size_t{256} << 20, std::size_t{1} << 30};
  int reps = 20;
  std::string csv;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--sizes" && has_value) {
      sizes.clear();
      std::string list = argv[++i], item;
      for (std::size_t at = 0; at <= list.size(); ++at) {
        if (at == list.size() || list[at] == ',') {
          const auto n = arlab::detail::parse_size(item);
          if (!n || *n == 0) {
            std::fprintf(stderr, "arlab-kernel-bench: bad size '%s' in --sizes\n", item.c_str());
            return 2;
          }
          sizes.push_back(*n);
          item.clear();
        } else {
          item += list[at];
        }
      }
    } else if (a == "--reps" && has_value) {
      reps = std::atoi(argv[++i]);
      if (reps < 1) return std::fprintf(stderr, "arlab-kernel-bench: --reps must be >= 1\n"), 2;
    } else if (a == "--csv" && has_value) {
      csv = argv[++i];
    } else {
      std::fprintf(stderr, "usage: arlab-kernel-bench [--sizes 64M,256M,1G] [--reps 20] [--csv FILE]\n");
      return 2;
    }
  }
  if (arlab::kernels::device_count() == 0) {
    std::printf("SKIPPED: %s\n", arlab::kernels::unavailable_reason().c_str());
    return 77;
  }
  int device = 0;
  cudaDeviceProp prop{};
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaGetDeviceProperties(&prop, device), "cudaGetDeviceProperties");
  int driver = 0, runtime = 0;
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  std::printf("# %s, %d SMs, %.0f MB L2, %.1f GiB; driver API %d, runtime %d\n", prop.name, prop.multiProcessorCount,
              prop.l2CacheSize / 1e6, static_cast<double>(prop.totalGlobalMem) / (1u << 30), driver, runtime);
  std::printf("# median of %d launches (CUDA events); GB/s = (bytes read + written) / time; share = of the copy\n", reps);
  std::printf("%-26s %10s %12s %10s %7s\n", "what", "size", "time(us)", "GB/s", "share");

  cudaStream_t s;
  check(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  std::vector<Row> rows;
  for (std::size_t bytes : sizes) {
    void *a = nullptr, *b = nullptr, *out = nullptr, *out2 = nullptr;
    check(cudaMalloc(&a, bytes), "cudaMalloc");
    check(cudaMalloc(&b, bytes), "cudaMalloc");
    check(cudaMalloc(&out, bytes), "cudaMalloc");
    check(cudaMalloc(&out2, bytes), "cudaMalloc");
    check(cudaMemset(a, 0x3c, bytes), "cudaMemset");  // finite values of every 2- and 4-byte type
    check(cudaMemset(b, 0x3b, bytes), "cudaMemset");
    const auto bd = static_cast<double>(bytes);
    const double copy_s = median_s(s, reps, [&] { check(cudaMemcpyAsync(out, a, bytes, cudaMemcpyDeviceToDevice, s), "cudaMemcpyAsync"); });
    rows.push_back({"cudaMemcpyAsync D2D", bytes, 2 * bd, copy_s});
    const double copy_GBps = rows.back().GBps();
    struct Variant {
      const char* name;
      arlab::DataType type;
      bool second;
    };
    for (const Variant v : {Variant{"sum float", arlab::DataType::Float32, false},
                            Variant{"sum bfloat16", arlab::DataType::BFloat16, false},
                            Variant{"sum half", arlab::DataType::Float16, false},
                            Variant{"sum float, two outputs", arlab::DataType::Float32, true},
                            Variant{"copy kernel", arlab::DataType::UInt8, false}}) {
      const std::size_t n = bytes / arlab::size_of(v.type);
      const bool is_copy = std::string(v.name) == "copy kernel";
      const double t = median_s(s, reps, [&] {
        if (is_copy) arlab::kernels::copy(a, out, bytes, s);
        else arlab::kernels::reduce(arlab::ReduceOp::Sum, v.type, a, b, out, v.second ? out2 : nullptr, n, s);
      });
      rows.push_back({v.name, bytes, (is_copy ? 2 : v.second ? 4 : 3) * bd, t});
    }
    for (std::size_t i = rows.size() - 6; i < rows.size(); ++i) {
      const Row& r = rows[i];
      std::printf("%-26s %9zuM %12.1f %10.1f %6.1f%%\n", r.what.c_str(), r.bytes >> 20, r.seconds * 1e6, r.GBps(),
                  100 * r.GBps() / copy_GBps);
    }
    for (void* p : {a, b, out, out2}) cudaFree(p);
  }
  cudaStreamDestroy(s);
  if (!csv.empty()) {
    std::FILE* f = std::fopen(csv.c_str(), "w");
    if (!f) return std::fprintf(stderr, "arlab-kernel-bench: cannot write %s\n", csv.c_str()), 1;
    std::fprintf(f, "what,bytes,moved_bytes,time_us,GBps,share_of_copy\n");
    double copy = 0;
    for (const Row& r : rows) {
      if (r.what == "cudaMemcpyAsync D2D") copy = r.GBps();
      std::fprintf(f, "%s,%zu,%.0f,%.3f,%.2f,%.4f\n", r.what.c_str(), r.bytes, r.moved, r.seconds * 1e6, r.GBps(),
                   r.GBps() / copy);
    }
    std::fclose(f);
  }
  return 0;
}

// arlab-gpu-probe: what this GPU machine can do, before anything is planned around it. One
// "key: value" line each (scripts/gpu-check keeps them in probe.txt):
//   device, sms, memory_gib, l2_mb, driver, runtime     the current device, as CUDA reports it
//   pinned                                              cudaHostAlloc of 64 MiB and a round trip
//   processes_share_gpu                                 two child processes each running a kernel at once
//   nccl_one_rank                                       ncclCommInitAll on one device and an all-reduce
// Exits 77 without a CUDA device (saying why), 0 otherwise (a failing line says "no: why").
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#ifdef ARLAB_HAVE_NCCL
#include "baseline/nccl_library.hpp"
#endif

#include "kernels/kernels.hpp"

namespace {

std::string error(cudaError_t e) { return cudaGetErrorString(e); }

// In a child process: its own context, a reduction of 64 MiB, checked. 0 on success.
int child_kernel() {
  if (arlab::kernels::device_count() == 0) return 6;
  const std::size_t n = std::size_t{16} << 20;
  std::vector<float> a(n, 1.5f);
  void *da = nullptr, *db = nullptr;
  if (cudaMalloc(&da, n * 4) != cudaSuccess || cudaMalloc(&db, n * 4) != cudaSuccess) return 2;
  cudaMemcpy(da, a.data(), n * 4, cudaMemcpyHostToDevice);
  cudaMemcpy(db, a.data(), n * 4, cudaMemcpyHostToDevice);
  try {
    for (int i = 0; i < 20; ++i) arlab::kernels::reduce(arlab::ReduceOp::Sum, arlab::DataType::Float32, da, db, db, nullptr, n, nullptr);
  } catch (...) {
    return 3;
  }
  if (cudaDeviceSynchronize() != cudaSuccess) return 4;
  float last = 0;
  cudaMemcpy(&last, static_cast<float*>(db) + n - 1, 4, cudaMemcpyDeviceToHost);
  return last == 1.5f * 21 ? 0 : 5;
}

std::string processes_share_gpu() {
  std::vector<pid_t> kids;
  for (int i = 0; i < 2; ++i) {
    const pid_t pid = fork();
    if (pid == 0) _exit(child_kernel());
    if (pid < 0) return "no: fork failed";
    kids.push_back(pid);
  }
  std::string out = "yes (two processes, a kernel each, results right)";
  for (pid_t k : kids) {
    int status = 0;
    waitpid(k, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      out = "no: a child " + std::string(WIFEXITED(status) ? "exited " + std::to_string(WEXITSTATUS(status)) : "was killed");
  }
  return out;
}

std::string nccl_one_rank() {
#ifdef ARLAB_HAVE_NCCL
  const arlab::detail::NcclLibrary* nccl = nullptr;
  try {
    nccl = &arlab::detail::nccl_library();
  } catch (const std::exception& e) {
    return std::string("no: ") + e.what();
  }
  ncclComm_t comm;
  int dev = 0;
  cudaGetDevice(&dev);
  if (ncclResult_t r = nccl->CommInitAll(&comm, 1, &dev); r != ncclSuccess)
    return std::string("no: ncclCommInitAll: ") + nccl->GetErrorString(r);
  const std::size_t n = 1 << 20;
  void* buf = nullptr;
  cudaMalloc(&buf, n * 4);
  std::vector<float> v(n, 2.0f);
  cudaMemcpy(buf, v.data(), n * 4, cudaMemcpyHostToDevice);
  ncclResult_t r = nccl->AllReduce(buf, buf, n, ncclFloat32, ncclSum, comm, nullptr);
  cudaDeviceSynchronize();
  cudaMemcpy(v.data(), buf, n * 4, cudaMemcpyDeviceToHost);
  cudaFree(buf);
  nccl->CommDestroy(comm);
  if (r != ncclSuccess) return std::string("no: ncclAllReduce: ") + nccl->GetErrorString(r);
  return v[n - 1] == 2.0f ? "yes (NCCL " + std::to_string(nccl->version) + " from " + nccl->path + ")" : "no: wrong result";
#else
  return "no: this build has no NCCL";
#endif
}

}  // namespace

int main() {
  // The children first, before this process touches CUDA at all: a child forked after its
  // parent initialised the driver (cudaGetDeviceCount does) cannot use CUDA.
  const std::string share = processes_share_gpu();
  if (arlab::kernels::device_count() == 0) {
    std::printf("device: none\nSKIPPED: %s\n", arlab::kernels::unavailable_reason().c_str());
    return 77;
  }
  cudaDeviceProp p{};
  int dev = 0, driver = 0, runtime = 0;
  cudaGetDevice(&dev);
  cudaGetDeviceProperties(&p, dev);
  cudaDriverGetVersion(&driver);
  cudaRuntimeGetVersion(&runtime);
  std::printf("device: %s (sm_%d%d)\nsms: %d\nmemory_gib: %.1f\nl2_mb: %.1f\ndriver: %d\nruntime: %d\n", p.name, p.major,
              p.minor, p.multiProcessorCount, static_cast<double>(p.totalGlobalMem) / (1u << 30), p.l2CacheSize / 1e6,
              driver, runtime);
  void* pinned = nullptr;
  void* d = nullptr;
  const std::size_t bytes = std::size_t{64} << 20;
  cudaError_t e = cudaHostAlloc(&pinned, bytes, cudaHostAllocPortable);
  if (e == cudaSuccess) e = cudaMalloc(&d, bytes);
  if (e == cudaSuccess) {
    std::memset(pinned, 7, bytes);
    e = cudaMemcpy(d, pinned, bytes, cudaMemcpyHostToDevice);
    std::memset(pinned, 0, bytes);
    if (e == cudaSuccess) e = cudaMemcpy(pinned, d, bytes, cudaMemcpyDeviceToHost);
  }
  const bool round_trip = e == cudaSuccess && static_cast<unsigned char*>(pinned)[bytes - 1] == 7;
  std::printf("pinned: %s\n", round_trip ? "yes (64 MiB cudaHostAlloc, a round trip)" : ("no: " + error(e)).c_str());
  if (d) cudaFree(d);
  if (pinned) cudaFreeHost(pinned);
  std::printf("processes_share_gpu: %s\n", share.c_str());
  std::printf("nccl_one_rank: %s\n", nccl_one_rank().c_str());
  return 0;
}

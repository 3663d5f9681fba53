// The elementwise kernels (kernels.hpp): reduce (with an optional second output), copy, divide.
//
// Each kernel is one grid-strided pass over a VectorSplit (index_map.hpp): a scalar head up to
// the first 16-byte boundary shared by every pointer, a body of 16-byte vector loads and stores
// (Pack<T>: 16 / sizeof(T) lanes, one ld/st.global.v4 each), a scalar tail. The grid is sized
// from the device's multiprocessor count (grid_shape), so a 1 GiB buffer runs in a few waves of
// resident blocks rather than millions of blocks. The element arithmetic is the CPU reducer's
// functors, compiled for the device.
#include <cuda_runtime.h>

#include <cstdint>
#include <string>

#include "kernels/index_map.hpp"
#include "kernels/kernels.hpp"
#include "reduce/dispatch.hpp"
#include "reduce/elementwise.hpp"

namespace arlab::kernels {
namespace {

using detail::divide_element;

template <class T>
struct alignas(kVectorBytes) Pack {
  T lane[kVectorBytes / sizeof(T)];
};

__device__ inline std::size_t thread_index() {
  return static_cast<std::size_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline std::size_t thread_count() { return static_cast<std::size_t>(gridDim.x) * blockDim.x; }

template <class T, class Op>
__global__ void reduce_kernel(const T* a, const T* b, T* out, T* out2, VectorSplit s) {
  const Op op;
  for_thread(
      s, thread_index(), thread_count(),
      [&](std::size_t i) {
        const T r = op(a[i], b[i]);
        out[i] = r;
        if (out2) out2[i] = r;
      },
      [&](std::size_t v) {
        using P = Pack<T>;
        const P x = reinterpret_cast<const P*>(a + s.body_begin())[v];
        const P y = reinterpret_cast<const P*>(b + s.body_begin())[v];
        P r;
#pragma unroll
        for (std::size_t k = 0; k < kVectorBytes / sizeof(T); ++k) r.lane[k] = op(x.lane[k], y.lane[k]);
        reinterpret_cast<P*>(out + s.body_begin())[v] = r;
        if (out2) reinterpret_cast<P*>(out2 + s.body_begin())[v] = r;
      });
}

__global__ void copy_kernel(const std::uint8_t* src, std::uint8_t* dst, VectorSplit s) {
  for_thread(
      s, thread_index(), thread_count(), [&](std::size_t i) { dst[i] = src[i]; },
      [&](std::size_t v) {
        using P = Pack<std::uint8_t>;
        reinterpret_cast<P*>(dst + s.body_begin())[v] = reinterpret_cast<const P*>(src + s.body_begin())[v];
      });
}

template <class T>
__global__ void divide_kernel(T* data, int divisor, VectorSplit s) {
  for_thread(
      s, thread_index(), thread_count(), [&](std::size_t i) { data[i] = divide_element(data[i], divisor); },
      [&](std::size_t v) {
        using P = Pack<T>;
        P x = reinterpret_cast<P*>(data + s.body_begin())[v];
#pragma unroll
        for (std::size_t k = 0; k < kVectorBytes / sizeof(T); ++k) x.lane[k] = divide_element(x.lane[k], divisor);
        reinterpret_cast<P*>(data + s.body_begin())[v] = x;
      });
}

std::string device_problem() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear it
    return std::string("no usable CUDA device (cudaGetDeviceCount: ") + cudaGetErrorString(e) + ")";
  }
  return n > 0 ? "" : "no CUDA device (cudaGetDeviceCount found none)";
}

const std::string& cached_problem() {
  static const std::string problem = device_problem();
  return problem;
}

void require_device(const char* where) {
  if (!cached_problem().empty())
    throw Error(Error::Code::Unavailable, std::string("arlab::kernels::") + where + ": " + cached_problem());
}

void check(cudaError_t e, const char* where) {
  if (e != cudaSuccess)
    throw Error(Error::Code::Internal, std::string("arlab::kernels::") + where + ": " + cudaGetErrorString(e));
}

int sm_count() {
  int device = 0, sms = 0;
  check(cudaGetDevice(&device), "cudaGetDevice");
  check(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device), "cudaDeviceGetAttribute");
  return sms;
}

LaunchShape shape_for(const VectorSplit& s) { return grid_shape(work_items(s), sm_count()); }

std::uintptr_t address(const void* p) { return reinterpret_cast<std::uintptr_t>(p); }

}  // namespace

void reduce(ReduceOp op, DataType type, const void* a, const void* b, void* out, void* out2, std::size_t n,
            Stream stream) {
  detail::visit_type(type, "arlab::kernels::reduce", [&](auto tag) {
    using T = decltype(tag);
    detail::visit_op(op, "arlab::kernels::reduce", [&](auto functor) {
      using Op = decltype(functor);
      require_device("reduce");
      if (n == 0) return;
      const std::uintptr_t at[] = {address(a), address(b), address(out), address(out2)};
      const VectorSplit s = vector_split(at, 4, n, sizeof(T));
      const LaunchShape l = shape_for(s);
      reduce_kernel<T, Op><<<l.blocks, l.threads_per_block, 0, static_cast<cudaStream_t>(stream)>>>(
          static_cast<const T*>(a), static_cast<const T*>(b), static_cast<T*>(out), static_cast<T*>(out2), s);
      check(cudaGetLastError(), "reduce: launch");
    });
  });
}

void copy(const void* src, void* dst, std::size_t bytes, Stream stream) {
  require_device("copy");
  if (bytes == 0 || src == dst) return;
  const std::uintptr_t at[] = {address(src), address(dst)};
  const VectorSplit s = vector_split(at, 2, bytes, 1);
  const LaunchShape l = shape_for(s);
  copy_kernel<<<l.blocks, l.threads_per_block, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const std::uint8_t*>(src), static_cast<std::uint8_t*>(dst), s);
  check(cudaGetLastError(), "copy: launch");
}

void divide(DataType type, void* data, std::size_t n, int divisor, Stream stream) {
  detail::visit_type(type, "arlab::kernels::divide", [&](auto tag) {
    using T = decltype(tag);
    if (divisor == 0) throw Error(Error::Code::InvalidArgument, "arlab::kernels::divide: divisor is 0");
    if constexpr (std::is_integral_v<T> && !std::is_signed_v<T>) {
      if (divisor < 0)
        throw Error(Error::Code::InvalidArgument, "arlab::kernels::divide: divisor " + std::to_string(divisor) +
                                                      " is negative for unsigned type " + to_string(type));
    }
    require_device("divide");
    if (n == 0) return;
    const std::uintptr_t at[] = {address(data)};
    const VectorSplit s = vector_split(at, 1, n, sizeof(T));
    const LaunchShape l = shape_for(s);
    divide_kernel<T><<<l.blocks, l.threads_per_block, 0, static_cast<cudaStream_t>(stream)>>>(static_cast<T*>(data),
                                                                                             divisor, s);
    check(cudaGetLastError(), "divide: launch");
  });
}

int device_count() noexcept {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();
    return 0;
  }
  return n;
}

std::string unavailable_reason() { return cached_problem(); }

}  // namespace arlab::kernels

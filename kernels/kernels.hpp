// arlab's CUDA kernels: elementwise reduction, copy and the division of Avg on device memory,
// enqueued on a stream. Host code includes this header without the CUDA toolkit's headers (the
// stream is passed as an opaque pointer); the definitions are in reduce_kernels.cu.
//
// The arithmetic is the CPU reducer's (src/reduce/elementwise.hpp, the same functors compiled
// for the device), so a kernel's result equals cpu_reduce's bit for bit for every type and op:
// integers wrap, float and double are IEEE, half and bfloat16 are computed in float and rounded
// to nearest even (converted by cuda_fp16.h / cuda_bf16.h, so a NaN's payload may differ),
// min and max are IEEE 754-2019's. The index arithmetic (which thread takes
// which elements: a scalar head, 16-byte vectors, a scalar tail, grid-strided) is in
// index_map.hpp, where the CPU tests enumerate it.
//
// Every function throws arlab::Error: InvalidArgument for a bad type, op or divisor (before
// anything is enqueued), Unavailable when no CUDA device or driver is usable, Internal for a
// failed launch, with CUDA's error string.
#pragma once

#include <cstddef>
#include <string>

#include "arlab/arlab.hpp"

namespace arlab::kernels {

using Stream = void*;  // a cudaStream_t; nullptr is the legacy default stream

// out[i] = a[i] (op) b[i] for n elements, and out2[i] = the same when out2 is not null (a ring
// step that reduces and forwards at once); out may alias a or b exactly. Avg reduces as Sum.
void reduce(ReduceOp op, DataType type, const void* a, const void* b, void* out, void* out2, std::size_t n,
            Stream stream);
// dst[0..bytes) = src[0..bytes); the ranges do not overlap.
void copy(const void* src, void* dst, std::size_t bytes, Stream stream);
// data[i] = data[i] / divisor (the last step of Avg; divisor != 0, and > 0 for unsigned types).
void divide(DataType type, void* data, std::size_t n, int divisor, Stream stream);

// CUDA devices this process can use: 0 without a device or a driver (never throws).
int device_count() noexcept;
// Why there is none ("no usable CUDA device (cudaGetDeviceCount: ...)"), or "" when there is one.
std::string unavailable_reason();

}  // namespace arlab::kernels

// The CUDA kernels against the CPU reducer, on a GPU: every type x op, counts 0..257 and a
// large one, pointers 0..3 elements past cudaMalloc's alignment (and the output at another
// offset than the inputs, which takes the all-scalar path), in place and with a second output;
// copy and divide. The kernels compile the CPU reducer's own functors, so results must be
// equal bit for bit. Without a CUDA device every test is skipped with the reason, and one test
// checks that the kernels then refuse with Unavailable.
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "arlab/arlab.hpp"
#include "kernels/kernels.hpp"
#include "reduce/reducer.hpp"

namespace {

using arlab::DataType;
using arlab::Error;
using arlab::ReduceOp;

const std::vector<DataType> kTypes{DataType::Int8,    DataType::UInt8,    DataType::Int32,   DataType::UInt32,
                                   DataType::Int64,   DataType::UInt64,   DataType::Float16, DataType::BFloat16,
                                   DataType::Float32, DataType::Float64};
const std::vector<ReduceOp> kOps{ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max, ReduceOp::Avg};

#define SKIP_WITHOUT_GPU()                                                        \
  if (arlab::kernels::device_count() == 0) GTEST_SKIP() << arlab::kernels::unavailable_reason()

void cuda(cudaError_t e) { ASSERT_EQ(e, cudaSuccess) << cudaGetErrorString(e); }

// A device allocation of `bytes` (and 64 bytes of slack for the offsets).
struct DeviceBuffer {
  explicit DeviceBuffer(std::size_t bytes) { cuda(cudaMalloc(&p, bytes + 64)); }
  ~DeviceBuffer() { cudaFree(p); }
  std::uint8_t* at(std::size_t offset) { return static_cast<std::uint8_t*>(p) + offset; }
  void* p = nullptr;
};

// Random bits for integers; for floating types random values of mixed magnitude and sign
// with some zeros, infinities and NaNs among them (raw bits, so subnormals come too).
std::vector<std::uint8_t> random_bytes(std::size_t bytes, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<std::uint8_t> v(bytes);
  for (auto& b : v) b = static_cast<std::uint8_t>(rng());
  return v;
}

void expect_same_bytes(const std::vector<std::uint8_t>& got, const std::vector<std::uint8_t>& want, const char* what) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(got[i], want[i]) << what << ": byte " << i << " differs";
}

TEST(KernelsGpu, ReduceMatchesTheCpuReducerForEveryTypeOpCountAndOffset) {
  SKIP_WITHOUT_GPU();
  std::vector<std::size_t> counts;
  for (std::size_t n = 0; n <= 257; ++n) counts.push_back(n);
  counts.push_back((std::size_t{1} << 20) + 3);
  for (DataType type : kTypes)
    for (ReduceOp op : kOps)
      for (std::size_t n : counts) {
        const std::size_t elem = arlab::size_of(type), bytes = n * elem;
        for (std::size_t offset : {0, 1, 3}) {
          SCOPED_TRACE(testing::Message() << arlab::to_string(type) << " " << arlab::to_string(op) << " n " << n
                                          << " offset " << offset);
          const auto a = random_bytes(bytes, n * 131 + offset), b = random_bytes(bytes, n * 137 + offset + 1);
          std::vector<std::uint8_t> want(bytes);
          arlab::detail::cpu_reduce(op, type, a.data(), b.data(), want.data(), n);
          DeviceBuffer da(bytes), db(bytes), dout(bytes), dout2(bytes);
          const std::size_t o = offset * elem, o_out = n % 2 ? o : (offset + 1) % 4 * elem;  // sometimes apart
          cuda(cudaMemcpy(da.at(o), a.data(), bytes, cudaMemcpyHostToDevice));
          cuda(cudaMemcpy(db.at(o), b.data(), bytes, cudaMemcpyHostToDevice));
          arlab::kernels::reduce(op, type, da.at(o), db.at(o), dout.at(o_out), dout2.at(o_out), n, nullptr);
          cuda(cudaDeviceSynchronize());
          std::vector<std::uint8_t> got(bytes), got2(bytes);
          cuda(cudaMemcpy(got.data(), dout.at(o_out), bytes, cudaMemcpyDeviceToHost));
          cuda(cudaMemcpy(got2.data(), dout2.at(o_out), bytes, cudaMemcpyDeviceToHost));
          expect_same_bytes(got, want, "out");
          expect_same_bytes(got2, want, "out2");
          // In place: out = a.
          arlab::kernels::reduce(op, type, da.at(o), db.at(o), da.at(o), nullptr, n, nullptr);
          cuda(cudaDeviceSynchronize());
          cuda(cudaMemcpy(got.data(), da.at(o), bytes, cudaMemcpyDeviceToHost));
          expect_same_bytes(got, want, "in place");
          if (HasFatalFailure()) return;
        }
      }
}

TEST(KernelsGpu, CopyAndDivideMatchTheCpu) {
  SKIP_WITHOUT_GPU();
  for (std::size_t bytes : {std::size_t{0}, std::size_t{1}, std::size_t{15}, std::size_t{17}, std::size_t{4099},
                            std::size_t{1} << 22})
    for (std::size_t offset : {0, 1, 5}) {
      const auto src = random_bytes(bytes, bytes + offset);
      DeviceBuffer ds(bytes), dd(bytes);
      cuda(cudaMemcpy(ds.at(offset), src.data(), bytes, cudaMemcpyHostToDevice));
      arlab::kernels::copy(ds.at(offset), dd.at(8 - offset), bytes, nullptr);
      cuda(cudaDeviceSynchronize());
      std::vector<std::uint8_t> got(bytes);
      cuda(cudaMemcpy(got.data(), dd.at(8 - offset), bytes, cudaMemcpyDeviceToHost));
      expect_same_bytes(got, src, "copy");
    }
  for (DataType type : kTypes)
    for (int divisor : {1, 3, 7, -1, -5}) {
      const bool is_unsigned = type == DataType::UInt8 || type == DataType::UInt32 || type == DataType::UInt64;
      if (is_unsigned && divisor < 0) continue;
      const std::size_t n = 1000, bytes = n * arlab::size_of(type);
      auto want = random_bytes(bytes, static_cast<std::uint64_t>(divisor) + 99);
      DeviceBuffer d(bytes);
      cuda(cudaMemcpy(d.at(arlab::size_of(type)), want.data(), bytes, cudaMemcpyHostToDevice));
      arlab::detail::cpu_divide(type, want.data(), n, divisor);
      arlab::kernels::divide(type, d.at(arlab::size_of(type)), n, divisor, nullptr);
      cuda(cudaDeviceSynchronize());
      std::vector<std::uint8_t> got(bytes);
      cuda(cudaMemcpy(got.data(), d.at(arlab::size_of(type)), bytes, cudaMemcpyDeviceToHost));
      SCOPED_TRACE(testing::Message() << arlab::to_string(type) << " / " << divisor);
      expect_same_bytes(got, want, "divide");
    }
}

// Bad arguments are refused before anything is enqueued, with or without a GPU.
TEST(Kernels, BadArgumentsAreInvalidArgument) {
  try {
    arlab::kernels::divide(DataType::UInt32, nullptr, 1, -2, nullptr);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Error::Code::InvalidArgument);
    EXPECT_NE(std::string(e.what()).find("negative for unsigned type uint32"), std::string::npos) << e.what();
  }
  EXPECT_THROW(arlab::kernels::divide(DataType::Float32, nullptr, 1, 0, nullptr), Error);
  EXPECT_THROW(arlab::kernels::reduce(static_cast<ReduceOp>(42), DataType::Float32, nullptr, nullptr, nullptr, nullptr, 1,
                                      nullptr),
               Error);
}

// Without a device the kernels say so: Unavailable, with CUDA's reason.
TEST(Kernels, WithoutADeviceEveryKernelIsUnavailable) {
  if (arlab::kernels::device_count() > 0) GTEST_SKIP() << "a CUDA device is present";
  EXPECT_FALSE(arlab::kernels::unavailable_reason().empty());
  for (auto call : {+[] { arlab::kernels::reduce(ReduceOp::Sum, DataType::Float32, nullptr, nullptr, nullptr, nullptr, 4, nullptr); },
                    +[] { arlab::kernels::copy(nullptr, nullptr, 4, nullptr); },
                    +[] { arlab::kernels::divide(DataType::Float32, nullptr, 4, 2, nullptr); }}) {
    try {
      call();
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Error::Code::Unavailable);
      EXPECT_NE(std::string(e.what()).find("CUDA device ("), std::string::npos) << e.what();
    }
  }
}

}  // namespace

// The CUDA kernels against the CPU reducer, on a GPU: every type x op, counts 0..257 and a
// large one, pointers 0..3 elements past cudaMalloc's alignment (and the output at another
// offset than the inputs, which takes the all-scalar path), in place and with a second output;
// copy and divide. The kernels compile the CPU reducer's own functors, so results must be
// equal bit for bit, except that a half or bfloat16 NaN may carry another payload (the device
// converts through cuda_fp16.h / cuda_bf16.h; elementwise.hpp). Without a CUDA device every
// GPU test is skipped with the reason, and one test checks that the kernels then refuse with
// Unavailable. The CudaHeaders tests run on the CPU: the headers' conversions against half.hpp.
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "arlab/arlab.hpp"
#include "kernels/kernels.hpp"
#include "reduce/half.hpp"
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

bool is_16bit_nan(DataType type, std::uint16_t bits) {
  const std::uint16_t exponent = type == DataType::Float16 ? 0x7c00 : 0x7f80;
  return (bits & exponent) == exponent && (bits & ~(exponent | 0x8000)) != 0;
}

// The same bytes; for half and bfloat16, a NaN where a NaN is wanted may differ in payload.
void expect_same_bytes(const std::vector<std::uint8_t>& got, const std::vector<std::uint8_t>& want, const char* what,
                       DataType type = DataType::UInt8) {
  ASSERT_EQ(got.size(), want.size());
  if (type == DataType::Float16 || type == DataType::BFloat16) {
    for (std::size_t i = 0; i + 1 < got.size(); i += 2) {
      std::uint16_t g, w;
      std::memcpy(&g, &got[i], 2);
      std::memcpy(&w, &want[i], 2);
      if (is_16bit_nan(type, w)) {
        ASSERT_TRUE(is_16bit_nan(type, g)) << what << ": element " << i / 2 << " is 0x" << std::hex << g
                                           << ", not a NaN as 0x" << w;
      } else {
        ASSERT_EQ(g, w) << what << ": element " << i / 2 << " differs";
      }
    }
    return;
  }
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
          expect_same_bytes(got, want, "out", type);
          expect_same_bytes(got2, want, "out2", type);
          // In place: out = a.
          arlab::kernels::reduce(op, type, da.at(o), db.at(o), da.at(o), nullptr, n, nullptr);
          cuda(cudaDeviceSynchronize());
          cuda(cudaMemcpy(got.data(), da.at(o), bytes, cudaMemcpyDeviceToHost));
          expect_same_bytes(got, want, "in place", type);
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
      expect_same_bytes(got, want, "divide", type);
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

// The device converts half and bfloat16 through cuda_fp16.h / cuda_bf16.h (one cvt each);
// the CPU reducer through half.hpp. The headers' host versions follow the same IEEE rules as
// the device's cvt instructions, so checking them here, on the CPU, against half.hpp shows that
// the two sides round alike: every 16-bit value to float, and to 16 bits every float whose low
// bits sit at or beside a rounding tie (every exponent, sign and upper fraction), plus random
// ones. NaNs need only stay NaNs.
bool float_is_nan(float f) { return f != f; }

TEST(CudaHeaders, SixteenBitToFloatIsHalfHppsForEveryValue) {
  for (std::uint32_t b = 0; b <= 0xffff; ++b) {
    const auto bits = static_cast<std::uint16_t>(b);
    const float h = __half2float(__ushort_as_half(bits)), want_h = arlab::detail::half_bits_to_float(bits);
    const float f = __bfloat162float(__ushort_as_bfloat16(bits)), want_f = arlab::detail::bfloat16_bits_to_float(bits);
    if (float_is_nan(want_h)) {
      ASSERT_TRUE(float_is_nan(h)) << "half 0x" << std::hex << b;
    } else {
      ASSERT_EQ(arlab::detail::bit_cast_hd<std::uint32_t>(h), arlab::detail::bit_cast_hd<std::uint32_t>(want_h))
          << "half 0x" << std::hex << b;
    }
    if (float_is_nan(want_f)) {
      ASSERT_TRUE(float_is_nan(f)) << "bfloat16 0x" << std::hex << b;
    } else {
      ASSERT_EQ(arlab::detail::bit_cast_hd<std::uint32_t>(f), arlab::detail::bit_cast_hd<std::uint32_t>(want_f))
          << "bfloat16 0x" << std::hex << b;
    }
  }
}

TEST(CudaHeaders, FloatToSixteenBitsRoundsAsHalfHpp) {
  // Low bits below the 16-bit formats' last place: half drops 13 fraction bits (more for its
  // subnormals, whose ties the random ones and the small exponents' patterns reach), bfloat16 16.
  const std::uint32_t half_low[] = {0, 1, 0x0fff, 0x1000, 0x1001, 0x1fff};
  const std::uint32_t bf16_low[] = {0, 1, 0x7fff, 0x8000, 0x8001, 0xffff};
  std::mt19937 rng(7);
  std::size_t checked = 0;
  auto check = [&](std::uint32_t x) {
    const float v = arlab::detail::bit_cast_hd<float>(x);
    const std::uint16_t h = __half_as_ushort(__float2half_rn(v)), want_h = arlab::detail::float_to_half_bits(v);
    const std::uint16_t b = __bfloat16_as_ushort(__float2bfloat16_rn(v)), want_b = arlab::detail::float_to_bfloat16_bits(v);
    if (is_16bit_nan(DataType::Float16, want_h)) {
      ASSERT_TRUE(is_16bit_nan(DataType::Float16, h)) << "float 0x" << std::hex << x;
    } else {
      ASSERT_EQ(h, want_h) << "half of float 0x" << std::hex << x;
    }
    if (is_16bit_nan(DataType::BFloat16, want_b)) {
      ASSERT_TRUE(is_16bit_nan(DataType::BFloat16, b)) << "float 0x" << std::hex << x;
    } else {
      ASSERT_EQ(b, want_b) << "bfloat16 of float 0x" << std::hex << x;
    }
    ++checked;
  };
  for (std::uint32_t high = 0; high < (1u << 19); ++high)  // sign, exponent, top 10 fraction bits
    for (std::uint32_t low : half_low) {
      check(high << 13 | low);
      if (HasFatalFailure()) return;
    }
  for (std::uint32_t high = 0; high < (1u << 16); ++high)
    for (std::uint32_t low : bf16_low) {
      check(high << 16 | low);
      if (HasFatalFailure()) return;
    }
  for (int i = 0; i < (1 << 22); ++i) {
    check(static_cast<std::uint32_t>(rng()));
    if (HasFatalFailure()) return;
  }
  EXPECT_GT(checked, std::size_t{7} << 20);
}

}  // namespace

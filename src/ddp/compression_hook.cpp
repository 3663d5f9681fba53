// fp16 and bf16 compression hooks (include/arlab/ddp.hpp): each rank's bucket divided by the
// rank count (Avg), rounded to the 16-bit type, summed in it, and widened back.
#include <cstdint>
#include <map>
#include <vector>

#include "arlab/ddp.hpp"
#include "reduce/half.hpp"
#include "reduce/reducer.hpp"

namespace arlab {
namespace {

class CompressionHook final : public CommunicationHook {
 public:
  explicit CompressionHook(DataType wire) : wire_(wire) {}
  std::string name() const override { return wire_ == DataType::Float16 ? "fp16-compression" : "bf16-compression"; }

  HookPayload before(std::size_t bucket_index, void* bucket, std::size_t count, DataType type, ReduceOp op,
                     int ranks) override {
    if (!compresses(type, op)) return {bucket, count, type, op};
    std::vector<std::uint16_t>& wire = wire_buffers_[bucket_index];
    wire.resize(count);
    const float scale = op == ReduceOp::Avg ? 1.0f / static_cast<float>(ranks) : 1.0f;
    // Dividing first keeps the sum of p contributions in half's range where the gradients are.
    if (type == DataType::Float32)
      detail::cpu_floats_to_16bit(wire_, static_cast<const float*>(bucket), wire.data(), count, scale);
    else
      narrow(static_cast<const double*>(bucket), wire.data(), count, scale);
    return {wire.data(), count, wire_, ReduceOp::Sum};
  }

  void after(std::size_t bucket_index, void* bucket, std::size_t count, DataType type, ReduceOp op,
             int) override {
    if (!compresses(type, op)) return;
    const std::vector<std::uint16_t>& wire = wire_buffers_.at(bucket_index);
    if (type == DataType::Float32)
      detail::cpu_16bit_to_floats(wire_, wire.data(), static_cast<float*>(bucket), count);
    else
      widen(wire.data(), static_cast<double*>(bucket), count);
  }

 private:
  static bool compresses(DataType type, ReduceOp op) {
    return (type == DataType::Float32 || type == DataType::Float64) && (op == ReduceOp::Sum || op == ReduceOp::Avg);
  }
  std::uint16_t to_wire(float x) const {
    return wire_ == DataType::Float16 ? detail::float_to_half_bits(x) : detail::float_to_bfloat16_bits(x);
  }
  float from_wire(std::uint16_t x) const {
    return wire_ == DataType::Float16 ? detail::half_bits_to_float(x) : detail::bfloat16_bits_to_float(x);
  }
  template <typename T>
  void narrow(const T* in, std::uint16_t* out, std::size_t n, float scale) const {
    for (std::size_t i = 0; i < n; ++i) out[i] = to_wire(static_cast<float>(in[i]) * scale);
  }
  template <typename T>
  void widen(const std::uint16_t* in, T* out, std::size_t n) const {
    for (std::size_t i = 0; i < n; ++i) out[i] = static_cast<T>(from_wire(in[i]));
  }

  DataType wire_;
  std::map<std::size_t, std::vector<std::uint16_t>> wire_buffers_;  // per bucket, kept across steps
};

}  // namespace

std::unique_ptr<CommunicationHook> make_fp16_compression_hook() {
  return std::make_unique<CompressionHook>(DataType::Float16);
}
std::unique_ptr<CommunicationHook> make_bf16_compression_hook() {
  return std::make_unique<CompressionHook>(DataType::BFloat16);
}

}  // namespace arlab

#include "ddp/bucket_plan.hpp"

namespace arlab::detail {

std::vector<std::vector<std::size_t>> assign_buckets(const std::vector<GradientShape>& gradients,
                                                     const std::vector<std::size_t>& order, std::size_t first_cap,
                                                     std::size_t cap) {
  std::vector<std::vector<std::size_t>> buckets;
  std::size_t bytes = 0;  // in the bucket being filled
  for (std::size_t i : order) {
    const GradientShape& g = gradients.at(i);
    const std::size_t b = g.count * size_of(g.type);
    const bool fits = !buckets.empty() && gradients[buckets.back().front()].type == g.type &&
                      bytes + b <= (buckets.size() == 1 ? first_cap : cap);
    if (fits) {
      buckets.back().push_back(i);
      bytes += b;
    } else {
      buckets.push_back({i});
      bytes = b;
    }
  }
  return buckets;
}

}  // namespace arlab::detail

// The RDMA path's registration cache on its own, with a UCP context and no peers: hits for a
// buffer and its subranges, invalidation when the memory is unmapped (UCX memory events),
// eviction beyond the entry limit, and the drop callback that retires remote keys.
#include <gtest/gtest.h>
#include <sys/mman.h>

#include <vector>

#include "transport/registration_cache.hpp"

namespace {

using arlab::detail::Registration;
using arlab::detail::RegistrationCache;

class RegistrationCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ucp_params_t p{};
    p.field_mask = UCP_PARAM_FIELD_FEATURES;
    p.features = UCP_FEATURE_RMA;
    ASSERT_EQ(ucp_init(&p, nullptr, &context_), UCS_OK);
  }
  void TearDown() override { ucp_cleanup(context_); }
  ucp_context_h context_ = nullptr;
};

TEST_F(RegistrationCacheTest, SameBufferAndSubrangesHit) {
  RegistrationCache cache(context_, 8);
  std::vector<char> buf(1 << 20);
  const auto id = cache.get(buf.data(), buf.size()).id;
  cache.refresh();
  EXPECT_EQ(cache.get(buf.data(), buf.size()).id, id);
  EXPECT_EQ(cache.get(buf.data() + 4096, 1000).id, id);
  EXPECT_EQ(cache.find(buf.data() + 100, 100)->id, id);
  EXPECT_EQ(cache.find(buf.data() + 100, buf.size()), nullptr);  // runs past the end
  const auto s = cache.stats();
  EXPECT_EQ(s.registrations, 1u);
  EXPECT_EQ(s.hits, 2u);
  EXPECT_FALSE(cache.get(buf.data(), buf.size()).packed_rkey.empty());
}

TEST_F(RegistrationCacheTest, UnmappedMemoryIsDroppedAndTheAddressRegisteredAfresh) {
  std::vector<std::uint64_t> dropped;
  RegistrationCache cache(context_, 8, [&](const Registration& r) { dropped.push_back(r.id); });
  if (!cache.watches_memory()) GTEST_SKIP() << "UCX memory events are unavailable (UCX_MEM_EVENTS=no?)";
  const std::size_t big = 1 << 20, small = 300000;
  void* a = mmap(nullptr, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(a, MAP_FAILED);
  const Registration& first = cache.get(a, big);
  const auto old_id = first.id;
  ASSERT_EQ(munmap(a, big), 0);
  void* b = mmap(a, small, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
  ASSERT_EQ(b, a);
  cache.refresh();
  const Registration& second = cache.get(b, small);
  EXPECT_NE(second.id, old_id);
  EXPECT_EQ(second.length, small);
  EXPECT_EQ(cache.stats().invalidations, 1u);
  EXPECT_EQ(cache.stats().registrations, 2u);
  EXPECT_EQ(dropped, std::vector<std::uint64_t>{old_id});
  munmap(b, small);
}

TEST_F(RegistrationCacheTest, UnrelatedUnmapKeepsRegistrations) {
  RegistrationCache cache(context_, 8);
  if (!cache.watches_memory()) GTEST_SKIP() << "UCX memory events are unavailable";
  std::vector<char> buf(1 << 16);
  const auto id = cache.get(buf.data(), buf.size()).id;
  void* other = mmap(nullptr, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  munmap(other, 1 << 20);
  cache.refresh();
  EXPECT_EQ(cache.get(buf.data(), buf.size()).id, id);
  EXPECT_EQ(cache.stats().invalidations, 0u);
}

TEST_F(RegistrationCacheTest, EvictsTheLeastRecentlyUsedBeyondTheLimit) {
  std::vector<std::uint64_t> dropped;
  RegistrationCache cache(context_, 2, [&](const Registration& r) { dropped.push_back(r.id); });
  std::vector<char> x(4096), y(4096), z(4096);
  const auto ix = cache.get(x.data(), x.size()).id;
  const auto iy = cache.get(y.data(), y.size()).id;
  cache.get(x.data(), x.size());  // x is now more recent than y
  cache.get(z.data(), z.size());
  EXPECT_EQ(dropped, std::vector<std::uint64_t>{iy});
  EXPECT_EQ(cache.find(x.data(), x.size())->id, ix);
  EXPECT_EQ(cache.stats().evictions, 1u);
  EXPECT_EQ(cache.stats().live, 2u);
  cache.clear();
  EXPECT_EQ(cache.stats().live, 0u);
}

}  // namespace

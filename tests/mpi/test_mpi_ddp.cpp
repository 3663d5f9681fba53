// GradientBucketer under mpirun: bucketed results equal a plain all-reduce of each gradient,
// whatever order each rank marks its gradients in; bucket views; compression within its
// precision; misuse errors; rebuild() in rank 0's order. Linked into arlab-mpi-async-tests.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "arlab/ddp.hpp"
#include "common/mpi_world.hpp"
#include "ddp_marking.hpp"

namespace {

using arlab::test::backward;
using arlab::test::everywhere;
using arlab::test::forward_order;
using arlab::test::mark_in_order;
using arlab::DataType;
using arlab::ReduceOp;

bool thread_multiple() {
  int provided = 0;
  MPI_Query_thread(&provided);
  return provided >= MPI_THREAD_MULTIPLE;
}

// A model's gradients: mixed sizes (some above the bucket cap), floats with a few doubles.
struct Model {
  std::vector<std::vector<float>> f;
  std::vector<std::vector<double>> d;
  std::vector<arlab::Gradient> grads;
  explicit Model(int rank, int step = 0) {
    const std::size_t counts[] = {1, 7, 300, 5000, 1 << 15, 64, 3, 40000, 999, 2, 12345, 8};
    for (std::size_t i = 0; i < 24; ++i) {
      const std::size_t n = counts[i % 12] + i;
      if (i % 5 == 4) {
        d.emplace_back(n);
        for (std::size_t k = 0; k < n; ++k) d.back()[k] = static_cast<double>((k * 3 + i + rank * 5 + step) % 17);
      } else {
        f.emplace_back(n);
        for (std::size_t k = 0; k < n; ++k) f.back()[k] = static_cast<float>((k * 7 + i + rank * 11 + step) % 23);
      }
    }
    std::size_t fi = 0, di = 0;
    for (std::size_t i = 0; i < 24; ++i) {
      if (i % 5 == 4) {
        grads.push_back({d[di].data(), d[di].size(), DataType::Float64});
        ++di;
      } else {
        grads.push_back({f[fi].data(), f[fi].size(), DataType::Float32});
        ++fi;
      }
    }
  }
};

// Every gradient averaged by a blocking all-reduce of its own.
Model reference(arlab::Communicator& comm, int step = 0) {
  Model m(comm.rank(), step);
  for (auto& g : m.grads) comm.allreduce(g.data, g.data, g.count, g.type, ReduceOp::Avg, arlab::Algorithm::Ring);
  return m;
}

bool same(const Model& a, const Model& b) { return a.f == b.f && a.d == b.d; }


arlab::BucketOptions small_buckets() {
  arlab::BucketOptions o;
  o.first_bucket_bytes = 4096;
  o.bucket_cap_bytes = 64 << 10;
  return o;
}

TEST(Bucketer, EqualsAPlainAllreduceOfEachGradientInAnyMarkingOrder) {
  if (!thread_multiple()) GTEST_SKIP() << "MPI without MPI_THREAD_MULTIPLE";
  arlab::Communicator comm(MPI_COMM_WORLD);
  const Model want = reference(comm);
  Model m(comm.rank());
  arlab::GradientBucketer sync(comm, m.grads, small_buckets());
  EXPECT_GT(sync.bucket_count(), 4u);
  backward(sync, m.grads.size(), 1234u + static_cast<unsigned>(comm.rank()));  // every rank its own order
  sync.finish();
  EXPECT_TRUE(everywhere(same(m, want)));
  // A second step on fresh gradients.
  const Model want2 = reference(comm, 1);
  Model fresh(comm.rank(), 1);
  for (std::size_t i = 0; i < m.f.size(); ++i) m.f[i] = fresh.f[i];
  for (std::size_t i = 0; i < m.d.size(); ++i) m.d[i] = fresh.d[i];
  backward(sync, m.grads.size(), 99u * static_cast<unsigned>(comm.rank() + 1));
  sync.finish();
  EXPECT_TRUE(everywhere(same(m, want2)));
}

TEST(Bucketer, GradientsAsBucketViews) {
  if (!thread_multiple()) GTEST_SKIP() << "MPI without MPI_THREAD_MULTIPLE";
  arlab::Communicator comm(MPI_COMM_WORLD);
  const Model want = reference(comm);
  Model m(comm.rank());
  std::vector<arlab::Gradient> views = m.grads;
  for (auto& g : views) g.data = nullptr;  // the bucketer's memory holds them
  arlab::BucketOptions o = small_buckets();
  o.gradient_as_bucket_view = true;
  arlab::GradientBucketer sync(comm, views, o);
  for (std::size_t i = 0; i < m.grads.size(); ++i)  // "backward" writes each gradient in place
    std::memcpy(sync.gradient(i), m.grads[i].data, m.grads[i].count * arlab::size_of(m.grads[i].type));
  backward(sync, m.grads.size(), 7u + static_cast<unsigned>(comm.rank()));
  sync.finish();
  bool ok = true;
  for (std::size_t i = 0; i < want.grads.size(); ++i)
    ok &= std::memcmp(sync.gradient(i), want.grads[i].data, want.grads[i].count * arlab::size_of(want.grads[i].type)) == 0;
  EXPECT_TRUE(everywhere(ok));
}

TEST(Bucketer, Fp16AndBf16CompressionWithinTheirPrecision) {
  if (!thread_multiple()) GTEST_SKIP() << "MPI without MPI_THREAD_MULTIPLE";
  arlab::Communicator comm(MPI_COMM_WORLD);
  const int p = comm.size();
  const std::size_t n = 50000;
  for (int which = 0; which < 2; ++which) {
    std::vector<float> g(n), exact(n);
    for (std::size_t k = 0; k < n; ++k) g[k] = std::sin(0.001f * static_cast<float>(k) + static_cast<float>(comm.rank()));
    comm.allreduce(g.data(), exact.data(), n, DataType::Float32, ReduceOp::Avg);
    arlab::BucketOptions o = small_buckets();
    o.hook = which == 0 ? std::shared_ptr<arlab::CommunicationHook>(arlab::make_fp16_compression_hook())
                        : std::shared_ptr<arlab::CommunicationHook>(arlab::make_bf16_compression_hook());
    arlab::GradientBucketer sync(comm, {{g.data(), n, DataType::Float32}}, o);
    sync.mark_ready(0);
    sync.finish();
    double worst = 0;
    for (std::size_t k = 0; k < n; ++k) worst = std::max(worst, std::abs(static_cast<double>(g[k]) - exact[k]));
    // Each of p contributions and p - 1 partial sums rounded once, values below 1 in magnitude.
    const double ulp = which == 0 ? 1.0 / 2048 : 1.0 / 256;
    EXPECT_TRUE(everywhere(worst < 2.0 * p * ulp && worst > 0)) << o.hook->name() << ": worst " << worst;
  }
}

TEST(Bucketer, MisuseIsAClearError) {
  if (!thread_multiple()) GTEST_SKIP() << "MPI without MPI_THREAD_MULTIPLE";
  arlab::Communicator comm(MPI_COMM_WORLD);
  std::vector<float> a(10, 1.0f), b(20, 2.0f);
  auto message = [](auto&& f) {
    try {
      f();
    } catch (const arlab::Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { arlab::GradientBucketer bad(comm, {{nullptr, 5, DataType::Float32}}); })
                .find("has no memory"),
            std::string::npos);
  arlab::GradientBucketer sync(comm, {{a.data(), a.size(), DataType::Float32}, {b.data(), b.size(), DataType::Float32}});
  EXPECT_NE(message([&] { sync.mark_ready(2); }).find("there are 2 gradients"), std::string::npos);
  sync.mark_ready(1);
  EXPECT_NE(message([&] { sync.mark_ready(1); }).find("already marked ready"), std::string::npos);
  EXPECT_NE(message([&] { sync.finish(); }).find("1 of 2 gradients not marked ready (0)"), std::string::npos);
  EXPECT_NE(message([&] { sync.rebuild(); }).find("in the middle of a step"), std::string::npos);
  sync.mark_ready(0);  // the step goes on after the error
  sync.finish();
  EXPECT_TRUE(everywhere(a[0] == 1.0f && b[19] == 2.0f));
}

TEST(Bucketer, RebuildFollowsRankZerosOrder) {
  if (!thread_multiple()) GTEST_SKIP() << "MPI without MPI_THREAD_MULTIPLE";
  arlab::Communicator comm(MPI_COMM_WORLD);
  Model m(comm.rank());
  arlab::GradientBucketer sync(comm, m.grads, small_buckets());
  // Rank 0 marks in registration order (forward), the others in a shuffled one.
  if (comm.rank() == 0) {
    mark_in_order(sync, forward_order(m.grads.size()));
  } else
    backward(sync, m.grads.size(), 5u + static_cast<unsigned>(comm.rank()));
  sync.finish();
  sync.rebuild();
  bool ok = sync.bucket(0).front() == 0;  // rank 0's first-ready gradient leads the first bucket
  std::vector<std::size_t> flat;
  for (std::size_t k = 0; k < sync.bucket_count(); ++k)
    flat.insert(flat.end(), sync.bucket(k).begin(), sync.bucket(k).end());
  for (std::size_t i = 0; i < flat.size(); ++i) ok &= flat[i] == i;
  // And the next step is still exact.
  const Model want = reference(comm, 2);
  Model fresh(comm.rank(), 2);
  for (std::size_t i = 0; i < m.f.size(); ++i) m.f[i] = fresh.f[i];
  for (std::size_t i = 0; i < m.d.size(); ++i) m.d[i] = fresh.d[i];
  backward(sync, m.grads.size(), 3u + static_cast<unsigned>(comm.rank()));
  sync.finish();
  EXPECT_TRUE(everywhere(ok && same(m, want)));
}

}  // namespace

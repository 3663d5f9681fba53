// Every algorithm against MPI_Allreduce, exactly, over MPI: all data types and ops, in place
// and out of place, counts around the rank count and odd sizes.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstring>
#include <string>
#include <vector>

#include "arlab/arlab.hpp"
#include "common/store.hpp"
#include "common/mpi_world.hpp"

namespace {

using arlab::test::everywhere;
using arlab::test::world_rank;

using arlab::Algorithm;
using arlab::DataType;
using arlab::ReduceOp;

int world_size() { int s; MPI_Comm_size(MPI_COMM_WORLD, &s); return s; }

// True on every rank when `ok` holds on every rank.
// Integer-valued, exact in every type; negative values for the signed types' Min/Max.
std::vector<std::byte> fill(DataType t, std::size_t count, int rank, ReduceOp op) {
  const std::size_t e = arlab::size_of(t);
  const bool is_unsigned = t == DataType::UInt8 || t == DataType::UInt32 || t == DataType::UInt64;
  std::vector<std::byte> v(count * e);
  for (std::size_t i = 0; i < count; ++i) {
    double x = op == ReduceOp::Prod ? ((i + rank) % 4 == 0 ? 2 : 1)
                                    : static_cast<double>((i * 5 + static_cast<std::size_t>(rank) * 7) % 13);
    if (!is_unsigned && (op == ReduceOp::Min || op == ReduceOp::Max)) x -= 6;
    arlab::test::store(t, v.data() + i * e, x);
  }
  return v;
}

const DataType kTypes[] = {DataType::Int8,    DataType::UInt8,    DataType::Int32,   DataType::UInt32,
                           DataType::Int64,   DataType::UInt64,   DataType::Float16, DataType::BFloat16,
                           DataType::Float32, DataType::Float64};
const ReduceOp kOps[] = {ReduceOp::Sum, ReduceOp::Prod, ReduceOp::Min, ReduceOp::Max, ReduceOp::Avg};

class AgainstMpi : public ::testing::TestWithParam<Algorithm> {};

TEST_P(AgainstMpi, EveryTypeOpCountInPlaceAndNot) {
  arlab::Communicator comm(MPI_COMM_WORLD);
  const std::size_t p = static_cast<std::size_t>(comm.size());
  const int rank = comm.rank();
  std::string first_failure;
  for (DataType t : kTypes)
    for (ReduceOp op : kOps)
      for (std::size_t count : {std::size_t{1}, p - 1, p, p + 1, std::size_t{1001}, std::size_t{65539}})
        for (bool in_place : {false, true}) {
          auto input = fill(t, count, rank, op);
          auto want = input;
          comm.allreduce(input.data(), want.data(), count, t, op, Algorithm::Mpi);  // MPI_Allreduce
          std::vector<std::byte> got(input.size(), std::byte{0x77});
          if (in_place) got = input;
          comm.allreduce(in_place ? got.data() : input.data(), got.data(), count, t, op, GetParam());
          const bool same = got == want && (in_place || input == fill(t, count, rank, op));
          if (!everywhere(same) && first_failure.empty())
            first_failure = arlab::to_string(t) + " " + arlab::to_string(op) + " count " +
                            std::to_string(count) + (in_place ? " in place" : " out of place");
        }
  EXPECT_EQ(first_failure, "") << "p=" << p;
}

INSTANTIATE_TEST_SUITE_P(Algorithms, AgainstMpi,
                         ::testing::Values(Algorithm::Ring, Algorithm::Tree, Algorithm::RecursiveDoubling,
                                           Algorithm::Rabenseifner, Algorithm::Hierarchical, Algorithm::Auto),
                         [](const auto& info) {
                           std::string n = arlab::to_string(info.param);
                           for (auto& c : n) if (c == '-') c = '_';
                           return n;
                         });

TEST(Mpi, BackToBackCallsOfDifferentSizesAndAlgorithms) {
  arlab::Options small_chunks;
  small_chunks.chunk_bytes = 4096;  // many messages per call
  arlab::Communicator comm(MPI_COMM_WORLD, small_chunks);
  const int rank = comm.rank(), p = comm.size();
  const Algorithm algos[] = {Algorithm::Ring, Algorithm::Tree, Algorithm::RecursiveDoubling,
                             Algorithm::Rabenseifner, Algorithm::Hierarchical, Algorithm::Mpi, Algorithm::Auto};
  bool ok = true;
  for (int round = 0; round < 30; ++round) {
    const std::size_t count = 1 + (static_cast<std::size_t>(round) * 7919) % 50000;
    std::vector<std::int64_t> x(count);
    for (std::size_t i = 0; i < count; ++i) x[i] = static_cast<std::int64_t>(i) * (rank + 1) + round;
    comm.allreduce(x.data(), x.data(), count, DataType::Int64, ReduceOp::Sum, algos[round % 6]);
    for (std::size_t i = 0; i < count; ++i)
      ok &= x[i] == static_cast<std::int64_t>(i) * p * (p + 1) / 2 + static_cast<std::int64_t>(round) * p;
  }
  EXPECT_TRUE(everywhere(ok));
}

TEST(Mpi, UserTrafficOnTheSameCommDoesNotMix) {
  // A receive the user posts on the world communicator with any source and any tag must not
  // catch arlab's messages: arlab talks on its own duplicate.
  arlab::Communicator comm(MPI_COMM_WORLD);
  const int rank = comm.rank(), p = comm.size();
  int user_msg = -1;
  MPI_Request req;
  MPI_Irecv(&user_msg, 1, MPI_INT, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &req);
  std::vector<float> x(4096, 1.0f);
  comm.allreduce(x.data(), x.data(), x.size(), DataType::Float32, ReduceOp::Sum, Algorithm::Ring);
  const int token = 1000 + rank;
  MPI_Send(&token, 1, MPI_INT, (rank + 1) % p, 5, MPI_COMM_WORLD);
  MPI_Wait(&req, MPI_STATUS_IGNORE);
  EXPECT_TRUE(everywhere(user_msg == 1000 + (rank + p - 1) % p && x[0] == static_cast<float>(p)));
}

TEST(Mpi, PlanAgreesOnEveryRank) {
  arlab::Communicator comm(MPI_COMM_WORLD);
  for (std::size_t count : {std::size_t{2}, std::size_t{1} << 12, std::size_t{1} << 22}) {
    const int pick = static_cast<int>(comm.plan(count, DataType::Float32).algorithm);
    int lo = 0, hi = 0;
    MPI_Allreduce(&pick, &lo, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    MPI_Allreduce(&pick, &hi, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    EXPECT_EQ(lo, hi);
  }
}

}  // namespace

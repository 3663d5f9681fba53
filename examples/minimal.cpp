// The smallest arlab program: sum a vector over all ranks, then ask the model why.
#include <arlab/arlab.hpp>

#include <cstdio>
#include <vector>

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  {
    arlab::Communicator comm(MPI_COMM_WORLD);
    std::vector<float> x(1 << 20, static_cast<float>(comm.rank() + 1));
    comm.allreduce(x.data(), x.data(), x.size(), arlab::DataType::Float32, arlab::ReduceOp::Sum);
    const arlab::Plan plan = comm.plan(x.size(), arlab::DataType::Float32, /*in_place=*/true);
    if (comm.rank() == 0)
      std::printf("x[0] = %g (expected %d); auto picked %s: %s\n", x[0], comm.size() * (comm.size() + 1) / 2,
                  arlab::to_string(plan.algorithm).c_str(), plan.reason.c_str());
  }
  MPI_Finalize();
  return 0;
}

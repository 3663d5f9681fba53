// Data-parallel training with arlab's GradientBucketer, as PyTorch DDP does it: a small
// multi-layer perceptron learns a synthetic regression task; every rank trains on its own
// data, and after each backward pass the gradients are averaged across the ranks, bucket by
// bucket, while backward goes on.
//
//   mpirun -np 2 ddp_train [--steps 400] [--hidden 256] [--layers 3] [--batch 64]
//                          [--bucket-kib 256] [--check-every 50] [--threshold 0.05]
//
// Backward runs layer by layer from the output; as soon as a layer's weight and bias
// gradients are computed they are marked ready, and a bucket whose gradients are all ready is
// all-reduced at once (asynchronously) while the layers below are still being computed.
// Every --check-every steps the ranks compare their parameters bit for bit. At the end it
// prints the loss and the share of the all-reduce time that was hidden behind backward:
//   hidden = 1 - (exposed time after an overlapped backward) / (the same synchronisation's
//   time on its own),
// each timed from the end of the last rank's backward to the last rank's return from finish()
// (on rank 0's clock), the latter in steps that mark every gradient only after the whole
// backward. A rank that waits for a slower rank's backward is not waiting for the all-reduce.
// Exit status 0 when the loss fell below --threshold and the parameters stayed identical.
#include <arlab/ddp.hpp>
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <vector>

namespace {

double now_us() {
  return std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// What to add to this rank's now_us() to read rank 0's clock: of 20 round trips to rank 0,
// the shortest, taking rank 0's reading at its middle (off by at most half that round trip:
// a few microseconds on one host, some tens over a network). 0 on rank 0.
double offset_to_rank0_us(int rank, int p) {
  double offset = 0;
  for (int r = 1; r < p; ++r) {
    double best_rtt = 1e300;
    for (int i = 0; i < 20; ++i) {
      if (rank == r) {
        const double sent = now_us();
        double theirs = 0;
        MPI_Send(&sent, 1, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
        MPI_Recv(&theirs, 1, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        const double back = now_us();
        if (back - sent < best_rtt) best_rtt = back - sent, offset = theirs - (sent + back) / 2;
      } else if (rank == 0) {
        double sent = 0;
        MPI_Recv(&sent, 1, MPI_DOUBLE, r, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        const double mine = now_us();
        MPI_Send(&mine, 1, MPI_DOUBLE, r, 7, MPI_COMM_WORLD);
      }
    }
  }
  return offset;
}

struct Config {
  int steps = 400, hidden = 256, layers = 3, batch = 64, bucket_kib = 256, check_every = 50;
  double threshold = 0.05, lr = 0.05;
};

Config parse(int argc, char** argv, int rank) {
  Config c;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> double {
      if (i + 1 >= argc) {
        if (rank == 0) std::fprintf(stderr, "ddp_train: %s needs a value\n", a.c_str());
        MPI_Abort(MPI_COMM_WORLD, 2);
      }
      return std::atof(argv[++i]);
    };
    if (a == "--steps") c.steps = static_cast<int>(next());
    else if (a == "--hidden") c.hidden = static_cast<int>(next());
    else if (a == "--layers") c.layers = static_cast<int>(next());
    else if (a == "--batch") c.batch = static_cast<int>(next());
    else if (a == "--bucket-kib") c.bucket_kib = static_cast<int>(next());
    else if (a == "--check-every") c.check_every = static_cast<int>(next());
    else if (a == "--threshold") c.threshold = next();
    else if (a == "--lr") c.lr = next();
    else {
      if (rank == 0) std::fprintf(stderr, "ddp_train: unknown flag '%s' (see the comment atop examples/ddp_train.cpp)\n", a.c_str());
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  if (c.steps < 1 || c.hidden < 1 || c.layers < 1 || c.batch < 1 || c.bucket_kib < 1 || c.check_every < 1) {
    if (rank == 0) std::fprintf(stderr, "ddp_train: every count must be >= 1\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  return c;
}

constexpr int kInputs = 16;

// The task: y = sin(x . u) + 0.5 cos(x . v), inputs uniform in [-1, 1].
struct Task {
  std::vector<float> u, v;
  Task() {
    std::mt19937 g(7);
    std::normal_distribution<float> n(0.0f, 0.4f);
    for (int i = 0; i < kInputs; ++i) u.push_back(n(g)), v.push_back(n(g));
  }
  float target(const float* x) const {
    float a = 0, b = 0;
    for (int i = 0; i < kInputs; ++i) a += x[i] * u[i], b += x[i] * v[i];
    return std::sin(a) + 0.5f * std::cos(b);
  }
};

// One dense layer: y = W x + b (ReLU on all but the last), with its gradients.
struct Layer {
  int in, out;
  bool relu;
  std::vector<float> w, b, gw, gb;  // parameters and their gradients
  std::vector<float> x, z;          // the batch's input and pre-activation, kept for backward
};

struct Mlp {
  std::vector<Layer> layers;
  Mlp(int hidden, int depth) {
    std::mt19937 g(42);  // the same initial parameters on every rank
    int in = kInputs;
    for (int l = 0; l <= depth; ++l) {
      const int out = l == depth ? 1 : hidden;
      Layer L{in, out, l < depth, {}, {}, {}, {}, {}, {}};
      std::normal_distribution<float> n(0.0f, std::sqrt(2.0f / static_cast<float>(in)));
      L.w.resize(static_cast<std::size_t>(in) * out);
      for (float& x : L.w) x = n(g);
      L.b.assign(static_cast<std::size_t>(out), 0.0f);
      L.gw.assign(L.w.size(), 0.0f);
      L.gb.assign(L.b.size(), 0.0f);
      layers.push_back(std::move(L));
      in = out;
    }
  }

  // Forward over a batch of `n` rows; returns the outputs.
  std::vector<float> forward(const std::vector<float>& x0, int n) {
    std::vector<float> x = x0;
    for (Layer& L : layers) {
      L.x = x;
      L.z.assign(static_cast<std::size_t>(n) * L.out, 0.0f);
      for (int r = 0; r < n; ++r)
        for (int o = 0; o < L.out; ++o) {
          float s = L.b[o];
          const float* wr = &L.w[static_cast<std::size_t>(o) * L.in];
          const float* xr = &x[static_cast<std::size_t>(r) * L.in];
          for (int i = 0; i < L.in; ++i) s += wr[i] * xr[i];
          L.z[static_cast<std::size_t>(r) * L.out + o] = s;
        }
      x = L.z;
      if (L.relu)
        for (float& v : x) v = v > 0 ? v : 0;
    }
    return x;
  }

  // Backward from d(loss)/d(output); `ready(l)` is called once layer l's gradients are final.
  template <class Ready>
  void backward(std::vector<float> dy, int n, Ready ready) {
    for (int l = static_cast<int>(layers.size()) - 1; l >= 0; --l) {
      Layer& L = layers[static_cast<std::size_t>(l)];
      if (L.relu)
        for (std::size_t k = 0; k < dy.size(); ++k) dy[k] = L.z[k] > 0 ? dy[k] : 0;
      std::fill(L.gw.begin(), L.gw.end(), 0.0f);
      std::fill(L.gb.begin(), L.gb.end(), 0.0f);
      std::vector<float> dx(static_cast<std::size_t>(n) * L.in, 0.0f);
      for (int r = 0; r < n; ++r)
        for (int o = 0; o < L.out; ++o) {
          const float d = dy[static_cast<std::size_t>(r) * L.out + o];
          float* gwr = &L.gw[static_cast<std::size_t>(o) * L.in];
          const float* xr = &L.x[static_cast<std::size_t>(r) * L.in];
          const float* wr = &L.w[static_cast<std::size_t>(o) * L.in];
          float* dxr = &dx[static_cast<std::size_t>(r) * L.in];
          for (int i = 0; i < L.in; ++i) {
            gwr[i] += d * xr[i];
            dxr[i] += d * wr[i];
          }
          L.gb[o] += d;
        }
      ready(l);  // this layer's gradients are final: their bucket may start
      dy = std::move(dx);
    }
  }
};

std::uint64_t fingerprint(const Mlp& m) {  // FNV-1a over every parameter's bits
  std::uint64_t h = 1469598103934665603ull;
  auto eat = [&](const std::vector<float>& v) {
    const auto* p = reinterpret_cast<const unsigned char*>(v.data());
    for (std::size_t i = 0; i < v.size() * sizeof(float); ++i) h = (h ^ p[i]) * 1099511628211ull;
  };
  for (const Layer& L : m.layers) eat(L.w), eat(L.b);
  return h;
}

}  // namespace

int main(int argc, char** argv) {
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int rank = 0, p = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &p);
  const Config c = parse(argc, argv, rank);
  int status = 0;
  try {
    arlab::Communicator comm(MPI_COMM_WORLD);
    const Task task;
    Mlp model(c.hidden, c.layers);
    // Gradients registered in the parameters' order: weight, bias of each layer from the input.
    std::vector<arlab::Gradient> grads;
    for (Layer& L : model.layers) {
      grads.push_back({L.gw.data(), L.gw.size(), arlab::DataType::Float32});
      grads.push_back({L.gb.data(), L.gb.size(), arlab::DataType::Float32});
    }
    arlab::BucketOptions o;
    o.bucket_cap_bytes = static_cast<std::size_t>(c.bucket_kib) << 10;
    o.first_bucket_bytes = o.bucket_cap_bytes / 4;
    arlab::GradientBucketer sync(comm, grads, o);
    std::size_t params = 0;
    for (const auto& g : grads) params += g.count;
    if (rank == 0)
      std::printf("ddp_train: %d ranks, MLP %d -> %d x %d -> 1 (%zu parameters), batch %d per rank, %zu buckets of "
                  "at most %d KiB\n",
                  p, kInputs, c.layers, c.hidden, params, c.batch, sync.bucket_count(), c.bucket_kib);

    std::mt19937 data(1000u + static_cast<unsigned>(rank));  // each rank its own data
    std::uniform_real_distribution<float> uni(-1.0f, 1.0f);
    // Times on rank 0's clock, so that a step's phases can be read across the ranks.
    const double offset = offset_to_rank0_us(rank, p);
    double backward_us = 0, exposed_us = 0, alone_us = 0, wait_us = 0;
    int overlapped_steps = 0, alone_steps = 0;
    double loss = 0;
    bool identical = true;
    for (int step = 0; step < c.steps; ++step) {
      std::vector<float> x(static_cast<std::size_t>(c.batch) * kInputs), y(static_cast<std::size_t>(c.batch));
      for (float& v : x) v = uni(data);
      for (int r = 0; r < c.batch; ++r) y[static_cast<std::size_t>(r)] = task.target(&x[static_cast<std::size_t>(r) * kInputs]);
      const std::vector<float> out = model.forward(x, c.batch);
      std::vector<float> dy(out.size());
      double local_loss = 0;
      for (int r = 0; r < c.batch; ++r) {
        const float e = out[static_cast<std::size_t>(r)] - y[static_cast<std::size_t>(r)];
        local_loss += static_cast<double>(e) * e / c.batch;
        dy[static_cast<std::size_t>(r)] = 2.0f * e / static_cast<float>(c.batch);
      }
      // One step in five (after the first ten) marks only after the whole backward: the
      // synchronisation's time on its own, for the hidden share.
      const bool alone = step >= 10 && step % 5 == 0;
      const double t0 = now_us();
      model.backward(dy, c.batch, [&](int l) {
        if (alone) return;
        sync.mark_ready(2 * static_cast<std::size_t>(l));      // the layer's weight
        sync.mark_ready(2 * static_cast<std::size_t>(l) + 1);  // and bias
      });
      if (alone)
        for (std::size_t i = grads.size(); i-- > 0;) sync.mark_ready(i);
      const double t1 = now_us();
      sync.finish();  // every rank now holds the same averaged gradients
      const double t2 = now_us();
      if (step >= 10) {
        // From the end of the last rank's backward to the last rank's return from finish():
        // the synchronisation's time that no rank's backward covered (all of it when marked
        // after backward). A rank waiting for a slower one's backward is not waiting for the
        // all-reduce.
        const double mine[2] = {t1 + offset, t2 + offset};
        double last[2];
        MPI_Allreduce(mine, last, 2, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        const double after_backward = std::max(0.0, last[1] - last[0]);
        if (alone) alone_us += after_backward, ++alone_steps;
        else backward_us += t1 - t0, exposed_us += after_backward, wait_us += t2 - t1, ++overlapped_steps;
      }
      if (step == 0) sync.rebuild();  // buckets in the order the gradients came, as DDP does
      for (Layer& L : model.layers) {  // plain SGD
        for (std::size_t k = 0; k < L.w.size(); ++k) L.w[k] -= static_cast<float>(c.lr) * L.gw[k];
        for (std::size_t k = 0; k < L.b.size(); ++k) L.b[k] -= static_cast<float>(c.lr) * L.gb[k];
      }
      MPI_Allreduce(&local_loss, &loss, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
      loss /= p;
      if ((step + 1) % c.check_every == 0 || step + 1 == c.steps) {
        const std::uint64_t mine = fingerprint(model);
        std::uint64_t lo = 0, hi = 0;
        MPI_Allreduce(&mine, &lo, 1, MPI_UINT64_T, MPI_MIN, MPI_COMM_WORLD);
        MPI_Allreduce(&mine, &hi, 1, MPI_UINT64_T, MPI_MAX, MPI_COMM_WORLD);
        identical = identical && lo == hi;
        if (rank == 0)
          std::printf("step %4d  loss %.5f  parameters %s across ranks\n", step + 1, loss,
                      lo == hi ? "identical" : "DIFFER");
      }
    }
    if (rank == 0) {
      const double back = overlapped_steps ? backward_us / overlapped_steps : 0;
      const double wait = overlapped_steps ? wait_us / overlapped_steps : 0;
      const double exposed = overlapped_steps ? exposed_us / overlapped_steps : 0;
      const double sync_alone = alone_steps ? alone_us / alone_steps : 0;
      const double hidden = sync_alone > 0 ? 1.0 - exposed / sync_alone : 0;
      std::printf("per step: backward %.0f us; all-reduce on its own %.0f us; after an overlapped backward, %.0f us "
                  "from the last rank's backward to the last finish() (rank 0 waited %.0f us in finish()): %.0f%% of "
                  "the all-reduce time hidden behind backward\n",
                  back, sync_alone, exposed, wait, 100.0 * hidden);
      const bool converged = loss < c.threshold;
      std::printf("final loss %.5f (threshold %g): %s; parameters %s\n", loss, c.threshold,
                  converged ? "converged" : "NOT converged", identical ? "identical on every rank" : "DIFFER between ranks");
      if (!converged || !identical) status = 1;
    }
  } catch (const arlab::Error& e) {
    std::fprintf(stderr, "ddp_train: rank %d: %s\n", rank, e.what());
    status = 1;
  }
  MPI_Bcast(&status, 1, MPI_INT, 0, MPI_COMM_WORLD);
  MPI_Finalize();
  return status;
}

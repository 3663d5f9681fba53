// arlab-bench's command line: defaults, every flag, and the one-line errors for bad values.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "agree.hpp"
#include "options.hpp"

namespace arlab::bench {
namespace {

ParseResult parse(std::initializer_list<const char*> args) {
  std::vector<const char*> argv{"arlab-bench"};
  argv.insert(argv.end(), args.begin(), args.end());
  return parse_options(static_cast<int>(argv.size()), argv.data());
}

BenchOptions ok(std::initializer_list<const char*> args) {
  ParseResult r = parse(args);
  EXPECT_EQ(r.status, ParseResult::Status::Run) << r.message;
  return r.options;
}

std::string error(std::initializer_list<const char*> args) {
  ParseResult r = parse(args);
  EXPECT_EQ(r.status, ParseResult::Status::Error);
  EXPECT_EQ(r.message.find('\n'), std::string::npos) << "one line: " << r.message;
  return r.message;
}

TEST(BenchOptions, Defaults) {
  const BenchOptions o = ok({});
  EXPECT_EQ(o.min_bytes, 8u);
  EXPECT_EQ(o.max_bytes, std::size_t{64} << 20);
  EXPECT_EQ(o.factor, 2u);
  EXPECT_EQ(o.step, 0u);
  EXPECT_EQ(o.algorithms, all_algorithms());
  EXPECT_TRUE(o.all_algorithms);
  EXPECT_EQ(o.dtypes, std::vector<DataType>{DataType::Float32});
  EXPECT_EQ(o.ops, std::vector<ReduceOp>{ReduceOp::Sum});
  EXPECT_EQ(o.iters, 20);
  EXPECT_EQ(o.warmup, 5);
  EXPECT_TRUE(o.check);
  EXPECT_EQ(o.transports, std::vector<TransportKind>{TransportKind::Mpi});
  EXPECT_TRUE(o.out_of_place);  // both sections, as nccl-tests
  EXPECT_TRUE(o.in_place);
  EXPECT_EQ(o.ranks_per_node, 0);
  EXPECT_FALSE(o.topology);
  EXPECT_TRUE(o.json_path.empty() && o.csv_path.empty() && o.plot_path.empty());
  EXPECT_FALSE(o.quiet);
  EXPECT_FALSE(o.progress);
  EXPECT_EQ(o.rounds, 1);
  EXPECT_TRUE(o.fresh_input);  // new input every call, as training brings new gradients
  EXPECT_FALSE(o.calibrate);
  EXPECT_FALSE(o.device);  // host buffers
}

TEST(BenchOptions, DeviceBuffersForEveryLine) {
  EXPECT_TRUE(ok({"-D"}).device);
  EXPECT_TRUE(ok({"--device", "-a", "nccl,ring"}).device);
  EXPECT_EQ(error({"-D1"}), "-D takes no value");
}

TEST(BenchOptions, ReuseInputKeepsTheSameInputEveryCall) {
  EXPECT_FALSE(ok({"--reuse-input"}).fresh_input);
  EXPECT_TRUE(ok({"--reuse-input", "--fresh-input"}).fresh_input);  // the last one says
  EXPECT_FALSE(ok({"--fresh-input", "--reuse-input"}).fresh_input);
}

TEST(BenchOptions, Calibrate) {
  const BenchOptions o = ok({"--calibrate", "--ranks-per-node", "2"});
  EXPECT_TRUE(o.calibrate);
  EXPECT_EQ(o.ranks_per_node, 2);
  EXPECT_EQ(error({"--calibrate", "--topology", "t.yaml"}),
            "--calibrate and --topology exclude each other: --calibrate measures the machine the model describes, "
            "--topology reads it from a file");
}

TEST(BenchOptions, AnyStepFactorFromTwo) {
  // nccl-tests takes any factor; one beyond -e leaves the first size alone.
  for (const char* f : {"1048577", "4194304", "18446744073709551615"}) {
    const BenchOptions o = ok({"-b", "8", "-e", "1M", "-f", f});
    EXPECT_EQ(o.factor, std::stoull(f));
    EXPECT_EQ(sweep_sizes(o, 4), std::vector<std::size_t>{8}) << f;
  }
  const BenchOptions o = ok({"-b", "1", "-e", "16M", "-f", "4194304"});
  EXPECT_EQ(sweep_sizes(o, 1), (std::vector<std::size_t>{1, 4194304}));
}

TEST(BenchOptions, AnyStepBytesBeyondTheRangeLeavesTheFirstSize) {
  // A step beyond -e used to wrap the size around (max - step underflowed): the fuzzer's
  // tests/fuzz/regressions/bench_cli/huge-stepbytes-wraps.
  for (const char* i : {"1048577", "18446744073709551615"}) {
    const BenchOptions o = ok({"-b", "1K", "-e", "1M", "-i", i});
    EXPECT_EQ(sweep_sizes(o, 4), std::vector<std::size_t>{1024}) << i;
  }
  const BenchOptions o = ok({"-b", "1K", "-e", "1M", "-i", "523776"});  // 1K, 524800, then 1048576 exactly
  EXPECT_EQ(sweep_sizes(o, 4), (std::vector<std::size_t>{1024, 524800, 1048576}));
}

TEST(BenchOptions, EveryFlag) {
  const BenchOptions o = ok({"-b", "1K", "-e=2M", "-f4", "-a", "ring,rd,mpi", "-d", "half,int8", "-o", "max",
                             "-n", "3", "-w", "0", "-c", "0", "-t", "mpi", "-z", "1", "--ranks-per-node", "2",
                             "--topology", "t.yaml", "--json", "a.json", "--csv=a.csv", "--plot", "a.png", "-q",
                             "--progress", "--rounds", "3", "--fresh-input"});
  EXPECT_EQ(o.min_bytes, 1024u);
  EXPECT_EQ(o.max_bytes, std::size_t{2} << 20);
  EXPECT_EQ(o.factor, 4u);
  EXPECT_EQ(o.algorithms, (std::vector<Algorithm>{Algorithm::Ring, Algorithm::RecursiveDoubling, Algorithm::Mpi}));
  EXPECT_FALSE(o.all_algorithms);
  EXPECT_EQ(o.dtypes, (std::vector<DataType>{DataType::Float16, DataType::Int8}));
  EXPECT_EQ(o.ops, std::vector<ReduceOp>{ReduceOp::Max});
  EXPECT_EQ(o.iters, 3);
  EXPECT_EQ(o.warmup, 0);
  EXPECT_FALSE(o.check);
  EXPECT_FALSE(o.out_of_place);
  EXPECT_TRUE(o.in_place);
  EXPECT_EQ(o.ranks_per_node, 2);
  EXPECT_EQ(o.topology.value_or(""), "t.yaml");
  EXPECT_EQ(o.json_path, "a.json");
  EXPECT_EQ(o.csv_path, "a.csv");
  EXPECT_EQ(o.plot_path, "a.png");
  EXPECT_TRUE(o.quiet);
  EXPECT_TRUE(o.progress);
  EXPECT_EQ(o.rounds, 3);
  EXPECT_TRUE(o.fresh_input);
}

TEST(BenchOptions, InPlaceFlag) {
  EXPECT_FALSE(ok({"-z"}).out_of_place);            // bare: in place only
  EXPECT_FALSE(ok({"-z", "-n", "2"}).out_of_place);  // bare, before another flag
  EXPECT_FALSE(ok({"--inplace=1"}).out_of_place);
  const BenchOptions both = ok({"-z", "0"});
  EXPECT_TRUE(both.out_of_place && both.in_place);
}

TEST(BenchOptions, AllLists) {
  EXPECT_EQ(ok({"-d", "all"}).dtypes.size(), 10u);
  EXPECT_EQ(ok({"-o", "all"}).ops.size(), 5u);
  std::vector<TransportKind> built;
  for (TransportKind t : {TransportKind::Mpi, TransportKind::Ucx, TransportKind::UcxRma})
    if (transport_available(t)) built.push_back(t);
  EXPECT_EQ(ok({"-t", "all"}).transports, built);
  const BenchOptions a = ok({"-a", "auto,all"});
  EXPECT_EQ(a.algorithms.front(), Algorithm::Auto);
  EXPECT_EQ(a.algorithms.size(), all_algorithms().size());
  EXPECT_TRUE(a.all_algorithms);
  for (Algorithm x : {Algorithm::Mpi, Algorithm::Nccl, Algorithm::Hierarchical, Algorithm::Ring})
    EXPECT_NE(std::find(a.algorithms.begin(), a.algorithms.end(), x), a.algorithms.end()) << to_string(x);
}

TEST(BenchOptions, BadValuesNameTheFlagAndWhatItAccepts) {
  EXPECT_EQ(error({"-d", "float8"}), "bad value 'float8' for -d: expected one of int8, uint8, int32, uint32, int64, "
                                     "uint64, half, bfloat16, float, double, all");
  EXPECT_EQ(error({"-o", "xor"}), "bad value 'xor' for -o: expected one of sum, prod, min, max, avg, all");
  EXPECT_EQ(error({"-a", "ring,bogus"}), "bad value 'bogus' for -a: expected one of auto, ring, tree, "
                                         "recursive-doubling, rabenseifner, hierarchical, mpi, nccl, all");
  EXPECT_EQ(error({"-t", "tcp"}), "bad value 'tcp' for -t: expected one of mpi, ucx, ucx-rma, all");
  EXPECT_EQ(error({"-f", "1"}), "bad value '1' for -f: expected an integer >= 2");
  EXPECT_EQ(error({"-f", "18446744073709551616"}), "bad value '18446744073709551616' for -f: expected an integer >= 2");
  EXPECT_EQ(error({"-n", "0"}), "bad value '0' for -n: expected an integer from 1 to 1000000");
  EXPECT_EQ(error({"-w", "x"}), "bad value 'x' for -w: expected an integer from 0 to 1000000");
  EXPECT_EQ(error({"--rounds", "0"}), "bad value '0' for --rounds: expected an integer from 1 to 1000");
  EXPECT_EQ(error({"-c", "2"}), "bad value '2' for -c: expected 0 or 1");
  EXPECT_EQ(error({"-z", "yes"}), "bad value 'yes' for -z: expected 0 or 1");
  EXPECT_EQ(error({"-b", "8X"}), "bad value '8X' for -b: expected a size in bytes such as 8, 64K, 1M or 2G");
  EXPECT_EQ(error({"-i", "0"}), "bad value '0' for -i: expected a size >= 1 in bytes such as 8, 64K or 1M");
  EXPECT_EQ(error({"--ranks-per-node", "0"}),
            "bad value '0' for --ranks-per-node: expected an integer >= 1 that divides the rank count");
  EXPECT_EQ(error({"--plot", "x.jpg"}), "bad value 'x.jpg' for --plot: expected a file name ending in .png, .svg or .pdf");
  EXPECT_EQ(error({"--json="}), "bad value '' for --json: expected a file name");
  EXPECT_EQ(error({"-a", ""}), "bad value '' for -a: expected one of auto, ring, tree, recursive-doubling, "
                               "rabenseifner, hierarchical, mpi, nccl, all");
}

TEST(BenchOptions, OtherErrors) {
  EXPECT_EQ(error({"--bogus"}), "unknown option '--bogus' (see --help)");
  EXPECT_EQ(error({"-n"}), "missing value for -n (N)");
  EXPECT_EQ(error({"-q1"}), "-q takes no value");
  EXPECT_EQ(error({"-b", "64", "-e", "8"}), "bad value: -b 64 is larger than -e 8");
  EXPECT_EQ(error({"-f", "2", "-i", "8"}), "-f and -i exclude each other: -f N multiplies the size, -i SIZE adds to it");
  EXPECT_EQ(error({"-b", "8", "-e", "1M", "-i", "8"}),
            "bad value '8' for -i: more than 10000 sizes from -b to -e; expected a larger step");
  EXPECT_EQ(parse({"-n", "3", "--help", "--bogus"}).status, ParseResult::Status::Help);
}

TEST(BenchOptions, HelpNamesEveryFlagWithItsDefault) {
  std::string u;  // the help with line breaks and indents as single spaces
  for (char c : usage()) {
    if (c == '\n') c = ' ';
    if (c != ' ' || u.empty() || u.back() != ' ') u += c;
  }
  for (const char* flag : {"-b, --minbytes SIZE", "-e, --maxbytes SIZE", "-f, --stepfactor N", "-i, --stepbytes SIZE",
                           "-a, --algorithms LIST", "-d, --datatype TYPE", "-o, --op OP", "-n, --iters N",
                           "-w, --warmup_iters N", "-c, --check 0|1", "-t, --transport LIST", "-z, --inplace 0|1",
                           "--ranks-per-node K", "--topology FILE", "--json FILE", "--csv FILE", "--plot FILE.png",
                           "-q, --quiet", "--progress", "--rounds N", "--fresh-input", "--reuse-input", "--calibrate", "-h, --help", "ARLAB_BENCH_MIN_BUSBW"})
    EXPECT_NE(u.find(flag), std::string::npos) << flag;
  for (const char* def : {"(default: 8)", "(default: 64M)", "(default: 2)", "(default: all)", "(default: float)",
                          "(default: sum)", "(default: at least 20, and as many more as fill 1 ms of calls, at most 1000)", "(default: 5)", "(default: 1)", "(default: mpi)",
                          "(default: 0)", "(default: none)"})
    EXPECT_NE(u.find(def), std::string::npos) << def;
  EXPECT_NE(u.find("1 (or a bare -z): in place only"), std::string::npos);
}

TEST(BenchSizes, FactorAndStep) {
  BenchOptions o = ok({"-b", "8", "-e", "64M", "-f", "4"});
  std::vector<std::size_t> s = sweep_sizes(o, 4);
  ASSERT_EQ(s.size(), 12u);  // 8 B .. 32 MiB: 8 * 4^12 = 128 MiB is past the end
  EXPECT_EQ(s.front(), 8u);
  EXPECT_EQ(s.back(), std::size_t{32} << 20);
  o = ok({"-b", "1K", "-e", "4K", "-i", "1K"});
  EXPECT_EQ(sweep_sizes(o, 4), (std::vector<std::size_t>{1024, 2048, 3072, 4096}));
  o = ok({"-b", "1", "-e", "9", "-i", "2"});  // 1 3 5 7 9 -> whole doubles only
  EXPECT_EQ(sweep_sizes(o, 8), (std::vector<std::size_t>{8}));
  EXPECT_EQ(sweep_sizes(o, 1), (std::vector<std::size_t>{1, 3, 5, 7, 9}));
  o = ok({"-b", "2", "-e", "3"});
  EXPECT_TRUE(sweep_sizes(o, 4).empty());
}

}  // namespace
}  // namespace arlab::bench

// What the bench does with each algorithm after its probe (a call of no elements). With a GPU,
// nccl refuses host buffers (InvalidArgument): a note, not a failed run; without one it is
// Unavailable like any algorithm this machine lacks.
TEST(BenchProbe, NcclOnHostBuffersIsANoteNotAFailure) {
  using arlab::Algorithm;
  using arlab::bench::Failure;
  using arlab::bench::ProbeVerdict;
  using arlab::bench::probe_verdict;
  using Code = arlab::Error::Code;
  const Failure host{Code::InvalidArgument, "the send and recv buffers must be device memory (cudaMalloc)"};
  const Failure no_gpu{Code::Unavailable, "no usable CUDA device"};
  const Failure broken{Code::Internal, "a bug"};
  EXPECT_EQ(probe_verdict(Algorithm::Nccl, host, false, true), ProbeVerdict::SkipWithNote);
  EXPECT_EQ(probe_verdict(Algorithm::Nccl, std::nullopt, false, true), ProbeVerdict::SkipWithNote);
  EXPECT_EQ(probe_verdict(Algorithm::Nccl, std::nullopt, true, true), ProbeVerdict::Run);
  EXPECT_EQ(probe_verdict(Algorithm::Nccl, no_gpu, false, true), ProbeVerdict::Lacking);
  EXPECT_EQ(probe_verdict(Algorithm::Nccl, no_gpu, false, false), ProbeVerdict::SkipWithNote);
  EXPECT_EQ(probe_verdict(Algorithm::Nccl, host, true, true), ProbeVerdict::Failed);  // -D: a real refusal
  EXPECT_EQ(probe_verdict(Algorithm::Ring, std::nullopt, false, true), ProbeVerdict::Run);
  EXPECT_EQ(probe_verdict(Algorithm::Ring, broken, false, true), ProbeVerdict::Failed);
  EXPECT_EQ(probe_verdict(Algorithm::Ring, host, false, true), ProbeVerdict::Failed);
}

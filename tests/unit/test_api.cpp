// Names, parsing and option resolution of the public API.
#include <gtest/gtest.h>

#include <cstdlib>

#include "arlab/arlab.hpp"

namespace arlab {
namespace {

TEST(Api, AlgorithmNamesRoundTrip) {
  const std::pair<Algorithm, const char*> names[] = {
      {Algorithm::Auto, "auto"}, {Algorithm::Ring, "ring"}, {Algorithm::Tree, "tree"},
      {Algorithm::RecursiveDoubling, "recursive-doubling"}, {Algorithm::Rabenseifner, "rabenseifner"},
      {Algorithm::Hierarchical, "hierarchical"}, {Algorithm::Mpi, "mpi"}, {Algorithm::Nccl, "nccl"}};
  for (auto [a, n] : names) {
    EXPECT_EQ(to_string(a), n);
    EXPECT_EQ(algorithm_from_string(n), a);
  }
  EXPECT_EQ(algorithm_from_string("rd"), Algorithm::RecursiveDoubling);
  EXPECT_EQ(algorithm_from_string("rab"), Algorithm::Rabenseifner);
  EXPECT_EQ(algorithm_from_string("RING"), Algorithm::Ring);
}

TEST(Api, UnknownNamesListTheValidOnes) {
  try {
    algorithm_from_string("butterfly");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), Error::Code::InvalidArgument);
    const std::string m = e.what();
    for (const char* n : {"'butterfly'", "ring", "tree", "recursive-doubling", "rabenseifner", "mpi", "rd", "rab"})
      EXPECT_NE(m.find(n), std::string::npos) << m;
  }
  EXPECT_THROW(datatype_from_string("float128"), Error);
  EXPECT_THROW(reduce_op_from_string("xor"), Error);
  EXPECT_THROW(transport_from_string("tcp"), Error);
}

TEST(Api, TypesAndSizes) {
  EXPECT_EQ(size_of(DataType::Int8), 1u);
  EXPECT_EQ(size_of(DataType::BFloat16), 2u);
  EXPECT_EQ(size_of(DataType::Float32), 4u);
  EXPECT_EQ(size_of(DataType::UInt64), 8u);
  EXPECT_EQ(datatype_from_string("half"), DataType::Float16);
  EXPECT_EQ(datatype_from_string("bf16"), DataType::BFloat16);
  EXPECT_EQ(to_string(DataType::Float64), "double");
  EXPECT_EQ(to_string(ReduceOp::Avg), "avg");
  EXPECT_EQ(to_string(TransportKind::UcxRma), "ucx-rma");
  EXPECT_THROW(size_of(static_cast<DataType>(99)), Error);
  EXPECT_EQ(schedule_algorithms().size(), 5u);  // ring, tree, recursive doubling, Rabenseifner, hierarchical
}

TEST(Api, OptionsFromEnvironment) {
  setenv("ARLAB_ALGO", "rab", 1);
  setenv("ARLAB_CHUNK_BYTES", "64K", 1);
  setenv("ARLAB_TIMEOUT_S", "2.5", 1);
  setenv("ARLAB_DEBUG", "INFO", 1);
  Options o = Options{}.resolved();
  EXPECT_EQ(*o.algorithm, Algorithm::Rabenseifner);
  EXPECT_EQ(*o.chunk_bytes, 64u << 10);
  EXPECT_DOUBLE_EQ(*o.timeout_s, 2.5);
  EXPECT_EQ(*o.log_level, LogLevel::Info);
  Options set;  // a field set in code wins over the environment
  set.algorithm = Algorithm::Ring;
  EXPECT_EQ(*set.resolved().algorithm, Algorithm::Ring);
  setenv("ARLAB_TIMEOUT_S", "soon", 1);
  EXPECT_THROW(Options{}.resolved(), Error);
  setenv("ARLAB_TIMEOUT_S", "1", 1);
  setenv("ARLAB_CHUNK_BYTES", "12Q", 1);
  EXPECT_THROW(Options{}.resolved(), Error);
  for (const char* v : {"ARLAB_ALGO", "ARLAB_CHUNK_BYTES", "ARLAB_TIMEOUT_S", "ARLAB_DEBUG"}) unsetenv(v);
  o = Options{}.resolved();
  EXPECT_EQ(*o.algorithm, Algorithm::Auto);
  EXPECT_EQ(*o.chunk_bytes, 256u << 10);
  EXPECT_DOUBLE_EQ(*o.timeout_s, 300);
  EXPECT_EQ(*o.max_in_flight, 4);
  EXPECT_EQ(*o.segment_bytes, 1u << 20);
  setenv("ARLAB_SEGMENT_BYTES", "0", 1);  // never cut
  EXPECT_EQ(*Options{}.resolved().segment_bytes, 0u);
  setenv("ARLAB_SEGMENT_BYTES", "512K", 1);
  EXPECT_EQ(*Options{}.resolved().segment_bytes, 512u << 10);
  setenv("ARLAB_SEGMENT_BYTES", "big", 1);
  EXPECT_THROW(Options{}.resolved(), Error);
  unsetenv("ARLAB_SEGMENT_BYTES");
  setenv("ARLAB_MAX_IN_FLIGHT", "1", 1);
  EXPECT_EQ(*Options{}.resolved().max_in_flight, 1);
  for (const char* bad : {"0", "9", "two", "2x"}) {
    setenv("ARLAB_MAX_IN_FLIGHT", bad, 1);
    EXPECT_THROW(Options{}.resolved(), Error) << bad;
  }
  Options in_code;
  in_code.max_in_flight = 2;  // wins over the (bad) variable
  EXPECT_EQ(*in_code.resolved().max_in_flight, 2);
  unsetenv("ARLAB_MAX_IN_FLIGHT");
  in_code.max_in_flight = 9;
  EXPECT_THROW(in_code.resolved(), Error);
}

// Every field in the same order: set in code wins, the variable fills an unset field, the
// default comes last. The transport once took the variable over an explicit Mpi.
TEST(Api, ExplicitOptionsWinOverTheEnvironmentForEveryField) {
  setenv("ARLAB_TRANSPORT", "ucx", 1);
  setenv("ARLAB_ALGO", "tree", 1);
  setenv("ARLAB_CHUNK_BYTES", "64K", 1);
  setenv("ARLAB_TIMEOUT_S", "7", 1);
  setenv("ARLAB_DEBUG", "TRACE", 1);
  setenv("ARLAB_TOPOLOGY", "from-env.yaml", 1);
  setenv("ARLAB_CALIBRATE", "force", 1);
  setenv("ARLAB_CACHE_DIR", "/from/env", 1);
  Options set;
  set.transport = TransportKind::Mpi;  // the default's own value, set explicitly
  set.algorithm = Algorithm::Auto;
  set.chunk_bytes = 256u << 10;
  set.timeout_s = 300;
  set.log_level = LogLevel::Warn;
  set.topology = "in-code.yaml";
  set.self_calibration = SelfCalibration::Cached;
  set.cache_dir = "/in/code";
  const Options a = set.resolved();
  EXPECT_EQ(*a.transport, TransportKind::Mpi);
  EXPECT_EQ(*a.algorithm, Algorithm::Auto);
  EXPECT_EQ(*a.chunk_bytes, 256u << 10);
  EXPECT_DOUBLE_EQ(*a.timeout_s, 300);
  EXPECT_EQ(*a.log_level, LogLevel::Warn);
  EXPECT_EQ(*a.topology, "in-code.yaml");
  EXPECT_EQ(*a.self_calibration, SelfCalibration::Cached);
  EXPECT_EQ(*a.cache_dir, "/in/code");
  const Options b = Options{}.resolved();  // unset: the environment
  EXPECT_EQ(*b.transport, TransportKind::Ucx);
  EXPECT_EQ(*b.algorithm, Algorithm::Tree);
  EXPECT_EQ(*b.chunk_bytes, 64u << 10);
  EXPECT_DOUBLE_EQ(*b.timeout_s, 7);
  EXPECT_EQ(*b.log_level, LogLevel::Trace);
  EXPECT_EQ(*b.topology, "from-env.yaml");
  EXPECT_EQ(*b.self_calibration, SelfCalibration::Force);
  EXPECT_EQ(*b.cache_dir, "/from/env");
  for (const char* v : {"ARLAB_TRANSPORT", "ARLAB_ALGO", "ARLAB_CHUNK_BYTES", "ARLAB_TIMEOUT_S", "ARLAB_DEBUG",
                        "ARLAB_TOPOLOGY", "ARLAB_CALIBRATE", "ARLAB_CACHE_DIR"})
    unsetenv(v);
  const Options c = Options{}.resolved();  // neither: the defaults
  EXPECT_EQ(*c.transport, TransportKind::Mpi);
  EXPECT_EQ(*c.log_level, LogLevel::Warn);
  EXPECT_FALSE(c.topology.has_value());
  EXPECT_EQ(*c.self_calibration, SelfCalibration::Cached);
  EXPECT_FALSE(c.cache_dir.has_value());
}

TEST(Api, CalibrateKnobValues) {
  const std::pair<const char*, SelfCalibration> values[] = {
      {"1", SelfCalibration::Cached}, {"cached", SelfCalibration::Cached}, {"0", SelfCalibration::Off},
      {"off", SelfCalibration::Off}, {"force", SelfCalibration::Force}};
  for (const auto& [text, mode] : values) {
    setenv("ARLAB_CALIBRATE", text, 1);
    EXPECT_EQ(*Options{}.resolved().self_calibration, mode) << text;
  }
  for (const char* bad : {"yes", "2", "FORCE", " 1"}) {
    setenv("ARLAB_CALIBRATE", bad, 1);
    try {
      Options{}.resolved();
      ADD_FAILURE() << "ARLAB_CALIBRATE=" << bad << " accepted";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), Error::Code::InvalidArgument);
      EXPECT_EQ(std::string(e.what()), "bad ARLAB_CALIBRATE '" + std::string(bad) +
                                           "'; valid: 1 (cached), 0 (off: the built-in description), force");
    }
  }
  unsetenv("ARLAB_CALIBRATE");
}

}  // namespace
}  // namespace arlab

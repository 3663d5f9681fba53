// NCCL is loaded at run time (baseline/nccl_library.hpp), so that nothing arlab builds needs
// libnccl to start. On the CPU: the library the build found loads, with nccl.h's major version;
// a library without NCCL's symbols and a missing file are refused, each with the reason.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

#include "arlab/arlab.hpp"
#include "baseline/nccl_library.hpp"

namespace {

using arlab::detail::load_nccl;

TEST(NcclLibrary, TheBuildsLibraryLoadsWithNcclHsMajorVersion) {
  const auto& nccl = arlab::detail::nccl_library();  // the loader's search, then the build's path
  EXPECT_EQ(nccl.version / 10000, NCCL_MAJOR);
  EXPECT_FALSE(nccl.path.empty());
  EXPECT_STREQ(nccl.GetErrorString(ncclInvalidArgument) != nullptr ? "ok" : "null", "ok");
  std::string why;
  const auto again = load_nccl(nccl.path, why);
  ASSERT_TRUE(again) << why;
  EXPECT_EQ(again->version, nccl.version);
}

TEST(NcclLibrary, ALibraryWithoutNcclOrNoFileIsRefusedWithTheReason) {
  std::string why;
  EXPECT_FALSE(load_nccl("libm.so.6", why));
  EXPECT_NE(why.find("libm.so.6: lacks ncclGetVersion"), std::string::npos) << why;
  why.clear();
  EXPECT_FALSE(load_nccl("/nonexistent/libnccl.so.2", why));
  EXPECT_NE(why.find("/nonexistent/libnccl.so.2"), std::string::npos) << why;
}

}  // namespace

namespace {

// With ARLAB_NCCL_LIBRARY naming a file that does not load, that is the answer: no other
// library is tried in its place (ctest gpu.nccl_named_library_only sets it; skipped otherwise).
TEST(NcclLibrary, ANamedLibraryIsTheOnlyOneTried) {
  const char* named = std::getenv("ARLAB_NCCL_LIBRARY");
  if (!named || std::string(named).find("/nonexistent/") == std::string::npos)
    GTEST_SKIP() << "run by ctest gpu.nccl_named_library_only, with ARLAB_NCCL_LIBRARY=/nonexistent/...";
  try {
    arlab::detail::nccl_library();
    FAIL() << "loaded another library than the one named";
  } catch (const arlab::Error& e) {
    EXPECT_EQ(e.code(), arlab::Error::Code::Unavailable);
    const std::string m = e.what();
    EXPECT_NE(m.find(named), std::string::npos) << m;
    // One place tried: the reasons, joined by "; ", hold just the named file's.
    const auto open = m.find("loaded ("), close = m.find("); set ARLAB_NCCL_LIBRARY");
    ASSERT_TRUE(open != std::string::npos && close != std::string::npos) << m;
    EXPECT_EQ(m.substr(open, close - open).find("; "), std::string::npos) << m;
  }
}

}  // namespace

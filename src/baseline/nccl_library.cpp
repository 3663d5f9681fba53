#include "baseline/nccl_library.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <optional>
#include <vector>

#include "arlab/arlab.hpp"

#ifndef ARLAB_NCCL_BUILD_LIBRARY
#define ARLAB_NCCL_BUILD_LIBRARY ""
#endif

namespace arlab::detail {
namespace {

template <class F>
void bind(void* handle, const char* name, F& f, std::string& missing) {
  f = reinterpret_cast<F>(dlsym(handle, name));
  if (!f) missing += std::string(missing.empty() ? "" : ", ") + name;
}

}  // namespace

std::optional<NcclLibrary> load_nccl(const std::string& path, std::string& why) {
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char* e = dlerror();
    why = e ? e : path + ": dlopen failed";
    return std::nullopt;
  }
  const auto refuse = [&](std::string reason) -> std::optional<NcclLibrary> {
    why = path + ": " + reason;
    dlclose(handle);
    return std::nullopt;
  };
  NcclLibrary l;
  l.path = path;
  std::string missing;
  bind(handle, "ncclGetVersion", l.GetVersion, missing);
  bind(handle, "ncclGetErrorString", l.GetErrorString, missing);
  bind(handle, "ncclGetUniqueId", l.GetUniqueId, missing);
  bind(handle, "ncclCommInitRank", l.CommInitRank, missing);
  bind(handle, "ncclCommInitAll", l.CommInitAll, missing);
  bind(handle, "ncclCommDestroy", l.CommDestroy, missing);
  bind(handle, "ncclAllReduce", l.AllReduce, missing);
  if (!missing.empty()) return refuse("lacks " + missing);
  if (l.GetVersion(&l.version) != ncclSuccess) return refuse("ncclGetVersion failed");
  // NCCL_VERSION_CODE: major * 10000 + minor * 100 + patch since 2.9, major * 1000 + ... before.
  const int major = l.version >= 10000 ? l.version / 10000 : l.version / 1000;
  if (major != NCCL_MAJOR)
    return refuse("NCCL version code " + std::to_string(l.version) + " (major " + std::to_string(major) +
                  "), not the major version " + std::to_string(NCCL_MAJOR) + " of the nccl.h arlab was built with");
  return l;  // the handle stays open for the process
}

namespace {

NcclLibrary load() {
  std::vector<std::string> tries;
  if (const char* env = std::getenv("ARLAB_NCCL_LIBRARY"); env && *env) {
    tries.emplace_back(env);  // named by the user: that one or none, never another in its place
  } else {
    tries.emplace_back("libnccl.so.2");
    if (*ARLAB_NCCL_BUILD_LIBRARY) tries.emplace_back(ARLAB_NCCL_BUILD_LIBRARY);
  }
  std::string whys;
  for (const std::string& path : tries) {
    std::string why;
    if (auto l = load_nccl(path, why)) return *l;
    whys += (whys.empty() ? "" : "; ") + why;
  }
  throw Error(Error::Code::Unavailable,
              "arlab: nccl baseline: NCCL could not be loaded (" + whys +
                  "); set ARLAB_NCCL_LIBRARY to libnccl.so.2's path, or add its folder to LD_LIBRARY_PATH");
}

}  // namespace

const NcclLibrary& nccl_library() {
  // A failure is not cached as the library is: the next call tries again (and says why again).
  static std::mutex mu;
  static std::optional<NcclLibrary> loaded;
  std::lock_guard lock(mu);
  if (!loaded) loaded = load();
  return *loaded;
}

}  // namespace arlab::detail

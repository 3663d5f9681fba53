// NCCL, loaded at run time (dlopen), so that nothing arlab builds needs libnccl to start: a
// machine without NCCL (or without a GPU) runs every other algorithm, and Algorithm::Nccl
// says what is missing. Only the header (nccl.h) is needed at build time.
//
// Where it looks: $ARLAB_NCCL_LIBRARY (a path) alone when it is set; otherwise
// "libnccl.so.2" through the dynamic loader's search (LD_LIBRARY_PATH, the cache), then the
// library CMake found at configure time (its path is compiled in). A library whose major
// version differs from the header's is refused (NCCL keeps its ABI within a major version).
#pragma once

#include <nccl.h>

#include <optional>
#include <string>

namespace arlab::detail {

struct NcclLibrary {
  std::string path;  // what was loaded
  int version = 0;   // ncclGetVersion: major * 10000 + minor * 100 + patch
  ncclResult_t (*GetVersion)(int*) = nullptr;
  const char* (*GetErrorString)(ncclResult_t) = nullptr;
  ncclResult_t (*GetUniqueId)(ncclUniqueId*) = nullptr;
  ncclResult_t (*CommInitRank)(ncclComm_t*, int, ncclUniqueId, int) = nullptr;
  ncclResult_t (*CommInitAll)(ncclComm_t*, int, const int*) = nullptr;
  ncclResult_t (*CommDestroy)(ncclComm_t) = nullptr;
  ncclResult_t (*AllReduce)(const void*, void*, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                            cudaStream_t) = nullptr;
};

// The library, loaded on first use and kept for the process; throws Error(Unavailable) with
// every place tried and why it failed.
const NcclLibrary& nccl_library();

// One try: the library at `path` (a file, or a name for the loader's search), or nullopt with
// `why` (dlopen's message, the symbols it lacks, or a major version other than nccl.h's).
std::optional<NcclLibrary> load_nccl(const std::string& path, std::string& why);

}  // namespace arlab::detail

# ARLAB_SANITIZE: build every target of this project (the library, its tools and its tests)
# with the compiler's sanitizers. scripts/sanitize.sh configures build-asan/ and build-tsan/
# with it and runs the tests with the options and suppressions of tests/sanitizers/.
#   ""                   off (the default)
#   "address,undefined"  AddressSanitizer (with LeakSanitizer) + UndefinedBehaviorSanitizer
#   "thread"             ThreadSanitizer
# Any comma-separated list that the compiler accepts works ("address", "undefined", ...).
# UBSan findings are not recoverable (-fno-sanitize-recover=undefined): the first one aborts
# the process, so a test with undefined behaviour fails instead of printing and passing.
# Only this project's targets are instrumented: Open MPI, UCX, GoogleTest and yaml-cpp are
# the distribution's prebuilt libraries. Include this file before the add_subdirectory calls.
set(ARLAB_SANITIZE "" CACHE STRING
  "Sanitizers to build with: empty (none), address,undefined, or thread (scripts/sanitize.sh)")
set_property(CACHE ARLAB_SANITIZE PROPERTY STRINGS "" "address,undefined" "thread")

if(ARLAB_SANITIZE)
  string(REPLACE " " "" _arlab_sanitize "${ARLAB_SANITIZE}")
  string(REPLACE "," ";" _arlab_sanitizers "${_arlab_sanitize}")
  if("thread" IN_LIST _arlab_sanitizers AND
     ("address" IN_LIST _arlab_sanitizers OR "leak" IN_LIST _arlab_sanitizers))
    message(FATAL_ERROR "ARLAB_SANITIZE=${ARLAB_SANITIZE}: thread cannot be combined with address or leak")
  endif()
  if(ARLAB_FUZZ)
    message(FATAL_ERROR "ARLAB_SANITIZE and ARLAB_FUZZ do not go together: "
                        "the fuzz targets choose their own sanitizers (scripts/fuzz.sh)")
  endif()
  set(_arlab_sanitize_flags -fsanitize=${_arlab_sanitize} -fno-omit-frame-pointer)
  if("undefined" IN_LIST _arlab_sanitizers)
    list(APPEND _arlab_sanitize_flags -fno-sanitize-recover=undefined)
  endif()

  include(CheckCXXSourceCompiles)
  string(REPLACE ";" " " CMAKE_REQUIRED_FLAGS "${_arlab_sanitize_flags}")
  set(CMAKE_REQUIRED_LINK_OPTIONS ${_arlab_sanitize_flags})
  string(MAKE_C_IDENTIFIER "ARLAB_SANITIZE_WORKS_${_arlab_sanitize}" _arlab_sanitize_check)
  check_cxx_source_compiles("int main() { return 0; }" ${_arlab_sanitize_check})
  unset(CMAKE_REQUIRED_FLAGS)
  unset(CMAKE_REQUIRED_LINK_OPTIONS)
  if(NOT ${_arlab_sanitize_check})
    message(FATAL_ERROR "ARLAB_SANITIZE=${ARLAB_SANITIZE}: ${CMAKE_CXX_COMPILER} cannot build and link "
                        "with -fsanitize=${_arlab_sanitize} (with clang: apt-get install libclang-rt-14-dev)")
  endif()

  # Directory-wide, before the subdirectories: every target defined below inherits them.
  add_compile_options(${_arlab_sanitize_flags})
  add_link_options(${_arlab_sanitize_flags})
  message(STATUS "arlab: sanitizers ${_arlab_sanitize} (ARLAB_SANITIZE)")
endif()

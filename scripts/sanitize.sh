#!/usr/bin/env bash
# Builds arlab's tests with sanitizers (ARLAB_SANITIZE, cmake/sanitizers.cmake) and runs them
# with ctest, printing ctest's summary.
#   asan  build-asan/: AddressSanitizer + LeakSanitizer + UndefinedBehaviorSanitizer. The unit
#         tests, the loopback tests (ranks as threads) and the mpirun tests at 2 and 3 ranks
#         (mpi, ucx and ucx-rma transports, UCX over sm and tcp, the timeout tests).
#   tsan  build-tsan/: ThreadSanitizer. The in-process multi-threaded tests: the loopback
#         tests (the engine on threads, every algorithm), Auto on threads, and the UCX
#         registration cache.
#   all   both (the default).
# Not run here: soak.*, faults.* (they stop and kill processes), the np1/np4/np5 runs, and the
# bench, model, calibrate and package tests (their tools are not built with sanitizers).
# Exit status 1 when a test fails or when any sanitizer wrote a report, even from a process
# whose test passed otherwise (a rank under mpirun, a test judged by its output): every report
# goes to BUILD/sanitizer-reports/ (log_path), which is printed at the end.
# Suppressions: tests/sanitizers/*.supp, only for frames inside Open MPI, UCX and their
# dependencies. UBSan has none: its findings are in arlab's code, which is what is instrumented.
# Usage: scripts/sanitize.sh [asan|tsan|all]
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
stage=${1:-all}
case $stage in
  asan | tsan | all) ;;
  *) echo "usage: scripts/sanitize.sh [asan|tsan|all]" >&2; exit 2 ;;
esac
jobs=$(nproc)
((jobs > 2)) && jobs=2  # CI has 2 cores; more jobs only slow the mpirun tests down

# clang: it compiles the sanitized build about 2.5 times faster than g++ 12.
packages=(clang libclang-rt-14-dev cmake ninja-build pkg-config libopenmpi-dev openmpi-bin libucx-dev
          libyaml-cpp-dev libgtest-dev)
source scripts/packages.sh
install_missing "${packages[@]}"

# configure BUILD SANITIZERS: -O1 (fast enough to run, quick to compile) with line tables for
# the reports' stacks; assertions stay on. Only the library and its tests.
configure() {
  CC=clang CXX=clang++ cmake -S . -B "$1" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DCMAKE_C_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -gline-tables-only" \
    -DARLAB_SANITIZE="$2" -DARLAB_CUDA=OFF -DARLAB_NCCL=OFF \
    -DARLAB_BUILD_BENCH=OFF -DARLAB_BUILD_TOOLS=OFF -DARLAB_BUILD_TESTS=ON >/dev/null
}

# check_reports DIR: prints every report written there; false when there is one.
check_reports() {
  local dir=$1 found=0 f
  shopt -s nullglob
  for f in "$dir"/*; do
    [[ -s $f ]] || continue
    found=1
    echo "==== sanitizer report: $f"
    cat "$f"
  done
  shopt -u nullglob
  if ((found)); then
    echo "arlab: sanitizer reports in $dir (above): FAILED"
    return 1
  fi
  echo "arlab: no sanitizer reports"
}

# run_ctest BUILD REPORTS ctest-args...: ctest with the stage's environment; false when a test
# failed or a sanitizer reported.
run_ctest() {
  local build=$1 reports=$2 rc=0
  shift 2
  rm -rf "$reports"
  mkdir -p "$reports"
  ctest --test-dir "$build" -j "$jobs" --output-on-failure "$@" || rc=1
  check_reports "$reports" || rc=1
  return $rc
}

asan() {
  local build=build-asan reports=$root/build-asan/sanitizer-reports rc=0
  # (set -e does not hold inside a function called with ||: each step checks its status.)
  configure $build "address,undefined" || return 1
  cmake --build $build -j "$jobs" --target arlab-unit-tests arlab-mpi-tests arlab-mpi-async-tests arlab-mpi-timeout-test || return 1
  # detect_stack_use_after_return stays off: it puts every frame on the heap, several times
  # slower in the executor and the reducers.
  local common="log_path=$reports/report:print_stacktrace=1:halt_on_error=1"
  local asan="$common:detect_leaks=1:check_initialization_order=1:strict_init_order=1:detect_odr_violation=2"
  export LSAN_OPTIONS="suppressions=$root/tests/sanitizers/lsan.supp:print_suppressions=0"
  export UBSAN_OPTIONS="$common:report_error_type=1"

  # Unit and loopback tests. Left out: the symbolic validation of every algorithm at every
  # p = 1..64 and the closed-form walks at p >= 100 (thousands of ranks): the same code as the
  # smaller cases next to them (SmallChunksManyOrders, Validator.*, p < 100), at minutes each
  # under ASan.
  echo "-- unit and loopback tests"
  export ASAN_OPTIONS="$asan"
  run_ctest $build "$reports" \
    -E '^(mpi|soak|faults|bench|model|calibrate|package)\.|^Algorithms/ValidatorTest\.AllRankCountsAndCounts/|TopologyWalkClosedForms\.[A-Za-z]+/[0-9][0-9][0-9]+$' ||
    rc=1

  # Under mpirun: the mpi transport (and the Transports and RegistrationCache suites) at 2 and
  # 3 ranks, ucx and ucx-rma over shared memory at 3 ranks and over tcp at 2, and the timeout
  # tests. mpirun starts the ranks on this node as its children, which inherit its
  # environment: ctest's ENVIRONMENT and the options here reach them without -x.
  # UCX needs no UCX_MEM_* setting under ASan: its memory hooks (reloc mode) work beside
  # ASan's interceptors, and UCX_MEM_MMAP_HOOK_MODE=none would break the registration cache,
  # which drops registrations on UCX's munmap events (RegistrationCacheTest fails without).
  # fast_unwind_on_malloc=0: the frame-pointer unwinder stops inside Open MPI (built without
  # frame pointers); the slow one walks up to the Open MPI frames that lsan.supp names. It
  # costs the unit tests five times their time, so only here.
  echo "-- mpirun tests"
  export ASAN_OPTIONS="$asan:fast_unwind_on_malloc=0:malloc_context_size=64"
  run_ctest $build "$reports" \
    -R '^mpi\.(allreduce\.np[23]|(ucx|ucx-rma)\.sm\.np3|(ucx|ucx-rma)\.tcp\.np2|timeout\.((ucx|ucx-rma)\.)?np3|async\.np2)$' ||
    rc=1
  return $rc
}

tsan() {
  local build=build-tsan reports=$root/build-tsan/sanitizer-reports
  configure $build thread || return 1
  cmake --build $build -j "$jobs" --target arlab-unit-tests || return 1
  # Only the threaded tests: the rest of the unit tests are single-threaded.
  export TSAN_OPTIONS="log_path=$reports/report:halt_on_error=1:second_deadlock_stack=1:suppressions=$root/tests/sanitizers/tsan.supp:print_suppressions=0"
  run_ctest $build "$reports" -R '^(Loopback|Algorithms/LoopbackAllreduce|Auto|Async|Progress|RegistrationCacheTest|DevicePathUse|Algorithms/DevicePath)\.'
}

rc=0
if [[ $stage == asan || $stage == all ]]; then
  echo "== sanitizers: AddressSanitizer + UndefinedBehaviorSanitizer (build-asan)"
  asan || rc=1
fi
if [[ $stage == tsan || $stage == all ]]; then
  echo "== sanitizers: ThreadSanitizer (build-tsan)"
  tsan || rc=1
fi
exit $rc

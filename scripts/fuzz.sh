#!/usr/bin/env bash
# Fuzzes the topology reader and the command lines of arlab-bench, arlab-model and
# arlab-calibrate (tests/fuzz) with libFuzzer, ASan and UBSan. Installs clang and its runtime
# when missing, configures and builds build-fuzz/ (the four fuzzers and what they link, nothing
# else), replays the seeds and regression inputs (ctest fuzz.regressions.*), then fuzzes each
# target in turn for SECONDS_PER_TARGET on a temporary copy of its corpus plus its seeds, and
# prints one line per target. Exit 1 when a target crashed, leaked, hung (10 s on one input)
# or ran out of memory (2 GiB), naming the reproducer; keep a fixed one, minimized, in
# tests/fuzz/regressions/<target>/. About 1.5 minutes of build plus 4 x SECONDS on 2 cores.
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET]     (default 30)
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${1:-30}
if ! [[ $seconds =~ ^[1-9][0-9]*$ ]]; then
  echo "usage: scripts/fuzz.sh [SECONDS_PER_TARGET]   (a whole number of seconds, default 30)" >&2
  exit 2
fi
build=build-fuzz
targets=(topology bench_cli model_cli calibrate_cli)

# libclang-rt-dev: libFuzzer and the sanitizer runtimes of Debian's clang (libclang-rt-14-dev
# on Debian 12).
packages=(clang libclang-rt-dev cmake ninja-build pkg-config libopenmpi-dev openmpi-bin libyaml-cpp-dev)
source scripts/packages.sh
install_missing "${packages[@]}"

# Build type "Fuzz" has no flags of its own: the plain arlab library the fuzzers link compiles
# unoptimised (quickly); the code under test gets -O1 and the instrumentation from
# tests/fuzz/CMakeLists.txt. No bench, tools, tests, UCX or CUDA: the fuzzers need none.
CC=clang CXX=clang++ cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Fuzz -DARLAB_FUZZ=ON \
  -DARLAB_BUILD_TESTS=OFF -DARLAB_BUILD_BENCH=OFF -DARLAB_BUILD_TOOLS=OFF \
  -DARLAB_UCX=OFF -DARLAB_CUDA=OFF -DARLAB_NCCL=OFF >/dev/null
cmake --build "$build" --target arlab-fuzzers -j "$(nproc)"
ctest --test-dir "$build" -L '^fuzz$' --output-on-failure

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
artifacts=$build/tests/fuzz/artifacts
logs=$build/tests/fuzz/logs
mkdir -p "$artifacts" "$logs"
failed=0
for target in "${targets[@]}"; do
  corpus=$work/$target
  mkdir -p "$corpus"
  cp tests/fuzz/corpus/$target/* "$corpus"/
  seeds=(tests/fuzz/regressions/$target)
  [[ $target == topology ]] && seeds+=(topology)
  before=$(ls "$corpus" | wc -l)
  log=$logs/$target.log
  rc=0
  "$build/tests/fuzz/fuzz_$target" "$corpus" "${seeds[@]}" -dict=tests/fuzz/dict/$target.dict \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -artifact_prefix="$artifacts/$target-" >"$log" 2>&1 || rc=$?

  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  stats=$(grep -E '^#[0-9]+[[:space:]].*cov: ' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$stats")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$stats")
  after=$(ls "$corpus" | wc -l)
  if ((rc == 0)); then
    result=ok
  else
    failed=1
    reproducer=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    kind=$(grep -oE '^fuzz: .*|ERROR: (AddressSanitizer|LeakSanitizer): [a-z-]+|runtime error: .*|ERROR: libFuzzer: [a-z-]+( signal)?' \
      "$log" | head -1 || true)
    result="FAILED (exit $rc${kind:+, $kind}): reproducer ${reproducer:-none written}; log $log"
  fi
  printf 'fuzz %-13s %4ss  runs %-9s cov %-5s ft %-6s corpus %s (+%s new)  %s\n' "$target" "$seconds" \
    "${runs:-?}" "${cov:-?}" "${ft:-?}" "$after" "$((after - before))" "$result"
done
if ((failed)); then
  echo "fuzz: replay a reproducer with $build/tests/fuzz/fuzz_<target> FILE; minimize it with" \
       "-minimize_crash=1 -runs=100000 FILE; keep it in tests/fuzz/regressions/<target>/" >&2
fi
exit $failed

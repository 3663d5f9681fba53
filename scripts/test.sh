#!/usr/bin/env bash
# Builds and runs every test, in stages, and prints each stage's ctest summary and time:
#   main   unit tests, loopback tests (ranks as threads), mpirun tests at 1 to 5 ranks, the
#          bench/model/calibrate command lines, faults, and the soak (ARLAB_SOAK_SECONDS of
#          random calls per configuration, 30 by default), in build/
#   cpu    the CPU-only build (-DARLAB_CUDA=OFF: no kernels/, no NCCL; main builds them when nvcc
#          is found), in build-cpu/: every test but the mpirun ones (unit, loopback, the package
#          test against its install, the bench/model/calibrate command lines), and mpirun
#          all-reduce at 2 and 3 ranks
#   asan   AddressSanitizer + UBSan: unit, loopback and np 2-3 mpirun tests (scripts/sanitize.sh;
#          like tsan, a CPU-only build)
#   tsan   ThreadSanitizer: the loopback and other multi-threaded tests  (scripts/sanitize.sh)
#   fuzz   libFuzzer: the regression inputs, then FUZZ_SECONDS (20) per target (scripts/fuzz.sh)
# Every stage runs even when an earlier one failed; the exit status is 1 if any failed.
# Usage: scripts/test.sh [--quick] [--stages main,cpu,asan,tsan,fuzz]
#   --quick   the main stage only, with 10 s soaks (about 8 minutes on 2 cores)
set -uo pipefail
cd "$(dirname "$0")/.."

stages=main,cpu,asan,tsan,fuzz
soak_seconds=${ARLAB_SOAK_SECONDS:-30}
while (($#)); do
  case $1 in
    --quick) stages=main soak_seconds=10 ;;
    --stages) stages=${2:?--stages needs a list, e.g. main,fuzz}; shift ;;
    --stages=*) stages=${1#--stages=} ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "scripts/test.sh: unknown argument '$1' (usage: scripts/test.sh [--quick] [--stages main,cpu,asan,tsan,fuzz])" >&2
       exit 2 ;;
  esac
  shift
done
IFS=, read -ra selected <<<"$stages"
for s in "${selected[@]}"; do
  case $s in main|cpu|asan|tsan|fuzz) ;; *) echo "scripts/test.sh: unknown stage '$s' (main, cpu, asan, tsan, fuzz)" >&2; exit 2 ;; esac
done

main_stage() {
  bash scripts/setup.sh build || return 1
  cmake -B build -DARLAB_SOAK_SECONDS="$soak_seconds" >/dev/null || return 1
  ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 900
}

cpu_stage() {
  bash scripts/setup.sh build-cpu -DARLAB_CUDA=OFF || return 1
  [[ ! -e build-cpu/kernels ]] || { echo "build-cpu: kernels/ was configured: CUDA is not off" >&2; return 1; }
  local rc=0
  ctest --test-dir build-cpu --output-on-failure -j "$(nproc)" --timeout 600 -E '^(soak|faults|cluster|mpi)\.' || rc=1
  ctest --test-dir build-cpu --output-on-failure --timeout 300 -R '^mpi\.allreduce\.np[23]$' || rc=1
  return $rc
}

declare -A took result
failed=0
for s in "${selected[@]}"; do
  echo "=== test stage $s ==="
  start=$SECONDS
  case $s in
    main) main_stage ;;
    cpu) cpu_stage ;;
    asan) bash scripts/sanitize.sh asan ;;
    tsan) bash scripts/sanitize.sh tsan ;;
    fuzz) bash scripts/fuzz.sh "${FUZZ_SECONDS:-20}" ;;
  esac
  rc=$?
  took[$s]=$((SECONDS - start))
  if ((rc == 0)); then result[$s]=passed; else result[$s]="FAILED (exit $rc)"; failed=1; fi
  echo "=== test stage $s: ${result[$s]} in ${took[$s]} s ==="
done

echo "=== summary ==="
total=0
for s in "${selected[@]}"; do
  printf '%-5s %6d s  %s\n' "$s" "${took[$s]}" "${result[$s]}"
  total=$((total + took[$s]))
done
printf '%-5s %6d s  %s\n' all "$total" "$( ((failed)) && echo FAILED || echo passed)"
exit $failed

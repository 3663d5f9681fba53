#!/usr/bin/env bash
# Builds and runs every test, in stages, and prints each stage's ctest summary and time:
#   main   unit tests, loopback tests (ranks as threads), mpirun tests at 1 to 5 ranks, the
#          bench/model/calibrate command lines, faults, and the soak (ARLAB_SOAK_SECONDS of
#          random calls per configuration, 60 by default), in build/
#   asan   AddressSanitizer + UBSan: unit, loopback and np 2-3 mpirun tests (scripts/sanitize.sh;
#          like tsan, a CPU-only build: -DARLAB_CUDA=OFF, where main builds kernels/ when nvcc is found)
#   tsan   ThreadSanitizer: the loopback and other multi-threaded tests  (scripts/sanitize.sh)
#   fuzz   libFuzzer: the regression inputs, then FUZZ_SECONDS (20) per target (scripts/fuzz.sh)
# Every stage runs even when an earlier one failed; the exit status is 1 if any failed.
# Usage: scripts/test.sh [--quick] [--stages main,asan,tsan,fuzz]
#   --quick   the main stage only, with 10 s soaks (about 8 minutes on 2 cores)
set -uo pipefail
cd "$(dirname "$0")/.."

stages=main,asan,tsan,fuzz
soak_seconds=${ARLAB_SOAK_SECONDS:-60}
while (($#)); do
  case $1 in
    --quick) stages=main soak_seconds=10 ;;
    --stages) stages=${2:?--stages needs a list, e.g. main,fuzz}; shift ;;
    --stages=*) stages=${1#--stages=} ;;
    -h|--help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "scripts/test.sh: unknown argument '$1' (usage: scripts/test.sh [--quick] [--stages main,asan,tsan,fuzz])" >&2
       exit 2 ;;
  esac
  shift
done
IFS=, read -ra selected <<<"$stages"
for s in "${selected[@]}"; do
  case $s in main|asan|tsan|fuzz) ;; *) echo "scripts/test.sh: unknown stage '$s' (main, asan, tsan, fuzz)" >&2; exit 2 ;; esac
done

main_stage() {
  bash scripts/setup.sh build || return 1
  cmake -B build -DARLAB_SOAK_SECONDS="$soak_seconds" >/dev/null || return 1
  ctest --test-dir build --output-on-failure -j "$(nproc)" --timeout 900
}

declare -A took result
failed=0
for s in "${selected[@]}"; do
  echo "=== test stage $s ==="
  start=$SECONDS
  case $s in
    main) main_stage ;;
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

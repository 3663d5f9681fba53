#!/usr/bin/env bash
# Runs one arlab-faults scenario under mpirun, bounded, and checks that every rank expected to
# be left printed a PASSED verdict and none FAILED.
# Usage: faults.sh MPIRUN "MPIRUN FLAGS" ARLAB_FAULTS SCENARIO TRANSPORT NP
set -uo pipefail
mpirun=$1 flags=$2 bin=$3 scenario=$4 transport=$5 np=$6
expected=$np
case $scenario in stop|kill) expected=$((np - 1)) ;; esac
# shellcheck disable=SC2086
start=$SECONDS
out=$(timeout -s KILL 45 "$mpirun" -np "$np" $flags --mca orte_abort_on_non_zero_status 0 \
      -x ARLAB_TIMEOUT_S -x UCX_TLS "$bin" "$scenario" -t "$transport" 2>&1)
took=$((SECONDS - start))  # mpirun's own status is the victim's (137 after SIGKILL)
echo "$out"
passed=$(grep -c "^faults: rank [0-9]* PASSED" <<<"$out")
failed=$(grep -c "^faults: rank [0-9]* FAILED" <<<"$out")
if ((took >= 45)); then
  echo "faults: mpirun did not end within 45 s"
elif [[ $failed == 0 && $passed == "$expected" ]]; then
  echo "faults: all $passed verdicts passed"
  exit 0
fi
echo "faults: $passed of $expected ranks passed, $failed failed"
exit 1

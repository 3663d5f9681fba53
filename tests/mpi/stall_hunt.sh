#!/bin/bash
# Runs arlab-soak again and again, watching each run: a run in which a rank's main thread has
# stayed STALL_S seconds in one place (the soak's --stall-report, written to per-rank files
# with --stall-log: mpirun's output forwarding may stall with the ranks), or that prints
# nothing for 10 s more than that (the soak reports every 10 s), has stalled, and every rank's threads
# are then dumped with gdb before the run is stopped. For stalls too rare for one ctest soak
# to meet.
#
#   tests/mpi/stall_hunt.sh [-n RANKS] [-r RUNS] [-s STALL_S] [-o DIR] [-- SOAK FLAGS...]
#
#   -n RANKS    ranks per run (5)
#   -r RUNS     runs at most (10); the hunt goes on after a stall
#   -s STALL_S  seconds a rank stays in one place that count as a stall (15)
#   -o DIR      where each stalled run's output and stacks go (./stall-hunt)
#   -p          also sample the stalled ranks with perf for 3 s (run.perf.txt: where their time goes)
#   after --     flags for arlab-soak (default: --seconds 30)
#
# ARLAB_SOAK names the binary (default build/tests/mpi/arlab-soak); ARLAB_TIMEOUT_S (200 here)
# stays above the stall, so that a stall is seen whole rather than cut by arlab's timeout.
# Before the stacks, the scheduler's view of every rank thread is taken twice, 2 s apart
# (run.sched.txt: state, CPU time run and time waited runnable, from /proc/PID/task/TID/schedstat,
# and the system call it is in): a thread that stays runnable without running is starved by the
# scheduler, one in state D inside a system call is blocked in the kernel, not in arlab. The
# kernel stacks come first (run.kstacks.txt: the ranks' threads, and every blocked or
# runnable thread on the machine), since a stall may end before a fork runs.
# Exit status: 0 when no run stalled or failed, 1 otherwise.
set -u
# One line per thread of the given processes: pid tid name state run_ns wait_ns slices, then
# the system call it is in (/proc/PID/task/TID/syscall: its number; "running" for a thread
# that is runnable, whose place the kernel does not report). Shell builtins only: with 5 ranks on 2 cores a fork can take a second.
sched_snapshot() {
  local pid task name stat sched call
  for pid in "$@"; do
    for task in /proc/"$pid"/task/*; do
      { read -r name < "$task/comm" && read -r stat < "$task/stat" && read -r sched < "$task/schedstat"; } 2>/dev/null || continue
      read -r call < "$task/syscall" 2>/dev/null || call=?
      stat=${stat##*) }
      echo "$pid ${task##*/} ${name// /_} ${stat%% *} $sched syscall ${call%% 0x*}"
    done
  done
}
# The kernel stack (/proc/PID/task/TID/stack, root only) of every thread of the given
# processes, then of every other thread on the machine that is blocked (D) or runnable (R):
# a thread blocked in the kernel waits for a lock or a work item, and the one that holds it is
# most often among the runnable ones that do not get a CPU (so the soak's stalls were found:
# kdamond.0 preempted inside rmap_walk_anon, holding the anon_vma lock a rank's brk needs;
# docs/ddp.md). Shell builtins only.
kernel_stacks() {
  local task stat name line mine=" $* "
  for task in /proc/[0-9]*/task/[0-9]*; do
    { read -r stat < "$task/stat" && read -r name < "$task/comm"; } 2>/dev/null || continue
    stat=${stat##*) }
    local pid=${task#/proc/}; pid=${pid%%/*}
    [[ $mine == *" $pid "* || ${stat%% *} == [DR] ]] || continue
    echo "## $pid ${task##*/} ${name// /_} ${stat%% *}"
    while read -r line; do echo "  $line"; done < "$task/stack" 2>/dev/null
  done
}
# While a run stalls, forks on this machine can stall too (the watcher below once saw nothing
# for the 133 s a stall lasted), so the watching uses shell builtins only: no `sleep`, `date`,
# `stat` or command substitution.
# `seen`: the first rank report of the run's --stall-log directory whose rank has not gone on
# since; empty when none.
stalled_rank() {
  local f line last
  seen=
  for f in "$1"/rank-*.txt; do
    [ -f "$f" ] || continue
    last=
    while read -r line; do last=$line; done < "$f"
    case "$last" in *"has been in"*) seen=$last; return ;; esac
  done
}
# `pids`: the processes whose parent is $1 (mpirun's children: the ranks).
children_of() {
  local f stat rest
  pids=
  for f in /proc/[0-9]*/stat; do
    read -r stat < "$f" 2>/dev/null || continue
    rest=${stat##*) }
    rest=${rest#* }
    if [ "${rest%% *}" = "$1" ]; then f=${f#/proc/}; pids+=" ${f%/stat}"; fi
  done
}
ranks=5 runs=10 stall_s=15 out=./stall-hunt sample=0
while [ $# -gt 0 ]; do
  case "$1" in
    -n) ranks=$2; shift 2 ;;
    -r) runs=$2; shift 2 ;;
    -s) stall_s=$2; shift 2 ;;
    -o) out=$2; shift 2 ;;
    -p) sample=1; shift ;;
    --) shift; break ;;
    *) echo "stall_hunt.sh: unknown flag '$1'" >&2; exit 2 ;;
  esac
done
soak_flags=("$@")
[ ${#soak_flags[@]} -eq 0 ] && soak_flags=(--seconds 30)
soak=${ARLAB_SOAK:-build/tests/mpi/arlab-soak}
[ -x "$soak" ] || { echo "stall_hunt.sh: no $soak (build first, or set ARLAB_SOAK)" >&2; exit 2; }
command -v gdb >/dev/null || echo "stall_hunt.sh: no gdb: stalls are counted, not dumped" >&2
mkdir -p "$out"
# A wait without `sleep`: a read that times out on a FIFO nobody writes to.
rm -f "$out/.tick" && mkfifo "$out/.tick" && exec {tick}<>"$out/.tick"
nap() { read -r -t "$1" -u "$tick" _; }
bad=0
for i in $(seq 1 "$runs"); do
  log="$out/run$i.txt" reports="$out/run$i.stall"
  rm -rf "$reports" && mkdir -p "$reports"
  mpirun --allow-run-as-root -np "$ranks" --oversubscribe --mca mpi_yield_when_idle 1 \
    --mca btl_vader_single_copy_mechanism none -x ARLAB_TIMEOUT_S="${ARLAB_TIMEOUT_S:-200}" \
    -x UCX_TLS="${UCX_TLS:-sm,self}" stdbuf -oL "$soak" --stall-report "$stall_s" --stall-log "$reports" "${soak_flags[@]}" > "$log" 2>&1 &
  job=$!
  printf -v start '%(%s)T' -1
  last=$start lines=0 stalled=0
  while kill -0 "$job" 2>/dev/null; do
    nap 1
    printf -v now '%(%s)T' -1
    mapfile -t output < "$log"
    [ ${#output[@]} != "$lines" ] && lines=${#output[@]} last=$now
    stalled_rank "$reports"
    if [ -n "$seen" ] || [ $((now - last)) -gt $((stall_s + 10)) ]; then
      stalled=1
      echo "run $i: ${seen:-no output for $((now - last)) s}"
      children_of "$job"
      kernel_stacks $pids > "$out/run$i.kstacks.txt" 2>&1  # first: the stall may end by the time a fork (ps) runs
      { printf '# pid tid name state run_ns wait_ns slices syscall, at %(%T)T UTC\n' -1; sched_snapshot $pids
        nap 2
        printf '# again, at %(%T)T UTC\n' -1; sched_snapshot $pids
        echo "# every runnable thread on the machine"; ps -eLo pid,tid,stat,pcpu,cls,ni,comm | awk 'NR==1 || $3 ~ /R/'
      } > "$out/run$i.sched.txt" 2>&1
      if [ $sample = 1 ] && command -v perf >/dev/null; then
        perf record -q -e cpu-clock -F 997 -g -o "$out/run$i.perf.data" -p "$(echo $pids | tr ' ' ,)" -- sleep 3 >/dev/null 2>&1
        perf report -i "$out/run$i.perf.data" --no-children --sort pid,sym --stdio -g none 2>/dev/null |
          grep -v '^#' | grep -v '^$' | head -60 > "$out/run$i.perf.txt"
      fi
      dumps=()
      if command -v gdb >/dev/null; then
        for pid in $pids; do
          gdb -p "$pid" -batch -ex "thread apply all bt 40" > "$out/run$i.stacks.$pid.txt" 2>&1 &
          dumps+=($!)
        done
        wait "${dumps[@]}"
      fi
      kill $pids 2>/dev/null
      kill "$job" 2>/dev/null
      break
    fi
  done
  wait "$job" 2>/dev/null
  rc=$?
  if [ $stalled = 1 ]; then
    nap 2
    kill -9 $pids 2>/dev/null  # ranks mpirun left behind
    bad=1
    printf -v stamp '%(%H:%M:%S)T' -1
    echo "run $i: stalled ($stamp UTC, last output at $((last - start)) s, stopped at $((now - start)) s): $log, $reports, $out/run$i.stacks.*"
  elif [ $rc != 0 ] || ! grep -q "calls exact" "$log"; then
    bad=1
    echo "run $i: failed (exit $rc): $log"
  else
    echo "run $i: $(grep -o 'calls exact in [0-9.]* s' "$log")"
    rm -rf "$log" "$reports"
  fi
done
exec {tick}>&-
rm -f "$out/.tick"
exit $bad

#!/bin/bash
# Watches the kernel's per-CPU threads (kworker, ksoftirqd, rcu_*, migration) for time spent
# runnable but unrun: every second, each one's wait since the last look (from
# /proc/PID/schedstat, updated when the thread next runs); a wait over LIMIT_MS is printed with
# the time of day and every runnable thread (tid:cpuN:polP, P the scheduling policy). Such a
# thread cannot move to another CPU, so a long wait says that its CPU left runnable threads
# unrun that long: beside a soak's --stall-report, it dates stalls caused by the scheduler
# (docs/ddp.md). Shell builtins only: a loaded machine must not delay the watcher itself.
#
#   tests/mpi/starved_threads.sh [LIMIT_MS (500)] > waits.txt &   ... runs ...   kill %1
limit_ms=${1:-500}
declare -A prev
exec {tick}<> <(:)  # a pipe nobody writes to: `read -t` on it waits without a fork
while :; do
  printf -v now '%(%T)T' -1
  worst= worst_ns=0
  for d in /proc/[0-9]*; do
    read -r name < "$d/comm" 2>/dev/null || continue
    case $name in kworker/*|ksoftirqd/*|rcu_*|migration/*) ;; *) continue ;; esac
    read -r _ waited _ < "$d/schedstat" 2>/dev/null || continue
    last=${prev[$d]:-$waited}
    prev[$d]=$waited
    if [ $((waited - last)) -gt "$worst_ns" ]; then worst_ns=$((waited - last)) worst="$name(${d#/proc/})"; fi
  done
  if [ "$worst_ns" -gt $((limit_ms * 1000000)) ]; then
    line="$now $worst waited $((worst_ns / 1000000)) ms; runnable:"
    for t in /proc/[0-9]*/task/*; do
      read -r stat < "$t/stat" 2>/dev/null || continue
      set -- ${stat##*) }
      [ "$1" = R ] && line+=" ${t##*/}:cpu${37}:pol${39}"
    done
    echo "$line"
  fi
  read -r -t 1 -u "$tick" _
done

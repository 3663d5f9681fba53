#!/usr/bin/env bash
# ctest cluster.2x2: topology/emulate/cluster up (2 nodes x 2 ranks, 10 Gbit/s so that the
# check is quick), then across it: every algorithm against MPI_Allreduce exactly (every type,
# op, odd count, in place and not) over arlab's mpi transport and hierarchical and auto over ucx;
# `verify` (tcp between the nodes, vader inside); a short bench of ring and hierarchical; then
# down, also when a step failed. Skipped (77) where namespaces are refused.
# Usage: cluster_test.sh CLUSTER-SCRIPT MPI-TESTS ARLAB-BENCH
set -u
cluster=$1 tests=$2 bench=$3
# A cluster of its own, beside any the user has up.
export ARLAB_CLUSTER_DIR=${TMPDIR:-/tmp}/arlab-cluster-test-$$ ARLAB_CLUSTER_PREFIX=act$(( $$ % 100000 ))- ARLAB_TIMEOUT_S=60
out=$("$cluster" up --nodes 2 --ranks-per-node 2 --inter-gbit 10 2>&1)
rc=$?
echo "$out"
(( rc == 77 )) && exit 77
(( rc == 0 )) || exit 1
trap '"$cluster" down >/dev/null' EXIT
fail() { echo "FAILED: $*"; exit 1; }

timeout 240 "$cluster" exec -- "$tests" --gtest_filter='Algorithms/AgainstMpi.*:Mpi.*' || fail "the algorithms over mpi across the cluster"
ARLAB_TRANSPORT=ucx timeout 120 "$cluster" exec -- "$tests" \
  --gtest_filter='Algorithms/AgainstMpi.*/hierarchical:Algorithms/AgainstMpi.*/auto' || fail "hierarchical over ucx across the cluster"
v=$(timeout 120 "$cluster" verify "$bench" 2>&1)
echo "$v"
grep -q 'rank on n0 -> rank 2 on n1: tcp' <<<"$v" || fail "verify: no tcp between the nodes"
grep -q 'rank on n0 -> rank 1 on n0: vader' <<<"$v" || fail "verify: no shared memory inside a node"
b=$(timeout 120 "$cluster" exec -- "$bench" -b 1M -e 1M -a ring,hierarchical,auto -t mpi,ucx -n 3 -w 1 2>&1)
echo "$b"
grep -q '# arlab-bench .*: all-reduce on 4 ranks on 2 hosts' <<<"$b" || fail "the bench did not see 2 hosts"
grep -q '# Out of bounds values : 0 OK' <<<"$b" || fail "the bench found wrong values"
echo "cluster test: passed"

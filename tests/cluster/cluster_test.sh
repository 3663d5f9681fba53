#!/usr/bin/env bash
# ctest cluster.2x2: topology/emulate/cluster up (2 nodes x 2 ranks, 10 Gbit/s so that the
# check is quick), then across it: every algorithm against MPI_Allreduce exactly (every type,
# op, odd count, in place and not) over arlab's mpi transport and hierarchical and auto over ucx;
# `verify` (tcp between the nodes, vader inside); a short bench of ring and hierarchical, its
# models self-calibrated into an empty cache, whose links within a node must be of this world
# (no alpha of 0 and bandwidth of 10^6 GB/s) and fitted to chains of exchanges, since a call's
# own cost after a barrier across the hosts (18-55 us here) outweighs a whole exchange (0.5-6
# us; run.cpp, calls_drowned); then down, also when a step failed. Skipped (77) where namespaces are refused.
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
cache=$(mktemp -d)
trap '"$cluster" down >/dev/null; rm -rf "$cache"' EXIT
fail() { echo "FAILED: $*"; exit 1; }

timeout 240 "$cluster" exec -- "$tests" --gtest_filter='Algorithms/AgainstMpi.*:Mpi.*' || fail "the algorithms over mpi across the cluster"
ARLAB_TRANSPORT=ucx timeout 120 "$cluster" exec -- "$tests" \
  --gtest_filter='Algorithms/AgainstMpi.*/hierarchical:Algorithms/AgainstMpi.*/auto' || fail "hierarchical over ucx across the cluster"
v=$(timeout 120 "$cluster" verify "$bench" 2>&1)
echo "$v"
grep -q 'rank on n0 -> rank 2 on n1: tcp' <<<"$v" || fail "verify: no tcp between the nodes"
grep -q 'rank on n0 -> rank 1 on n0: vader' <<<"$v" || fail "verify: no shared memory inside a node"
b=$(timeout 120 "$cluster" exec -x ARLAB_CACHE_DIR="$cache" -- "$bench" -b 1M -e 1M -a ring,hierarchical,auto -t mpi,ucx -n 3 -w 1 2>&1)
echo "$b"
grep -q '# arlab-bench .*: all-reduce on 4 ranks on 2 hosts' <<<"$b" || fail "the bench did not see 2 hosts"
grep -q '# Out of bounds values : 0 OK' <<<"$b" || fail "the bench found wrong values"
for f in "$cache"/*.yaml; do
  [[ -e $f ]] || fail "no self-calibration was cached in $cache"
  # The intra link's first alpha_us and bandwidth_GBps (the block after "  intra:").
  read -r alpha bw < <(awk '/^  intra:/{i=1} i&&/^    alpha_us:/&&!a{a=$2} i&&/^    bandwidth_GBps:/&&!b{b=$2} END{print a, b}' "$f")
  echo "$(basename "$f"): intra alpha $alpha us, $bw GB/s"
  awk -v a="$alpha" -v b="$bw" 'BEGIN{exit !(a > 0.01 && b > 0.01 && b < 1000)}' ||
    fail "$(basename "$f"): intra link fitted at alpha $alpha us, $bw GB/s"
  grep -q "# in a chain: one per call, less the call's own cost" "$f" ||
    fail "$(basename "$f"): the intra link was fitted to calls less their own cost: $(grep "took .* us, against" "$f")"
done
echo "cluster test: passed"

#!/usr/bin/env bash
# The main job: build, then sweep every algorithm over every transport of this build (and the
# MPI_Allreduce baseline) from 8 B to 64 MiB on local ranks under mpirun, print the table,
# and plot it to sweep.png (data in sweep.json).
# Usage: scripts/bench.sh [ranks] [extra arlab-bench flags...]   (default: 2 ranks)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh build
np=${1:-2}
shift || true
flags=(--allow-run-as-root)
if ((np > $(nproc))); then flags+=(--oversubscribe --mca mpi_yield_when_idle 1); fi
# Three interleaved rounds, each line's median shown: a slow spell of a shared machine (minutes
# long on the VMs this was measured on, docs/model.md) then falls on every algorithm alike
# rather than on whichever lines it met (1 round: 23.4% median model error and Auto 2.22x the
# fastest at worst; 3 rounds, the next day: 16.5% and 1.64x; 3m46s on 2 cores). `--rounds 1`
# after the rank count measures once.
mpirun "${flags[@]}" -np "$np" build/bench/arlab-bench -b 8 -e 64M -f 2 -a all -t all --rounds 3 \
  --json sweep.json --plot sweep.png "$@"
echo "arlab: table above, data in sweep.json, plot in sweep.png"

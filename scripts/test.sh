#!/usr/bin/env bash
# Build and run every test: unit tests (no MPI), loopback tests (ranks as threads), and the
# tests under mpirun (1 to 5 ranks, each with a timeout). Prints ctest's summary.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh build
cd build
ctest --output-on-failure -j "$(nproc)" --timeout 900

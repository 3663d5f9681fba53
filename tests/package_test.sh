#!/usr/bin/env bash
# Installs the built library into a temporary prefix, builds examples/ against it with
# find_package(arlab), and runs the result on 2 ranks.
set -euo pipefail
build=$1
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" >/dev/null
cmake -S "$src/examples" -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null
cmake --build "$tmp/build" >/dev/null
timeout 60 mpirun --allow-run-as-root -np 2 "$tmp/build/minimal"

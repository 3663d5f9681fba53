#!/usr/bin/env bash
# Installs the Debian packages arlab needs, when missing, and configures and builds it.
# Usage: scripts/setup.sh [build-dir [cmake options...]]     (default: build)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
shift $(( $# > 0 ? 1 : 0 ))

packages=(g++ cmake ninja-build pkg-config libopenmpi-dev openmpi-bin libucx-dev libyaml-cpp-dev
          libgtest-dev python3-matplotlib)
source scripts/packages.sh
install_missing "${packages[@]}"

cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build "$build" -j "$(nproc)"

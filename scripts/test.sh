#!/usr/bin/env bash
# The whole test suite: installs the build dependencies (skipping what is
# installed), builds RelWithDebInfo into build/, runs every test with
# ctest and exits with its status.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh --build
# -U: forget a TDB_SUBSYSTEMS cached by an older or partial configure, so
# the whole library (its current default) is always built.
cmake -G Ninja -S . -B build -U TDB_SUBSYSTEMS -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTDB_BUILD_TESTS=ON
cmake --build build
exec ctest --test-dir build --output-on-failure -j2

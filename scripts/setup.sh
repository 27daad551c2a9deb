#!/usr/bin/env bash
# Install what TidesDB needs to build, test and benchmark on Debian 12.
# Idempotent: packages already installed are skipped, so a second run
# touches nothing. Run as root (or with sudo available).
#
#   bash scripts/setup.sh          build + test + benchmark dependencies,
#                                  and matplotlib for the charts
#   bash scripts/setup.sh --build  build + test dependencies only
set -euo pipefail
cd "$(dirname "$0")/.."

want_plots=1
case "${1:-}" in
  --build) want_plots=0 ;;
  "") ;;
  *) echo "usage: $0 [--build]" >&2; exit 2 ;;
esac

# Build and test: compiler, CMake/Ninja, GoogleTest, the compression and
# hash libraries. Benchmark peers: RocksDB and LevelDB (C APIs) and
# RocksDB's own db_bench (rocksdb-tools).
pkgs=(build-essential cmake ninja-build pkg-config clang libgtest-dev
      liblz4-dev libzstd-dev libsnappy-dev libxxhash-dev
      librocksdb-dev libleveldb-dev rocksdb-tools python3
      python3-dev python3-venv python3-setuptools python3-wheel python3-pytest)
# (python3-dev/-venv/-setuptools/-wheel/-pytest: the Python binding, built into a
# venv and tested offline by bindings/python/test.sh.)
if [ "$want_plots" = 1 ]; then
  pkgs+=(python3-matplotlib)
fi

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@";
  elif command -v sudo >/dev/null; then sudo "$@";
  else echo "setup: need root to install: ${missing[*]}" >&2; return 1; fi
}

if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  as_root apt-get update -q
  # matplotlib is optional: try the required packages first, alone.
  required=()
  for p in "${missing[@]}"; do
    [ "$p" = python3-matplotlib ] || required+=("$p")
  done
  if [ "${#required[@]}" -gt 0 ]; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
      --no-install-recommends "${required[@]}"
  fi
  if [[ " ${missing[*]} " == *" python3-matplotlib "* ]]; then
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -q \
      --no-install-recommends python3-matplotlib ||
      echo "setup: python3-matplotlib could not be installed from apt"
  fi
else
  echo "setup: every package is already installed"
fi

# Charts: the system python's matplotlib, else a venv under .venv with
# matplotlib from PyPI. Without either, the benchmark still prints its
# table and CSV and says the charts were skipped.
has_mpl() { [ -x "$1" ] || command -v "$1" >/dev/null && "$1" -c 'import matplotlib' 2>/dev/null; }
if [ "$want_plots" = 1 ] && ! has_mpl /usr/bin/python3 && ! has_mpl python3; then
  if ! has_mpl .venv/bin/python; then
    echo "setup: installing matplotlib into .venv"
    { python3 -m venv .venv && .venv/bin/pip install -q matplotlib; } ||
      echo "setup: matplotlib unavailable (no pip access?): charts will be skipped"
  fi
fi

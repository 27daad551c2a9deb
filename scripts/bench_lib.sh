#!/usr/bin/env bash
# The library head-to-head (TidesDB vs RocksDB vs LevelDB): installs every dependency, builds Release into
# build/, runs tdb_bench at the quick default size with every engine
# (TidesDB, RocksDB, LevelDB), and writes results/bench-<timestamp>.csv,
# .txt (the table) and .png charts. Extra arguments go to tdb_bench, e.g.
#   bash scripts/bench_lib.sh --num=5000000 --workloads=fillrandom,readrandom
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/setup.sh
cmake -G Ninja -S . -B build -U TDB_SUBSYSTEMS -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build --target tdb_bench

mkdir -p results
ts=$(date +%Y%m%d-%H%M%S)
out="results/bench-$ts"
echo "bench: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo) RAM," \
     "load average $(cut -d' ' -f1-3 /proc/loadavg); results in $out.*"

status=0
./build/tools/tdb_bench --csv="$out.csv" "$@" | tee "$out.txt" || status=$?

# Charts: the first python that has matplotlib.
py=""
for cand in .venv/bin/python /usr/bin/python3 python3; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import matplotlib' 2>/dev/null; then
    py="$cand"
    break
  fi
done
if [ ! -s "$out.csv" ]; then
  echo "bench: no CSV written: charts skipped"
elif [ -z "$py" ]; then
  echo "bench: matplotlib is not available: charts skipped (table and CSV above)"
else
  "$py" scripts/plot_bench.py "$out.csv" || echo "bench: chart drawing failed: charts skipped"
fi
exit "$status"

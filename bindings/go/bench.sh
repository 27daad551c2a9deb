#!/usr/bin/env bash
# bindings/go/bench.sh: the Go binding's overhead against the C API.
#   bash bindings/go/bench.sh [--build DIR] [--num N] [--rounds R] [--out DIR]
# Builds tdb_bench in the CMake build directory DIR (default build/) and
# bindings/go/cmd/tdbgo_bench, then runs each R times (default 3),
# alternating C then Go, on the same workloads and settings:
#   tdb_bench --engines=tidesdb --threads=1 --workloads=fillrandom,readrandom --num=N
#   tdbgo_bench --workloads=fillrandom,readrandom --num=N
# (same keys, values, seeds and TidesDB options; N default 1000000) and
# prints, per workload, the median ops/s and cpu-us/op of each and the
# ratio Go/C. CSV files of every run go to --out (default
# build/go-bench-<stamp>/).
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
build="$root/build"
num=1000000
rounds=3
out=""
while [ $# -gt 0 ]; do
    case "$1" in
    --build) build="$(realpath -m "$2")"; shift 2 ;;
    --num) num="$2"; shift 2 ;;
    --rounds) rounds="$2"; shift 2 ;;
    --out) out="$(realpath -m "$2")"; shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "bench.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
out="${out:-$root/build/go-bench-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$out"
GO="$(command -v go || echo /usr/local/go/bin/go)"

if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -G Ninja -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi
cmake --build "$build" --target tdb_bench tidesdb_static -j2
(cd "$here" && CGO_LDFLAGS="-L$build ${CGO_LDFLAGS:-}" "$GO" build -o "$out/tdbgo_bench" ./cmd/tdbgo_bench)

db="${TMPDIR:-/tmp}/tdbgo-bench-$$"
trap 'rm -rf "$db"' EXIT
for r in $(seq 1 "$rounds"); do
    echo "== round $r/$rounds: C (tdb_bench)"
    "$build/tools/tdb_bench" --engines=tidesdb --threads=1 --workloads=fillrandom,readrandom \
        --num="$num" --db="$db" --csv="$out/c_$r.csv" >"$out/c_$r.txt"
    tail -n 4 "$out/c_$r.txt"
    echo "== round $r/$rounds: Go (tdbgo_bench)"
    "$out/tdbgo_bench" --workloads=fillrandom,readrandom --num="$num" --db="$db" \
        --csv="$out/go_$r.csv" | tee "$out/go_$r.txt"
done

python3 - "$out" "$rounds" "$num" <<'PY'
import csv, statistics, sys
out, rounds, num = sys.argv[1], int(sys.argv[2]), sys.argv[3]
def load(kind):
    rows = {}
    for r in range(1, rounds + 1):
        for row in csv.DictReader(open(f"{out}/{kind}_{r}.csv")):
            if kind == "c" and row["engine"] != "tidesdb":
                continue
            rows.setdefault(row["workload"], []).append(
                (float(row["ops_per_sec"]), float(row["cpu_us_per_op"])))
    return rows
c, g = load("c"), load("go")
print(f"\nGo binding vs C API, num={num}, {rounds} alternating rounds, medians "
      "(ratio > 1: Go is faster for ops/s, costlier for cpu-us/op)")
print(f"{'workload':<12} {'C ops/s':>10} {'Go ops/s':>10} {'Go/C':>6}  "
      f"{'C cpu-us/op':>11} {'Go cpu-us/op':>12} {'Go/C':>6}")
for w in ("fillrandom", "readrandom"):
    co = statistics.median(x[0] for x in c[w]); go = statistics.median(x[0] for x in g[w])
    cc = statistics.median(x[1] for x in c[w]); gc = statistics.median(x[1] for x in g[w])
    print(f"{w:<12} {co:>10.0f} {go:>10.0f} {go/co:>6.3f}  {cc:>11.3f} {gc:>12.3f} {gc/cc:>6.3f}")
print(f"runs: {out}")
PY

#!/usr/bin/env bash
# bindings/go/bench.sh: the Go binding's overhead against the C API.
#   bash bindings/go/bench.sh [--build DIR] [--num N] [--rounds R] [--out DIR]
# Builds tdb_bench and the static library in the CMake build directory DIR
# (default build/) and the two Go programs of bindings/go/cmd, then runs
# R rounds (default 3) of, in this order:
#   1. tdb_bench --engines=tidesdb --threads=1 --workloads=fillrandom,readrandom --num=N
#   2. tdbgo_bench --num=N: the same two workloads through the binding (same
#      keys, values, seeds, settings, per-operation clock), a process of
#      its own, as tdb_bench;
#   3. tdbgo_overhead --num=N: one process, a C loop over the C API and a
#      Go loop over the binding on two databases, in alternating chunks;
#      wall time and the CPU time of the thread running both loops; also
#      readseq (a full scan: tdb_iter_next against Iterator.All).
# and prints per workload the medians over the rounds and the ratios Go/C.
# N default 1000000. Raw output and CSV go to --out (default
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
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
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
for p in tdbgo_bench tdbgo_overhead; do
    (cd "$here" && CGO_LDFLAGS="-L$build ${CGO_LDFLAGS:-}" "$GO" build -o "$out/$p" "./cmd/$p")
done

db="${TMPDIR:-/tmp}/tdbgo-bench-$$"
trap 'rm -rf "$db"' EXIT
for r in $(seq 1 "$rounds"); do
    echo "== round $r/$rounds: tdb_bench (C)"
    "$build/tools/tdb_bench" --engines=tidesdb --threads=1 --workloads=fillrandom,readrandom \
        --num="$num" --db="$db" --csv="$out/c_$r.csv" >"$out/c_$r.txt"
    grep -E '^(fillrandom|readrandom) ' "$out/c_$r.txt" || true
    echo "== round $r/$rounds: tdbgo_bench (Go)"
    "$out/tdbgo_bench" --num="$num" --db="$db" --csv="$out/go_$r.csv" | tee "$out/go_$r.txt"
    echo "== round $r/$rounds: tdbgo_overhead (C and Go interleaved)"
    "$out/tdbgo_overhead" --num="$num" --db="$db" --csv="$out/ovh_$r.csv" | tee "$out/ovh_$r.txt"
done

python3 - "$out" "$rounds" "$num" <<'PY'
import csv, statistics, sys
out, rounds, num = sys.argv[1], int(sys.argv[2]), sys.argv[3]
med = statistics.median
def rows(kind):
    for r in range(1, rounds + 1):
        for row in csv.DictReader(open(f"{out}/{kind}_{r}.csv")):
            if kind != "c" or row["engine"] == "tidesdb":
                yield row
def col(kind, w, name):
    return med(float(x[name]) for x in rows(kind) if x["workload"] == w)
print(f"\nGo binding vs C API, num={num}, medians of {rounds} rounds")
print("tdb_bench vs tdbgo_bench (separate processes):")
print(f"  {'workload':<11} {'C ops/s':>9} {'Go ops/s':>9} {'Go/C':>6}   {'C cpu-us/op':>11} {'Go cpu-us/op':>12} {'Go/C':>6}")
for w in ("fillrandom", "readrandom"):
    co, go = col("c", w, "ops_per_sec"), col("go", w, "ops_per_sec")
    cc, gc = col("c", w, "cpu_us_per_op"), col("go", w, "cpu_us_per_op")
    print(f"  {w:<11} {co:>9.0f} {go:>9.0f} {go/co:>6.3f}   {cc:>11.3f} {gc:>12.3f} {gc/cc:>6.3f}")
print("tdbgo_overhead (one process, alternating chunks), ns/op:")
print(f"  {'workload':<11} {'wall C':>7} {'wall Go':>7} {'Go/C':>6}   {'cpu C':>6} {'cpu Go':>6} {'Go/C':>6} {'Go-C':>5}   {'Go+GC':>6} {'Go/C':>6}")
for w in ("fillrandom", "readrandom", "readseq"):
    wc, wg = col("ovh", w, "wall_median_c_ns"), col("ovh", w, "wall_median_go_ns")
    cc, cg, cgg = col("ovh", w, "cpu_c_ns"), col("ovh", w, "cpu_go_ns"), col("ovh", w, "cpu_go_gc_ns")
    print(f"  {w:<11} {wc:>7.0f} {wg:>7.0f} {wg/wc:>6.3f}   {cc:>6.0f} {cg:>6.0f} {cg/cc:>6.3f} {cg-cc:>+5.0f}   {cgg:>6.0f} {cgg/cc:>6.3f}")
print(f"runs: {out}")
PY

#!/usr/bin/env bash
# Overhead of the Python binding against the C API: fillrandom and
# readrandom, one thread, same keys/values/order/settings (bench_c.c and
# bench_py.py). Runs ROUNDS rounds alternating C and Python, each on a
# fresh database, and prints the medians and the ratio Python/C: wall time
# and the CPU time of the calling thread (the binding's cost is all there;
# background flushes run on other threads), which is steadier on a shared
# machine.
#   bash bindings/python/bench/run.sh [NUM=500000] [ROUNDS=3]
# Uses the venv and library of bindings/python/test.sh (run it first) or
# TDB_PY_VENV / TIDESDB_BUILD_DIR.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../../.." && pwd)"
num="${1:-500000}"
rounds="${2:-3}"
venv="${TDB_PY_VENV:-$root/build/venv-python}"
bdir="${TIDESDB_BUILD_DIR:-$root/build/python-lib}"
work="${TDB_BENCH_DIR:-/tmp/tdb_pybench.$$}"
mkdir -p "$work"
trap 'rm -rf "$work"' EXIT

[ -x "$venv/bin/python" ] || { echo "run bindings/python/test.sh first (no $venv)" >&2; exit 1; }
[ -f "$bdir/libtidesdb.a" ] || { echo "no $bdir/libtidesdb.a" >&2; exit 1; }
cc -O2 -std=gnu11 -I"$root/include" "$here/bench_c.c" "$bdir/libtidesdb.a" \
    -llz4 -lzstd -lxxhash -lsnappy -lpthread -lm -o "$work/bench_c"

: >"$work/c.txt"
: >"$work/py.txt"
for r in $(seq 1 "$rounds"); do
    rm -rf "$work/db"
    "$work/bench_c" "$work/db" "$num" | tee -a "$work/c.txt" | sed "s/^/round $r C:  /"
    rm -rf "$work/db"
    (cd "$here" && "$venv/bin/python" bench_py.py "$work/db" "$num") |
        tee -a "$work/py.txt" | sed "s/^/round $r Py: /"
done
"$venv/bin/python" - "$work/c.txt" "$work/py.txt" "$num" "$rounds" <<'PY'
import statistics, sys
def load(p):
    d = {}
    for line in open(p):
        name, wall, cpu = line.split()
        d.setdefault(name, []).append((float(wall), float(cpu)))
    return d
def stat(f, runs):
    return f(w for w, _ in runs), f(c for _, c in runs)
c, py = load(sys.argv[1]), load(sys.argv[2])
print("num=%s rounds=%s key=16 B value=100 B sync=NONE threads=1" % (sys.argv[3], sys.argv[4]))
print("%-11s %-6s %9s %9s %10s %10s %7s %9s" % ("workload", "of", "C us/op", "Py us/op", "C cpu-us", "Py cpu-us", "ratio", "cpu ratio"))
for w in ("fillrandom", "readrandom"):
    for label, f in (("median", statistics.median), ("best", min)):
        cw, cc = stat(f, c[w])
        pw, pc = stat(f, py[w])
        print("%-11s %-6s %9.3f %9.3f %10.3f %10.3f %6.2fx %8.2fx" % (w, label, cw, pw, cc, pc, pw / cw, pc / cc))
lw, lc = stat(statistics.median, py["loop"])
print("python loop alone (no-op calls, fill and read loops together): %.3f us/op, %.3f cpu-us/op" % (lw, lc))
PY

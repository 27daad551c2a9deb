#!/usr/bin/env bash
# fuzz.sh: build the libFuzzer targets (clang, ASan+UBSan) and run each for
# N seconds on its seed corpus; print executions per target.
#
# usage: scripts/fuzz.sh [--time SEC] [--runs N] [--targets a,b,...] [--build DIR]
#                        [--regen-corpus] [--keep]
#   --time SEC        seconds per target (default 30)
#   --runs N          stop each target after N executions instead (the long
#                     run: --runs 10000000 --time 0; --time still caps it if > 0)
#   --targets LIST    subset of: wal sst block footer bloom manifest batch decompress
#   --build DIR       build directory (default build-fuzz)
#   --regen-corpus    rewrite fuzz/corpus/ from real files (tdb_fuzz_corpus)
#   --keep            keep the inputs found this run (printed path)
# Each target runs with -rss_limit_mb=2048 -timeout=10: a crash, a leak, an
# input taking over 10 s or an allocation over 2 GiB is a failure; the input
# is saved under the work directory and its path printed.
# Last line: FUZZ_TOTAL targets=.. execs=.. failures=..   (exit 1 on failure)
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

time=30 runs=-1 targets="wal sst block footer bloom manifest batch decompress" build=build-fuzz regen=0 keep=0
while [ $# -gt 0 ]; do
    case "$1" in
    --time) time=$2; shift 2 ;;
    --runs) runs=$2; shift 2 ;;
    --targets) targets=${2//,/ }; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --regen-corpus) regen=1; shift ;;
    --keep) keep=1; shift ;;
    -h|--help) sed -n '2,19p' "$0"; exit 0 ;;
    *) echo "fuzz.sh: unknown argument $1" >&2; exit 3 ;;
    esac
done
[[ "$build" = /* ]] || build="$ROOT/$build"

if ! command -v clang >/dev/null; then
    echo "fuzz.sh: clang is required (apt-get install clang libclang-rt-14-dev)" >&2
    exit 2
fi
if [ ! -f "$build/build.ninja" ]; then
    CC=clang CXX=clang++ cmake -G Ninja -S "$ROOT" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
        -DTDB_FUZZ=ON -DTDB_SANITIZE=address -DTDB_BUILD_TESTS=OFF >/dev/null || exit 2
fi
bins=""
for t in $targets; do bins="$bins fuzz_$t"; done
ninja -C "$build" -j2 $bins tdb_fuzz_corpus >/dev/null || { echo "fuzz.sh: build failed" >&2; exit 2; }

if [ "$regen" -eq 1 ]; then
    rm -rf "$ROOT/fuzz/corpus"
    "$build/fuzz/tdb_fuzz_corpus" "$ROOT/fuzz/corpus" || exit 2
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/tdb-fuzz-XXXXXX")
total=0 failures=0 n=0
export ASAN_OPTIONS="detect_leaks=1:allocator_may_return_null=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
start=$(date +%s)
for t in $targets; do
    t0=$(date +%s)
    mkdir -p "$work/$t/new" "$work/$t/artifacts"
    log="$work/$t/log"
    "$build/fuzz/fuzz_$t" -max_total_time="$time" -runs="$runs" -rss_limit_mb=2048 -timeout=10 -print_final_stats=1 \
        -artifact_prefix="$work/$t/artifacts/" "$work/$t/new" "$ROOT/fuzz/corpus/$t" >"$log" 2>&1
    st=$?
    execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
    rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
    found=$(find "$work/$t/new" -type f | wc -l)
    execs=${execs:-0} rate=${rate:-0}
    total=$((total + execs)) n=$((n + 1))
    if [ "$st" -ne 0 ] || ls "$work/$t/artifacts/"* >/dev/null 2>&1; then
        failures=$((failures + 1))
        art=$(ls "$work/$t/artifacts/"* 2>/dev/null | head -1)
        printf "fuzz_%-10s execs=%-9s exec/s=%-7s new_inputs=%-5s FAILED (exit %d) input: %s\n" "$t" "$execs" "$rate" "$found" "$st" "${art:-none}"
        grep -E "ERROR|SUMMARY|fuzz property" "$log" | head -5 | sed 's/^/    /'
        echo "    reproduce: $build/fuzz/fuzz_$t ${art:-<input>}   (log: $log)"
    else
        printf "fuzz_%-10s execs=%-9s exec/s=%-7s new_inputs=%-5s secs=%-5s ok\n" "$t" "$execs" "$rate" "$found" "$(($(date +%s) - t0))"
    fi
done
echo "FUZZ_TOTAL targets=$n execs=$total failures=$failures secs=$(($(date +%s) - start))"
if [ "$failures" -eq 0 ] && [ "$keep" -eq 0 ]; then rm -rf "$work"; else echo "work directory: $work"; fi
[ "$failures" -eq 0 ]

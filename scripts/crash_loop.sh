#!/usr/bin/env bash
# crash_loop.sh: kill -9 tdb_stress at random moments, reopen, verify.
#
# Each cycle starts tdb_stress on the same database and oracle and kills it
# with SIGKILL after a random delay in [0.05 s, --duration] (so kills land
# during recovery, writes, batches, transactions, flushes, compactions and
# reopens), then runs tdb_stress --verify_only: every data file must pass
# its checksums (only the newest WAL may end in a torn record), the
# database must open, all its column families must exist, and every key
# must match the oracle: acknowledged writes present, in-flight writes all
# or nothing (docs/design/reliability.md). The next cycle's run verifies
# again at its own start.
#
# usage: scripts/crash_loop.sh [--cycles N] [--duration SEC] [--sync MODE|all]
#          [--threads N] [--keys N] [--cfs N] [--seed N] [--build DIR]
#          [--workdir DIR] [--keep] [--recovery_times FILE] [-- extra tdb_stress flags]
#   --cycles N      kill cycles per sync mode (default 10)
#   --duration SEC  longest a run lives before the kill (default 2)
#   --sync MODE     none, interval, full or all (default all)
#   --build DIR     build directory holding tools/stress/tdb_stress
#                   (default build-rel; configured and built if missing)
#   --workdir DIR   databases and logs (default: a fresh temp dir)
#   --keep          keep the workdir even if everything passed
#   --recovery_times FILE  append "mode microseconds" per cycle: the time
#                   tdb_open took to recover what the kill left (STRESS_OPEN)
# Per mode: crash_loop MODE cycles=.. ... recovery_ms_p50=.. p99=.. max=..
# Last line:
#   CRASH_LOOP_TOTAL cycles=.. ops=.. reads_verified=.. keys_verified=.. inflight=.. failures=..
# Exit status 0 if every cycle verified, 1 if not (logs kept, repro printed).
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

cycles=10 duration=2 sync=all threads=4 keys=5000 cfs=3 seed=1 build=build-rel workdir="" keep=0 rtimes=""
extra=()
while [ $# -gt 0 ]; do
    case "$1" in
    --cycles) cycles=$2; shift 2 ;;
    --duration) duration=$2; shift 2 ;;
    --sync) sync=$2; shift 2 ;;
    --threads) threads=$2; shift 2 ;;
    --keys) keys=$2; shift 2 ;;
    --cfs) cfs=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --workdir) workdir=$2; shift 2 ;;
    --keep) keep=1; shift ;;
    --recovery_times) rtimes=$2; shift 2 ;;
    --) shift; extra=("$@"); break ;;
    -h|--help) sed -n '2,34p' "$0"; exit 0 ;;
    *) echo "crash_loop.sh: unknown argument $1" >&2; exit 3 ;;
    esac
done
case "$sync" in all) modes="none interval full" ;; none|interval|full) modes=$sync ;;
*) echo "crash_loop.sh: --sync must be none, interval, full or all" >&2; exit 3 ;; esac

[[ "$build" = /* ]] || build="$ROOT/$build"
STRESS="$build/tools/stress/tdb_stress"
if [ ! -x "$STRESS" ]; then
    echo "building tdb_stress in $build"
    [ -f "$build/build.ninja" ] || cmake -G Ninja -S "$ROOT" -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null || exit 2
    ninja -C "$build" -j2 tdb_stress >/dev/null || exit 2
fi
if [ -z "$workdir" ]; then workdir=$(mktemp -d "${TMPDIR:-/tmp}/tdb-crash-XXXXXX"); fi
mkdir -p "$workdir/logs"

RANDOM=$seed
total_cycles=0 total_ops=0 total_reads=0 total_keys=0 total_inflight=0 failures=0

# Value of name=... in a line.
field() { sed -n "s/.*[ ]$1=\([0-9]*\).*/\1/p" <<<"$2" | head -1; }
# p50, p99 and max (nearest rank, in ms) of the microsecond figures on stdin.
percentiles() { sort -n | awk '{ v[NR] = $1 } END {
    if (NR == 0) { print "recovery_ms_p50=- p99=- max=-"; exit }
    i50 = int(NR * 0.50 + 0.999999); i99 = int(NR * 0.99 + 0.999999)
    printf "recovery_ms_p50=%.1f p99=%.1f max=%.1f\n", v[i50] / 1000, v[i99] / 1000, v[NR] / 1000 }'; }

for mode in $modes; do
    db="$workdir/db-$mode"
    rm -rf "$db" "$db.expected"
    common=(--db="$db" --sync="$mode" --threads="$threads" --keys="$keys" --cfs="$cfs" --seed="$seed")
    m_ops=0 m_reads=0 m_keys=0 m_inflight=0 m_cycles=0 m_rec=""
    t0=$SECONDS
    for ((c = 1; c <= cycles; c++)); do
        slog="$workdir/logs/$mode-$c.stress.log" vlog="$workdir/logs/$mode-$c.verify.log"
        max_ms=$(awk -v d="$duration" 'BEGIN { printf "%d", d * 1000 }')
        [ "$max_ms" -gt 50 ] || max_ms=51
        delay_ms=$(( 50 + ( (RANDOM << 15 | RANDOM) % (max_ms - 49) ) ))
        "$STRESS" "${common[@]}" --ops=0 --duration=3600 "${extra[@]}" >"$slog" 2>&1 &
        pid=$!
        sleep "$(awk -v m="$delay_ms" 'BEGIN { printf "%.3f", m / 1000 }')"
        if kill -0 "$pid" 2>/dev/null; then
            kill -9 "$pid" 2>/dev/null
            wait "$pid" 2>/dev/null
            st=137
        else
            wait "$pid"
            st=$?
        fi
        if [ "$st" -ne 137 ] || grep -q "^STRESS_\(FAIL\|ERROR\)" "$slog"; then
            echo "FAIL [$mode cycle $c] tdb_stress exited with $st before the kill:"
            grep "^STRESS_\(FAIL\|ERROR\)" "$slog" || tail -5 "$slog"
            failures=$((failures + 1))
            echo "  repro: $STRESS ${common[*]} --ops=0 --duration=3600 ${extra[*]}   (logs: $workdir/logs)"
            break
        fi
        if ! "$STRESS" "${common[@]}" --verify_only "${extra[@]}" >"$vlog" 2>&1; then
            echo "FAIL [$mode cycle $c] recovery check after kill -9 at ${delay_ms} ms:"
            grep "^STRESS_\(FAIL\|ERROR\)" "$vlog" || tail -5 "$vlog"
            failures=$((failures + 1))
            echo "  repro: $STRESS ${common[*]} --verify_only   (database and oracle kept in $workdir)"
            break
        fi
        start=$(grep "^STRESS_START" "$vlog") verify=$(grep "^STRESS_VERIFY" "$vlog")
        m_ops=$((m_ops + $(field prev_ops "$start")))
        m_reads=$((m_reads + $(field prev_reads "$start")))
        m_keys=$((m_keys + $(field keys "$verify")))
        m_inflight=$((m_inflight + $(field pending "$verify")))
        m_cycles=$((m_cycles + 1))
        rec=$(sed -n 's/^STRESS_OPEN us=\([0-9]*\).*/\1/p' "$vlog" | head -1)
        if [ -n "$rec" ]; then
            m_rec="$m_rec$rec"$'\n'
            [ -z "$rtimes" ] || echo "$mode $rec" >>"$rtimes"
        fi
        [ "$keep" -eq 1 ] || rm -f "$slog" "$vlog"
    done
    printf "crash_loop %-8s cycles=%d ops=%d reads_verified=%d keys_verified=%d inflight=%d seconds=%d %s\n" \
        "$mode" "$m_cycles" "$m_ops" "$m_reads" "$m_keys" "$m_inflight" $((SECONDS - t0)) \
        "$(printf '%s' "$m_rec" | grep . | percentiles)"
    total_cycles=$((total_cycles + m_cycles)) total_ops=$((total_ops + m_ops))
    total_reads=$((total_reads + m_reads)) total_keys=$((total_keys + m_keys))
    total_inflight=$((total_inflight + m_inflight))
done
echo "CRASH_LOOP_TOTAL cycles=$total_cycles ops=$total_ops reads_verified=$total_reads keys_verified=$total_keys inflight=$total_inflight failures=$failures"
if [ "$failures" -eq 0 ] && [ "$keep" -eq 0 ]; then rm -rf "$workdir"; fi
[ "$failures" -eq 0 ]

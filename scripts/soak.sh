#!/usr/bin/env bash
# soak.sh: run the reliability loops for a chosen time and print totals.
# Rounds repeat until the time is up; each round runs
#   - the kill -9 crash loop once per sync mode (none, interval, full),
#     with a round-specific seed, key count and memtable mode;
#   - one in-process fault run of tdb_stress: injected read, append and sync
#     errors make the database go read-only, the tool reopens and verifies
#     that nothing acknowledged was lost;
#   - the simulated power-loss suite (fault_test FaultPowerLoss.*).
#
# usage: scripts/soak.sh [--minutes M] [--cycles N] [--build DIR] [--seed N]
#                        [--rounds R] [--no-write-faults]
#   --minutes M        wall-clock budget (default 10); the round running at
#                      the deadline is finished
#   --cycles N         kill cycles per sync mode per round (default 8)
#   --rounds R         stop after R rounds even if time is left (the 500-cycle
#                      soak: --rounds 4 --cycles 42 --minutes 120, 504 kills)
#   --no-write-faults  inject only read errors in the fault run
# Per sync mode, over all rounds: SOAK_RECOVERY mode=.. cycles=.. recovery_ms_p50=.. p99=.. max=..
# (tdb_open after each kill -9, from tdb_stress's STRESS_OPEN line)
# Last line:
#   SOAK_TOTAL minutes=.. rounds=.. cycles=.. ops=.. reads_verified=.. keys_verified=.. faults_injected=.. failures=..
# (faults_injected = kills + injected I/O errors + simulated power losses)
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

minutes=10 max_rounds=0 cycles_per_mode=8 build=build-rel seed=$(( $(date +%s) % 100000 )) wfaults=1
while [ $# -gt 0 ]; do
    case "$1" in
    --minutes) minutes=$2; shift 2 ;;
    --cycles) cycles_per_mode=$2; shift 2 ;;
    --rounds) max_rounds=$2; shift 2 ;;
    --build) build=$2; shift 2 ;;
    --seed) seed=$2; shift 2 ;;
    --no-write-faults) wfaults=0; shift ;;
    -h|--help) sed -n '2,25p' "$0"; exit 0 ;;
    *) echo "soak.sh: unknown argument $1" >&2; exit 3 ;;
    esac
done
[[ "$build" = /* ]] || build="$ROOT/$build"
cmake -G Ninja -S "$ROOT" -B "$build" -U TDB_SUBSYSTEMS -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTDB_BUILD_TESTS=ON >/dev/null &&
    ninja -C "$build" -j2 tdb_stress tdb_verify fault_test >/dev/null || { echo "soak.sh: build failed"; exit 2; }
STRESS="$build/tools/stress/tdb_stress"
work=$(mktemp -d "${TMPDIR:-/tmp}/tdb-soak-XXXXXX")
field() { sed -n "s/.*[ ]$1=\([0-9]*\).*/\1/p" <<<"$2" | head -1; }
rtimes="$work/recovery_times"
: >"$rtimes"

deadline=$((SECONDS + minutes * 60))
rounds=0 cycles=0 ops=0 reads=0 keys=0 faults=0 failures=0
echo "soak: seed $seed, ${minutes} min, work dir $work"
while [ $SECONDS -lt $deadline ] && [ $failures -eq 0 ] && { [ "$max_rounds" -eq 0 ] || [ $rounds -lt "$max_rounds" ]; }; do
    rounds=$((rounds + 1))
    s=$((seed + rounds))
    k=$(( (2000 + (s * 7919) % 20000) ))
    unified=$((rounds % 2))
    # 1. crash loop, all sync modes
    out=$(scripts/crash_loop.sh --cycles "$cycles_per_mode" --duration 3 --sync all --keys "$k" --seed "$s" --build "$build" \
        --workdir "$work/crash-$rounds" --recovery_times "$rtimes" -- --unified="$unified" 2>&1)
    st=$?
    echo "$out" | grep -E "^crash_loop|^FAIL|repro" | sed "s/^/round $rounds: /"
    tot=$(grep "^CRASH_LOOP_TOTAL" <<<"$out")
    c=$(field cycles "$tot")
    cycles=$((cycles + ${c:-0})) faults=$((faults + ${c:-0}))
    ops=$((ops + $(field ops "$tot"))) reads=$((reads + $(field reads_verified "$tot")))
    keys=$((keys + $(field keys_verified "$tot")))
    [ $st -eq 0 ] || { failures=$((failures + 1)); echo "round $rounds: crash loop FAILED (kept in $work/crash-$rounds)"; break; }
    rm -rf "$work/crash-$rounds"
    # 2. in-process fault run
    wf=""
    [ $wfaults -eq 1 ] && wf="--write_fault_prob=0.0003"
    log="$work/faults-$rounds.log"
    if "$STRESS" --db="$work/fdb" --destroy --ops=0 --duration=30 --threads=4 --keys=3000 --seed="$s" \
        --read_fault_prob=0.002 $wf --hang_timeout=60 >"$log" 2>&1; then
        done_line=$(grep "^STRESS_DONE" "$log")
        v=$(grep "^STRESS_VERIFY" "$log" | sed -n 's/.* keys=\([0-9]*\).*/\1/p' | awk '{s += $1} END {print s + 0}')
        echo "round $rounds: fault run: $done_line"
        ops=$((ops + $(field ops "$done_line"))) reads=$((reads + $(field reads_verified "$done_line")))
        keys=$((keys + ${v:-0})) faults=$((faults + $(field faults_injected "$done_line")))
        rm -f "$log"
    else
        failures=$((failures + 1))
        echo "round $rounds: fault run FAILED (log $log):"
        grep -E "^STRESS_(FAIL|ERROR)" "$log"
        break
    fi
    rm -rf "$work/fdb" "$work/fdb.expected"
    # 3. simulated power loss
    log="$work/powerloss-$rounds.log"
    if "$build/tests/fault_test" --gtest_filter='FaultPowerLoss.*' >"$log" 2>&1; then
        pl=$(sed -n 's/.*power losses \([0-9]*\), writes verified \([0-9]*\).*/\1 \2/p' "$log" | awk '{a+=$1; b+=$2} END {print a+0, b+0}')
        echo "round $rounds: power losses $(cut -d' ' -f1 <<<"$pl"), writes verified $(cut -d' ' -f2 <<<"$pl")"
        faults=$((faults + ${pl%% *})) keys=$((keys + ${pl##* }))
        rm -f "$log"
    else
        failures=$((failures + 1))
        echo "round $rounds: power-loss suite FAILED (log $log)"
        grep -E "Failure|crash point" "$log" | head -10
        break
    fi
done
for mode in none interval full; do
    awk -v m="$mode" '$1 == m { print $2 }' "$rtimes" | sort -n | awk -v m="$mode" '{ v[NR] = $1 } END {
        if (NR == 0) { printf "SOAK_RECOVERY mode=%s cycles=0\n", m; exit }
        i50 = int(NR * 0.50 + 0.999999); i99 = int(NR * 0.99 + 0.999999)
        printf "SOAK_RECOVERY mode=%s cycles=%d recovery_ms_p50=%.1f p99=%.1f max=%.1f\n", m, NR, v[i50] / 1000, v[i99] / 1000, v[NR] / 1000 }'
done
echo "SOAK_TOTAL minutes=$(( (SECONDS + 30) / 60 )) rounds=$rounds cycles=$cycles ops=$ops reads_verified=$reads keys_verified=$keys faults_injected=$faults failures=$failures"
[ $failures -eq 0 ] && rm -rf "$work"
[ $failures -eq 0 ]

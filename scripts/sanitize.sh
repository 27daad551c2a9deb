#!/usr/bin/env bash
# sanitize.sh: build the ASan+UBSan and TSan variants, run the unit tests
# (ctest, without the 2-million-key acceptance tests and the benchmark
# smoke test) and a short tdb_stress run under each.
#
# usage: scripts/sanitize.sh [--only asan|tsan] [--stress-time SEC]
#                            [--exclude REGEX] [--no-ctest] [--no-stress]
#   --only KIND        one variant (default: both)
#   --stress-time SEC  seconds of tdb_stress per variant (default 20)
#   --exclude REGEX    ctest -E regex (default: the acceptance and bench tests)
#   --prefix P         build directories P-asan and P-tsan (default build)
# Builds go to build-asan and build-tsan (-DTDB_SANITIZE=address|thread),
# always configured as full builds (all subsystems, tests and tools).
# Last line: SANITIZE asan=ok|FAILED tsan=ok|FAILED   (exit 1 on failure)
set -uo pipefail
cd "$(dirname "$0")/.."
ROOT=$(pwd)

kinds="asan tsan" prefix=build stress_time=20 exclude='^Acceptance\.|tdb_bench_smoke' do_ctest=1 do_stress=1
while [ $# -gt 0 ]; do
    case "$1" in
    --only) kinds=$2; shift 2 ;;
    --stress-time) stress_time=$2; shift 2 ;;
    --exclude) exclude=$2; shift 2 ;;
    --no-ctest) do_ctest=0; shift ;;
    --prefix) prefix=$2; shift 2 ;;
    --no-stress) do_stress=0; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "sanitize.sh: unknown argument $1" >&2; exit 3 ;;
    esac
done

export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# Known engine races are suppressed, each with the fix it waits for.
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:history_size=4:suppressions=$ROOT/scripts/tsan.supp"
summary="SANITIZE"
failed=0
for kind in $kinds; do
    case "$kind" in asan) san=address ;; tsan) san=thread ;; *) echo "unknown variant $kind" >&2; exit 3 ;; esac
    dir="$prefix-$kind"
    [[ "$dir" = /* ]] || dir="$ROOT/$dir"
    status=ok
    echo "=== $kind: build ($dir)"
    t0=$SECONDS
    mkdir -p "$dir"
    if ! cmake -G Ninja -S "$ROOT" -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DTDB_SANITIZE="$san" \
        -DTDB_BUILD_TESTS=ON -DTDB_BUILD_TOOLS=ON -DTDB_TESTS='*' -UTDB_SUBSYSTEMS >"$dir/sanitize-cmake.log" 2>&1 || ! ninja -C "$dir" -j2 >"$dir/sanitize-build.log" 2>&1; then
        echo "$kind: build failed (log: $dir/sanitize-build.log)"
        tail -20 "$dir/sanitize-build.log" 2>/dev/null
        summary="$summary $kind=FAILED(build)"
        failed=1
        continue
    fi
    echo "$kind: built in $((SECONDS - t0)) s"
    if [ "$do_ctest" -eq 1 ]; then
        echo "=== $kind: ctest -E '$exclude'"
        t0=$SECONDS
        if ctest --test-dir "$dir" -j2 --timeout 1200 -E "$exclude" --output-on-failure >"$dir/sanitize-ctest.log" 2>&1; then
            echo "$kind: $(grep -E 'tests passed' "$dir/sanitize-ctest.log" | tail -1) in $((SECONDS - t0)) s"
        else
            status=FAILED
            echo "$kind: ctest failures (log: $dir/sanitize-ctest.log):"
            grep -E "^\s+[0-9]+ - |tests passed|WARNING: .*Sanitizer|ERROR: .*Sanitizer|runtime error" "$dir/sanitize-ctest.log" | head -30
        fi
    fi
    if [ "$do_stress" -eq 1 ]; then
        db=$(mktemp -d "${TMPDIR:-/tmp}/tdb-san-XXXXXX")
        for run in "--sync=none --unified=0" "--sync=interval --unified=1" "--sync=full --read_fault_prob=0.002 --write_fault_prob=0.0003"; do
            echo "=== $kind: tdb_stress $run (${stress_time}s)"
            log="$dir/sanitize-stress.log"
            if "$dir/tools/stress/tdb_stress" --db="$db/db" --destroy --duration="$stress_time" --ops=0 --threads=4 \
                --keys=2000 --seed=$RANDOM $run >"$log" 2>&1; then
                grep "^STRESS_DONE" "$log"
            else
                status=FAILED
                echo "$kind: tdb_stress $run failed (log: $log):"
                grep -E "^STRESS_(FAIL|ERROR)|Sanitizer|runtime error" "$log" | head -10
                break
            fi
        done
        rm -rf "$db"
    fi
    summary="$summary $kind=$status"
    [ "$status" = ok ] || failed=1
done
echo "$summary"
[ "$failed" -eq 0 ]

#!/usr/bin/env bash
# The whole TideSQL (MariaDB engine) test suite, each step bounded in time:
#   setup (packages, pinned server, headers; root) -> build (library +
#   plugin + the engine's unit tests, CMake) -> engine_unit (ctest of the
#   plugin build: key_codec_test, no server) -> harness_unit (tools/sql: go vet + unit tests) -> mtr (suite tidesdb) ->
#   main_suite (MariaDB's own main suite, quick list, TidesDB as default engine) -> sysbench smoke (READ COMMITTED, all
#   workloads) -> sysbench at REPEATABLE READ, optimistic -> TPC-C (go-tpc,
#   2 warehouses, 2 threads, 60 s, check) -> crash test (kill -9 during
#   sysbench writes and during TPC-C) -> crash_tpcc (kill -9 at random
#   moments of TPC-C, 3 cycles at the relaxed and 3 at the durable preset:
#   acknowledged New-Orders present, go-tpc check) -> diskfull (the
#   engine's directory on a small tmpfs filled up: a bulk insert fails
#   with a disk-full error, rolled back whole, the server serves on, inserts
#   resume once space is freed, a restart keeps them) -> backup (backup.sh
#   under a go-tpc load, restore.sh into a fresh server: counts at the
#   backup point, go-tpc check, binlog replayed from the recorded position
#   gives the source's checksums) -> repl (a primary and a GTID replica
#   under sysbench: tables agree; 3 kill -9 cycles of the primary: engine
#   and binlog agree, the replica resumes and matches; 2 of the replica;
#   a replica built from a hot backup) -> repl_parallel (the replica in
#   optimistic, then aggressive parallel mode under conflicting sysbench
#   updates: it retries conflicts, keeps up, tables agree) -> spider (TPC-C
#   and sysbench through
#   a Spider front over 2 TidesDB shards, measured by tools/sql's tpcc and
#   sqlbench in their external-server mode, go-tpc check through the front; a
#   cross-shard transaction with a shard killed before COMMIT, after its
#   XA PREPARE and at its XA COMMIT) -> harness_smoke (each SQL benchmark
#   harness for a few seconds on one engine) -> pgo (the PGO build: missing
#   and stale profiles refused, a full --pgo build loads and serves).
# Prints one line per step and a final "N passed, N failed"; exits non-zero
# if any step failed. Logs: build/mariadb/test_all/<step>.log.
# Environment: SKIP="step ..." to skip steps; SMOKE_TIME=5 TPCC_TIME=60s;
# TOTAL_LIMIT=seconds bounds the whole run (default 1800): a step gets at
# most what is left of it, a step with nothing left fails unrun.
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/common.sh"

LOGS="$TIDESQL_BUILD/test_all"
mkdir -p "$LOGS"
passed=0
failed=0
broken=""   # a failed step the following ones need
TOTAL_LIMIT="${TOTAL_LIMIT:-1800}"
t_start=$SECONDS

step() { # name timeout_seconds needs_build command...
  local name="$1" limit="$2" needs="$3"
  shift 3
  case " ${SKIP:-} " in *" $name "*) echo "test_all: $name: skipped"; return 0 ;; esac
  if [ "$needs" = 1 ] && [ -n "$broken" ]; then
    echo "test_all: $name: FAILED (not run: $broken failed)"; failed=$((failed + 1)); return 1
  fi
  local t0=$SECONDS rc left=$((TOTAL_LIMIT - (SECONDS - t_start)))
  left=$((left - 10)) # room for timeout's --kill-after
  if [ "$left" -le 0 ]; then
    echo "test_all: $name: FAILED (not run: the ${TOTAL_LIMIT}s budget is used up)"; failed=$((failed + 1)); return 1
  fi
  [ "$limit" -gt "$left" ] && limit=$left
  echo "test_all: $name: running (limit ${limit}s, log $LOGS/$name.log)"
  timeout --kill-after=10 "$limit" "$@" >"$LOGS/$name.log" 2>&1
  rc=$?
  if [ $rc = 0 ]; then
    echo "test_all: $name: passed ($((SECONDS - t0)) s)"; passed=$((passed + 1))
  else
    [ $rc = 124 ] && echo "test_all: $name: timed out after ${limit}s"
    tail -n 25 "$LOGS/$name.log" | sed "s/^/  $name| /"
    echo "test_all: $name: FAILED (exit $rc, $((SECONDS - t0)) s)"; failed=$((failed + 1))
    return 1
  fi
}

if [ "$(id -u)" = 0 ]; then
  step setup 900 0 bash "$here/setup.sh" || broken=setup
else
  echo "test_all: setup: skipped (not root; assuming scripts/mariadb/setup.sh ran)"
fi
step build 1200 1 bash "$here/build_plugin.sh" || broken="${broken:-build}"
step engine_unit 120 1 ctest --test-dir "$TIDESQL_BUILD/cmake" --output-on-failure --no-tests=error
step harness_unit 300 0 bash "$here/harness_test.sh"
step mtr 900 1 bash "$here/mtr.sh"
step main_suite 300 1 bash "$here/main_suite.sh" --quick
step sysbench 600 1 env TIME="${SMOKE_TIME:-5}" bash "$here/sysbench_smoke.sh"
step sysbench_rr_optimistic 300 1 env TIME="${SMOKE_TIME:-5}" ISOLATION=REPEATABLE-READ \
  SERVER_OPTS=--tidesdb-pessimistic-locking=OFF SYSBENCH_SERVER_DIR="$TIDESQL_ROOT/build/mariadb-sysbench-rr" \
  SYSBENCH_PORT=3322 bash "$here/sysbench_smoke.sh" oltp_read_write oltp_write_only
step tpcc 900 1 env TIME="${TPCC_TIME:-60s}" bash "$here/tpcc.sh"
step crash 600 1 bash "$here/crash_test.sh"
step crash_tpcc 400 1 bash "$here/crash_tpcc.sh"
step diskfull 120 1 bash "$here/diskfull_test.sh"
step backup 400 1 bash "$here/backup_test.sh"
step repl 300 1 bash "$here/repl/repl_test.sh"
step repl_parallel 240 1 env STEADY=5s bash "$here/repl/repl_parallel_test.sh"
step spider 420 1 bash "$here/spider/quick.sh"
step harness_smoke 600 1 bash "$here/harness_test.sh" --smoke
step pgo 600 1 bash "$here/pgo_test.sh"

echo "test_all: TideSQL: $passed passed, $failed failed in $((SECONDS - t_start)) s (budget ${TOTAL_LIMIT}s)"
echo "$passed passed, $failed failed"
[ "$failed" = 0 ]

#!/usr/bin/env bash
# Crash test of ENGINE=TidesDB under TPC-C (issue #18): mariadbd is killed
# with SIGKILL at a random moment of a TPC-C run (go-tpc's mix plus logged
# New-Order transactions of the driver's own), restarted (recovery timed)
# and checked, CYCLES times at the relaxed preset (TidesDB sync NONE) and
# CYCLES times at the durable preset (sync FULL), on one database. After
# every restart: each New-Order whose COMMIT returned OK is wholly present
# (durable) or wholly present or wholly absent (relaxed: the absent ones
# are counted), orders present after an earlier restart are still there,
# `go-tpc tpcc check` passes and every secondary index matches its table.
# The driver is tools/sql/cmd/crashtpcc (build/sql/bin/crashtpcc).
#
#   crash_tpcc.sh                 quick: 3 cycles per preset, 1 warehouse
#   crash_tpcc.sh --cycles 20     the acceptance run (or CYCLES=20)
#   crash_tpcc.sh [crashtpcc flags...]  e.g. --presets durable --kill-max 30s
#
# Prints one line per cycle (preset, cycle, seconds into the load when
# killed, orders acknowledged, found, lost, ..., check, recovery seconds)
# and a summary per preset; exits non-zero on a lost order at the durable
# preset, a half-present order, a failed check or index, or a server that
# does not restart. Results: build/crash-tpcc/out (cycles.csv, summary.md,
# logs/ with each cycle's go-tpc run and check and the server's error log).
# Environment: CYCLES=3 WAREHOUSES=1 KILL_MIN=3s KILL_MAX=12s
#   CRASH_TPCC_PORT=3480 CRASH_TPCC_DIR=build/crash-tpcc SEED (random)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/common.sh"

check_server_version
[ -e "$TIDESQL_PLUGIN_DIR/ha_tidesdb.so" ] || die "no plugin: run scripts/mariadb/build_plugin.sh"
ensure_go
ensure_gotpc
mkdir -p "$SQL_BIN"
(cd "$TIDESQL_ROOT/tools/sql" && "$GO" build -o "$SQL_BIN/crashtpcc" ./cmd/crashtpcc) ||
  die "building tools/sql/cmd/crashtpcc failed"

dir="${CRASH_TPCC_DIR:-$TIDESQL_ROOT/build/crash-tpcc}"
args=(--cycles "${CYCLES:-3}" --warehouses "${WAREHOUSES:-1}" --kill-min "${KILL_MIN:-3s}" --kill-max "${KILL_MAX:-12s}"
      --port "${CRASH_TPCC_PORT:-3480}" --server-dir "$dir/server" --out "$dir/out" --gotpc "$GOTPC_BIN")
[ -n "${SEED:-}" ] && args+=(--seed "$SEED")
status=0
"$SQL_BIN/crashtpcc" "${args[@]}" "$@" || status=$?
# The data directory is kept only when the test failed (evidence).
[ "$status" = 0 ] && rm -rf "$dir/server"
exit "$status"

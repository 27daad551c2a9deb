#!/usr/bin/env bash
# Replication over TidesDB tables (issue #21): a primary and a replica
# (two throw-away mariadbd on 127.0.0.1, started by tools/sql's server
# package like every SQL harness), binlog ROW, sync_binlog=1, GTID
# replication (MASTER_USE_GTID=slave_pos), the durable preset (TidesDB sync
# FULL), every table ENGINE=TidesDB on both. The driver is
# tools/sql/cmd/repl (build/sql/bin/repl); docs/design/replication.md says
# what each phase checks.
#   1. steady: sysbench oltp_write_only + logged writers on the primary;
#      the replica's apply rate and lag are measured; every table agrees
#      (row count, CHECKSUM TABLE, ordered SHA-256).
#   2. CYCLES times: kill -9 of the primary during the load, restart, then:
#      acknowledged commits present, failed ones absent, the engine's and
#      the binlog's transactions the same, the replica resumes and every
#      table agrees with the primary.
#   3. REPLICA_CYCLES times: kill -9 of the replica while it applies: its
#      GTID position does not go back, it resumes and every table agrees.
#   4. a replica built from a hot backup of the primary (SET GLOBAL
#      tidesdb_backup_dir) under load, started at the recorded GTID.
#
#   repl_test.sh                  quick: 3 + 2 cycles (~70 s on 2 cores)
#   repl_test.sh --cycles 10 --replica-cycles 10   the acceptance run
#   repl_test.sh [repl flags...]  e.g. --steady 60s --sb-threads 4
#
# Exits non-zero on any mismatch, lost or phantom transaction, replica
# error, or a primary that does not restart (e.g. one that would need
# --tc-heuristic-recover). Results: build/repl/out (summary.md, cycles.csv,
# logs/); the server directories are removed after a pass, kept after a
# failure. Environment: CYCLES=3 REPLICA_CYCLES=2 REPL_PORT=3496 (replica
#   +1, snapshot replica +2)
#   REPL_DIR=build/repl SEED (random)
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
. "$here/common.sh"

check_server_version
[ -e "$TIDESQL_PLUGIN_DIR/ha_tidesdb.so" ] || die "no plugin: run scripts/mariadb/build_plugin.sh"
command -v sysbench >/dev/null || die "sysbench missing: run scripts/mariadb/setup.sh"
command -v mariadb-binlog >/dev/null || die "mariadb-binlog missing: run scripts/mariadb/setup.sh (mariadb-client)"
ensure_go
mkdir -p "$SQL_BIN"
(cd "$TIDESQL_ROOT/tools/sql" && "$GO" build -o "$SQL_BIN/repl" ./cmd/repl) ||
  die "building tools/sql/cmd/repl failed"

dir="${REPL_DIR:-$TIDESQL_ROOT/build/repl}"
args=(--cycles "${CYCLES:-3}" --replica-cycles "${REPLICA_CYCLES:-2}" --port "${REPL_PORT:-3496}" --dir "$dir" --out "$dir/out")
[ -n "${SEED:-}" ] && args+=(--seed "$SEED")
export TIDESQL_PLUGIN_DIR
exec "$SQL_BIN/repl" "${args[@]}" "$@"

#!/usr/bin/env bash
# sysbench workloads through a Spider front over SHARDS TidesDB backends,
# each sbtest table sharded by id ranges, measured by the project's
# sysbench sweep (tools/sql/cmd/sqlbench) in its external-server mode
# (issue #21):
#   1. starts backends b1..bSHARDS and the front (lib.sh);
#   2. sysbench creates its tables on every backend (prepare with no rows);
#   3. on the front, each sbtestN is a Spider table with the backend's
#      definition, PARTITION BY RANGE (id), one range of 1..TABLE_SIZE per
#      backend;
#   4. sysbench prepares the rows into a staging database of the front
#      (TidesDB) and INSERT ... SELECT copies them through Spider (sysbench's
#      prepare cannot fill tables that exist); each backend is checked to
#      hold exactly its id range;
#   5. `sqlbench` with TARGET=<front> ENGINE=SPIDER NO_PREPARE=1 runs each
#      of WORKLOADS (sqlbench's sysbench options: --db-ps-mode=auto,
#      deadlocks and lock waits ignored and retried; a warm-up, discarded,
#      then the measured run).
# SHARDS=0 measures one plain TidesDB server (started like a backend) with
# the same sqlbench, which prepares the tables itself (ENGINE=TidesDB):
# the baseline.
# XA (the front's spider_internal_xa) is 0 by default: sysbench retries a
# transaction that met an ignored deadlock or lock wait with a new BEGIN,
# never a ROLLBACK, and with internal XA that BEGIN's implicit commit fails
# (1399, the shard's branch is rollback-only) and the retry then fails on
# Spider's reused XID (12605): see docs/design/spider.md.
# Environment: SHARDS=2 TABLES=4 TABLE_SIZE=50000 THREADS=4 TIME=30 WARMUP=5
#   WORKLOADS="oltp_read_write oltp_point_select oltp_write_only" XA=0 KEEP=0
# Appends "sysbench-<workload>,<shards>,<tables>x<size>,<threads>,<time>,<xa>,
# <tps>,<p95 ms>,<p99 ms>,<load s>,-" per workload to
# $SPIDER_DIR/out/results.csv; sqlbench's report (summary.md, CSVs, raw
# sysbench output) in $SPIDER_DIR/out/sysbench-<shards>/harness/.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/lib.sh"

SHARDS="${SHARDS:-2}"
TABLES="${TABLES:-4}"
TABLE_SIZE="${TABLE_SIZE:-50000}"
THREADS="${THREADS:-4}"
TIME="${TIME:-30}"
WARMUP="${WARMUP:-5}"
WORKLOADS="${WORKLOADS:-oltp_read_write oltp_point_select oltp_write_only}"
XA="${XA:-0}"
DB=sbtest
OUT="$SPIDER_DIR/out/sysbench-$SHARDS"
RESULT_SIZE="${TABLES}x$TABLE_SIZE"
rm -rf "$OUT"
mkdir -p "$OUT"
export TIDESQL_NO_ROCKSDB=1
command -v sysbench >/dev/null || die "sysbench not found: run scripts/mariadb/setup.sh"
spider_harnesses

sb() { # server db workload [args]: sysbench on a server's socket
  local s="$1" db="$2" w="$3"
  shift 3
  sysbench "$w" --db-driver=mysql --mysql-socket="$SPIDER_DIR/$s/mysqld.sock" --mysql-user=root --mysql-db="$db" \
    --mysql-storage-engine=TidesDB --tables="$TABLES" --db-ps-mode=auto \
    --mysql-ignore-errors="${IGNORE_ERRORS:-1213,1205,1020,1180}" "$@"
}

# sweep PORT ENGINE LABEL [VAR=value ...]: sqlbench on the server at
# 127.0.0.1:PORT, as an external server; its report in $OUT/harness.
sweep() {
  local port="$1" engine="$2" label="$3"
  shift 3
  env "$@" TARGET="127.0.0.1:$port" ENGINE="$engine" LABEL="$label" TABLES="$TABLES" TABLE_SIZES="$TABLE_SIZE" \
    THREAD_COUNTS="$THREADS" TIME="$TIME" WARMUP="$WARMUP" ITERATIONS=1 WORKLOADS="$WORKLOADS" \
    OUT="$OUT/harness" NO_CHARTS=1 "$SQL_BIN/sqlbench" >"$OUT/sqlbench.log" 2>&1 ||
    { tail -30 "$OUT/sqlbench.log" >&2; die "sqlbench failed on $label (report in $OUT/harness, log $OUT/sqlbench.log)"; }
}

[ "${KEEP:-0}" = 1 ] || trap spider_stop_all EXIT
t0=$SECONDS
if [ "$SHARDS" = 0 ]; then
  label="TidesDB plain server"
  spider_check_plugin
  spider_start plain
  echo "spider-sysbench: one plain TidesDB server, $TABLES x $TABLE_SIZE rows (prepared by sqlbench); $WORKLOADS, $THREADS threads, ${TIME}s each"
  sweep "$(spider_port plain)" TidesDB "$label"
  # sqlbench prints "prepared in 1m5s" (a Go duration, whole seconds).
  prep="$(sed -n 's/.*: prepared in \([0-9hms]*\).*/\1/p' "$OUT/sqlbench.log" | head -1 |
    awk '{ t = 0; while (match($0, /^[0-9]+[hms]/)) { n = substr($0, 1, RLENGTH - 1); u = substr($0, RLENGTH, 1)
           t += n * (u == "h" ? 3600 : u == "m" ? 60 : 1); $0 = substr($0, RLENGTH + 1) }; print t }')"
else
  label="Spider $SHARDS shard(s) (XA $([ "$XA" = 1 ] && echo on || echo off))"
  [ "$TABLE_SIZE" -ge "$SHARDS" ] || die "TABLE_SIZE < SHARDS"
  spider_topology "$SHARDS" "$DB"
  q front -e "SET GLOBAL spider_internal_xa = $XA"
  for i in $(seq 1 "$SHARDS"); do
    sb "b$i" "$DB" oltp_common --table-size=0 prepare >"$OUT/ddl-b$i.log" 2>&1 ||
      { tail "$OUT/ddl-b$i.log" >&2; die "sysbench could not create its tables on b$i"; }
  done
  for n in $(seq 1 "$TABLES"); do spider_table "$SHARDS" "$DB" "sbtest$n" id "$TABLE_SIZE"; done
  t0=$SECONDS
  q front -e "CREATE DATABASE sbstage"
  sb front sbstage oltp_common --table-size="$TABLE_SIZE" --threads="$TABLES" prepare >"$OUT/prepare.log" 2>&1 ||
    { tail "$OUT/prepare.log" >&2; die "sysbench prepare (staging) failed"; }
  for n in $(seq 1 "$TABLES"); do
    q front -e "INSERT INTO $DB.sbtest$n SELECT * FROM sbstage.sbtest$n" || die "copying sbtest$n through Spider failed"
  done
  q front -e "DROP DATABASE sbstage"
  prep=$((SECONDS - t0))
  b=($(range_bounds "$TABLE_SIZE" "$SHARDS") $((TABLE_SIZE + 1)))
  lo=1
  for i in $(seq 1 "$SHARDS"); do
    hi=${b[$((i - 1))]}
    got="$(q "b$i" -N "$DB" -e "SELECT COUNT(*), MIN(id), MAX(id) FROM sbtest1")"
    [ "$got" = "$(printf '%s\t%s\t%s' $((hi - lo)) $lo $((hi - 1)))" ] ||
      die "b$i: sbtest1 holds (count, min, max) = ($got), expected ids $lo..$((hi - 1))"
    echo "spider-sysbench: b$i holds ids $lo..$((hi - 1)) of each table"
    lo=$hi
  done
  echo "spider-sysbench: $SHARDS shard(s), $TABLES x $TABLE_SIZE rows loaded through the front in $prep s; $WORKLOADS, $THREADS threads, ${TIME}s each"
  sweep "$SPIDER_PORT" SPIDER "$label" NO_PREPARE=1
fi

sum="$(ls "$OUT"/harness/summary_*.csv)"
for w in $WORKLOADS; do
  tps="$(csv_get "$sum" tps workload "$w")"
  [ -n "$tps" ] || die "no $w row in $sum"
  p95="$(csv_get "$sum" p95_ms workload "$w")"
  p99="$(csv_get "$sum" p99_ms workload "$w")"
  errs="$(csv_get "$sum" errors workload "$w")"
  spider_result "sysbench-$w" "$tps" "$p95" "$p99" "${prep:-}" -
  echo "spider-sysbench: $label: $w $tps tps, p95 $p95 ms, p99 $p99 ms, $errs ignored errors"
done

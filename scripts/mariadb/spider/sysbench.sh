#!/usr/bin/env bash
# A sysbench workload through a Spider front over SHARDS TidesDB backends,
# each sbtest table sharded by id ranges (issue #21):
#   1. starts backends b1..bSHARDS and the front (lib.sh);
#   2. sysbench creates its tables on every backend (prepare with no rows);
#   3. on the front, each sbtestN is a Spider table with the backend's
#      definition, PARTITION BY RANGE (id), one range of 1..TABLE_SIZE per
#      backend;
#   4. sysbench prepares the rows into a staging database of the front
#      (TidesDB) and INSERT ... SELECT copies them through Spider (sysbench's
#      prepare cannot fill tables that exist); each backend is checked to
#      hold exactly its id range;
#   5. the workload runs against the front with sqlbench's sysbench options
#      (--db-ps-mode=auto, deadlocks and lock waits retried).
# SHARDS=0 runs the same workload on one plain server (the baseline).
# XA (the front's spider_internal_xa) is 0 by default: sysbench retries a
# transaction that met an ignored deadlock or lock wait with a new BEGIN,
# never a ROLLBACK, and with internal XA that BEGIN's implicit commit fails
# (1399, the shard's branch is rollback-only) and the retry then fails on
# Spider's reused XID (12605): see docs/design/spider.md.
# Environment: SHARDS=2 TABLES=4 TABLE_SIZE=50000 THREADS=4 TIME=30
#   WORKLOAD=oltp_read_write XA=0 KEEP=0
#   IGNORE_ERRORS=1213,1205,1020,1180 (sysbench --mysql-ignore-errors)
# Appends "sysbench-<workload>,<shards>,<tables>x<size>,<threads>,<time>,<xa>,<tps>,<p95 ms>"
# to $SPIDER_DIR/out/results.csv; logs in $SPIDER_DIR/out/sysbench-<shards>/.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/lib.sh"

SHARDS="${SHARDS:-2}"
TABLES="${TABLES:-4}"
TABLE_SIZE="${TABLE_SIZE:-50000}"
THREADS="${THREADS:-4}"
TIME="${TIME:-30}"
WORKLOAD="${WORKLOAD:-oltp_read_write}"
XA="${XA:-0}"
DB=sbtest
OUT="$SPIDER_DIR/out/sysbench-$SHARDS"
mkdir -p "$OUT"
export TIDESQL_NO_ROCKSDB=1
command -v sysbench >/dev/null || die "sysbench not found: run scripts/mariadb/setup.sh"

sb() { # server db workload [args]: sysbench on a server's socket
  local s="$1" db="$2" w="$3"
  shift 3
  sysbench "$w" --db-driver=mysql --mysql-socket="$SPIDER_DIR/$s/mysqld.sock" --mysql-user=root --mysql-db="$db" \
    --mysql-storage-engine=TidesDB --tables="$TABLES" --db-ps-mode=auto \
    --mysql-ignore-errors="${IGNORE_ERRORS:-1213,1205,1020,1180}" "$@"
}

[ "${KEEP:-0}" = 1 ] || trap spider_stop_all EXIT
if [ "$SHARDS" = 0 ]; then
  target=plain
  spider_check_plugin
  spider_start plain
  q plain -e "CREATE DATABASE $DB"
  t0=$SECONDS
  sb plain "$DB" oltp_common --table-size="$TABLE_SIZE" --threads="$TABLES" prepare >"$OUT/prepare.log" 2>&1 ||
    { tail "$OUT/prepare.log" >&2; die "sysbench prepare failed"; }
else
  target=front
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
fi
prep=$((SECONDS - t0))
[ "$(q "$target" -N "$DB" -e "SELECT COUNT(*) FROM sbtest$TABLES")" = "$TABLE_SIZE" ] ||
  die "$target: sbtest$TABLES does not hold $TABLE_SIZE rows"
echo "spider-sysbench: $SHARDS shard(s), $TABLES x $TABLE_SIZE rows loaded in $prep s; $WORKLOAD, $THREADS threads, ${TIME}s"

sb "$target" "$DB" "$WORKLOAD" --table-size="$TABLE_SIZE" --threads="$THREADS" --time="$TIME" --report-interval=10 \
  --percentile=95 run >"$OUT/run.log" 2>&1 || { tail -20 "$OUT/run.log" >&2; die "sysbench $WORKLOAD failed"; }
tps="$(sed -n 's/^ *transactions: *[0-9]* *(\([0-9.]*\) per sec.)/\1/p' "$OUT/run.log")"
p95="$(sed -n 's/^ *95th percentile: *\([0-9.]*\)/\1/p' "$OUT/run.log")"
errs="$(sed -n 's/^ *ignored errors: *\([0-9]*\) .*/\1/p' "$OUT/run.log")"
[ -n "$tps" ] || { tail -20 "$OUT/run.log" >&2; die "no transactions line in $OUT/run.log"; }
echo "spider-sysbench: $SHARDS shard(s): $tps tps, p95 $p95 ms, $errs ignored errors (log $OUT/run.log)"
echo "sysbench-$WORKLOAD,$SHARDS,${TABLES}x$TABLE_SIZE,$THREADS,$TIME,$([ "$SHARDS" = 0 ] && echo - || echo "$XA"),$tps,$p95" >>"$SPIDER_DIR/out/results.csv"

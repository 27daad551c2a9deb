#!/usr/bin/env bash
# Head-to-head preview: TidesDB vs InnoDB vs MyRocks (RocksDB) in the same
# server, sysbench (oltp_read_write, oltp_point_select, oltp_insert,
# oltp_write_only) and go-tpc TPC-C tpmC, written to a CSV.
#
# Durability is aligned across engines (DURABILITY=...):
#   full (default): every COMMIT is durable when it returns:
#     tidesdb_default_sync_mode=FULL, innodb_flush_log_at_trx_commit=1,
#     rocksdb_flush_log_at_trx_commit=1;
#   relaxed: the log is synced about once a second (a crash may lose ~1 s):
#     tidesdb_default_sync_mode=INTERVAL with a 1 s interval,
#     innodb_flush_log_at_trx_commit=2, rocksdb_flush_log_at_trx_commit=2.
# The binary log is off for all (no two-phase commit anywhere). Caches:
# 256 MB each (tidesdb_block_cache_size, innodb_buffer_pool_size,
# rocksdb_block_cache_size). Isolation: READ COMMITTED for all (MyRocks at
# REPEATABLE READ aborts TPC-C workers with 1213); go-tpc --isolation 2.
#
# Environment (small quick defaults): ENGINES="TidesDB InnoDB RocksDB"
#   WORKLOADS="oltp_read_write oltp_point_select oltp_insert oltp_write_only"
#   TABLES=2 TABLE_SIZE=10000 THREADS=2 TIME=10 TPCC_WAREHOUSES=2
#   TPCC_THREADS=2 TPCC_TIME=30s SKIP_TPCC=0 CSV=build/mariadb/compare.csv
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/common.sh"

ENGINES="${ENGINES:-TidesDB InnoDB RocksDB}"
WORKLOADS="${WORKLOADS:-oltp_read_write oltp_point_select oltp_insert oltp_write_only}"
TABLES="${TABLES:-2}"
TABLE_SIZE="${TABLE_SIZE:-10000}"
THREADS="${THREADS:-2}"
TIME="${TIME:-10}"
TPCC_WAREHOUSES="${TPCC_WAREHOUSES:-2}"
TPCC_THREADS="${TPCC_THREADS:-2}"
TPCC_TIME="${TPCC_TIME:-30s}"
DURABILITY="${DURABILITY:-full}"
CSV="${CSV:-$TIDESQL_BUILD/compare.csv}"
export TIDESQL_SERVER_DIR="${COMPARE_SERVER_DIR:-$TIDESQL_ROOT/build/mariadb-compare}"
export TIDESQL_SOCKET="$TIDESQL_SERVER_DIR/mysqld.sock"
export TIDESQL_PORT="${COMPARE_PORT:-3321}"
OUT="$TIDESQL_BUILD/compare"
mkdir -p "$OUT" "$(dirname "$CSV")"
check_server_version
command -v sysbench >/dev/null || die "sysbench missing: run scripts/mariadb/setup.sh"
case " $ENGINES " in *" RocksDB "*) [ -e "$TIDESQL_PLUGIN_DIR/ha_rocksdb.so" ] ||
  die "MyRocks (ha_rocksdb.so) is not in $TIDESQL_PLUGIN_DIR: install mariadb-plugin-rocksdb (setup.sh)";; esac

cnf="$OUT/compare-$DURABILITY.cnf"
case "$DURABILITY" in
  full) sync_lines="tidesdb_default_sync_mode = FULL
innodb_flush_log_at_trx_commit = 1
rocksdb_flush_log_at_trx_commit = 1" ;;
  relaxed) sync_lines="tidesdb_default_sync_mode = INTERVAL
tidesdb_default_sync_interval_us = 1000000
innodb_flush_log_at_trx_commit = 2
rocksdb_flush_log_at_trx_commit = 2" ;;
  *) die "DURABILITY must be full or relaxed" ;;
esac
cat >"$cnf" <<CNF
[mysqld]
transaction_isolation = READ-COMMITTED
skip-log-bin
max_connections = 200
$sync_lines
tidesdb_block_cache_size = 256M
innodb_buffer_pool_size = 256M
rocksdb_block_cache_size = 256M
CNF

server() { bash "$here/server.sh" "$@"; }
server wipe >/dev/null
server start --cnf "$cnf"
trap 'server stop >/dev/null 2>&1 || true' EXIT
server client -N -e "SELECT ENGINE, SUPPORT FROM information_schema.ENGINES WHERE ENGINE IN ('TidesDB','InnoDB','ROCKSDB')"

echo "engine,benchmark,throughput,unit,avg_ms,p95_ms,errors,durability" >"$CSV"
row() { echo "$1,$2,$3,$4,$5,$6,$7,$DURABILITY" >>"$CSV"; }

for e in $ENGINES; do
  db="sb_$(echo "$e" | tr 'A-Z' 'a-z')"
  server client -e "DROP DATABASE IF EXISTS $db; CREATE DATABASE $db"
  opts=(--db-driver=mysql --mysql-socket="$TIDESQL_SOCKET" --mysql-user=root --mysql-db="$db"
        --mysql-storage-engine="$e" --tables="$TABLES" --table-size="$TABLE_SIZE")
  for w in $WORKLOADS; do
    log="$OUT/$e-$w.log"
    echo "compare: $e $w ($TABLES x $TABLE_SIZE rows, $THREADS threads, ${TIME}s, durability $DURABILITY)"
    if ! sysbench "$w" "${opts[@]}" prepare >"$log" 2>&1 ||
       ! sysbench "$w" "${opts[@]}" --threads="$THREADS" --time="$TIME" --report-interval=0 run >>"$log" 2>&1; then
      echo "compare: $e $w FAILED (log $log)" >&2; row "$e" "$w" "" tps "" "" failed
      sysbench "$w" "${opts[@]}" cleanup >>"$log" 2>&1 || true
      continue
    fi
    tps="$(sed -n 's/.*transactions: *[0-9]* *(\([0-9.]*\) per sec.).*/\1/p' "$log" | tail -1)"
    avg="$(sed -n 's/^ *avg: *\([0-9.]*\)/\1/p' "$log" | tail -1)"
    p95="$(sed -n 's/^ *95th percentile: *\([0-9.]*\)/\1/p' "$log" | tail -1)"
    errs="$(sed -n 's/.*ignored errors: *\([0-9]*\).*/\1/p' "$log" | tail -1)"
    row "$e" "$w" "$tps" tps "$avg" "$p95" "${errs:-0}"
    sysbench "$w" "${opts[@]}" cleanup >>"$log" 2>&1 || true
  done
  server client -e "DROP DATABASE IF EXISTS $db"
done

if [ "${SKIP_TPCC:-0}" != 1 ]; then
  ensure_gotpc
  for e in $ENGINES; do
    echo "compare: $e TPC-C ($TPCC_WAREHOUSES warehouses, $TPCC_THREADS threads, $TPCC_TIME)"
    tout="$OUT/tpcc-$e"
    if TPCC_SERVER_DIR="$TIDESQL_SERVER_DIR" TPCC_PORT="$TIDESQL_PORT" TPCC_OUT="$tout" WIPE=0 \
       TPCC_DB="tpcc_$(echo "$e" | tr 'A-Z' 'a-z')" ENGINE="$e" WAREHOUSES="$TPCC_WAREHOUSES" \
       THREADS="$TPCC_THREADS" TIME="$TPCC_TIME" ISOLATION=2 MAX_ERR_PCT="${TPCC_MAX_ERR_PCT:-100}" \
       bash -c "bash '$here/tpcc.sh' prepare && bash '$here/tpcc.sh' run" >"$OUT/tpcc-$e.log" 2>&1; then
      tail -n 12 "$OUT/tpcc-$e.log"
    else
      tail -n 12 "$OUT/tpcc-$e.log" >&2; echo "compare: $e TPC-C FAILED" >&2
    fi
    tlog="$tout/run-$e.log"
    touch "$tlog" 2>/dev/null || true
    tpmc="$(sed -n 's/^tpmC: \([0-9.]*\),.*/\1/p' "$tlog" | tail -1)"
    no="$(sed -n 's/^\[Summary\] NEW_ORDER - .*Avg(ms): \([0-9.]*\), .*95th(ms): \([0-9.]*\),.*/\1 \2/p' "$tlog" | tail -1)"
    errs="$(sed -n 's/^\[Summary\] [A-Z_]*_ERR - Takes(s): [0-9.]*, Count: \([0-9]*\),.*/\1/p' "$tlog" | awk '{s+=$1} END {print s+0}')"
    [ -n "$no" ] || no=" "
    row "$e" tpcc "${tpmc:-}" tpmC "${no% *}" "${no#* }" "${errs:-0}"
    server client -e "DROP DATABASE IF EXISTS tpcc_$(echo "$e" | tr 'A-Z' 'a-z')"
  done
fi

echo
echo "compare: results ($CSV)"
column -s, -t <"$CSV" 2>/dev/null || cat "$CSV"

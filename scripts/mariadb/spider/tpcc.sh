#!/usr/bin/env bash
# TPC-C (go-tpc) through a Spider front over SHARDS TidesDB backends,
# sharded by warehouse, measured by the project's TPC-C runner
# (tools/sql/cmd/tpcc) in its external-server mode (issue #21):
#   1. starts backends b1..bSHARDS and the front (lib.sh);
#   2. on every backend, go-tpc creates its own schema (its CSV mode makes
#      the tables and writes one warehouse's CSV, no rows), ENGINE=TidesDB,
#      plus the history index go-tpc's check needs (idx_h_check);
#   3. on the front, each table is a Spider table with the backend's
#      definition, PARTITION BY RANGE on its warehouse column (item: on
#      i_id; history: on the customer's warehouse h_c_w_id, so the check's
#      per-customer history sums read one shard), one range per backend;
#   4. go-tpc prepare loads through the front (Spider routes each row);
#      each backend is then checked to hold only its own warehouses, and
#      ANALYZE ... PERSISTENT FOR ALL on the front gives its optimizer the
#      statistics the check's joins need;
#   5. the runner, `tpcc --target <front> --engine SPIDER --no-prepare`,
#      runs the mix and go-tpc's consistency check through the front: the
#      same run, error-share rule, report and check as on its own servers.
# SHARDS=0 measures one plain TidesDB server (started like a backend) with
# the same runner, which builds the schema itself (--engine TidesDB): the
# baseline.
# Environment: SHARDS=2 WAREHOUSES=2 THREADS=2 TIME=30s (or 2m)
#   ISOLATION=2 (go-tpc: 2 READ COMMITTED, 4 REPEATABLE READ) MAX_ERR_PCT=5
#   XA=1 (the front's spider_internal_xa) KEEP=0 (1: leave servers up)
#   CHECK=1 (0: no consistency check) SPIDER_DIR SPIDER_PORT
# Appends "tpcc,<shards>,<warehouses>,<threads>,<time>,<xa>,<NOPM>,<New-Order
# p95 ms>,<p99 ms>,<load s>,<check>" to $SPIDER_DIR/out/results.csv; the
# runner's report (summary.md, runs.csv, transactions.csv, logs) in
# $SPIDER_DIR/out/tpcc-<shards>[-xa<XA>]/harness/.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/lib.sh"

SHARDS="${SHARDS:-2}"
WAREHOUSES="${WAREHOUSES:-2}"
THREADS="${THREADS:-2}"
TIME="${TIME:-30s}"
XA="${XA:-1}"
CHECK="${CHECK:-1}"
DB=tpcc
OUT="$SPIDER_DIR/out/tpcc-$SHARDS$([ "$SHARDS" = 0 ] || echo "-xa$XA")"
RESULT_SIZE="$WAREHOUSES"
rm -rf "$OUT"
mkdir -p "$OUT"
export TIDESQL_NO_ROCKSDB=1
ensure_gotpc
spider_harnesses

case "$TIME" in
  *m) secs=$((${TIME%m} * 60)) ;;
  *s) secs="${TIME%s}" ;;
  *) secs="$TIME" ;;
esac
[[ "$secs" =~ ^[0-9]+$ ]] && [ "$secs" -ge 5 ] || die "TIME=$TIME: want seconds (30s, 30) or minutes (2m), at least 5 s"
case "${ISOLATION:-2}" in
  2) iso=READ-COMMITTED ;; 4) iso=REPEATABLE-READ ;; *) die "ISOLATION=$ISOLATION: want 2 or 4" ;;
esac

# runner PORT ENGINE LABEL [tpcc flags]: the TPC-C runner on the server at
# 127.0.0.1:PORT, as an external server; its report in $OUT/harness.
runner() {
  local port="$1" engine="$2" label="$3" iv=$((secs < 10 ? secs : 10))
  shift 3
  "$SQL_BIN/tpcc" --target "127.0.0.1:$port" --engine "$engine" --label "$label" --gotpc "$GOTPC_BIN" \
    --warehouses "$WAREHOUSES" --build-vu "$THREADS" --run-vu "$THREADS" --rampup 0 --settle 0 \
    --duration "$(awk -v s="$secs" 'BEGIN { printf "%.6f", s / 60 }')" --interval "${iv}s" --isolation "$iso" \
    --max-err-pct "${MAX_ERR_PCT:-5}" --out "$OUT/harness" --no-charts "$@" >"$OUT/runner.log" 2>&1 ||
    { tail -30 "$OUT/runner.log" >&2; die "the TPC-C runner failed on $label (report in $OUT/harness, log $OUT/runner.log)"; }
  sed -n '/^| NOPM/p; /^| New-Order p9/p' "$OUT/harness/summary.md"
}

# result LOAD_SECONDS: this run's row of results.csv, from the runner's CSVs.
result() {
  local nopm p95 p99 check
  nopm="$(csv_get "$OUT/harness/runs.csv" nopm)"
  check="$(csv_get "$OUT/harness/runs.csv" check)"
  p95="$(csv_get "$OUT/harness/transactions.csv" p95_ms txn NEW_ORDER)"
  p99="$(csv_get "$OUT/harness/transactions.csv" p99_ms txn NEW_ORDER)"
  [ -n "$nopm" ] || die "no NOPM in $OUT/harness/runs.csv"
  spider_result tpcc "$nopm" "$p95" "$p99" "$1" "$check"
  echo "spider-tpcc: $SHARDS shard(s): NOPM $nopm, New-Order p95 $p95 ms, p99 $p99 ms, check $check"
}

nocheck=()
[ "$CHECK" = 1 ] || nocheck=(--no-check)
[ "${KEEP:-0}" = 1 ] || trap spider_stop_all EXIT
if [ "$SHARDS" = 0 ]; then
  spider_check_plugin
  spider_start plain
  echo "spider-tpcc: one plain TidesDB server, $WAREHOUSES warehouses, port $(spider_port plain)"
  runner "$(spider_port plain)" TidesDB "TidesDB plain server" "${nocheck[@]}"
  result "$(csv_get "$OUT/harness/runs.csv" build_s | cut -d. -f1)"
  exit 0
fi

[ "$WAREHOUSES" -ge "$SHARDS" ] || die "WAREHOUSES=$WAREHOUSES < SHARDS=$SHARDS: every shard needs a warehouse"
spider_topology "$SHARDS" "$DB"
q front -e "SET GLOBAL spider_internal_xa = $XA"
echo "spider-tpcc: $SHARDS shard(s), $WAREHOUSES warehouses, front port $SPIDER_PORT, spider_internal_xa=$XA"

# 2. go-tpc's schema on every backend.
for i in $(seq 1 "$SHARDS"); do
  rm -rf "$OUT/ddl-b$i"
  "$GOTPC_BIN" tpcc -H "$(spider_host "b$i")" -P "$(spider_port "b$i")" -U root -D "$DB" --warehouses 1 \
    --conn-params default_storage_engine=TidesDB prepare --output-type csv --output-dir "$OUT/ddl-b$i" \
    --tables warehouse >"$OUT/ddl-b$i.log" 2>&1 || { tail "$OUT/ddl-b$i.log" >&2; die "go-tpc could not create the schema on b$i"; }
  q "b$i" "$DB" -e "ALTER TABLE history ADD INDEX idx_h_check (h_c_w_id, h_c_d_id, h_c_id)"
  engines="$(q "b$i" -N -e "SELECT GROUP_CONCAT(DISTINCT ENGINE), COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA='$DB'")"
  [ "$engines" = "$(printf 'TidesDB\t9')" ] || die "b$i: tpcc tables are '$engines', expected 9 TidesDB tables"
done

# 3. The Spider tables.
declare -A keycol=([warehouse]=w_id [district]=d_w_id [customer]=c_w_id [history]=h_c_w_id
                   [new_order]=no_w_id [orders]=o_w_id [order_line]=ol_w_id [stock]=s_w_id [item]=i_id)
for t in "${!keycol[@]}"; do
  total="$WAREHOUSES"
  [ "$t" = item ] && total=100000
  spider_table "$SHARDS" "$DB" "$t" "${keycol[$t]}" "$total"
done

# 4. Load through the front.
t0=$SECONDS
"$GOTPC_BIN" tpcc -H 127.0.0.1 -P "$SPIDER_PORT" -U root -D "$DB" --warehouses "$WAREHOUSES" -T "$THREADS" \
  prepare --no-check >"$OUT/prepare.log" 2>&1 || { tail -20 "$OUT/prepare.log" >&2; die "go-tpc prepare through the front failed"; }
if grep -qiE "panic|fatal|failed" "$OUT/prepare.log"; then
  grep -iE "panic|fatal|failed" "$OUT/prepare.log" | head -5 >&2; die "go-tpc prepare through the front reported errors"
fi
prep=$((SECONDS - t0))
echo "spider-tpcc: prepared through the front in $prep s"
# Each backend holds exactly its warehouses' rows, and the front sees them all.
b=($(range_bounds "$WAREHOUSES" "$SHARDS") $((WAREHOUSES + 1)))
lo=1
for i in $(seq 1 "$SHARDS"); do
  hi=${b[$((i - 1))]}
  for t in warehouse district customer stock orders order_line new_order history; do
    bad="$(q "b$i" -N "$DB" -e "SELECT COUNT(*) FROM $t WHERE ${keycol[$t]} NOT BETWEEN $lo AND $((hi - 1))")"
    [ "$bad" = 0 ] || die "b$i holds $bad rows of $t outside warehouses $lo..$((hi - 1))"
  done
  [ "$(spider_rows "b$i" "$DB" warehouse)" = $((hi - lo)) ] || die "b$i: expected $((hi - lo)) warehouses"
  echo "spider-tpcc: b$i holds warehouses $lo..$((hi - 1)): $(spider_rows "b$i" "$DB" order_line) order lines, $(spider_rows "b$i" "$DB" item) items"
  lo=$hi
done

[ "$(spider_rows front "$DB" warehouse)" = "$WAREHOUSES" ] || die "the front does not see $WAREHOUSES warehouses"
# The front plans joins of Spider tables from the backends' cardinalities,
# and for the check's condition 3.3.2.10 (a customer's delivered order
# lines) it drove the join from order_line's (ol_w_id, ol_d_id) prefix: a
# district's order lines fetched per customer, hours at 2 warehouses.
# Engine-independent statistics of the front's own (read through Spider)
# make it start from orders' idx_order: seconds. Gathered after the load;
# the run does not change the shape they describe.
if [ "$CHECK" = 1 ]; then
  t0=$SECONDS
  q front "$DB" -e "ANALYZE TABLE orders, order_line, history PERSISTENT FOR ALL" >/dev/null
  echo "spider-tpcc: statistics for the check gathered through the front in $((SECONDS - t0)) s"
fi

# 5. Run and check through the front with the TPC-C runner.
runner "$SPIDER_PORT" SPIDER "Spider $SHARDS shard(s) (XA $([ "$XA" = 1 ] && echo on || echo off))" --no-prepare "${nocheck[@]}"
result "$prep"

#!/usr/bin/env bash
# TPC-C (go-tpc) through a Spider front over SHARDS TidesDB backends,
# sharded by warehouse (issue #21):
#   1. starts backends b1..bSHARDS and the front (lib.sh);
#   2. on every backend, go-tpc creates its own schema (its CSV mode makes
#      the tables and writes one warehouse's CSV, no rows), ENGINE=TidesDB,
#      plus the history index tpcc.sh's check uses;
#   3. on the front, each table is a Spider table with the backend's
#      definition, PARTITION BY RANGE on its warehouse column (item: on
#      i_id; history: on the customer's warehouse h_c_w_id, so the check's
#      per-customer history sums read one shard), one range per backend;
#   4. go-tpc prepare loads through the front (Spider routes each row);
#      each backend is then checked to hold only its own warehouses;
#   5. ../tpcc.sh run and check against the front: the same run, report,
#      error-row rules and go-tpc consistency check as on one server.
# SHARDS=0 runs ../tpcc.sh on one plain server instead (the baseline).
# Environment: SHARDS=2 WAREHOUSES=2 THREADS=2 TIME=30s ISOLATION=2
#   XA=1 (the front's spider_internal_xa) KEEP=0 (1: leave servers up)
#   CHECK=1 (0: no consistency check after the run; sharded runs only)
#   SPIDER_DIR SPIDER_PORT, MAX_ERR_PCT (../tpcc.sh)
# Appends "tpcc,<shards>,<warehouses>,<threads>,<time>,<xa>,<tpmC>,<prepare s>"
# to $SPIDER_DIR/out/results.csv; logs in $SPIDER_DIR/out/tpcc-<shards>/.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/lib.sh"

SHARDS="${SHARDS:-2}"
WAREHOUSES="${WAREHOUSES:-2}"
THREADS="${THREADS:-2}"
TIME="${TIME:-30s}"
XA="${XA:-1}"
DB=tpcc
OUT="$SPIDER_DIR/out/tpcc-$SHARDS"
mkdir -p "$OUT"
export WAREHOUSES THREADS TIME TIDESQL_NO_ROCKSDB=1
ensure_gotpc

result() { # tpmC prepare_seconds
  echo "tpcc,$SHARDS,$WAREHOUSES,$THREADS,$TIME,$([ "$SHARDS" = 0 ] && echo - || echo "$XA"),$1,$2" >>"$SPIDER_DIR/out/results.csv"
}
tpmc_of() { sed -n 's/^tpmC: \([0-9.]*\),.*/\1/p' "$1" | tail -1; }

if [ "$SHARDS" = 0 ]; then
  # Temporary tables in a directory of its own, as for the Spider servers.
  mkdir -p "$SPIDER_DIR/plain-tmp"
  printf '[mysqld]\ntmpdir=%s\n' "$SPIDER_DIR/plain-tmp" >"$SPIDER_DIR/plain.cnf"
  TPCC_SERVER_DIR="$SPIDER_DIR/plain" TPCC_PORT="$(spider_port plain)" TPCC_OUT="$OUT" CNF="$SPIDER_DIR/plain.cnf" \
    bash "$here/../tpcc.sh" all | tee "$OUT/tpcc.txt"
  result "$(tpmc_of "$OUT/run-TidesDB.log")" "$(sed -n 's/^tpcc: prepared in \([0-9]*\) s/\1/p' "$OUT/tpcc.txt")"
  exit 0
fi

[ "$WAREHOUSES" -ge "$SHARDS" ] || die "WAREHOUSES=$WAREHOUSES < SHARDS=$SHARDS: every shard needs a warehouse"
[ "${KEEP:-0}" = 1 ] || trap spider_stop_all EXIT
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

# 5. Run and check through the front, as on one server.
front_tpcc() {
  TPCC_SERVER_DIR="$SPIDER_DIR/front" TPCC_PORT="$SPIDER_PORT" TPCC_OUT="$OUT" ENGINE=SPIDER \
    bash "$here/../tpcc.sh" "$@"
}
front_tpcc run | tee "$OUT/run.txt"
# The front plans joins of Spider tables from the backends' cardinalities,
# and for the check's condition 3.3.2.10 (a customer's delivered order
# lines) it drove the join from order_line's (ol_w_id, ol_d_id) prefix: a
# district's order lines fetched per customer, hours at 2 warehouses.
# Engine-independent statistics of the front's own (read through Spider)
# make it start from orders' idx_order: seconds.
if [ "${CHECK:-1}" = 0 ]; then
  result "$(tpmc_of "$OUT/run-SPIDER.log")" "$prep"
  echo "spider-tpcc: $SHARDS shard(s): tpmC $(tpmc_of "$OUT/run-SPIDER.log") (CHECK=0: no consistency check)"
  exit 0
fi
t0=$SECONDS
q front "$DB" -e "ANALYZE TABLE orders, order_line, history PERSISTENT FOR ALL" >/dev/null
echo "spider-tpcc: statistics for the check gathered through the front in $((SECONDS - t0)) s"
front_tpcc check
result "$(tpmc_of "$OUT/run-SPIDER.log")" "$prep"
echo "spider-tpcc: $SHARDS shard(s): tpmC $(tpmc_of "$OUT/run-SPIDER.log"), go-tpc check passed through the front"

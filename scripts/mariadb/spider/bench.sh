#!/usr/bin/env bash
# Throughput through Spider with 1, 2 and 4 TidesDB shards against one
# plain server (issue #21; figures in docs/design/spider.md). All servers
# share this machine's cores: more shards add processes, not hardware.
#   bench.sh     for each of SHARDS_LIST (default "0 1 2 4"; 0 = the plain
#                server): TPC-C (WAREHOUSES=4 THREADS=4 TIME=60s, go-tpc
#                check after each run), then sysbench WORKLOAD
#                (oltp_read_write, TABLES=4 x TABLE_SIZE=50000, SB_THREADS=4,
#                SB_TIME=60)
# Prints the results table; rows in $SPIDER_DIR/out/results.csv (this run
# only: an older file is kept as results.csv.old).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/lib.sh"
mkdir -p "$SPIDER_DIR/out"
[ -f "$SPIDER_DIR/out/results.csv" ] && mv -f "$SPIDER_DIR/out/results.csv" "$SPIDER_DIR/out/results.csv.old"
list="${SHARDS_LIST:-0 1 2 4}"
for s in $list; do
  SHARDS=$s WAREHOUSES="${WAREHOUSES:-4}" THREADS="${THREADS:-4}" TIME="${TIME:-60s}" bash "$here/tpcc.sh"
done
for s in $list; do
  SHARDS=$s TABLES="${TABLES:-4}" TABLE_SIZE="${TABLE_SIZE:-50000}" THREADS="${SB_THREADS:-4}" TIME="${SB_TIME:-60}" \
    WORKLOAD="${WORKLOAD:-oltp_read_write}" bash "$here/sysbench.sh"
done
echo
echo "bench,shards,size,threads,time,spider_internal_xa,throughput(tpmC|tps),prepare_s|p95_ms"
cat "$SPIDER_DIR/out/results.csv"

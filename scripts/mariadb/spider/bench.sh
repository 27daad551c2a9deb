#!/usr/bin/env bash
# Throughput through Spider with 1, 2 and 4 TidesDB shards against one
# plain TidesDB server, all measured in this run by the project's harnesses
# in their external-server mode (issue #21; figures in
# docs/design/spider.md). All servers share this machine's cores: more
# shards add processes, not hardware.
#   bench.sh   TPC-C (tools/sql/cmd/tpcc, go-tpc's check after each run):
#              the plain server, then SHARDS_LIST with spider_internal_xa
#              ON, then XA_OFF_LIST with it OFF (WAREHOUSES=4 THREADS=4
#              TIME=60s); then sysbench (tools/sql/cmd/sqlbench): the
#              plain server and SB_SHARDS_LIST, each running WORKLOADS
#              (oltp_read_write oltp_point_select oltp_write_only) on
#              TABLES=4 x TABLE_SIZE=50000 rows, SB_THREADS=4, SB_TIME=60 s
#              after SB_WARMUP=5 s (XA off: see sysbench.sh).
#   Defaults: SHARDS_LIST="1 2 4" XA_OFF_LIST="2 4" SB_SHARDS_LIST="1 2 4";
#   TPCC=0 or SYSBENCH=0 skips one half.
# Prints the results table (Markdown: throughput, p95/p99, ratio to the
# plain server) and the load average; rows in $SPIDER_DIR/out/results.csv
# (this run only: an older file is kept as results.csv.old).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/lib.sh"
mkdir -p "$SPIDER_DIR/out"
res="$SPIDER_DIR/out/results.csv"
[ -f "$res" ] && mv -f "$res" "$res.old"
echo "spider-bench: start, load average $(cut -d' ' -f1-3 /proc/loadavg)"
if [ "${TPCC:-1}" = 1 ]; then
  tp() { WAREHOUSES="${WAREHOUSES:-4}" THREADS="${THREADS:-4}" TIME="${TIME:-60s}" "$@" bash "$here/tpcc.sh"; }
  tp env SHARDS=0
  for s in ${SHARDS_LIST:-1 2 4}; do tp env SHARDS="$s" XA=1; done
  for s in ${XA_OFF_LIST:-2 4}; do tp env SHARDS="$s" XA=0; done
fi
if [ "${SYSBENCH:-1}" = 1 ]; then
  for s in 0 ${SB_SHARDS_LIST:-1 2 4}; do
    SHARDS="$s" XA=0 TABLES="${TABLES:-4}" TABLE_SIZE="${TABLE_SIZE:-50000}" THREADS="${SB_THREADS:-4}" \
      TIME="${SB_TIME:-60}" WARMUP="${SB_WARMUP:-5}" \
      WORKLOADS="${WORKLOADS:-oltp_read_write oltp_point_select oltp_write_only}" bash "$here/sysbench.sh"
  done
fi
echo "spider-bench: end, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo
spider_table_md "$res"

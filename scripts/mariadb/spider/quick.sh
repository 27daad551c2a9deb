#!/usr/bin/env bash
# The quick Spider check of scripts/mariadb/test_all.sh (issue #21), end to
# end through the project's harnesses in their external-server mode:
#   1. TPC-C through a Spider front over 2 TidesDB shards, measured by
#      tools/sql's tpcc runner (--target <front> --no-prepare): 2
#      warehouses, 2 threads, TIME=10s, go-tpc's consistency check through
#      the front, each shard holding only its warehouses;
#   2. sysbench oltp_read_write through a front over 2 shards (2 tables x
#      2,000 rows sharded by id), measured by sqlbench (TARGET=<front>
#      NO_PREPARE=1), 5 s;
#   3. the cross-shard transaction cases of xa_test.sh.
# 216 s at a load average of 10-15 (TPC-C 143 s, sqlbench 32 s, xa_test
# 41 s); the TPC-C and sqlbench parts took 208 s + 53 s at a load of 20.
# Before the sqlbench part and the harnesses: 100 s on a quiet machine.
# Longer runs and the comparison with one plain server: bench.sh.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
t0=$SECONDS
SHARDS=2 WAREHOUSES=2 THREADS=2 TIME="${TIME:-10s}" XA=1 bash "$here/tpcc.sh"
echo "spider-quick: tpcc runner through 2 shards passed ($((SECONDS - t0)) s)"
t1=$SECONDS
SHARDS=2 TABLES=2 TABLE_SIZE=2000 THREADS=2 TIME=5 WARMUP=0 WORKLOADS=oltp_read_write XA=0 bash "$here/sysbench.sh"
echo "spider-quick: sqlbench through 2 shards passed ($((SECONDS - t1)) s)"
bash "$here/xa_test.sh"
echo "spider-quick: passed in $((SECONDS - t0)) s"

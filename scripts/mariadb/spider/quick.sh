#!/usr/bin/env bash
# The quick Spider check of scripts/mariadb/test_all.sh (issue #21), 100 s
# on 2 cores (160 s at a load average of 13): TPC-C through a Spider front
# over 2 TidesDB shards (2 warehouses, 2 threads, TIME=10s, go-tpc's consistency check
# through the front, each shard holding only its warehouses), then the
# cross-shard transaction cases of xa_test.sh. Longer runs: bench.sh.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
t0=$SECONDS
SHARDS=2 WAREHOUSES=2 THREADS=2 TIME="${TIME:-10s}" XA=1 bash "$here/tpcc.sh"
echo "spider-quick: tpcc through 2 shards passed ($((SECONDS - t0)) s)"
bash "$here/xa_test.sh"
echo "spider-quick: passed in $((SECONDS - t0)) s"

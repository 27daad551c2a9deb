#!/usr/bin/env bash
# Calibration: RocksDB's own db_bench (rocksdb-tools) against tdb_bench on
# the same machine and settings, so tdb_bench's harness can be checked: its
# RocksDB figures should land near db_bench's.
#
#   bash scripts/db_bench_compare.sh [--num=N] [--db=DIR] [--engines=LIST]
#
# Settings (both programs): fillrandom then readrandom, N keys (2,000,000)
# over key range [0,N), key 16 B, value 100 B (50% compressible),
# write_buffer_size 64 MiB, block cache 64 MiB, lz4, bloom 10 bits/key,
# block 4 KiB, 2 background jobs, no sync; threads 1 and 2 (with T threads
# each thread does N/T operations, as tdb_bench splits them).
# Known differences: tdb_bench waits for compactions to finish after the
# fill (db_bench does not) and warms the block cache with one scan before
# readrandom.
set -euo pipefail
cd "$(dirname "$0")/.."

num=2000000
db=/tmp/db_bench_compare
engines=""
for a in "$@"; do
  case "$a" in
    --num=*) num="${a#--num=}" ;;
    --db=*) db="${a#--db=}" ;;
    --engines=*) engines="${a#--engines=}" ;;
    *) echo "usage: $0 [--num=N] [--db=DIR] [--engines=LIST]" >&2; exit 2 ;;
  esac
done

if ! command -v db_bench >/dev/null; then
  echo "db_bench_compare: db_bench not found (apt-get install rocksdb-tools)" >&2
  exit 1
fi
tdb="${TDB_BENCH:-./build/tools/tdb_bench}"
if [ -z "$engines" ] && [ -x "$tdb" ]; then
  engines=$("$tdb" --help | sed -n 's/^compiled engines: //p' | tr ' ' '\n' |
            grep -E '^(rocksdb|tidesdb)$' | paste -sd, -)
fi

mb=$((64 * 1024 * 1024))
summary=$(mktemp)
trap 'rm -f "$summary"' EXIT
echo "settings: num=$num key_size=16 value_size=100 write_buffer_size=64MiB" \
     "cache_size=64MiB compression=lz4 bloom_bits=10 block_size=4096 bg_jobs=2 sync=0"
echo "machine: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"

for t in 1 2; do
  per=$((num / t))
  rm -rf "$db"
  echo
  echo "== db_bench threads=$t"
  db_bench --benchmarks=fillrandom,readrandom --db="$db" --num="$num" \
    --writes="$per" --reads="$per" --threads="$t" --key_size=16 --value_size=100 \
    --write_buffer_size="$mb" --cache_size="$mb" --compression_type=lz4 \
    --bloom_bits=10 --block_size=4096 --max_background_jobs=2 --sync=0 \
    --seed=301 --histogram=1 2>&1 |
  awk -v t="$t" -v out="$summary" '
    /^(fillrandom|readrandom) +:/ {
      name = $1
      for (i = 1; i <= NF; i++) if ($i == "ops/sec") ops = $(i - 1)
      printf "db_bench  threads=%d %-11s %10s ops/s\n", t, name, ops
      printf "%d %s db_bench %s\n", t, name, ops >> out
    }
    /^Percentiles:/ && name != "" { print "          " $0; name = "" }'
  rm -rf "$db"

  if [ -n "$engines" ]; then
    echo "== tdb_bench threads=$t engines=$engines"
    csv="$db.csv"
    "$tdb" --engines="$engines" --workloads=fillrandom,readrandom --num="$num" \
      --threads="$t" --key_size=16 --value_size=100 --write_buffer_size=64M \
      --cache_size=64M --compression=lz4 --bloom_bits=10 --bg_threads=2 --sync=0 \
      --seed=301 --db="$db" --csv="$csv" >/dev/null 2>"$db.log" ||
      { echo "tdb_bench reported errors:"; cat "$db.log"; }
    rm -f "$db.log"
    awk -F, -v t="$t" -v out="$summary" 'NR > 1 && $16 == 1 {
        printf "tdb_bench threads=%d %-11s %10.0f ops/s  [%s]  p50 %s us  p99 %s us  p99.9 %s us\n",
               t, $2, $4, $1, $6, $7, $8
        printf "%d %s tdb_bench[%s] %.0f\n", t, $2, $1, $4 >> out
      }' "$csv"
    rm -f "$csv"
  else
    echo "(tdb_bench not built: run bash scripts/bench_lib.sh or build the tdb_bench target)"
  fi
done

echo
echo "== summary (ops/s; ratio = figure / db_bench figure)"
awk '{ key = $1 " " $2; if ($3 == "db_bench") base[key] = $4; row[NR] = $0 }
     END { for (i = 1; i <= NR; i++) { split(row[i], f, " "); key = f[1] " " f[2];
             r = (base[key] > 0) ? sprintf("%.2fx", f[4] / base[key]) : "-";
             printf "threads=%s %-11s %-20s %10.0f  %s\n", f[1], f[2], f[3], f[4], r } }' "$summary"

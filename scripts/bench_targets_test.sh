#!/usr/bin/env bash
# Self-test of scripts/bench_targets.py on hand-written sqlbench summaries:
# a part run in passes (bench_targets.sh --passes) is judged on the median
# of every pass's runs, and a part without pass directories as before.
set -euo pipefail
cd "$(dirname "$0")/.."
t=$(mktemp -d)
trap 'rm -rf "$t"' EXIT
hdr="engine,workload,threads,table_size,iteration,tps,qps,avg_ms,p95_ms,p99_ms,max_ms,errors,reconnects,data_bytes,error"
row() { echo "$1,oltp_read_write,2,50000,$2,$3,0,1,1,1,1,0,0,1000,"; }
# mem-relaxed in three passes (one run each): TidesDB 90, 130, 100 tps,
# InnoDB 100 throughout. Median over the passes: 100/100 = 1.00x met; the
# first pass alone would give 0.90x and the mean 1.07x.
for k in 1 2 3; do mkdir -p "$t/mem-relaxed/pass-$k"; done
{ echo "$hdr"; row TidesDB 1 90; row InnoDB 1 100; } >"$t/mem-relaxed/pass-1/summary_1.csv"
{ echo "$hdr"; row InnoDB 1 100; row TidesDB 1 130; } >"$t/mem-relaxed/pass-2/summary_2.csv"
{ echo "$hdr"; row TidesDB 1 100; row InnoDB 1 100; } >"$t/mem-relaxed/pass-3/summary_3.csv"
# mem-durable without passes, two iterations: TidesDB 80 and 84, InnoDB 100: 0.82x missed.
mkdir -p "$t/mem-durable"
{ echo "$hdr"; row TidesDB 1 80; row TidesDB 2 84; row InnoDB 1 100; row InnoDB 2 100; } >"$t/mem-durable/summary_4.csv"
python3 scripts/bench_targets.py "$t" >/dev/null
fail=0
expect() { # part measured status
  local line
  line=$(grep -F "| oltp_read_write vs InnoDB, 2 threads, in memory | $1 |" "$t/targets.md") || { echo "FAIL: no $1 row"; fail=1; return; }
  case "$line" in *"| $2 | $3 |"*) ;; *) echo "FAIL: $1: want $2 $3, got: $line"; fail=1 ;; esac
}
expect mem-relaxed 1.00x met
expect mem-durable 0.82x MISSED
[ $fail = 0 ] && echo "bench_targets_test: ok"
exit $fail

#!/usr/bin/env bash
# How far can TidesDB beat InnoDB on this machine if the engine cost
# nothing? For each workload and engine: one run of the project's harness
# (in memory, 8 clients, equal memory budget), and during its measured
# phase the server's CPU (perf stat, 20 s), the machine's idle time
# (vmstat) and a profile (perf record --call-graph dwarf, 12 s) whose
# engine share scripts/engine_share.py counts. Then, per workload:
#   machine CPU per transaction = busy cores / throughput
#   engine CPU per transaction  = server CPU per transaction x engine share
#   ceiling = InnoDB's machine CPU per transaction
#             / (TidesDB's machine CPU per transaction - TidesDB's engine CPU)
# the ratio a TidesDB whose engine took no CPU at all would reach, with the
# SQL layer, the network and the clients as they are (valid when the
# machine is CPU-bound: see the idle column). For TPC-C also New-Order's
# p99 with a free engine: with the CPU busy and no think time, a fixed
# number of users see latencies in proportion to the machine's CPU per
# transaction (Little's law: users = throughput x latency), so
#   p99 with a free engine = TidesDB's p99 x (machine - engine) / machine
# and the best ratio of InnoDB's p99 to it.
# tpcc is in memory (2 warehouses); tpcc_big is bench_targets.sh's quick
# tpcc_big (8 warehouses, 64 MiB caches, each server under 512 MiB).
#
# Usage: bash scripts/bench_ceiling.sh [--durability relaxed|durable]
#          [--workloads "tpcc tpcc_big oltp_insert oltp_write_only ..."] [--out DIR]
#   about 1.5 minutes per workload and engine, tpcc_big 2.3 (default: tpcc, oltp_insert,
#   oltp_write_only, relaxed: 9 minutes). Results: <out>/ceiling.csv and
#   <out>/ceiling.md.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/mariadb/common.sh

dur=relaxed workloads="tpcc oltp_insert oltp_write_only" out="" port=3436
while [ $# -gt 0 ]; do
  case "$1" in
    --durability) dur="${2:-}"; shift 2 || die "$1 needs a value" ;;
    --workloads) workloads="${2:-}"; shift 2 || die "$1 needs a value" ;;
    --out) out="${2:-}"; shift 2 || die "$1 needs a value" ;;
    --port) port="${2:-}"; shift 2 || die "$1 needs a value" ;;
    *) die "bench_ceiling: unknown argument '$1' (see the header of $0)" ;;
  esac
done
case "$dur" in relaxed|durable) ;; *) die "--durability: relaxed or durable, not '$dur'" ;; esac
for w in $workloads; do
  case "$w" in tpcc|tpcc_big|oltp_insert|oltp_write_only|oltp_read_write|oltp_point_select|oltp_read_only) ;;
    *) die "--workloads: unknown workload '$w'" ;; esac
done
out="${out:-results/ceiling-$(date +%Y%m%d-%H%M%S)}"
mkdir -p "$out" || die "cannot create $out"
out="$(cd "$out" && pwd)"

if ! command -v perf >/dev/null || ! perf stat -e task-clock true >/dev/null 2>&1; then
  [ "$(id -u)" -eq 0 ] || die "bench_ceiling: needs perf (Debian package linux-perf) and root to install it"
  echo "bench_ceiling: installing linux-perf"
  apt-get install -y -q --no-install-recommends linux-perf >/dev/null || die "cannot install linux-perf"
fi
ensure_sql_harnesses
ensure_gotpc
export TIDESQL_ROOT="$PWD"

win=20 # seconds of CPU time and idle time measured per run

# run ENGINE WORKLOAD: one measured run with the observers attached.
run() {
  local e=$1 w=$2 d="$out/$1-$2" srv="$out/server" mark tp pid
  fail() { echo "bench_ceiling: $e $w: $*" >&2; return 1; }
  rm -rf "$srv" "$d" && mkdir -p "$d"
  local tpcc=false
  case "$w" in tpcc|tpcc_big) tpcc=true ;; esac
  if $tpcc; then
    local size=(--warehouses 2)
    [ "$w" = tpcc_big ] && size=(--warehouses 8 --cache 64M --mem-limit 512M --settle 10)
    "$SQL_BIN/tpcc" --engines "$e" --durability "$dur" --memory equal "${size[@]}" --build-vu 2 --run-vu 8 \
      --rampup 0.25 --duration 1.2 --no-charts --no-check --port "$port" --server-dir "$srv" --out "$d/res" \
      >"$d/log" 2>&1 &
    mark="iteration 1: ramp-up" # not the header line, which names the ramp-up too
  else
    env PRESET=quick DURABILITY="$dur" MEMORY=equal ENGINES="$e" TABLES=4 TABLE_SIZES=50000 THREAD_COUNTS=8 \
      TIME=60 WARMUP=5 NO_CHARTS=1 WORKLOADS="$w" OUT="$d/res" PORT="$port" SERVER_DIR="$srv" \
      "$SQL_BIN/sqlbench" >"$d/log" 2>&1 &
    mark="iteration 1"
  fi
  tp=$!
  while ! grep -q "$mark" "$d/log" 2>/dev/null; do
    kill -0 $tp 2>/dev/null || { fail "the run ended early, see $d/log"; return 1; }
    sleep 1
  done
  sleep 20
  pid=$(cat "$srv/mysqld.pid" 2>/dev/null) || { fail "no server pid"; return 1; }
  vmstat 1 $win >"$d/vmstat" &
  perf stat -e task-clock -p "$pid" -x, -o "$d/stat" -- sleep $win
  perf record -F 299 --call-graph dwarf,16384 -p "$pid" -o "$d/perf.data" -- sleep 12 >/dev/null 2>&1
  wait $tp || { fail "the harness failed, see $d/log"; return 1; }
  local tps cpu_ms idle share p99=""
  if $tpcc; then
    tps=$(grep -h "TPM (all transactions per minute)" "$d/log" | tail -1 | awk -F'|' '{printf "%.1f", $3 / 60}')
    p99=$(grep -h "New-Order p99 (ms)" "$d/log" | tail -1 | awk -F'|' '{printf "%.2f", $3}')
  else
    tps=$(tail -n +2 "$d"/res/summary_*.csv | awk -F, -v w="$w" '$2 == w {print $6}' | tail -1)
  fi
  cpu_ms=$(awk -F, '$3 == "task-clock" {print $1}' "$d/stat")
  idle=$(awk 'NR > 3 {s += $15 + $16; n++} END {if (n) printf "%.1f", s / n}' "$d/vmstat")
  share=$(python3 scripts/engine_share.py "$d/perf.data" --plugin ha_tidesdb.so) || return 1
  echo "$share" >"$d/share"
  [ -n "$tps" ] && [ -n "$cpu_ms" ] && [ -n "$idle" ] || { fail "missing figures"; return 1; }
  local pct=${share#*engine_pct=}
  pct=${pct%% *}
  awk -v e="$e" -v w="$w" -v d="$dur" -v tps="$tps" -v ms="$cpu_ms" -v idle="$idle" -v pct="$pct" -v cores="$(nproc)" -v win=$win \
    -v p99="$p99" \
    'BEGIN {srv = ms * 1000 / win / tps; mach = cores * (100 - idle) / 100 * 1e6 / tps;
            printf "%s,%s,%s,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%s\n", w, e, d, tps, idle, srv, pct, srv * pct / 100, mach, p99}' \
    >>"$out/ceiling.csv"
  rm -rf "$srv"
}

echo "workload,engine,durability,tps,idle_pct,server_us_per_tx,engine_pct,engine_us_per_tx,machine_us_per_tx,neworder_p99_ms" \
  >"$out/ceiling.csv"
status=0
for w in $workloads; do
  for e in tidesdb innodb; do
    echo "===== $w $e $dur ($(date -u +%T))"
    run "$e" "$w" || status=1
  done
done

python3 - "$out" <<'EOF'
import csv, os, sys
out = sys.argv[1]
rows = list(csv.DictReader(open(os.path.join(out, 'ceiling.csv'))))
by = {(r['workload'], r['engine']): r for r in rows}
lines = ['| workload | durability | TidesDB / InnoDB now | idle % (T / I) | machine CPU us/tx (T / I) '
         '| engine us/tx (T / I) | engine share % (T / I) | ceiling: TidesDB with a free engine / InnoDB |',
         '|---|---|---|---|---|---|---|---|']
# New-Order p99 with a free engine (TPC-C only; see the header)
p99 = ['| workload | durability | New-Order p99 ms (T / I) | InnoDB / TidesDB now '
       '| TidesDB p99 with a free engine | best InnoDB / TidesDB p99 |', '|---|---|---|---|---|---|']
f = lambda r, k: float(r[k])
for w in dict.fromkeys(r['workload'] for r in rows):
    t, i = by.get((w, 'tidesdb')), by.get((w, 'innodb'))
    if not t or not i:
        continue
    free_share = (f(t, 'machine_us_per_tx') - f(t, 'engine_us_per_tx')) / f(t, 'machine_us_per_tx')
    ceiling = f(i, 'machine_us_per_tx') / (f(t, 'machine_us_per_tx') * free_share)
    lines.append(f"| {w} | {t['durability']} | {f(t, 'tps') / f(i, 'tps'):.2f}x | {t['idle_pct']} / {i['idle_pct']} "
                 f"| {t['machine_us_per_tx']} / {i['machine_us_per_tx']} | {t['engine_us_per_tx']} / {i['engine_us_per_tx']} "
                 f"| {t['engine_pct']} / {i['engine_pct']} | {ceiling:.2f}x |")
    if t['neworder_p99_ms'] and i['neworder_p99_ms']:
        tp, ip = f(t, 'neworder_p99_ms'), f(i, 'neworder_p99_ms')
        p99.append(f"| {w} | {t['durability']} | {tp:.2f} / {ip:.2f} | {ip / tp:.2f}x | {tp * free_share:.2f} "
                   f"| {ip / (tp * free_share):.2f}x |")
if len(p99) > 2:
    lines += [''] + p99
open(os.path.join(out, 'ceiling.md'), 'w').write('\n'.join(lines) + '\n')
print('\n'.join(lines))
EOF
echo "bench_ceiling: results in $out"
exit $status

#!/usr/bin/env bash
# The speed targets of TideSQL (issue #16) measured in one go, in both
# regimes and both durability presets, with the project's own harnesses
# (tools/sql sqlbench and tpcc, tdb_bench), then checked against the
# targets by scripts/bench_targets.py, which writes <out>/targets.md: one
# row per target with the threshold, the measured ratio and met / MISSED.
#
# Usage: bash scripts/bench_targets.sh [--size quick|full] [--out DIR]
#                                      [--parts "LIST"] [--engines LIST]
#   --size quick (default, about 90 minutes on 2 cores) | full (about 5 h:
#          the issue's 30-minute sustained run and bigger data) | smoke
#          (a few minutes, too small for any regime: checks the script)
#   --parts  a subset of: mem big tpcc_mem tpcc_big sustained lib
#            (default all of them)
#   --out    results directory (default results/targets-<stamp>)
#   --engines  SQL engines (default "tidesdb innodb rocksdb"; MyRocks is
#            needed for the MyRocks targets)
#   --port   TCP port of the throw-away servers (default 3430); their data
#            directories are in <out>/server
#   --iterations N  the sqlbench parts (mem, big) run each workload and
#            thread count N times in a row on the same server (default 1);
#            targets.md takes the median run. A single 10 s run of the quick
#            mem part spreads by more than some targets' margins.
#   --passes N  the sqlbench parts run N times over, each pass on fresh
#            servers, the engines' order reversed on every other pass, into
#            <part>/pass-1 ... (default 1: no pass directories). One engine's
#            runs all come before or after the other's within a pass, so a
#            slow spell of a shared machine lands on one engine; in passes
#            it lands on each in turn. targets.md takes the median over
#            every pass's runs.
# Re-running bench_targets.py on an existing directory re-checks it.
#
# Parts, each in <out>/<part>-<durability>/ (durability relaxed = the
# seeds' setting, no sync at commit; durable = every commit synced):
#   mem        sqlbench in memory: 4 x 50,000 rows, 256 MiB caches,
#              oltp_read_write / point_select / insert / write_only at 1, 2
#              and 8 threads
#   big        sqlbench with data >= 8x the cache and more than the memory
#              limit: oltp_insert and oltp_write_only at 8 threads
#   tpcc_mem   TPC-C in memory: 2 warehouses, 8 users
#   tpcc_big   TPC-C with data >= 8x the cache, 8 users (schema build time
#              is the bulk-load target)
#   sustained  TidesDB alone, TPC-C as tpcc_big (relaxed) for 30 minutes
#              (quick: 10), throughput per interval against the first
#              window (5 minutes; quick: 2)
#   lib        the library head-to-head, tdb_bench TidesDB / LevelDB / RocksDB,
#              the whole list 3 times, each figure the median run
# Every server runs in its own memory limit that counts the page cache
# (MEMORY=equal, InnoDB on buffered I/O: docs/benchmarks-sql.md). In big
# and tpcc_big MyRocks's limit is 1.5x the others' (labelled in the
# results): at theirs its server is OOM-killed (anon RSS 518 MiB at
# 512 MiB), so a ratio against it is measured with MyRocks given more.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/mariadb/common.sh

size=quick out="" port=3430 iters=1 passes=1 parts="mem big tpcc_mem tpcc_big sustained lib" engines="tidesdb innodb rocksdb"
while [ $# -gt 0 ]; do
  case "$1" in
    --size) size="${2:-}"; shift 2 || die "$1 needs a value" ;;
    --out) out="${2:-}"; shift 2 || die "$1 needs a value" ;;
    --parts) parts="${2:-}"; shift 2 || die "$1 needs a value" ;;
    --engines) engines="${2:-}"; shift 2 || die "$1 needs a value" ;;
    --port) port="${2:-}"; shift 2 || die "$1 needs a value" ;;
    --iterations) iters="${2:-}"; shift 2 || die "$1 needs a value" ;;
    --passes) passes="${2:-}"; shift 2 || die "$1 needs a value" ;;
    -h|--help) sed -n '2,47p' "$0"; exit 0 ;;
    *) die "bench_targets.sh: unknown argument '$1' (see --help)" ;;
  esac
done
[[ "$iters" =~ ^[1-9][0-9]*$ ]] || die "--iterations: want a whole number of runs, at least 1, not '$iters'"
[[ "$passes" =~ ^[1-9][0-9]*$ ]] || die "--passes: want a whole number of passes, at least 1, not '$passes'"
for p in $parts; do
  case "$p" in mem|big|tpcc_mem|tpcc_big|sustained|lib) ;; *) die "--parts: unknown part '$p'" ;; esac
done

# Sizes. big: data >= 8x the cache and about 2x the memory limit, so
# reads and compaction go to the disk for every engine.
case "$size" in
  quick) mem_time=10 mem_warm=2 big_tables=4 big_rows=1000000 big_cache=64M big_limit=512M big_rk_limit=768M big_time=60 big_warm=10
         tm_dur=1 tb_wh=8 tb_cache=64M tb_limit=512M tb_rk_limit=768M tb_dur=2 sus_dur=10 sus_win=2 sus_int=30s lib_args=(--repeat=3) ;;
  full) mem_time=60 mem_warm=10 big_tables=8 big_rows=2000000 big_cache=128M big_limit=1G big_rk_limit=1536M big_time=300 big_warm=60
        tm_dur=5 tb_wh=32 tb_cache=128M tb_limit=768M tb_rk_limit=1152M tb_dur=10 sus_dur=30 sus_win=5 sus_int=30s lib_args=(--repeat=3) ;;
  smoke) mem_time=2 mem_warm=0 big_tables=2 big_rows=20000 big_cache=16M big_limit=512M big_rk_limit=768M big_time=5 big_warm=0
         tm_dur=0.2 tb_wh=1 tb_cache=16M tb_limit=512M tb_rk_limit=768M tb_dur=0.2 sus_dur=1 sus_win=0.25 sus_int=5s
         lib_args=(--num=50000 --repeat=2) ;;
  *) die "--size: want quick or full (or smoke, a check of this script), not '$size'" ;;
esac

[ "$(id -u)" -eq 0 ] || die "bench_targets.sh limits memory with cgroups: run it as root"
bash scripts/setup.sh >/dev/null || die "installing the build dependencies failed"
bash scripts/mariadb/setup.sh >/dev/null || die "installing the pinned MariaDB server failed"
# The plain plugin build in $TIDESQL_BUILD (default build/mariadb).
bash scripts/mariadb/build_plugin.sh >/dev/null || die "building ha_tidesdb.so failed"
export TIDESQL_PLUGIN_DIR
ensure_gotpc
ensure_sql_harnesses

out="${out:-$TIDESQL_ROOT/results/targets-$(date +%Y%m%d_%H%M%S)}"
mkdir -p "$out"
eng_csv="$(echo "$engines" | tr ' ' ',')"
# tpcc_big checks TidesDB's runs only: the check is about the engine under
# test, and InnoDB's took over 13 minutes (go-tpc's timeout) at 8
# warehouses in its 64 MiB pool, failing its run.
tb_check=()
case " $engines " in *" tidesdb "*) tb_check=(--check-engines tidesdb) ;; esac
{
  echo "size $size; sqlbench iterations $iters, passes $passes; commit $(git rev-parse --short HEAD 2>/dev/null || echo unknown)$(git diff --quiet 2>/dev/null || echo ' (tree modified)')"
  echo "machine: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo) RAM"
  echo "started $(date -u +%FT%TZ), load average $(cut -d' ' -f1-3 /proc/loadavg)"
} >"$out/run.txt"
echo "bench_targets: size $size, parts: $parts; results in $out"

status=0
part() { # dir command...
  local dir="$1" t0=$SECONDS
  shift
  echo "===== $dir ($(date -u +%T), load $(cut -d' ' -f1 /proc/loadavg))"
  mkdir -p "$out/$dir"
  if "$@" >"$out/$dir/log.txt" 2>&1; then
    echo "bench_targets: $dir done in $((SECONDS - t0)) s"
  else
    echo "bench_targets: $dir FAILED ($((SECONDS - t0)) s): see $out/$dir/log.txt" >&2
    status=1
  fi
  echo "$dir $((SECONDS - t0)) s, load after $(cut -d' ' -f1-3 /proc/loadavg)" >>"$out/run.txt"
}

# sqlbench_part PART VAR=value...: sqlbench with the given settings, once
# per pass (in PART/pass-K when --passes is above 1), the engines' order
# reversed on every other pass.
sqlbench_part() {
  local name=$1 k dir order e
  shift
  for k in $(seq 1 "$passes"); do
    dir=$name
    [ "$passes" = 1 ] || dir="$name/pass-$k"
    order=$engines
    if [ $((k % 2)) = 0 ]; then order=""; for e in $engines; do order="$e${order:+ $order}"; done; fi
    part "$dir" env "$@" ENGINES="$order" OUT="$out/$dir" PORT=$port SERVER_DIR="$out/server" "$SQL_BIN/sqlbench"
  done
}

for p in $parts; do
  for d in relaxed durable; do
    case "$p" in
      mem)
        sqlbench_part "mem-$d" PRESET=quick DURABILITY=$d MEMORY=equal TABLES=4 TABLE_SIZES=50000 \
          THREAD_COUNTS="1 2 8" TIME=$mem_time WARMUP=$mem_warm ITERATIONS=$iters NO_CHARTS=1 \
          WORKLOADS="oltp_read_write oltp_point_select oltp_insert oltp_write_only" ;;
      big)
        sqlbench_part "big-$d" PRESET=quick DURABILITY=$d MEMORY=equal TABLES=$big_tables \
          TABLE_SIZES=$big_rows THREAD_COUNTS=8 TIME=$big_time WARMUP=$big_warm ITERATIONS=$iters NO_CHARTS=1 \
          TIDESDB_BLOCK_CACHE=$big_cache INNODB_BUFFER_POOL=$big_cache ROCKSDB_BLOCK_CACHE=$big_cache \
          MEM_LIMIT=$big_limit ROCKSDB_MEM_LIMIT=$big_rk_limit WORKLOADS="oltp_insert oltp_write_only" ;;
      tpcc_mem)
        part "tpcc_mem-$d" "$SQL_BIN/tpcc" --engines "$eng_csv" --durability $d --memory equal --warehouses 2 \
          --build-vu 2 --run-vu 8 --rampup 0.25 --duration $tm_dur --no-charts --port $port --server-dir "$out/server" --out "$out/tpcc_mem-$d" ;;
      tpcc_big)
        part "tpcc_big-$d" "$SQL_BIN/tpcc" --engines "$eng_csv" --durability $d --memory equal --warehouses $tb_wh \
          --build-vu 2 --run-vu 8 --rampup 0.5 --duration $tb_dur --settle 10 --cache $tb_cache \
          --mem-limit $tb_limit --rocksdb-mem-limit $tb_rk_limit "${tb_check[@]}" --no-charts --port $port --server-dir "$out/server" --out "$out/tpcc_big-$d" ;;
      sustained)
        [ "$d" = relaxed ] || continue
        part "sustained" "$SQL_BIN/tpcc" --engines tidesdb --durability relaxed --memory equal --warehouses $tb_wh \
          --build-vu 2 --run-vu 8 --rampup 0 --duration $sus_dur --settle 10 --cache $tb_cache \
          --mem-limit $tb_limit --interval $sus_int --no-charts --port $port --server-dir "$out/server" --out "$out/sustained"
        echo "$sus_win" >"$out/sustained/window_minutes" ;;
      lib)
        [ "$d" = relaxed ] || continue
        lib() {
          cmake -G Ninja -S . -B build -U TDB_SUBSYSTEMS -DCMAKE_BUILD_TYPE=Release >/dev/null &&
            cmake --build build --target tdb_bench >/dev/null &&
            ./build/tools/tdb_bench "${lib_args[@]}" --csv="$out/lib/lib.csv"
        }
        part lib lib ;;
    esac
  done
done
echo "finished $(date -u +%FT%TZ)" >>"$out/run.txt"
rm -rf "$out/server" # the last throw-away server's data

python3 scripts/bench_targets.py "$out" || status=1
exit "$status"

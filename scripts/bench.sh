#!/usr/bin/env bash
# The main job: the SQL head-to-head, TidesDB vs InnoDB vs MyRocks in the
# pinned MariaDB server, at the quick default size (about 13 minutes on 2
# cores). Run as root on Debian 12: installs every dependency (build tools,
# the pinned server with MyRocks, sysbench, matplotlib, a Go toolchain,
# go-tpc), builds the engine plugin and the harnesses, then runs
#   1. sqlbench  the sysbench sweep (oltp_read_write, oltp_point_select,
#                oltp_insert, oltp_write_only at 1 and 8 threads);
#   2. tpcc      TPC-C on go-tpc (NOPM, TPM, per-transaction latency,
#                timeline, consistency check after every run);
#   3. iibench   the insert benchmark (load, then inserts + queries);
# and prints their tables. Everything lands in results/sql-<stamp>/<harness>/
# (CSV, Markdown, PNG charts, the settings that differ from the defaults).
#
# Presets, printed with every result and applied to all three harnesses:
#   DURABILITY=relaxed (default: no sync at commit, as the seeds ran) | durable
#   MEMORY=equal (default: each engine's server limited to MEM_LIMIT, page
#          cache included, InnoDB on buffered I/O) | seed (equal caches,
#          InnoDB O_DIRECT, no limit: the seed articles' setting)
#   HARNESSES="sqlbench tpcc iibench" runs a subset.
#   BUILD=plain (default) | pgo | lto | pgo-lto: the TidesDB plugin build
#          (scripts/mariadb/build_plugin.sh; pgo trains it first, ~5 min)
#   MALLOC=glibc (default) | jemalloc | mimalloc | tcmalloc: every server's
#          allocator
# Each harness has a seed-size preset for a bigger machine (see
# docs/benchmarks-sql.md). The library head-to-head is scripts/bench_lib.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
. scripts/mariadb/common.sh

[ "$(id -u)" -eq 0 ] || die "bench.sh installs packages and limits memory with cgroups: run it as root"
bash scripts/setup.sh || die "installing the build dependencies failed"
bash scripts/mariadb/setup.sh || die "installing the pinned MariaDB server failed"
getent hosts localhost >/dev/null || echo "127.0.0.1 localhost" >>/etc/hosts
BUILD="${BUILD:-plain}"
MALLOC="${MALLOC:-glibc}"
case "$BUILD" in
  plain) build_flags=() ;;
  pgo) build_flags=(--pgo) ;;
  lto) build_flags=(--lto) ;;
  pgo-lto) build_flags=(--pgo --lto) ;;
  *) die "BUILD=$BUILD: want plain, pgo, lto or pgo-lto" ;;
esac
bash scripts/mariadb/build_plugin.sh || die "building ha_tidesdb.so failed"
if [ "$BUILD" != plain ]; then
  bash scripts/mariadb/build_plugin.sh "${build_flags[@]}" || die "the $BUILD build of ha_tidesdb.so failed"
  export TIDESQL_PLUGIN_DIR="$TIDESQL_ROOT/build/mariadb-$BUILD/plugin"
fi
ensure_gotpc
ensure_sql_harnesses

DURABILITY="${DURABILITY:-relaxed}"
MEMORY="${MEMORY:-equal}"
HARNESSES="${HARNESSES:-sqlbench tpcc iibench}"
stamp="$(date +%Y%m%d_%H%M%S)"
OUT="$TIDESQL_ROOT/results/sql-$stamp"
mkdir -p "$OUT"
echo "bench: $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo) RAM," \
     "load average $(cut -d' ' -f1-3 /proc/loadavg); presets $DURABILITY/$MEMORY; plugin build $BUILD," \
     "allocator $MALLOC; results in $OUT"

status=0
run() { # name command...
  local name="$1" t0=$SECONDS
  shift
  echo
  echo "===== $name"
  if "$@"; then
    echo "bench: $name done in $((SECONDS - t0)) s"
  else
    echo "bench: $name FAILED (exit $?, $((SECONDS - t0)) s): see $OUT/$name" >&2
    status=1
  fi
}
for h in $HARNESSES; do
  case "$h" in
    sqlbench) run sqlbench env PRESET=quick DURABILITY="$DURABILITY" MEMORY="$MEMORY" MALLOC="$MALLOC" OUT="$OUT/sqlbench" \
                "$SQL_BIN/sqlbench" ;;
    tpcc) run tpcc "$SQL_BIN/tpcc" --preset quick --durability "$DURABILITY" --memory "$MEMORY" --malloc "$MALLOC" --out "$OUT/tpcc" ;;
    iibench) run iibench "$SQL_BIN/iibench" --config tools/sql/iibench/quick.toml --server \
               --durability "$DURABILITY" --memory "$MEMORY" --malloc "$MALLOC" --out "$OUT/iibench" ;;
    *) die "unknown harness '$h' in HARNESSES (want sqlbench, tpcc, iibench)" ;;
  esac
done

echo
echo "===== summary ($DURABILITY/$MEMORY, $OUT)"
for h in $HARNESSES; do
  for f in "$OUT/$h"/summary*.md; do
    [ -f "$f" ] && { echo "--- $h: $(basename "$f")"; cat "$f"; echo; }
  done
done
exit "$status"

#!/usr/bin/env bash
# Compare builds of the TidesDB plugin (plain, PGO, LTO, PGO+LTO) and
# allocators on TPC-C: the tpcc harness with --builds x --malloc, the
# variants alternating across the iterations, each iteration of each
# variant and engine on a fresh server with a freshly built schema; it
# prints per variant and engine NOPM, TPM and New-Order p99 (mean,
# min..max, relative standard deviation) and the ratio to the first
# variant. InnoDB, which does not load the plugin, is the control.
# Results (CSV, Markdown) in results/tpcc-<stamp>/ unless --out is given.
#
#   compare_builds.sh [extra tpcc flags...]
# Environment (defaults: the quick comparison, about 6 minutes on 2 cores):
#   BUILDS=plain,pgo   plugin builds (plain, pgo, lto, pgo-lto, or name=DIR);
#                      make them with build_plugin.sh [--pgo] [--lto]
#   MALLOCS=glibc      allocators (glibc, jemalloc, mimalloc, tcmalloc)
#   ITERATIONS=3  ENGINES=tidesdb,innodb  WAREHOUSES (default: the preset's, 2)
#   PRESET=quick (or seed)
set -euo pipefail
. "$(dirname "$0")/common.sh"

BUILDS="${BUILDS:-plain,pgo}"
MALLOCS="${MALLOCS:-glibc}"
ITERATIONS="${ITERATIONS:-3}"
ENGINES="${ENGINES:-tidesdb,innodb}"
WAREHOUSES="${WAREHOUSES:-}"
PRESET="${PRESET:-quick}"

check_server_version
ensure_gotpc
ensure_sql_harnesses
args=(--preset "$PRESET" --engines "$ENGINES" --builds "$BUILDS" --malloc "$MALLOCS" --iterations "$ITERATIONS")
[ -n "$WAREHOUSES" ] && args+=(--warehouses "$WAREHOUSES")
cd "$TIDESQL_ROOT"
echo "compare_builds: tpcc ${args[*]} $*"
exec "$SQL_BIN/tpcc" "${args[@]}" "$@"

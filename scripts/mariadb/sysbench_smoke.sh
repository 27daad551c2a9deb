#!/usr/bin/env bash
# sysbench smoke test of ENGINE=TidesDB: prepare/run/cleanup of
# oltp_read_write, oltp_point_select, oltp_insert, oltp_write_only,
# oltp_update_index and oltp_delete on small tables for a short time,
# against a throw-away server of its own (build/mariadb-sysbench). Fails on
# any sysbench error; prints TPS/QPS and latency per workload.
# Lock conflicts (deadlock 1213 / lock wait timeout 1205) are retried by
# sysbench as "ignored errors", as with InnoDB; they are reported and fail
# the run only above MAX_CONFLICT_PCT percent of transactions (default 1 at
# READ-COMMITTED; 10 at REPEATABLE-READ, which is snapshot isolation with
# first-committer-wins, and sysbench's default "special" distribution
# makes a few rows hot).
#   TABLES=2 TABLE_SIZE=10000 THREADS=2 TIME=10 ENGINE=TidesDB CNF=file \
#     ISOLATION=READ-COMMITTED|REPEATABLE-READ|SERIALIZABLE \
#     SERVER_OPTS="--tidesdb-pessimistic-locking=OFF" sysbench_smoke.sh [workload...]
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/common.sh"

TABLES="${TABLES:-2}"
TABLE_SIZE="${TABLE_SIZE:-10000}"
THREADS="${THREADS:-2}"
TIME="${TIME:-10}"
ENGINE="${ENGINE:-TidesDB}"
ISOLATION="${ISOLATION:-READ-COMMITTED}"
if [ "$ISOLATION" = READ-COMMITTED ]; then MAX_CONFLICT_PCT="${MAX_CONFLICT_PCT:-1}"
else MAX_CONFLICT_PCT="${MAX_CONFLICT_PCT:-10}"; fi
workloads=("$@")
[ "${#workloads[@]}" -gt 0 ] || workloads=(oltp_read_write oltp_point_select oltp_insert
                                           oltp_write_only oltp_update_index oltp_delete)
command -v sysbench >/dev/null || die "sysbench missing: run scripts/mariadb/setup.sh"

export TIDESQL_SERVER_DIR="${SYSBENCH_SERVER_DIR:-$TIDESQL_ROOT/build/mariadb-sysbench}"
export TIDESQL_SOCKET="$TIDESQL_SERVER_DIR/mysqld.sock"
export TIDESQL_PORT="${SYSBENCH_PORT:-3318}"
server() { bash "$here/server.sh" "$@"; }

bash "$here/server.sh" wipe >/dev/null
read -r -a server_opts <<<"${SERVER_OPTS:-}"
if [ -n "${CNF:-}" ]; then server start --cnf "$CNF" --transaction-isolation="$ISOLATION" "${server_opts[@]}"
else server start --transaction-isolation="$ISOLATION" "${server_opts[@]}"; fi
trap 'server stop >/dev/null' EXIT
server client -e "CREATE DATABASE IF NOT EXISTS sbtest"

out="$TIDESQL_BUILD/sysbench"
mkdir -p "$out"
common=(--db-driver=mysql --mysql-socket="$TIDESQL_SOCKET" --mysql-user=root --mysql-db=sbtest
        --mysql-storage-engine="$ENGINE" --tables="$TABLES" --table-size="$TABLE_SIZE")
summary=()
fail=0
for w in "${workloads[@]}"; do
  log="$out/$w.log"
  echo "sysbench: $w (engine $ENGINE, $ISOLATION, $TABLES x $TABLE_SIZE rows, $THREADS threads, ${TIME}s)"
  if ! sysbench "$w" "${common[@]}" --threads="$THREADS" prepare >"$log" 2>&1; then
    tail -20 "$log" >&2; echo "sysbench: $w prepare FAILED (log $log)" >&2; fail=1; continue
  fi
  if ! sysbench "$w" "${common[@]}" --threads="$THREADS" --time="$TIME" --report-interval=0 \
       --histogram=off run >>"$log" 2>&1; then
    tail -20 "$log" >&2; echo "sysbench: $w run FAILED (log $log)" >&2; fail=1
  fi
  errs="$(sed -n 's/.*ignored errors: *\([0-9]*\).*/\1/p' "$log" | tail -1)"
  txns="$(sed -n 's/.*transactions: *\([0-9]*\) *(.*/\1/p' "$log" | tail -1)"
  if grep -qiE "FATAL|ALERT" "$log"; then
    grep -iE "FATAL|ALERT" "$log" | head -5 >&2
    echo "sysbench: $w reported errors (log $log)" >&2; fail=1
  fi
  if [ "${errs:-0}" -gt 0 ]; then
    echo "sysbench: $w: ${errs} lock conflicts retried (of ${txns:-0} transactions)"
    if [ $(( ${errs:-0} * 100 )) -gt $(( ${txns:-0} * MAX_CONFLICT_PCT )) ]; then
      echo "sysbench: $w: too many lock conflicts" >&2; fail=1
    fi
  fi
  tps="$(sed -n 's/.*transactions: *[0-9]* *(\([0-9.]*\) per sec.).*/\1/p' "$log" | tail -1)"
  qps="$(sed -n 's/.*queries: *[0-9]* *(\([0-9.]*\) per sec.).*/\1/p' "$log" | tail -1)"
  avg="$(sed -n 's/^ *avg: *\([0-9.]*\)/\1/p' "$log" | tail -1)"
  p95="$(sed -n 's/^ *95th percentile: *\([0-9.]*\)/\1/p' "$log" | tail -1)"
  summary+=("$(printf '%-20s %10s %10s %10s %10s' "$w" "${tps:-?}" "${qps:-?}" "${avg:-?}" "${p95:-?}")")
  # Check the table is still consistent: every secondary entry has its row.
  for t in $(seq 1 "$TABLES"); do
    n1="$(server client -N -e "SELECT COUNT(*) FROM sbtest.sbtest$t FORCE INDEX (PRIMARY)")"
    n2="$(server client -N -e "SELECT COUNT(*) FROM sbtest.sbtest$t FORCE INDEX (k_$t)")"
    if [ "$n1" != "$n2" ]; then
      echo "sysbench: $w: sbtest$t has $n1 rows but $n2 entries in k_$t" >&2; fail=1
    fi
  done
  sysbench "$w" "${common[@]}" cleanup >>"$log" 2>&1 || { echo "sysbench: $w cleanup FAILED" >&2; fail=1; }
done

echo
printf '%-20s %10s %10s %10s %10s\n' workload TPS QPS avg_ms p95_ms
for l in "${summary[@]}"; do echo "$l"; done
[ "$fail" = 0 ] || die "sysbench smoke FAILED"
echo "sysbench smoke: all workloads passed"

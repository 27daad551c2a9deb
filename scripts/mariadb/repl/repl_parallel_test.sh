#!/usr/bin/env bash
# Optimistic and aggressive parallel replication over TidesDB tables
# (issue #21): the replica runs transactions in parallel that conflict on
# its rows, TidesDB reports each row-lock wait to the server
# (thd_rpl_deadlock_check), the server kills and retries the later
# transaction, and the replica keeps up. For each MODE: repl_test.sh's
# steady phase only (primary + replica, binlog ROW, GTID, durable preset),
# the replica at slave_parallel_threads=4 in that mode, sysbench TEST on
# few rows (conflicts on purpose) + the logged writers (16 counter rows);
# it fails unless the replica catches up within CATCHUP after the load,
# every table agrees (count, CHECKSUM TABLE, ordered SHA-256) and
# Slave_retried_transactions grew by at least MIN_RETRIES (the conflicts
# happened and were resolved). docs/design/replication.md.
#
#   repl_parallel_test.sh                 quick: 8 s of load per mode (~50 s)
#   STEADY=30s ROWS=50 repl_parallel_test.sh
#   repl_parallel_test.sh [repl flags...] (passed to each run)
# Environment: MODES="optimistic aggressive" TEST=oltp_update_index
#   STEADY=8s ROWS=100 THREADS=4 CATCHUP=30s MIN_RETRIES=1 REPL_PORT=3496
#   REPL_DIR=build/repl-parallel
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${REPL_DIR:-$here/../../../build/repl-parallel}"
rc=0
for mode in ${MODES:-optimistic aggressive}; do
  echo "repl_parallel: slave_parallel_mode=$mode"
  if ! REPL_DIR="$dir/$mode" bash "$here/repl_test.sh" --cycles 0 --replica-cycles 0 --snapshot=false \
      --replica-parallel 4 --replica-parallel-mode "$mode" --sb-test "${TEST:-oltp_update_index}" \
      --sb-rows "${ROWS:-100}" --sb-threads "${THREADS:-4}" --steady "${STEADY:-8s}" \
      --catchup-timeout "${CATCHUP:-30s}" --min-retries "${MIN_RETRIES:-1}" "$@"; then
    echo "repl_parallel: slave_parallel_mode=$mode FAILED"
    rc=1
  fi
done
exit $rc

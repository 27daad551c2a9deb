#!/usr/bin/env bash
# Replica apply rate (issue #21): how fast a replica applies a backlog of
# BACKLOG transactions with one SQL thread and with 4 workers in
# conservative, optimistic and aggressive parallel mode, TidesDB and
# InnoDB tables measured in the same run (ENGINES, one after the other,
# ROUNDS times). Each engine gets a fresh primary + replica (repl_test.sh's
# steady phase, then its apply-rate phase: the replica's SQL thread is
# stopped, sysbench TEST logs the backlog on the primary, the replica's
# IO thread fetches it, then the SQL thread starts and the time to apply it
# is measured; tables compared at the end). Prints one line per engine
# and mode, and the load average. docs/design/replication.md.
#
#   repl_apply_rate.sh                      BACKLOG=2000 ROWS=1000 (~3 min per engine here)
# Environment: ENGINES="TidesDB InnoDB" ROUNDS=1 BACKLOG=2000 ROWS=1000
#   TEST=oltp_write_only THREADS=4 MODES=single,conservative,optimistic,aggressive
#   REPL_PORT=3496 REPL_DIR=build/repl-apply
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
dir="${REPL_DIR:-$here/../../../build/repl-apply}"
out="$dir/apply_rate.txt"
mkdir -p "$dir"
: >"$out"
for round in $(seq 1 "${ROUNDS:-1}"); do
  for engine in ${ENGINES:-TidesDB InnoDB}; do
    echo "repl_apply_rate: round $round, $engine (load average: $(cut -d' ' -f1-3 /proc/loadavg))" | tee -a "$out"
    log="$dir/$engine-$round.log"
    if ! REPL_DIR="$dir/$engine" bash "$here/repl_test.sh" --cycles 0 --replica-cycles 0 --snapshot=false \
        --engine "$engine" --steady 2s --sb-test "${TEST:-oltp_write_only}" --sb-rows "${ROWS:-1000}" \
        --sb-threads "${THREADS:-4}" --apply-backlog "${BACKLOG:-2000}" \
        --apply-modes "${MODES:-single,conservative,optimistic,aggressive}" "$@" >"$log" 2>&1; then
      tail -n 5 "$log"
      echo "repl_apply_rate: $engine FAILED (log $log)"
      exit 1
    fi
    grep "apply rate" "$log" | sed "s/^repl: /$engine: /" | tee -a "$out"
  done
done
echo "repl_apply_rate: load average at the end: $(cut -d' ' -f1-3 /proc/loadavg); results in $out"

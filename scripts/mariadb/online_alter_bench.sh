#!/usr/bin/env bash
# ADD INDEX with LOCK=NONE under a write load, TidesDB vs InnoDB, on the
# same throw-away server (build/mariadb-onlinealter, port 3329): a sysbench
# table of ROWS rows (default 1M) per engine; sysbench WORKLOAD (default
# oltp_write_only, THREADS threads, RUN seconds, a report every second)
# runs while, at AT seconds, ALTER TABLE sbtest1 ADD INDEX c_idx (c) (or
# ADD $INDEX), ALGORITHM=INPLACE, LOCK=NONE is run and timed inside the server. Then the
# index is checked against the table (CHECK TABLE, index-only vs primary
# key checksums). Prints one CSV line per engine:
#   engine,alter_s,tps_before,tps_during,tps_after,loadavg
# (TPS: mean of the per-second reports before the ALTER (from AT-10 s
# on), of those overlapping it, and of those after it, up to RUN). The sysbench reports
# are kept in $OUT (default build/online_alter_bench).
#   ROWS=1000000 THREADS=4 RUN=90 AT=20 online_alter_bench.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/common.sh"

ROWS="${ROWS:-1000000}"
THREADS="${THREADS:-4}"
RUN="${RUN:-90}"
AT="${AT:-20}"
WORKLOAD="${WORKLOAD:-oltp_write_only}"
INDEX="${INDEX:-INDEX c_idx (c)}" # what the ALTER adds; named c_idx, over c
ENGINES="${ENGINES:-TidesDB InnoDB}"
OUT="${OUT:-$TIDESQL_ROOT/build/online_alter_bench}"
export TIDESQL_SERVER_DIR="${ONLINEALTER_SERVER_DIR:-$TIDESQL_ROOT/build/mariadb-onlinealter}"
export TIDESQL_SOCKET="$TIDESQL_SERVER_DIR/mysqld.sock"
export TIDESQL_PORT="${ONLINEALTER_PORT:-3329}"
export TIDESQL_NO_ROCKSDB=1
command -v sysbench >/dev/null || die "sysbench not found: run scripts/mariadb/setup.sh"
server() { bash "$here/server.sh" "$@"; }
sql() { server client -N -B -e "$1"; }
sb() {
  sysbench "$WORKLOAD" --db-driver=mysql --mysql-socket="$TIDESQL_SOCKET" --mysql-user=root \
    --mysql-db=sb --tables=1 --table-size="$ROWS" --mysql-storage-engine="$1" "${@:2}"
}

mkdir -p "$OUT"
server wipe >/dev/null
server start --innodb-buffer-pool-size=512M >/dev/null
trap 'server stop >/dev/null' EXIT

echo "engine,alter_s,tps_before,tps_during,tps_after,loadavg"
for e in $ENGINES; do
  sql "DROP DATABASE IF EXISTS sb; CREATE DATABASE sb"
  sb "$e" --threads=2 prepare >"$OUT/$e-prepare.log"
  [ "$(sql "SELECT COUNT(*) FROM sb.sbtest1")" = "$ROWS" ] || die "$e: prepare incomplete"
  sb "$e" --threads="$THREADS" --time="$RUN" --report-interval=1 run >"$OUT/$e-run.log" 2>&1 &
  load_pid=$!
  t0=$(date +%s.%N)
  sleep "$AT"
  a0=$(date +%s.%N)
  s="$(sql "SET @t = NOW(6); ALTER TABLE sb.sbtest1 ADD $INDEX, ALGORITHM=INPLACE, LOCK=NONE;
            SELECT TIMESTAMPDIFF(MICROSECOND, @t, NOW(6)) / 1e6")"
  a1=$(date +%s.%N)
  la="$(cut -d' ' -f1 /proc/loadavg)"
  wait "$load_pid" || die "$e: the write load failed during the ALTER (see $OUT/$e-run.log)"
  # The index agrees with the table.
  [ "$(sql "CHECK TABLE sb.sbtest1" | awk '{print $NF}' | tail -1)" = "OK" ] || die "$e: CHECK TABLE failed"
  by_index="$(sql "SELECT COUNT(*), BIT_XOR(CRC32(CONCAT_WS(':', id, c))) FROM sb.sbtest1 FORCE INDEX (c_idx)")"
  by_pk="$(sql "SELECT COUNT(*), BIT_XOR(CRC32(CONCAT_WS(':', id, c))) FROM sb.sbtest1 IGNORE INDEX (c_idx)")"
  [ "$by_index" = "$by_pk" ] || die "$e: index c_idx ($by_index) disagrees with the table ($by_pk)"
  # Per-second reports "[ Ns ] thds: .. tps: X ..." split at the ALTER's start and end.
  awk -v s="$(echo "$a0 - $t0" | bc)" -v f="$(echo "$a1 - $t0" | bc)" -v from="$((AT > 10 ? AT - 10 : 0))" \
      -v eng="$e" -v alt="$s" -v la="$la" '
    /^\[ [0-9]+s \]/ {
      t = $2 + 0; tps = 0
      for (i = 1; i <= NF; i++) if ($i == "tps:") tps = $(i + 1)
      # report t covers second (t-1, t]: before, overlapping or after the ALTER
      if (t <= s) { if (t > from) { b += tps; nb++ } }
      else if (t - 1 < f) { d += tps; nd++ }
      else { a += tps; na++ }
    }
    END { printf "%s,%.2f,%.0f,%.0f,%.0f,%s\n", eng, alt, nb ? b / nb : 0, nd ? d / nd : 0, na ? a / na : 0, la }
  ' "$OUT/$e-run.log"
  sql "DROP DATABASE sb"
done

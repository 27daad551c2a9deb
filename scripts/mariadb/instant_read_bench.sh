#!/usr/bin/env bash
# Cost of reading rows written before instant column changes (row
# versions): on one throw-away server, for each engine of ENGINES, table t1
# is created with the final columns (id, mid, k, c) and t2 reaches them by
# ALTER ... DROP COLUMN pad, ADD COLUMN mid ... AFTER id (ALGORITHM=INSTANT)
# over ROWS rows written before; then a full scan and 100k primary-key
# lookups alternate between t1 and t2 (REPS times). Prints CSV:
# engine,table,operation,rep,seconds,cpu_seconds. ONLY_T1=1 skips t2: with
# ENGINES=TidesDB and TIDESQL_BUILD=<another plugin build> it compares two
# builds on a table never altered.
#   ROWS=1000000 REPS=5 ENGINES=TidesDB,InnoDB instant_read_bench.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/common.sh"

ROWS="${ROWS:-1000000}"
REPS="${REPS:-5}"
ENGINES="${ENGINES:-TidesDB,InnoDB}"
export TIDESQL_SERVER_DIR="${READBENCH_SERVER_DIR:-$TIDESQL_ROOT/build/mariadb-readbench}"
export TIDESQL_SOCKET="$TIDESQL_SERVER_DIR/mysqld.sock"
export TIDESQL_PORT="${READBENCH_PORT:-3320}"
export TIDESQL_NO_ROCKSDB=1
server() { bash "$here/server.sh" "$@"; }
sql() { server client -N -B -e "$1"; }

server wipe >/dev/null
server start --innodb-buffer-pool-size=512M >/dev/null
trap 'server stop >/dev/null' EXIT

# CPU seconds (user + system) the server process has used so far.
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.3f", ($14 + $15) / hz }' "/proc/$(cat "$TIDESQL_SERVER_DIR/mysqld.pid")/stat"; }
# timed STATEMENT: seconds the server took (wall), and CPU seconds it used
# meanwhile (less disturbed by other load on the machine).
timed() {
  local c0 w c1
  c0="$(cpu)"
  w="$(sql "SET @t = NOW(6); $1; SELECT TIMESTAMPDIFF(MICROSECOND, @t, NOW(6)) / 1e6")"
  c1="$(cpu)"
  echo "$w,$(awk -v a="$c0" -v b="$c1" 'BEGIN { printf "%.3f", b - a }')"
}

echo "engine,table,operation,rep,seconds,cpu_seconds"
for e in ${ENGINES//,/ }; do
  sql "DROP DATABASE IF EXISTS rb; CREATE DATABASE rb;
       CREATE TABLE rb.t1 (id INT PRIMARY KEY, mid INT DEFAULT 3, k INT, c CHAR(60)) ENGINE=$e;
       CREATE TABLE rb.t2 (id INT PRIMARY KEY, k INT, c CHAR(60), pad CHAR(20)) ENGINE=$e"
  from=1
  while [ "$from" -le "$ROWS" ]; do
    to=$((from + 99999)); [ "$to" -gt "$ROWS" ] && to="$ROWS"
    sql "INSERT INTO rb.t1 (id, k, c) SELECT seq, seq * 7919 MOD $ROWS, REPEAT(CHAR(97 + seq MOD 26), 60)
         FROM rb.seq_${from}_to_${to}"
    [ "${ONLY_T1:-0}" = 1 ] || sql "INSERT INTO rb.t2 SELECT seq, seq * 7919 MOD $ROWS, REPEAT(CHAR(97 + seq MOD 26), 60), 'pad'
         FROM rb.seq_${from}_to_${to}"
    from=$((to + 1))
  done
  tables="t1 t2"
  if [ "${ONLY_T1:-0}" = 1 ]; then
    tables=t1
  else
    sql "ALTER TABLE rb.t2 DROP COLUMN pad, ADD COLUMN mid INT DEFAULT 3 AFTER id, ALGORITHM=INSTANT"
    [ "$(sql "SELECT SUM(mid) FROM rb.t2")" = "$((3 * ROWS))" ] || die "$e: old rows do not read the default"
  fi
  for t in $tables; do sql "SELECT SUM(k) FROM rb.$t INTO @a"; done # warm-up
  for rep in $(seq 1 "$REPS"); do
    for t in $tables; do
      echo "$e,$t,scan,$rep,$(timed "SELECT SUM(k), SUM(mid), COUNT(c) FROM rb.$t INTO @a, @b, @c")"
      echo "$e,$t,pk_lookups_100k,$rep,$(timed "SELECT SUM(t.k) FROM rb.seq_1_to_100000 s
        JOIN rb.$t t ON t.id = s.seq * 7 MOD $ROWS + 1 INTO @a")"
    done
  done
done

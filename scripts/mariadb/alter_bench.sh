#!/usr/bin/env bash
# ALTER TABLE timings, TidesDB vs InnoDB, on the same server, same table:
# ROWS rows (default 1M) of (id INT PRIMARY KEY, k INT, c CHAR(60),
# pad CHAR(20)), loaded in 100k-row statements, then in this order:
#   RENAME COLUMN   (ALGORITHM=INSTANT on both)
#   ADD COLUMN last (ALGORITHM=INSTANT on both; old rows must read its default)
#   DROP COLUMN pad2, ADD COLUMN ... AFTER id (ALGORITHM=INSTANT on both), with
#   a full scan and 100k primary-key lookups timed before the first change
#   and after these (old rows read through the engine's row versions)
#   ADD INDEX (k)   (ALGORITHM=INPLACE; TidesDB LOCK=SHARED)
#   DROP INDEX      (default algorithm)
#   ADD INDEX (k)   again, ALGORITHM=COPY (what every ALTER cost before)
# Each ALTER is timed inside the server (NOW(6) before and after), the
# engines alternate (REPS rounds, TidesDB first in odd rounds). Prints one
# CSV line per ALTER: engine,round,operation,algorithm,seconds.
# Uses a throw-away server of its own (build/mariadb-alterbench, port 3319).
#   ROWS=1000000 REPS=1 alter_bench.sh
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/common.sh"

ROWS="${ROWS:-1000000}"
REPS="${REPS:-1}"
export TIDESQL_SERVER_DIR="${ALTERBENCH_SERVER_DIR:-$TIDESQL_ROOT/build/mariadb-alterbench}"
export TIDESQL_SOCKET="$TIDESQL_SERVER_DIR/mysqld.sock"
export TIDESQL_PORT="${ALTERBENCH_PORT:-3319}"
export TIDESQL_NO_ROCKSDB=1
server() { bash "$here/server.sh" "$@"; }
sql() { server client -N -B -e "$1"; }

server wipe >/dev/null
server start --innodb-buffer-pool-size=512M >/dev/null
trap 'server stop >/dev/null' EXIT
sql "CREATE DATABASE IF NOT EXISTS ab"

# load ENGINE: a fresh table of ROWS rows.
load() {
  sql "DROP TABLE IF EXISTS ab.t; CREATE TABLE ab.t (id INT PRIMARY KEY, k INT, c CHAR(60),
       pad CHAR(20)) ENGINE=$1"
  local from=1 step=100000
  while [ "$from" -le "$ROWS" ]; do
    local to=$((from + step - 1)); [ "$to" -gt "$ROWS" ] && to="$ROWS"
    sql "INSERT INTO ab.t SELECT seq, seq * 7919 MOD $ROWS, REPEAT(CHAR(97 + seq MOD 26), 60),
         'pad' FROM ab.seq_${from}_to_${to}"
    from=$((to + 1))
  done
}

# timed ENGINE ROUND NAME ALGORITHM STATEMENT: seconds the server took.
timed() {
  local s
  s="$(sql "SET @t = NOW(6); $5; SELECT TIMESTAMPDIFF(MICROSECOND, @t, NOW(6)) / 1e6")"
  echo "$1,$2,$3,$4,$s"
}

echo "engine,round,operation,algorithm,seconds"
for r in $(seq 1 "$REPS"); do
  engines=(TidesDB InnoDB)
  [ $((r % 2)) = 0 ] && engines=(InnoDB TidesDB)
  for e in "${engines[@]}"; do
    load "$e"
    [ "$(sql "SELECT COUNT(*) FROM ab.t")" = "$ROWS" ] || die "$e: load incomplete"
    reads() { # a scan and 100k primary-key lookups of rows written at load
      timed "$e" "$r" "scan_$1" - "SELECT SUM(k), COUNT(c) FROM ab.t INTO @a, @b"
      timed "$e" "$r" "pk_lookups_100k_$1" - "SELECT SUM(t.k) FROM ab.seq_1_to_100000 s
        JOIN ab.t t ON t.id = s.seq * 7 MOD $ROWS + 1 INTO @a"
    }
    sql "SELECT SUM(k) FROM ab.t INTO @a" # warm-up: the load's writes settle
    reads before
    timed "$e" "$r" rename_column INSTANT "ALTER TABLE ab.t RENAME COLUMN pad TO pad2, ALGORITHM=INSTANT"
    timed "$e" "$r" add_column INSTANT "ALTER TABLE ab.t ADD COLUMN extra INT DEFAULT 5, ALGORITHM=INSTANT"
    [ "$(sql "SELECT SUM(extra) FROM ab.t")" = "$((5 * ROWS))" ] || die "$e: old rows do not read the added column's default"
    timed "$e" "$r" drop_column INSTANT "ALTER TABLE ab.t DROP COLUMN pad2, ALGORITHM=INSTANT"
    timed "$e" "$r" add_column_after INSTANT "ALTER TABLE ab.t ADD COLUMN mid INT DEFAULT 3 AFTER id, ALGORITHM=INSTANT"
    [ "$(sql "SELECT SUM(mid) + SUM(extra) FROM ab.t")" = "$((8 * ROWS))" ] ||
      die "$e: old rows do not read the columns' defaults after DROP/ADD AFTER"
    reads after
    timed "$e" "$r" add_index INPLACE "ALTER TABLE ab.t ADD INDEX kk (k), ALGORITHM=INPLACE"
    [ "$(sql "SELECT COUNT(*) FROM ab.t FORCE INDEX (kk) WHERE k >= 0")" = "$ROWS" ] ||
      die "$e: the new index does not hold every row"
    timed "$e" "$r" drop_index DEFAULT "ALTER TABLE ab.t DROP INDEX kk"
    timed "$e" "$r" add_index COPY "ALTER TABLE ab.t ADD INDEX kk (k), ALGORITHM=COPY"
    sql "DROP TABLE ab.t"
  done
done

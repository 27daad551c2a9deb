#!/usr/bin/env bash
# Crash test of ENGINE=TidesDB with the default (durable) configuration:
# tidesdb_default_sync_mode = FULL, so a COMMIT that returned is durable.
#
# Part 1: sysbench writes (oltp_write_only) run together with ACK_CLIENTS
#   "acknowledgement" clients. Each of those runs transactions
#     BEGIN; INSERT ack_a (id, ...); INSERT ack_b (id, ...); COMMIT;
#     SELECT 'ack', id;
#   through one mariadb client process; the SELECT runs only after COMMIT
#   returned, so every "ack <id>" line in its log is a commit the client
#   saw. mariadbd is killed with SIGKILL after KILL_AFTER seconds and
#   restarted. Then: every acknowledged id is in ack_a and in ack_b, the
#   two tables hold the same ids (transactions are atomic across tables),
#   and every table's secondary index has exactly one entry per row.
# Part 2: go-tpc TPC-C (tpcc.sh steps) on the same server is killed
#   mid-run, the server restarted, and `go-tpc tpcc check` must pass.
#
# Environment: KILL_AFTER=12 ACK_CLIENTS=2 SB_THREADS=2 TPCC_WAREHOUSES=1
#   TPCC_KILL_AFTER=20 CRASH_PORT=3320 SKIP_TPCC=0 ROUNDS=1
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/common.sh"

KILL_AFTER="${KILL_AFTER:-12}"
ACK_CLIENTS="${ACK_CLIENTS:-2}"
SB_THREADS="${SB_THREADS:-2}"
TPCC_WAREHOUSES="${TPCC_WAREHOUSES:-1}"
TPCC_KILL_AFTER="${TPCC_KILL_AFTER:-20}"
ROUNDS="${ROUNDS:-1}"
export TIDESQL_SERVER_DIR="${CRASH_SERVER_DIR:-$TIDESQL_ROOT/build/mariadb-crash}"
export TIDESQL_SOCKET="$TIDESQL_SERVER_DIR/mysqld.sock"
export TIDESQL_PORT="${CRASH_PORT:-3320}"
OUT="$TIDESQL_BUILD/crash"
rm -rf "$OUT"; mkdir -p "$OUT"
check_server_version
command -v sysbench >/dev/null || die "sysbench missing: run scripts/mariadb/setup.sh"

server() { bash "$here/server.sh" "$@"; }
sql() { server client -N "$@"; }
fail=0
bad() { echo "crash_test: FAIL: $*" >&2; fail=1; }

kill9() {
  local pid
  pid="$(cat "$TIDESQL_SERVER_DIR/mysqld.pid")"
  echo "crash_test: kill -9 mariadbd (pid $pid)"
  kill -9 "$pid"
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.1; done
  die "mariadbd pid $pid survived SIGKILL"
}

# Every secondary index of every TidesDB table has one entry per row.
check_indexes() {
  local db t idx n1 n2
  while read -r db t; do
    n1="$(sql -e "SELECT COUNT(*) FROM \`$db\`.\`$t\` FORCE INDEX (PRIMARY)" 2>/dev/null || sql -e "SELECT COUNT(*) FROM \`$db\`.\`$t\`")"
    for idx in $(sql -e "SELECT DISTINCT INDEX_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA='$db' AND TABLE_NAME='$t' AND INDEX_NAME <> 'PRIMARY'"); do
      n2="$(sql -e "SELECT COUNT(*) FROM \`$db\`.\`$t\` FORCE INDEX (\`$idx\`)")"
      [ "$n1" = "$n2" ] || bad "$db.$t: $n1 rows but $n2 entries in index $idx"
    done
  done < <(sql -e "SELECT TABLE_SCHEMA, TABLE_NAME FROM information_schema.TABLES WHERE ENGINE='TidesDB'")
}

server wipe >/dev/null
server start
trap 'server stop >/dev/null 2>&1 || true' EXIT

# ---------------------------------------------------------------- part 1
sql -e "CREATE DATABASE crash; CREATE DATABASE sbtest"
sql crash -e "CREATE TABLE ack_a (id BIGINT PRIMARY KEY, v INT, KEY (v)) ENGINE=TidesDB;
              CREATE TABLE ack_b (id BIGINT PRIMARY KEY, pad VARCHAR(200), u BIGINT, UNIQUE KEY (u)) ENGINE=TidesDB"
sbopts=(--db-driver=mysql --mysql-socket="$TIDESQL_SOCKET" --mysql-user=root --mysql-db=sbtest
        --mysql-storage-engine=TidesDB --tables=2 --table-size=5000)
sysbench oltp_write_only "${sbopts[@]}" prepare >"$OUT/sysbench-prepare.log" 2>&1 ||
  { tail "$OUT/sysbench-prepare.log"; die "sysbench prepare failed"; }

ack_client() {
  local k="$1" round="$2"
  seq 1 100000000 | awk -v base="$(( (round * 100 + k) * 100000000 ))" '{
      id = base + $1
      printf "BEGIN; INSERT INTO ack_a VALUES (%d, %d); INSERT INTO ack_b VALUES (%d, REPEAT(\"p\", 150), %d); COMMIT; SELECT \"ack\", %d;\n", id, $1 % 1000, id, id, id
    }' | mariadb --no-defaults --socket="$TIDESQL_SOCKET" -uroot -N --unbuffered crash \
      >"$OUT/ack-$round-$k.log" 2>"$OUT/ack-$round-$k.err" || true
}

for round in $(seq 1 "$ROUNDS"); do
  echo "crash_test: round $round: sysbench oltp_write_only ($SB_THREADS threads) + $ACK_CLIENTS ack clients, kill after ${KILL_AFTER}s"
  sysbench oltp_write_only "${sbopts[@]}" --threads="$SB_THREADS" --time=600 --report-interval=0 run \
    >"$OUT/sysbench-run-$round.log" 2>&1 &
  sbpid=$!
  pids=()
  for k in $(seq 1 "$ACK_CLIENTS"); do ack_client "$k" "$round" & pids+=($!); done
  sleep "$KILL_AFTER"
  kill9
  for p in "${pids[@]}"; do wait "$p" || true; done
  kill "$sbpid" 2>/dev/null || true
  wait "$sbpid" || true
  server start >/dev/null
  cat "$OUT"/ack-"$round"-*.log | awk '$1 == "ack" {print $2}' > "$OUT/acked-$round.txt"
  nack="$(wc -l < "$OUT/acked-$round.txt")"
  [ "$nack" -gt 0 ] || bad "round $round: no commit was acknowledged before the kill"
  sql crash -e "CREATE TABLE acked_$round (id BIGINT PRIMARY KEY) ENGINE=InnoDB;
                LOAD DATA INFILE '$OUT/acked-$round.txt' INTO TABLE acked_$round"
  lost_a="$(sql crash -e "SELECT COUNT(*) FROM acked_$round k LEFT JOIN ack_a a ON a.id = k.id WHERE a.id IS NULL")"
  lost_b="$(sql crash -e "SELECT COUNT(*) FROM acked_$round k LEFT JOIN ack_b b ON b.id = k.id WHERE b.id IS NULL")"
  only_a="$(sql crash -e "SELECT COUNT(*) FROM ack_a a LEFT JOIN ack_b b ON b.id = a.id WHERE b.id IS NULL")"
  only_b="$(sql crash -e "SELECT COUNT(*) FROM ack_b b LEFT JOIN ack_a a ON a.id = b.id WHERE a.id IS NULL")"
  rows="$(sql crash -e "SELECT COUNT(*) FROM ack_a")"
  sbtx="$(sed -n 's/.*transactions: *\([0-9]*\).*/\1/p' "$OUT/sysbench-run-$round.log" | tail -1)"
  echo "crash_test: round $round: (${SECONDS}s) $nack commits acknowledged, $rows rows in ack_a after restart; lost: ack_a $lost_a, ack_b $lost_b; half-applied: $only_a + $only_b"
  [ "$lost_a" = 0 ] && [ "$lost_b" = 0 ] || bad "round $round: acknowledged commits lost (ack_a $lost_a, ack_b $lost_b)"
  [ "$only_a" = 0 ] && [ "$only_b" = 0 ] || bad "round $round: transactions applied to one table only ($only_a, $only_b)"
  check_indexes
done
sysbench oltp_write_only "${sbopts[@]}" --threads=1 --time=3 run >"$OUT/sysbench-after.log" 2>&1 ||
  bad "sysbench after restart failed (log $OUT/sysbench-after.log)"

# ---------------------------------------------------------------- part 2
if [ "${SKIP_TPCC:-0}" != 1 ]; then
  export TPCC_SERVER_DIR="$TIDESQL_SERVER_DIR" TPCC_PORT="$TIDESQL_PORT" TPCC_OUT="$OUT/tpcc" WIPE=0
  export WAREHOUSES="$TPCC_WAREHOUSES" THREADS=2 TIME=600s
  bash "$here/tpcc.sh" prepare
  echo "crash_test: TPC-C run, kill after ${TPCC_KILL_AFTER}s"
  # Own process group: go-tpc (--ignore-error) would keep retrying, and
  # reconnect to the restarted server, until its time is up.
  setsid bash "$here/tpcc.sh" run >"$OUT/tpcc-run.log" 2>&1 &
  tpid=$!
  sleep "$TPCC_KILL_AFTER"
  kill9
  kill -TERM -- "-$tpid" 2>/dev/null || true
  wait "$tpid" || true
  server start >/dev/null
  if bash "$here/tpcc.sh" check; then echo "crash_test: TPC-C check after the crash passed"
  else bad "TPC-C check after the crash failed"; fi
  check_indexes
fi

[ "$fail" = 0 ] || die "crash test FAILED (logs in $OUT)"
echo "crash_test: passed ($SECONDS s)"

#!/usr/bin/env bash
# Hot backup under a TPC-C load, restored into a fresh server and checked
# (docs/design/backup.md):
#  1. a source server with the binary log (ROW, GTID) and go-tpc's TPC-C
#     schema on TidesDB (prepared with the binary log off for speed);
#  2. go-tpc runs for LOAD_TIME; BACKUP_AT seconds in, backup.sh takes the
#     backup (its time, the time commits were blocked and its size printed);
#  3. after the load: each table's row count and CHECKSUM TABLE on the source;
#     the row events the binary log holds after the recorded position
#     (tidesdb_binlog_pos) give each table's count at the backup point:
#     final count - inserts after + deletes after;
#  4. restore.sh into a new data directory, a second server on it: every
#     table's count equals that backup-point count, `go-tpc tpcc check`
#     passes, a user created on the source before the backup logs in;
#  5. the binary log from the recorded position is applied to the restored
#     server (what a replica built from the backup does): no event fails
#     (a row event fails on a row missing or already there), and every
#     table's CHECKSUM TABLE then equals the source's.
#
#   backup_test.sh            quick: 1 warehouse, 40 s load (~2-3 minutes)
# Environment: WAREHOUSES=1 THREADS=2 LOAD_TIME=40 BACKUP_AT=15
#   BACKUP_TEST_DIR=build/backup-test BACKUP_TEST_PORT=3493 (and +1)
# Results: BACKUP_TEST_DIR/out (results.txt, logs); the servers' data is
# deleted when the test passes.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/common.sh"

WAREHOUSES="${WAREHOUSES:-1}"
THREADS="${THREADS:-2}"
LOAD_TIME="${LOAD_TIME:-40}"
BACKUP_AT="${BACKUP_AT:-15}"
DIR="${BACKUP_TEST_DIR:-$TIDESQL_ROOT/build/backup-test}"
PORT="${BACKUP_TEST_PORT:-3493}"
OUT="$DIR/out"
DB=tpcc
TABLES="warehouse district customer history new_order orders order_line item stock"

check_server_version
[ -e "$TIDESQL_PLUGIN_DIR/ha_tidesdb.so" ] || die "no plugin: run scripts/mariadb/build_plugin.sh"
ensure_gotpc

# srv NAME CMD...: server.sh for the source (src) or the restored (dst) server.
srv() {
  local name="$1" port="$PORT"; shift
  [ "$name" = dst ] && port=$((PORT + 1))
  TIDESQL_SERVER_DIR="$DIR/$name" TIDESQL_SOCKET="$DIR/$name/mysqld.sock" TIDESQL_PORT="$port" \
    TIDESQL_NO_ROCKSDB=1 bash "$here/server.sh" "$@"
}
q() { local name="$1"; shift; srv "$name" client -N -B "$@"; }
gotpc() {
  local port="$1"; shift
  "$GOTPC_BIN" tpcc -H 127.0.0.1 -P "$port" -U root -D "$DB" --warehouses "$WAREHOUSES" "$@"
}
fail() { echo "backup_test: FAILED: $*" | tee -a "$OUT/results.txt" >&2; exit 1; }
cleanup() {
  srv src stop >/dev/null 2>&1 || true
  srv dst stop >/dev/null 2>&1 || true
  [ -n "${gotpc_pid:-}" ] && kill "$gotpc_pid" 2>/dev/null || true
}
trap cleanup EXIT

srv src wipe >/dev/null 2>&1 || true
srv dst wipe >/dev/null 2>&1 || true
rm -rf "$DIR/backup" "$OUT"
mkdir -p "$OUT"
: >"$OUT/results.txt"
say() { echo "backup_test: $*" | tee -a "$OUT/results.txt"; }

srv src start --log-bin=mysql-bin --binlog-format=ROW --server-id=1 --max-connections=200 >/dev/null
q src -e "CREATE DATABASE $DB; CREATE USER 'backup_probe'@'127.0.0.1' IDENTIFIED BY 'probe-pw';
          GRANT SELECT ON $DB.* TO 'backup_probe'@'127.0.0.1'"
t0=$SECONDS
gotpc "$PORT" -T "$THREADS" --conn-params "default_storage_engine=TidesDB&sql_log_bin=0" prepare --no-check \
  >"$OUT/prepare.log" 2>&1 || { tail -20 "$OUT/prepare.log" >&2; fail "go-tpc prepare"; }
engines="$(q src -e "SELECT GROUP_CONCAT(DISTINCT ENGINE) FROM information_schema.TABLES WHERE TABLE_SCHEMA='$DB'")"
[ "$engines" = TidesDB ] || fail "tpcc tables use engine(s) '$engines'"
say "prepared $WAREHOUSES warehouse(s) in $((SECONDS - t0)) s"

gotpc "$PORT" -T "$THREADS" --time "${LOAD_TIME}s" --isolation 2 --ignore-error --interval 600s run \
  >"$OUT/run.log" 2>&1 &
gotpc_pid=$!
sleep "$BACKUP_AT"
kill -0 "$gotpc_pid" 2>/dev/null || fail "the TPC-C load ended before the backup (see $OUT/run.log)"
orders_before="$(q src -e "SELECT COUNT(*) FROM $DB.orders")"
tb=$(date +%s%N)
bash "$here/backup.sh" "$DIR/backup" -S "$DIR/src/mysqld.sock" -u root >"$OUT/backup.log" 2>&1 ||
  { cat "$OUT/backup.log" >&2; fail "backup.sh"; }
tb=$(( ($(date +%s%N) - tb) / 1000000 ))
orders_after="$(q src -e "SELECT COUNT(*) FROM $DB.orders")"
kill -0 "$gotpc_pid" 2>/dev/null || fail "the TPC-C load ended during the backup: not a hot backup"
wait "$gotpc_pid" || fail "go-tpc run (see $OUT/run.log)"
gotpc_pid=
tpmc="$(sed -n 's/^tpmC: \([0-9.]*\),.*/\1/p' "$OUT/run.log" | tail -1)"
say "backup.sh: $tb ms; $(grep -o '[0-9]* ms with DDL blocked.* ms in SET GLOBAL' "$OUT/backup.log")"
# Hard-linked table files are shared with the source; the rest is new.
own_kib=$(( $(find "$DIR/backup" -type f -links 1 -printf '%s\n' | awk '{s+=$1} END {print s+0}') / 1024 ))
say "backup size: $(du -sk "$DIR/backup" | cut -f1) KiB (#tidesdb $(du -sk "$DIR/backup/#tidesdb" | cut -f1) KiB, of which $own_kib KiB not linked to the source; source #tidesdb $(du -sk "$DIR/src/data/#tidesdb" | cut -f1) KiB); load: tpmC ${tpmc:-?}, orders $orders_before before the backup, $orders_after after"
grep "under BLOCK_COMMIT" "$DIR/src/error.log" | tail -1 | sed 's/^.*TidesDB: /backup_test: server: /' | tee -a "$OUT/results.txt"

# 3. The source's final state and the backup point's counts.
pos_file="$DIR/backup/tidesdb_binlog_pos"
binlog_file="$(sed -n 's/^binlog_file=//p' "$pos_file")"
binlog_pos="$(sed -n 's/^binlog_pos=//p' "$pos_file")"
gtid="$(sed -n 's/^gtid_binlog_pos=//p' "$pos_file")"
[ -n "$binlog_file" ] && [ -n "$binlog_pos" ] && [ -n "$gtid" ] || fail "incomplete backup point in $pos_file"
say "backup point: $binlog_file:$binlog_pos gtid $gtid"
datadir="$DIR/src/data"
files=()
for f in $(q src -e "SHOW BINARY LOGS" | cut -f1); do
  [[ "$f" < "$binlog_file" ]] || files+=("$datadir/$f")
done
mariadb-binlog --base64-output=DECODE-ROWS -v --start-position="$binlog_pos" "${files[@]}" >"$OUT/tail.txt" 2>"$OUT/tail.err" ||
  fail "mariadb-binlog of the tail (see $OUT/tail.err)"
declare -A final expect sum_src
for t in $TABLES; do
  final[$t]="$(q src -e "SELECT COUNT(*) FROM $DB.$t")"
  sum_src[$t]="$(q src -e "CHECKSUM TABLE $DB.$t EXTENDED" | cut -f2)"
  [[ "${sum_src[$t]}" =~ ^[0-9]+$ ]] || fail "CHECKSUM TABLE $t on the source gave '${sum_src[$t]}'"
  ins="$(grep -c "^### INSERT INTO \`$DB\`.\`$t\`" "$OUT/tail.txt" || true)"
  del="$(grep -c "^### DELETE FROM \`$DB\`.\`$t\`" "$OUT/tail.txt" || true)"
  expect[$t]=$((final[$t] - ins + del))
done
tail_txns="$(grep -c '^COMMIT/\*!\*/;' "$OUT/tail.txt" || true)"
[ "${expect[orders]}" -ge "$orders_before" ] && [ "${expect[orders]}" -le "$orders_after" ] ||
  fail "orders at the backup point by the binlog (${expect[orders]}) not within [$orders_before, $orders_after] counted around it"
srv src stop >/dev/null

# 4. Restore into a fresh server (a directory without tidesdb_binlog_pos,
# as a backup cut short leaves, is refused).
mkdir -p "$DIR/incomplete/#tidesdb"
if bash "$here/restore.sh" "$DIR/incomplete" "$DIR/incomplete-dst" >/dev/null 2>&1; then
  fail "restore.sh accepted a backup without tidesdb_binlog_pos"
fi
rm -rf "$DIR/incomplete" "$DIR/incomplete-dst"
tr0=$(date +%s%N)
bash "$here/restore.sh" "$DIR/backup" "$DIR/dst/data" >"$OUT/restore.log" 2>&1 ||
  { cat "$OUT/restore.log" >&2; fail "restore.sh"; }
tr=$(( ($(date +%s%N) - tr0) / 1000000 ))
srv dst start --server-id=2 --max-connections=200 >/dev/null || fail "the restored server does not start"
say "restore.sh: $tr ms"
printf '%-11s %10s %12s %10s\n' table restored backup_point final | tee -a "$OUT/results.txt"
bad=0
for t in $TABLES; do
  got="$(q dst -e "SELECT COUNT(*) FROM $DB.$t")"
  printf '%-11s %10s %12s %10s\n' "$t" "$got" "${expect[$t]}" "${final[$t]}" | tee -a "$OUT/results.txt"
  [ "$got" = "${expect[$t]}" ] || bad=1
done
[ "$bad" = 0 ] || fail "row counts of the restored server differ from the backup point"
say "all 9 tables hold the backup point's counts ($tail_txns transactions committed after it)"
mariadb -h 127.0.0.1 -P "$((PORT + 1))" -u backup_probe -pprobe-pw -N -e "SELECT COUNT(*) FROM $DB.warehouse" >/dev/null ||
  fail "the user created on the source cannot log in to the restored server (system tables not restored)"
q dst "$DB" -e "ALTER TABLE history ADD INDEX idx_h_check (h_c_w_id, h_c_d_id, h_c_id)"
gotpc "$((PORT + 1))" check >"$OUT/check.log" 2>&1 || { tail -20 "$OUT/check.log" >&2; fail "go-tpc check on the restored server"; }
if grep -qiE "check.*fail|failed|panic" "$OUT/check.log"; then
  grep -iE "fail|panic" "$OUT/check.log" | head -5 >&2; fail "go-tpc check on the restored server"
fi
say "go-tpc check passed on the restored server"

# 5. Replay the binary log from the backup point.
mariadb-binlog --start-position="$binlog_pos" "${files[@]}" 2>>"$OUT/tail.err" |
  srv dst client >"$OUT/replay.log" 2>&1 || { tail -5 "$OUT/replay.log" >&2; fail "replaying the binary log from $binlog_file:$binlog_pos"; }
for t in $TABLES; do
  s="$(q dst -e "CHECKSUM TABLE $DB.$t EXTENDED" | cut -f2)"
  [ "$s" = "${sum_src[$t]}" ] || fail "after the replay, $t's checksum $s differs from the source's ${sum_src[$t]}"
done
say "binary log replayed from the backup point: all 9 tables equal the source's (CHECKSUM TABLE)"
srv dst stop >/dev/null
trap - EXIT
rm -rf "$DIR/src" "$DIR/dst" "$DIR/backup"
say "passed"

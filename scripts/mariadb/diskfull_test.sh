#!/usr/bin/env bash
# Disk full under SQL (issue #18): the engine's directory (<datadir>/#tidesdb)
# on a small tmpfs that a ballast file fills up; bulk inserts into a TidesDB
# table run until one fails. Checks:
#   - the failing statement ends in an error that says the disk is full,
#     rolled back whole: the table holds whole statements only;
#   - the server stays up: other tables are read, the connection goes on;
#   - once the ballast is removed, inserts succeed again without a restart
#     (within RESUME_WAIT seconds), CHECK TABLE passes, and a restart keeps
#     exactly the rows that were acknowledged.
# Needs root (mount); prints SKIPPED and exits 0 where tmpfs cannot be
# mounted. Environment: FS_MB=48 ROWS_PER_STMT=500 RESUME_WAIT=30
# DISKFULL_PORT=3330.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/common.sh"

FS_MB="${FS_MB:-48}"
ROWS_PER_STMT="${ROWS_PER_STMT:-500}"
RESUME_WAIT="${RESUME_WAIT:-30}"
export TIDESQL_SERVER_DIR="${DISKFULL_SERVER_DIR:-$TIDESQL_ROOT/build/mariadb-diskfull}"
export TIDESQL_SOCKET="$TIDESQL_SERVER_DIR/mysqld.sock"
export TIDESQL_PORT="${DISKFULL_PORT:-3330}"
check_server_version

server() { bash "$here/server.sh" "$@"; }
sql() { server client -N "$@"; }
fail=0
bad() { echo "diskfull_test: FAIL: $*" >&2; fail=1; }

MNT="$TIDESQL_SERVER_DIR/data/#tidesdb"
cleanup() {
  server stop >/dev/null 2>&1 || true
  mountpoint -q "$MNT" 2>/dev/null && umount "$MNT" 2>/dev/null || true
}
trap cleanup EXIT

server wipe >/dev/null
server start >/dev/null
sql -e "CREATE DATABASE df"
server stop >/dev/null
# The engine's directory moves onto a small tmpfs.
mv "$MNT" "$MNT.disk"
mkdir "$MNT"
if ! mount -t tmpfs -o size="${FS_MB}m" tidesdb-diskfull "$MNT" 2>/dev/null; then
  rmdir "$MNT"; mv "$MNT.disk" "$MNT"
  echo "diskfull_test: SKIPPED (cannot mount a tmpfs here: needs root and CAP_SYS_ADMIN)"
  exit 0
fi
cp -a "$MNT.disk"/. "$MNT"/ && rm -rf "$MNT.disk"
server start >/dev/null

sql df -e "CREATE TABLE other (id INT PRIMARY KEY, v VARCHAR(100)) ENGINE=TidesDB;
           INSERT INTO other SELECT seq, CONCAT('row ', seq) FROM seq_1_to_100;
           CREATE TABLE big (id INT PRIMARY KEY, pad VARCHAR(2000), k INT, KEY (k)) ENGINE=TidesDB
             WRITE_BUFFER_SIZE=4194304"
# Ballast: all but 6 MiB of the file system.
free_kb="$(df -k --output=avail "$MNT" | tail -1 | tr -d ' ')"
ballast_kb=$((free_kb - 6 * 1024))
[ "$ballast_kb" -gt 0 ] || die "tmpfs of ${FS_MB} MiB has only ${free_kb} KiB free"
fallocate -l "$((ballast_kb * 1024))" "$MNT/ballast" 2>/dev/null ||
  dd if=/dev/zero of="$MNT/ballast" bs=1024 count="$ballast_kb" status=none
echo "diskfull_test: tmpfs ${FS_MB} MiB, $(df -k --output=avail "$MNT" | tail -1 | tr -d ' ') KiB left"

insert_stmt() { # n: statement number (rows n*R+1 .. (n+1)*R)
  local lo=$(( $1 * ROWS_PER_STMT + 1 )) hi=$(( ($1 + 1) * ROWS_PER_STMT ))
  echo "INSERT INTO big SELECT seq, REPEAT(CHAR(65 + seq MOD 26), 2000), seq MOD 97 FROM seq_${lo}_to_${hi}"
}

ok=0 err=""
for n in $(seq 0 999); do
  if out="$(sql df -e "$(insert_stmt "$n")" 2>&1)"; then
    ok=$((ok + 1))
  else
    err="$out"
    break
  fi
done
[ -n "$err" ] || die "the file system never filled (${ok} statements)"
err="$(grep '^ERROR' <<<"$err" || echo "$err")"
echo "diskfull_test: statement $((ok + 1)) failed after ${ok} succeeded: $err"
grep -qiE "disk (got )?full|no space" <<<"$err" || bad "the error does not say the disk is full: $err"

# The server is up, the table holds whole statements, other tables serve.
rows="$(sql df -e "SELECT COUNT(*) FROM big")" || bad "SELECT after the error failed"
[ "$rows" = $((ok * ROWS_PER_STMT)) ] || bad "big holds $rows rows, want $((ok * ROWS_PER_STMT)) (the failed statement was not rolled back whole)"
[ "$(sql df -e "SELECT COUNT(*), SUM(id) FROM other")" = "$(printf '100\t5050')" ] || bad "other table not readable"
if sql df -e "$(insert_stmt "$ok")" >/dev/null 2>&1; then
  bad "an insert succeeded while the disk was still full"
fi

# Space returns: writes resume without a restart.
rm -f "$MNT/ballast"
t0=$SECONDS resumed=0
while [ $((SECONDS - t0)) -lt "$RESUME_WAIT" ]; do
  if sql df -e "$(insert_stmt "$ok")" >/dev/null 2>&1; then resumed=1; break; fi
  sleep 0.5
done
[ "$resumed" = 1 ] || bad "inserts did not resume within ${RESUME_WAIT}s after space was freed"
[ "$resumed" = 1 ] && ok=$((ok + 1))
echo "diskfull_test: inserts resumed $((SECONDS - t0))s after the ballast was removed"
sql df -e "$(insert_stmt "$ok")" >/dev/null || bad "a second insert after space returned failed"
ok=$((ok + 1))
want=$((ok * ROWS_PER_STMT))
[ "$(sql df -e "SELECT COUNT(*) FROM big")" = "$want" ] || bad "big does not hold the $want acknowledged rows"
[ "$(sql df -e "SELECT COUNT(*) FROM big FORCE INDEX (k)")" = "$want" ] || bad "index k does not hold $want entries"
chk="$(sql df -e "CHECK TABLE big, other" | awk '{print $NF}' | sort -u | tr '\n' ' ')"
[ "$chk" = "OK " ] || bad "CHECK TABLE: $chk"

# A restart keeps exactly the acknowledged rows.
server stop >/dev/null
server start >/dev/null
[ "$(sql df -e "SELECT COUNT(*) FROM big")" = "$want" ] || bad "after a restart big does not hold $want rows"
[ "$(sql df -e "SELECT COUNT(*) FROM other")" = 100 ] || bad "after a restart other lost rows"

if [ "$fail" = 0 ]; then
  echo "diskfull_test: PASS ($want rows, ${ROWS_PER_STMT} per statement)"
else
  echo "diskfull_test: FAILED (server log: $TIDESQL_SERVER_DIR/error.log)"
  exit 1
fi

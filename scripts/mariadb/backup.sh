#!/usr/bin/env bash
# Hot backup of a running MariaDB server's TidesDB tables, with the server's
# own system tables (docs/design/backup.md):
#
#   backup.sh BACKUP_DIR [mariadb client options...]
#     e.g. backup.sh /backups/2026-11-27 -S /run/mysqld/mysqld.sock -u root
#
# Run on the server's host, as a user that can read its data directory;
# BACKUP_DIR must not exist or be empty, and the server (which writes the
# TidesDB part) must be able to create it. One client session goes through
# the server's backup stages, as mariabackup does:
#   BACKUP STAGE START, FLUSH     non-transactional tables flushed, closed,
#                                 and new writes to them blocked
#   BACKUP STAGE BLOCK_DDL        the mysql schema's Aria/MyISAM/CSV tables
#                                 and views copied (grants, routines,
#                                 events...; not its InnoDB tables nor the
#                                 log tables: the restored server keeps the
#                                 fresh ones)
#   SET GLOBAL tidesdb_backup_dir=BACKUP_DIR   flushes the memtables, moves
#                                 the session on to BLOCK_COMMIT and takes the
#                                 library checkpoint, the TidesDB tables' .frm
#                                 files and tidesdb_binlog_pos (binlog file:pos
#                                 and GTID of this point)
#   BACKUP STAGE END
# then the system tables are moved into BACKUP_DIR/mysql. Tables of other
# engines (InnoDB, MyRocks, Aria user tables) are not in the backup.
# Restore with restore.sh. Prints the backup point and the time commits
# were blocked.
set -euo pipefail

die() { echo "backup.sh: $*" >&2; exit 1; }
[ $# -ge 1 ] || die "usage: backup.sh BACKUP_DIR [mariadb client options...]"
dir="$1"; shift
case "$dir" in /*) ;; *) dir="$(pwd)/$dir" ;; esac
dir="${dir%/}"
if [ -e "$dir" ]; then
  [ -d "$dir" ] || die "$dir exists and is not a directory"
  [ -z "$(ls -A "$dir")" ] || die "$dir exists and is not empty"
fi
[ -d "$(dirname "$dir")" ] || die "the parent directory of $dir does not exist"
stage="$dir.system-tmp"
rm -rf "$stage"
mkdir "$stage" || die "cannot create $stage"
trap 'rm -rf "$stage"' EXIT

client=(mariadb "$@" -N -B)
datadir="$("${client[@]}" -e "SELECT @@datadir")" || die "cannot connect to the server"
datadir="${datadir%/}"
[ -r "$datadir/mysql" ] || die "cannot read the server's data directory $datadir"
"${client[@]}" -e "SELECT 1 FROM information_schema.PLUGINS WHERE PLUGIN_NAME='TidesDB' AND PLUGIN_STATUS='ACTIVE'" |
  grep -q 1 || die "the TidesDB engine is not loaded in the server"
# The mysql schema's tables to copy: views, and base tables of engines whose
# files are self-contained (not InnoDB, whose tables live in its logs and
# system tablespace too), without the log tables.
sys_tables="$("${client[@]}" -e "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA='mysql'
  AND (TABLE_TYPE='VIEW' OR ENGINE IN ('Aria','MyISAM','CSV'))
  AND TABLE_NAME NOT IN ('general_log','slow_log')")"

# One session holds the stages: statements go in through a pipe and each
# step ends with a marker line, read back before the next step.
trap '' PIPE # a write to an ended session fails (run() says so) instead of killing us
coproc SESSION { "${client[@]}" --unbuffered 2>&1; }
# bash unsets SESSION, SESSION_PID and closes the pipes once the
# coprocess has ended: keep the pid and duplicates of the pipes.
session_pid=$SESSION_PID
exec {to_session}>&"${SESSION[1]}" {from_session}<&"${SESSION[0]}"
n=0
run() { # statements... : send them and wait for the step's marker
  n=$((n + 1))
  printf '%s\n' "$@" "SELECT 'backup-step-$n';" >&"$to_session" ||
    die "the client session ended before: $*"
  local line
  while IFS= read -r line <&"$from_session"; do
    [ "$line" = "backup-step-$n" ] && return 0
    echo "backup.sh: server: $line" >&2
    case "$line" in ERROR*) die "step $n failed: $*" ;; esac
  done
  die "the client session ended during: $*"
}

t0=$(date +%s%N)
run "BACKUP STAGE START;" "BACKUP STAGE FLUSH;" "BACKUP STAGE BLOCK_DDL;"
ts=$(date +%s%N)
mkdir -p "$stage/mysql"
for t in $sys_tables; do
  for f in "$datadir/mysql/$t".*; do
    [ -e "$f" ] || continue
    case "$f" in *.ibd) continue ;; esac
    cp -p "$f" "$stage/mysql/"
  done
done
# fsync the copies and their directory, not the file system (syncfs): that
# waits for every dirty page on it, and did so for 25 s once in CI (right
# after the sanitizer builds), with DDL blocked all that time.
copies=("$stage/mysql"/*)
[ -e "${copies[0]}" ] || copies=()
sync -- "${copies[@]}" "$stage/mysql" || die "syncing the copied system tables in $stage/mysql failed"
t1=$(date +%s%N)
q="${dir//\\/\\\\}"; q="${q//\'/\\\'}"
run "SET GLOBAL tidesdb_backup_dir='$q';"
run "BACKUP STAGE END;"
t2=$(date +%s%N)
exec {to_session}>&-
if [ -n "${SESSION[1]:-}" ]; then eval "exec ${SESSION[1]}>&-"; fi
wait "$session_pid" 2>/dev/null || true

[ -f "$dir/tidesdb_binlog_pos" ] || die "no $dir/tidesdb_binlog_pos: the backup did not complete"
mv "$stage/mysql" "$dir/mysql"
sync -f "$dir" 2>/dev/null || sync
echo "backup.sh: backup in $dir ($(du -sh "$dir" | cut -f1)); $(( (t2 - t0) / 1000000 )) ms with DDL blocked (reaching BLOCK_DDL $(( (ts - t0) / 1000000 )) ms, copying and syncing the system tables $(( (t1 - ts) / 1000000 )) ms), $(( (t2 - t1) / 1000000 )) ms in SET GLOBAL tidesdb_backup_dir (the server's error log tells how much of it with commits blocked)"
grep -v '^#' "$dir/tidesdb_binlog_pos" | sed 's/^/backup.sh:   /'

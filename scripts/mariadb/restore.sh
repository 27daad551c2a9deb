#!/usr/bin/env bash
# Restore a backup made by backup.sh (or SET GLOBAL tidesdb_backup_dir) into
# a new data directory (docs/design/backup.md):
#
#   restore.sh BACKUP_DIR NEW_DATADIR
#
# NEW_DATADIR must not exist or be empty. It is initialised with
# mariadb-install-db (the server's InnoDB system files and system tables),
# then the backup's mysql schema files (backup.sh copies them: grants,
# routines, events) replace the fresh ones, and the TidesDB database
# (#tidesdb, the library checkpoint) and the TidesDB tables' .frm files are
# copied in (copied, never linked: the new server appends to its WAL). Start
# a server on it with the plugin loaded, e.g.
#   mariadbd --datadir=NEW_DATADIR --plugin-load-add=ha_tidesdb.so --plugin-maturity=gamma
# The backup point is in BACKUP_DIR/tidesdb_binlog_pos; a replica of the
# backed-up server starts from it with
#   SET GLOBAL gtid_slave_pos='<gtid_binlog_pos>';
#   CHANGE MASTER TO ..., MASTER_USE_GTID=slave_pos; START SLAVE;
# Environment: INSTALL_DB_OPTS (extra mariadb-install-db options, default
# --auth-root-authentication-method=normal --skip-test-db).
set -euo pipefail

die() { echo "restore.sh: $*" >&2; exit 1; }
[ $# -eq 2 ] || die "usage: restore.sh BACKUP_DIR NEW_DATADIR"
src="${1%/}" dst="${2%/}"
[ -f "$src/tidesdb_binlog_pos" ] ||
  die "$src is not a complete backup (no tidesdb_binlog_pos, written last)"
[ -d "$src/#tidesdb" ] || die "$src has no #tidesdb directory"
if [ -e "$dst" ]; then
  [ -d "$dst" ] || die "$dst exists and is not a directory"
  [ -z "$(ls -A "$dst")" ] || die "$dst exists and is not empty"
fi
mkdir -p "$dst"

# shellcheck disable=SC2086
mariadb-install-db --no-defaults --user="$(id -un)" --datadir="$dst" \
  ${INSTALL_DB_OPTS:---auth-root-authentication-method=normal --skip-test-db} >"$dst.install-db.log" 2>&1 ||
  die "mariadb-install-db failed: see $dst.install-db.log"
rm -f "$dst.install-db.log"

if [ -d "$src/mysql" ]; then
  cp -rp "$src/mysql/." "$dst/mysql/"
else
  echo "restore.sh: no system tables in $src (taken with SET GLOBAL only): the new server keeps fresh ones" >&2
fi
cp -rp "$src/#tidesdb" "$dst/#tidesdb"
for d in "$src"/*/; do
  d="${d%/}"; name="$(basename "$d")"
  case "$name" in '#tidesdb' | mysql) continue ;; esac
  mkdir -p "$dst/$name"
  cp -rp "$d/." "$dst/$name/"
done
cp -p "$src/tidesdb_binlog_pos" "$dst/tidesdb_binlog_pos.restored"
sync -f "$dst" 2>/dev/null || sync

echo "restore.sh: restored $src into $dst"
grep -v '^#' "$src/tidesdb_binlog_pos" | sed 's/^/restore.sh:   /'

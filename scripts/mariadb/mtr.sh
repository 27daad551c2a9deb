#!/usr/bin/env bash
# Run the mtr suite `tidesdb` (mariadb/mysql-test/tidesdb) against the
# installed server with the freshly built plugin.
#   mtr.sh [mtr options] [test names]    e.g. mtr.sh crud  /  mtr.sh --record ddl
# mtr must run from its own directory and breaks on a '-' in the suite path,
# so the suite is copied to build/mariadb/mtr/suite/tidesdb first (for
# another build directory, e.g. build/mariadb-pgo, to build/mtr/mariadb_pgo);
# with --record the recorded results are copied back into the source tree.
# Runs the plugin in TIDESQL_BUILD/plugin; "no tests to run" is a failure.
set -euo pipefail
. "$(dirname "$0")/common.sh"

check_server_version
[ -e "$TIDESQL_PLUGIN_DIR/ha_tidesdb.so" ] || die "no plugin: run scripts/mariadb/build_plugin.sh"
MTR_DIR=/usr/share/mysql/mysql-test
[ -x "$MTR_DIR/mtr" ] || die "mtr not found in $MTR_DIR: run scripts/mariadb/setup.sh (mariadb-test)"
getent hosts localhost >/dev/null || die "'localhost' does not resolve: add it to /etc/hosts"

SRC="$TIDESQL_ROOT/mariadb/mysql-test/tidesdb"
WORK="$TIDESQL_BUILD/mtr"
case "${WORK#"$TIDESQL_ROOT"}" in
  *-*) WORK="$TIDESQL_ROOT/build/mtr/$(basename "$TIDESQL_BUILD" | tr - _)" ;;
esac
SUITE="$WORK/suite/tidesdb"
rm -rf "$SUITE"
mkdir -p "$SUITE" "$WORK"
cp -r "$SRC"/. "$SUITE"/

record=0
for a in "$@"; do [ "$a" = "--record" ] && record=1; done

set +e
(cd "$MTR_DIR" && ./mtr --suite="$SUITE" --vardir="$WORK/var" \
   --mysqld=--plugin-dir="$TIDESQL_PLUGIN_DIR" --parallel="${MTR_PARALLEL:-2}" \
   --force --max-test-fail=0 --retry=0 "$@") 2>&1 | tee "$WORK/mtr.out"
rc=${PIPESTATUS[0]}
set -e
if grep -q "^No tests to run" "$WORK/mtr.out"; then
  echo "mtr: no tests ran (suite $SUITE)" >&2
  rc=1
fi
if [ "$record" = 1 ]; then
  mkdir -p "$SRC/r"
  cp "$SUITE"/r/*.result "$SRC/r/" 2>/dev/null || true
  echo "mtr: recorded results copied to $SRC/r"
fi
exit $rc

#!/usr/bin/env bash
# Tests of the PGO build (scripts/mariadb/build_plugin.sh --pgo):
#  1. --reuse-profile without a profile, and with a stale one (its stamp
#     from other sources or flags), fails with a clear error and builds
#     nothing (checked in a throw-away variant root);
#  2. the full PGO build (instrumented build, training, optimised rebuild)
#     completes, a server loads it and reports tidesdb_build = pgo;
#  3. --reuse-profile on that fresh profile rebuilds without training.
# About 5 minutes on 2 cores (the training set is most of it).
set -euo pipefail
. "$(dirname "$0")/common.sh"

BP="$TIDESQL_ROOT/scripts/mariadb/build_plugin.sh"
tmp="$(mktemp -d)"
srv() { TIDESQL_BUILD="$TIDESQL_ROOT/build/mariadb-pgo" TIDESQL_SERVER_DIR="$TIDESQL_ROOT/build/sql/pgo-test-server" \
        TIDESQL_PORT=3399 TIDESQL_SOCKET="$TIDESQL_ROOT/build/sql/pgo-test-server/mysqld.sock" \
        bash "$TIDESQL_ROOT/scripts/mariadb/server.sh" "$@"; }
trap 'rm -rf "$tmp"; srv wipe >/dev/null 2>&1 || true' EXIT

echo "pgo_test: 1. missing and stale profiles are errors"
out="$(TIDESQL_VARIANT_ROOT="$tmp" bash "$BP" --pgo --reuse-profile 2>&1)" &&
  die "--reuse-profile without a profile succeeded: $out"
grep -q "no profile in $tmp/mariadb-pgo/profile" <<<"$out" || die "missing profile: unexpected message: $out"
mkdir -p "$tmp/mariadb-pgo/profile"
echo 0000 >"$tmp/mariadb-pgo/profile/stamp"
out="$(TIDESQL_VARIANT_ROOT="$tmp" bash "$BP" --pgo --reuse-profile 2>&1)" &&
  die "--reuse-profile with a stale profile succeeded: $out"
grep -q "is stale" <<<"$out" || die "stale profile: unexpected message: $out"
[ ! -e "$tmp/mariadb-pgo/ha_tidesdb.so" ] || die "a plugin was built from a missing or stale profile"

echo "pgo_test: 2. the PGO build"
bash "$BP" --pgo
srv start >/dev/null
b="$(srv client -N -e "SELECT VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS WHERE VARIABLE_NAME = 'TIDESDB_BUILD'")"
[ "$b" = pgo ] || die "the server loaded build '$b', want pgo"
srv client -e "CREATE DATABASE IF NOT EXISTS t; CREATE TABLE t.a (id INT PRIMARY KEY, v INT) ENGINE=TidesDB;
  INSERT INTO t.a VALUES (1, 1), (2, 2); SELECT SUM(v) FROM t.a" | grep -qx 3 || die "the PGO build does not serve a table"
srv wipe >/dev/null

echo "pgo_test: 3. --reuse-profile on a fresh profile"
bash "$BP" --pgo --reuse-profile | tee "$tmp/reuse.log"
grep -q "training" "$tmp/reuse.log" && die "--reuse-profile trained again"
echo "pgo_test: passed"

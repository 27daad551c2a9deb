#!/usr/bin/env bash
# Build the TideSQL storage engine plugin (ha_tidesdb.so) against the
# headers of the exact installed server version, with the CMake build of
# mariadb/CMakeLists.txt in <dir>/cmake:
#  - libtidesdb.a (PIC, static), the library's own CMake target;
#  - libmysqlservices.a from the server sources' libservices/;
#  - mariadb/ha_tidesdb/*.cc: -O2 -g -DNDEBUG -DDBUG_OFF -DHAVE_CONFIG_H
#    -D_FILE_OFFSET_BITS=64 -DMYSQL_DYNAMIC_PLUGIN, the server's include
#    directories (wsrep-lib, generated, include/providers, include, sql);
#  - the plain build also builds the engine's unit tests (key_codec_test,
#    run by `ctest --test-dir <dir>/cmake`, test_all.sh's engine_unit step);
#  - a plugin dir: symlinks to /usr/lib/mysql/plugin/* (keeps MyRocks
#    available) plus ha_tidesdb.so.
# Needs scripts/mariadb/setup.sh to have run once (packages + headers).
#
# Usage: build_plugin.sh [--debug | [--pgo [--reuse-profile]] [--lto]]
#   (none)     the plain build, in build/mariadb/ (plugin dir build/mariadb/plugin)
#   --debug    -O0, asserts on (same directory as the plain build)
#   --lto      link-time optimisation of library + engine: build/mariadb-lto/
#   --pgo      profile-guided: build/mariadb-pgo/ (with --lto: build/mariadb-pgo-lto/)
#                1. instrumented build (-fprofile-generate, profile in <dir>/profile/)
#                2. training, on the instrumented plugin (TRAINING below)
#                3. rebuild with -fprofile-use; a translation unit without a
#                   profile is a compile error, not a silently plain object
#   --reuse-profile  skip 1-2 and use the profile already in <dir>/profile/;
#                a missing profile, or one taken from other sources or
#                flags (its stamp differs), is an error
# TIDESQL_VARIANT_ROOT (default build/) holds the non-plain build directories.
# Which build a server loaded: SHOW GLOBAL STATUS LIKE 'tidesdb_build'
# (plain, pgo, lto, pgo+lto) or information_schema.PLUGINS.PLUGIN_AUTH_VERSION.
#
# TRAINING (the documented training set, phase 2), all on TidesDB only:
#   - the mtr suite tidesdb (scripts/mariadb/mtr.sh): DDL, types, keys,
#     transactions, recovery paths;
#   - sqlbench: oltp_read_write, oltp_point_select, oltp_insert,
#     oltp_write_only at 1 and 8 threads, 4 tables x 20k rows, 10 s each;
#   - tpcc: 2 warehouses, 4 users, 1 minute, with go-tpc's check;
#   - iibench: a 20 s load with 3 secondary indexes and 10 s of the mixed phase.
set -euo pipefail
. "$(dirname "$0")/common.sh"

debug=0 pgo=0 lto=0 reuse=0
for a in "$@"; do
  case "$a" in
    --debug) debug=1 ;;
    --pgo) pgo=1 ;;
    --lto) lto=1 ;;
    --reuse-profile) reuse=1 ;;
    *) die "build_plugin.sh: unknown option '$a' (want --debug, --pgo, --lto, --reuse-profile)" ;;
  esac
done
[ "$debug" = 1 ] && [ $((pgo + lto)) -gt 0 ] && die "--debug does not combine with --pgo or --lto"
[ "$reuse" = 1 ] && [ "$pgo" = 0 ] && die "--reuse-profile needs --pgo"

kind=plain
[ "$pgo" = 1 ] && kind=pgo
[ "$lto" = 1 ] && kind=lto
[ "$pgo" = 1 ] && [ "$lto" = 1 ] && kind=pgo-lto
if [ "$kind" != plain ]; then
  TIDESQL_BUILD="${TIDESQL_VARIANT_ROOT:-$TIDESQL_ROOT/build}/mariadb-$kind"
  TIDESQL_PLUGIN_DIR="$TIDESQL_BUILD/plugin"
fi
B="$TIDESQL_BUILD"
PROF="$B/profile"

# The build kind the engine reports (status variable tidesdb_build).
kind_name="${kind/-/+}"

check_server_version
S="$MARIADB_SRC_DIR"
[ -f "$S/.tidesql-complete" ] ||
  die "server headers missing in $S: run scripts/mariadb/setup.sh as root first"
grep -q "\"${MARIADB_PIN_UPSTREAM%-}" "$S/generated/mysql_version.h" ||
  die "headers in $S are not version ${MARIADB_PIN_UPSTREAM%-}"

mkdir -p "$B" "$TIDESQL_PLUGIN_DIR"
jobs="${JOBS:-2}"

# build EXTRA_FLAGS [LIB_FLAGS]: configure and build mariadb/CMakeLists.txt
# in $B/cmake with EXTRA_FLAGS added to the engine's compiles and its link
# (CMAKE_CXX_FLAGS) and LIB_FLAGS, default EXTRA_FLAGS, to the library's
# (CMAKE_C_FLAGS); CMake rebuilds what a changed flag or source affects.
# The library members ha_tidesdb.so pulls in are listed in
# $B/link-inputs.txt (from the link map).
build() {
  local extra="$1" lib_extra="${2-$1}" tests=OFF
  [ "$kind" = plain ] && tests=ON
  local cm=(-G Ninja -S "$TIDESQL_ROOT/mariadb" -B "$B/cmake"
            -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMARIADB_SRC_DIR="$S"
            -DTIDESQL_BUILD_KIND="$kind_name" -DTIDESQL_DEBUG="$([ "$debug" = 1 ] && echo ON || echo OFF)"
            -DTIDESQL_UNIT_TESTS="$tests"
            "-DCMAKE_C_FLAGS=$lib_extra" "-DCMAKE_CXX_FLAGS=$extra")
  if [ "$lto" = 1 ]; then
    cm+=(-DCMAKE_AR="$(command -v gcc-ar)" -DCMAKE_C_COMPILER_AR="$(command -v gcc-ar)"
         -DCMAKE_CXX_COMPILER_AR="$(command -v gcc-ar)"
         -DCMAKE_RANLIB="$(command -v gcc-ranlib)" -DCMAKE_C_COMPILER_RANLIB="$(command -v gcc-ranlib)"
         -DCMAKE_CXX_COMPILER_RANLIB="$(command -v gcc-ranlib)")
  fi
  if [ "$tests" = ON ] && [ ! -f "$S/lib/libmariadbd.a" ]; then
    die "$S/lib/libmariadbd.a missing (the engine's unit tests link it): run scripts/mariadb/setup.sh as root"
  fi
  cmake "${cm[@]}" >"$B/cmake-configure.log" 2>&1 ||
    { tail -n 20 "$B/cmake-configure.log" >&2; die "configuring $B/cmake failed (log $B/cmake-configure.log)"; }
  ninja -C "$B/cmake" -j "$jobs" >"$B/cmake-build.log" 2>&1 ||
    { grep -E -B2 -A8 "error|FAILED" "$B/cmake-build.log" | head -n 60 >&2; die "building in $B/cmake failed (log $B/cmake-build.log)"; }

  so="$B/ha_tidesdb.so"
  cp -f "$B/cmake/ha_tidesdb.so" "$so.tmp" && mv -f "$so.tmp" "$so"
  # One "(archive)member" line per member, as ld --trace prints them.
  grep -oE '[^ (]*libtidesdb\.a\([^)]*\.o\)' "$B/cmake/ha_tidesdb.map" | LC_ALL=C sort -u |
    sed 's/^\(.*\)(\(.*\))$/(\1)\2/' >"$B/link-inputs.txt"
  [ -s "$B/link-inputs.txt" ] || die "the link map $B/cmake/ha_tidesdb.map names no libtidesdb.a member"

  # Plugin dir: Debian's plugins plus ours.
  for p in /usr/lib/mysql/plugin/*; do
    ln -sfn "$p" "$TIDESQL_PLUGIN_DIR/$(basename "$p")"
  done
  ln -sfn "$so" "$TIDESQL_PLUGIN_DIR/ha_tidesdb.so"
}

# What a profile was taken from: the sources of library and engine, the
# build flags and the compiler. A profile with another stamp is stale.
profile_stamp() {
  {
    (cd "$TIDESQL_ROOT" && find src include mariadb/ha_tidesdb CMakeLists.txt mariadb/CMakeLists.txt -type f \
       \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name CMakeLists.txt \) | LC_ALL=C sort |
       xargs sha256sum)
    echo "kind=$kind lto=$lto"
    gcc --version | head -1
  } | sha256sum | cut -d' ' -f1
}

# The training set (see TRAINING above), run on the instrumented plugin.
train() {
  local T="$B/train" t0=$SECONDS
  rm -rf "$T"
  mkdir -p "$T"
  export TIDESQL_BUILD TIDESQL_PLUGIN_DIR
  ensure_gotpc
  ensure_sql_harnesses
  echo "build_plugin: training 1/4: mtr suite tidesdb (log $T/mtr.log)"
  bash "$TIDESQL_ROOT/scripts/mariadb/mtr.sh" >"$T/mtr.log" 2>&1 ||
    die "training: the mtr suite failed on the instrumented build (see $T/mtr.log)"
  echo "build_plugin: training 2/4: sqlbench (log $T/sqlbench.log)"
  env PRESET=quick ENGINES=tidesdb TABLE_SIZES=20000 TABLES=4 THREAD_COUNTS="1 8" TIME=10 WARMUP=0 \
    WORKLOADS="oltp_read_write oltp_point_select oltp_insert oltp_write_only" NO_CHARTS=1 \
    OUT="$T/sqlbench" SERVER_DIR="$T/sqlbench-server" "$SQL_BIN/sqlbench" >"$T/sqlbench.log" 2>&1 ||
    die "training: sqlbench failed on the instrumented build (see $T/sqlbench.log)"
  echo "build_plugin: training 3/4: tpcc (log $T/tpcc.log)"
  "$SQL_BIN/tpcc" --engines tidesdb --warehouses 2 --build-vu 2 --run-vu 4 --rampup 0 --duration 1 \
    --settle 0 --no-charts --out "$T/tpcc" --server-dir "$T/tpcc-server" >"$T/tpcc.log" 2>&1 ||
    die "training: tpcc failed on the instrumented build (see $T/tpcc.log)"
  echo "build_plugin: training 4/4: iibench (log $T/iibench.log)"
  "$SQL_BIN/iibench" --config "$TIDESQL_ROOT/tools/sql/iibench/train.toml" --server --no-charts --server-dir "$T/iibench-server" \
    --out "$T/iibench" >"$T/iibench.log" 2>&1 ||
    die "training: iibench failed on the instrumented build (see $T/iibench.log)"
  echo "build_plugin: training done in $((SECONDS - t0)) s"
}

lto_flags=""
[ "$lto" = 1 ] && lto_flags="-flto=auto -ffat-lto-objects"

if [ "$pgo" = 0 ]; then
  build "$lto_flags"
else
  stamp="$(profile_stamp)"
  if [ "$reuse" = 1 ]; then
    [ -f "$PROF/stamp" ] || die "no profile in $PROF: run scripts/mariadb/build_plugin.sh --pgo$([ "$lto" = 1 ] && echo " --lto") (without --reuse-profile) to take one"
    [ "$(cat "$PROF/stamp")" = "$stamp" ] ||
      die "the profile in $PROF is stale (taken from other sources, flags or compiler): run scripts/mariadb/build_plugin.sh --pgo$([ "$lto" = 1 ] && echo " --lto") to retrain"
  else
    echo "build_plugin: PGO 1/3: instrumented build in $B"
    rm -rf "$PROF"
    mkdir -p "$PROF"
    build "-fprofile-generate=$PROF -fprofile-update=atomic"
    echo "build_plugin: PGO 2/3: training"
    train
    n="$(find "$PROF" -name '*.gcda' | wc -l)"
    [ "$n" -gt 0 ] || die "training wrote no profile into $PROF (did the servers shut down cleanly?)"
    echo "$stamp" >"$PROF/stamp"
  fi
  # Every library member the plugin links must have a profile (members it
  # does not link, e.g. the fault-injection env, have none: gcc is told
  # not to warn for the library, and this check stands in for it); the
  # engine's own translation units are checked by gcc (-Werror).
  missing=""
  for m in $(sed -n 's/^(.*libtidesdb\.a)\(.*\)\.o$/\1/p' "$B/link-inputs.txt"); do
    ls "$PROF"/*"#$m.gcda" >/dev/null 2>&1 || missing="$missing $m"
  done
  [ -z "$missing" ] || die "the profile in $PROF has no data for:$missing (run scripts/mariadb/build_plugin.sh --pgo to retrain)"
  echo "build_plugin: PGO 3/3: optimised build with the profile ($(find "$PROF" -name '*.gcda' | wc -l) files)"
  use="-fprofile-use=$PROF -fprofile-correction -fprofile-partial-training"
  build "$use -Werror=missing-profile $lto_flags" "$use -Wno-missing-profile $lto_flags"
fi
echo "build_plugin: $so ($kind build, plugin dir $TIDESQL_PLUGIN_DIR)"

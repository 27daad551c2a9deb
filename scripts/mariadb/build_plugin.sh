#!/usr/bin/env bash
# Build the TideSQL storage engine plugin (ha_tidesdb.so) against the
# headers of the exact installed server version:
#  - libtidesdb.a (PIC, static) via the project's CMake;
#  - libmysqlservices.a from the server sources' libservices/;
#  - mariadb/ha_tidesdb/*.cc with the flags measured in MARIADB_BUILD.md;
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

opt="-O2 -g -DNDEBUG -DDBUG_OFF"
[ "$debug" = 1 ] && opt="-O0 -g -DDBUG_OFF"
# The kind the engine reports (status variable tidesdb_build).
opt="$opt -DTIDESQL_BUILD_KIND=\"${kind/-/+}\""

check_server_version
S="$MARIADB_SRC_DIR"
[ -f "$S/.tidesql-complete" ] ||
  die "server headers missing in $S: run scripts/mariadb/setup.sh as root first"
grep -q "\"${MARIADB_PIN_UPSTREAM%-}" "$S/generated/mysql_version.h" ||
  die "headers in $S are not version ${MARIADB_PIN_UPSTREAM%-}"

mkdir -p "$B/obj" "$B/services" "$TIDESQL_PLUGIN_DIR"
jobs="${JOBS:-2}"
INC=(-I"$S/wsrep-lib/include" -I"$S/wsrep-lib/wsrep-API/v26" -I"$S/generated"
     -I"$S/include/providers" -I"$S/include" -I"$S/sql")
DEFS=(-DHAVE_CONFIG_H -D_FILE_OFFSET_BITS=64 -DMYSQL_DYNAMIC_PLUGIN)
SRC="$TIDESQL_ROOT/mariadb/ha_tidesdb"

# build EXTRA_FLAGS [LIB_FLAGS]: library, services, engine and link with
# EXTRA_FLAGS added to every compile and the link (LIB_FLAGS instead for the
# library's compiles, when given). Objects are rebuilt when their source,
# an engine header or the flags changed. The link's inputs (which library
# members ha_tidesdb.so pulls in) are listed in $B/link-inputs.txt.
build() {
  local extra="$1" lib_extra="${2-$1}" flags_file="$B/.flags"
  local flags="$opt $extra"
  local changed=1
  [ -f "$flags_file" ] && [ "$(cat "$flags_file")" = "$flags / $lib_extra" ] && changed=0

  # 1. The library, position-independent, without tests or tools.
  local cm=(-G Ninja -S "$TIDESQL_ROOT" -B "$B/libtidesdb"
            -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_POSITION_INDEPENDENT_CODE=ON
            -DTDB_BUILD_TESTS=OFF -DTDB_BUILD_TOOLS=OFF "-DCMAKE_C_FLAGS=$lib_extra")
  if [ "$lto" = 1 ]; then
    cm+=(-DCMAKE_AR="$(command -v gcc-ar)" -DCMAKE_C_COMPILER_AR="$(command -v gcc-ar)"
         -DCMAKE_RANLIB="$(command -v gcc-ranlib)" -DCMAKE_C_COMPILER_RANLIB="$(command -v gcc-ranlib)")
  fi
  if [ ! -f "$B/libtidesdb/build.ninja" ] || [ "$changed" = 1 ]; then
    cmake "${cm[@]}" >/dev/null || die "configuring libtidesdb in $B/libtidesdb failed"
  fi
  ninja -C "$B/libtidesdb" -j "$jobs" tidesdb_static >/dev/null ||
    die "libtidesdb build failed (run: ninja -C $B/libtidesdb tidesdb_static)"
  LIB="$B/libtidesdb/libtidesdb.a"

  # 2. libmysqlservices.a: the server-services glue (libservices/*.c) every
  #    dynamic plugin links.
  if [ ! -f "$B/services/libmysqlservices.a" ]; then
    for c in "$S"/libservices/*.c; do
      gcc -fPIC -O2 "${DEFS[@]}" "${INC[@]}" -c "$c" -o "$B/services/$(basename "${c%.c}").o"
    done
    ar rcs "$B/services/libmysqlservices.a" "$B/services"/*.o
  fi

  # 3. The engine.
  local newest_hdr objs=() pids=() cc o
  newest_hdr="$(ls -t "$SRC"/*.h "$TIDESQL_ROOT/include/tidesdb/tidesdb.h" | head -1)"
  for cc in "$SRC"/*.cc; do
    o="$B/obj/$(basename "${cc%.cc}").o"
    objs+=("$o")
    if [ "$changed" = 1 ] || [ ! -f "$o" ] || [ "$cc" -nt "$o" ] || [ "$newest_hdr" -nt "$o" ]; then
      # shellcheck disable=SC2086
      g++ -std=c++17 -fPIC $flags -Wall -Wno-unused-parameter -fno-strict-aliasing \
        "${DEFS[@]}" "${INC[@]}" -I"$TIDESQL_ROOT/include" \
        -c "$cc" -o "$o" &
      pids+=($!)
      if [ "${#pids[@]}" -ge "$jobs" ]; then
        wait "${pids[0]}" || die "compile failed: see above"; pids=("${pids[@]:1}")
      fi
    fi
  done
  for p in "${pids[@]}"; do wait "$p" || die "compile failed: see above"; done

  so="$B/ha_tidesdb.so"
  # shellcheck disable=SC2086
  g++ -shared $flags -o "$so.tmp" "${objs[@]}" "$B/services/libmysqlservices.a" "$LIB" \
    -Wl,--exclude-libs,libtidesdb.a $(pkg-config --libs liblz4 libzstd libxxhash) -lsnappy -lpthread -lm \
    -Wl,--trace >"$B/link-inputs.txt" || die "linking $so failed"
  mv -f "$so.tmp" "$so"
  echo "$flags / $lib_extra" >"$flags_file"

  # 4. Plugin dir: Debian's plugins plus ours.
  for p in /usr/lib/mysql/plugin/*; do
    ln -sfn "$p" "$TIDESQL_PLUGIN_DIR/$(basename "$p")"
  done
  ln -sfn "$so" "$TIDESQL_PLUGIN_DIR/ha_tidesdb.so"
}

# What a profile was taken from: the sources of library and engine, the
# build flags and the compiler. A profile with another stamp is stale.
profile_stamp() {
  {
    (cd "$TIDESQL_ROOT" && find src include mariadb/ha_tidesdb CMakeLists.txt -type f \
       \( -name '*.c' -o -name '*.h' -o -name '*.cc' -o -name CMakeLists.txt \) | LC_ALL=C sort |
       xargs sha256sum)
    echo "opt=$opt lto=$lto"
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

#!/usr/bin/env bash
# Build the TideSQL storage engine plugin (ha_tidesdb.so) against the
# headers of the exact installed server version:
#  - libtidesdb.a (PIC, static) via the project's CMake into
#    build/mariadb/libtidesdb/;
#  - libmysqlservices.a from the server sources' libservices/;
#  - mariadb/ha_tidesdb/*.cc with the flags measured in MARIADB_BUILD.md;
#  - build/mariadb/plugin/: symlinks to /usr/lib/mysql/plugin/* (keeps
#    MyRocks available) plus ha_tidesdb.so.
# Needs scripts/mariadb/setup.sh to have run once (packages + headers).
# Usage: build_plugin.sh [--debug]   (--debug: -O0 and no NDEBUG)
set -euo pipefail
. "$(dirname "$0")/common.sh"

opt="-O2 -g -DNDEBUG -DDBUG_OFF"
[ "${1:-}" = "--debug" ] && opt="-O0 -g -DDBUG_OFF"

check_server_version
S="$MARIADB_SRC_DIR"
[ -f "$S/.tidesql-complete" ] ||
  die "server headers missing in $S: run scripts/mariadb/setup.sh as root first"
grep -q "\"${MARIADB_PIN_UPSTREAM%-}" "$S/generated/mysql_version.h" ||
  die "headers in $S are not version ${MARIADB_PIN_UPSTREAM%-}"

B="$TIDESQL_BUILD"
mkdir -p "$B/obj" "$B/services" "$TIDESQL_PLUGIN_DIR"
jobs="${JOBS:-2}"

# 1. The library, position-independent, without tests or tools.
if [ ! -f "$B/libtidesdb/build.ninja" ]; then
  cmake -G Ninja -S "$TIDESQL_ROOT" -B "$B/libtidesdb" \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
    -DTDB_BUILD_TESTS=OFF -DTDB_BUILD_TOOLS=OFF >/dev/null
fi
ninja -C "$B/libtidesdb" -j "$jobs" tidesdb_static >/dev/null ||
  die "libtidesdb build failed (run: ninja -C $B/libtidesdb tidesdb_static)"
LIB="$B/libtidesdb/libtidesdb.a"

INC=(-I"$S/wsrep-lib/include" -I"$S/wsrep-lib/wsrep-API/v26" -I"$S/generated"
     -I"$S/include/providers" -I"$S/include" -I"$S/sql")
DEFS=(-DHAVE_CONFIG_H -D_FILE_OFFSET_BITS=64 -DMYSQL_DYNAMIC_PLUGIN)

# 2. Server plugin services (small C stubs every dynamic plugin links).
if [ ! -f "$B/services/libmysqlservices.a" ]; then
  for c in "$S"/libservices/*.c; do
    gcc -fPIC -O2 "${DEFS[@]}" "${INC[@]}" -c "$c" -o "$B/services/$(basename "${c%.c}").o"
  done
  ar rcs "$B/services/libmysqlservices.a" "$B/services"/*.o
fi

# 3. The engine: each .cc recompiled when it or any engine header changed.
SRC="$TIDESQL_ROOT/mariadb/ha_tidesdb"
newest_hdr="$(ls -t "$SRC"/*.h "$TIDESQL_ROOT/include/tidesdb/tidesdb.h" | head -1)"
objs=()
pids=()
for cc in "$SRC"/*.cc; do
  o="$B/obj/$(basename "${cc%.cc}").o"
  objs+=("$o")
  if [ ! -f "$o" ] || [ "$cc" -nt "$o" ] || [ "$newest_hdr" -nt "$o" ]; then
    g++ -std=c++17 -fPIC $opt -Wall -Wno-unused-parameter -fno-strict-aliasing \
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
g++ -shared -o "$so.tmp" "${objs[@]}" "$B/services/libmysqlservices.a" "$LIB" \
  -Wl,--exclude-libs,libtidesdb.a $(pkg-config --libs liblz4 libzstd libxxhash) -lsnappy -lpthread -lm
mv -f "$so.tmp" "$so"

# 4. Plugin dir: Debian's plugins plus ours.
for p in /usr/lib/mysql/plugin/*; do
  ln -sfn "$p" "$TIDESQL_PLUGIN_DIR/$(basename "$p")"
done
ln -sfn "$so" "$TIDESQL_PLUGIN_DIR/ha_tidesdb.so"
echo "build_plugin: $so (plugin dir $TIDESQL_PLUGIN_DIR)"

#!/usr/bin/env bash
# Prepare a fresh Debian 12 machine to build and test the TideSQL MariaDB
# engine. Idempotent; run as root.
#  1. installs the MariaDB server pinned to $MARIADB_PIN_VERSION (a plugin
#     only loads into the exact server version it was compiled against),
#     MyRocks, Spider (the sharding front of scripts/mariadb/spider/), the
#     LZ4 and Snappy providers (InnoDB's page compression with them: the
#     harnesses' compression settings), the mtr test suite, sysbench, the
#     compilers and the allocators the servers can be preloaded with (jemalloc, mimalloc,
#     tcmalloc: server.sh --malloc, the harnesses' --malloc), without
#     starting a system-wide server (policy-rc.d), then holds the MariaDB packages
#     so later installs cannot upgrade them;
#  2. fetches the server sources of the same version (deb-src) and keeps
#     only the header directories the plugin needs, plus the generated
#     headers and the embedded server library (the engine's unit tests link
#     it) from libmariadbd-dev, in $MARIADB_SRC_CACHE;
#  3. checks that `mariadbd --version` is the pinned one, else stops.
set -euo pipefail
. "$(dirname "$0")/common.sh"

[ "$(id -u)" -eq 0 ] || die "setup.sh must run as root (it installs packages)"
export DEBIAN_FRONTEND=noninteractive
V="$MARIADB_PIN_VERSION"

server_pkgs=(mariadb-server mariadb-server-core mariadb-client mariadb-client-core
             mariadb-common mariadb-plugin-rocksdb mariadb-plugin-spider mariadb-test mariadb-test-data
             mariadb-plugin-provider-lz4 mariadb-plugin-provider-snappy)
other_pkgs=(sysbench build-essential cmake ninja-build pkg-config
            liblz4-dev libzstd-dev libsnappy-dev libxxhash-dev libgtest-dev dpkg-dev xz-utils
            libjemalloc2 libmimalloc2.0 libtcmalloc-minimal4)

installed_version() { dpkg-query -W -f='${Status} ${Version}' "$1" 2>/dev/null |
                      sed -n 's/^[a-z]* ok installed //p'; }

# deb-src entry: a copy of the Debian sources file with Types: deb-src.
ensure_deb_src() {
  local f=/etc/apt/sources.list.d/tidesql-deb-src.sources
  [ -f "$f" ] && return 0
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    sed 's/^Types:.*/Types: deb-src/' /etc/apt/sources.list.d/debian.sources > "$f"
  else
    cat > "$f" <<SRC
Types: deb-src
URIs: http://deb.debian.org/debian
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC
  fi
  echo "setup: added deb-src entry $f"
  NEED_UPDATE=1
}

NEED_UPDATE=0
ensure_deb_src

need=()
for p in "${server_pkgs[@]}"; do
  [ "$(installed_version "$p")" = "$V" ] || need+=("$p=$V")
done
for p in "${other_pkgs[@]}"; do
  [ -n "$(installed_version "$p")" ] || need+=("$p")
done

if [ "${#need[@]}" -gt 0 ] || [ "$NEED_UPDATE" = 1 ]; then
  apt-get update -q
fi
if [ "${#need[@]}" -gt 0 ]; then
  echo "setup: installing ${need[*]}"
  # Release holds on our own packages so a version change can go through.
  apt-mark unhold "${server_pkgs[@]}" >/dev/null 2>&1 || true
  # Keep the package scripts from starting a system-wide server.
  created_policy=0
  if [ ! -e /usr/sbin/policy-rc.d ]; then
    printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
    chmod +x /usr/sbin/policy-rc.d
    created_policy=1
  fi
  trap '[ "$created_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d' EXIT
  apt-get install -y -q --no-install-recommends --allow-downgrades \
    --allow-change-held-packages "${need[@]}"
  [ "$created_policy" = 1 ] && rm -f /usr/sbin/policy-rc.d
  trap - EXIT
else
  echo "setup: packages already installed"
fi
# Hold right away: an unrelated install pulling the client libraries would
# otherwise upgrade the server and break the plugin's version match.
apt-mark hold "${server_pkgs[@]}" >/dev/null

check_server_version
echo "setup: server $(/usr/sbin/mariadbd --version)"

# Sources: only the directories the headers-only build reads.
mkdir -p "$MARIADB_SRC_CACHE"
stamp="$MARIADB_SRC_DIR/.tidesql-complete"
if [ ! -f "$stamp" ]; then
  cd "$MARIADB_SRC_CACHE"
  up="${V#*:}"; up="${up%%-*}"            # 10.11.18
  if ! ls mariadb_"$up".orig.tar.* >/dev/null 2>&1; then
    echo "setup: downloading mariadb $V sources"
    apt-get source --download-only "mariadb=$V" ||
      die "could not download the sources of mariadb=$V (is the deb-src entry reachable?)"
  fi
  tarball="$(ls mariadb_"$up".orig.tar.* | head -1)"
  rm -rf "$MARIADB_SRC_DIR"
  echo "setup: extracting headers from $tarball"
  tar -xf "$tarball" --wildcards \
    "mariadb-$up/include/*" "mariadb-$up/sql/*" "mariadb-$up/libservices/*" \
    "mariadb-$up/wsrep-lib/include/*" "mariadb-$up/wsrep-lib/wsrep-API/v26/*"
  [ -d "$MARIADB_SRC_DIR/sql" ] || die "source tarball layout unexpected: no $MARIADB_SRC_DIR/sql"
  # Generated headers of the same version from libmariadbd-dev.
  gen="$MARIADB_SRC_DIR/generated"
  mkdir -p "$gen"
  tmp="$(mktemp -d)"
  (cd "$tmp" && apt-get download "libmariadbd-dev=$V" >/dev/null) ||
    die "could not download libmariadbd-dev=$V"
  dpkg-deb -x "$tmp"/libmariadbd-dev_*.deb "$tmp/x"
  for h in my_config.h mysql_version.h mysqld_error.h mysqld_ername.h sql_state.h; do
    cp "$tmp/x/usr/include/mariadb/server/$h" "$gen/$h" ||
      die "libmariadbd-dev lacks $h"
  done
  cp "$gen/my_config.h" "$gen/config.h"
  cp "$MARIADB_SRC_DIR/include/probes_mysql_nodtrace.h.in" "$gen/probes_mysql_nodtrace.h"
  rm -rf "$tmp"
  grep -q "\"${MARIADB_PIN_UPSTREAM%-}" "$gen/mysql_version.h" ||
    die "generated headers do not match ${MARIADB_PIN_UPSTREAM%-}"
  touch "$stamp"
fi
# The embedded server library of the same version (libmariadbd-dev): the
# engine's unit tests (mariadb/unittest) link the server's Field classes and
# collations from it. Fetched on its own so caches made before it get it.
if [ ! -f "$MARIADB_SRC_DIR/lib/libmariadbd.a" ]; then
  tmp="$(mktemp -d)"
  (cd "$tmp" && apt-get download "libmariadbd-dev=$V" >/dev/null) ||
    die "could not download libmariadbd-dev=$V"
  dpkg-deb -x "$tmp"/libmariadbd-dev_*.deb "$tmp/x"
  mkdir -p "$MARIADB_SRC_DIR/lib"
  cp "$tmp/x/usr/lib/"*/libmariadbd.a "$MARIADB_SRC_DIR/lib/libmariadbd.a.tmp" ||
    die "libmariadbd-dev lacks libmariadbd.a"
  mv "$MARIADB_SRC_DIR/lib/libmariadbd.a.tmp" "$MARIADB_SRC_DIR/lib/libmariadbd.a"
  rm -rf "$tmp"
fi
echo "setup: server sources, headers and embedded library in $MARIADB_SRC_DIR"

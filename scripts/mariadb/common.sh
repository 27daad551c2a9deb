# Shared settings for the TideSQL (MariaDB engine) scripts. Sourced, not run.
# Every path can be overridden from the environment.
TIDESQL_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
MARIADB_PIN_VERSION="${MARIADB_PIN_VERSION:-1:10.11.18-0+deb12u1}"
# What `mariadbd --version` must contain for the plugin to load.
MARIADB_PIN_UPSTREAM="${MARIADB_PIN_UPSTREAM:-10.11.18-}"
# Server sources and generated headers of the pinned version.
MARIADB_SRC_CACHE="${MARIADB_SRC_CACHE:-$TIDESQL_ROOT/build/mariadb-src}"
MARIADB_SRC_DIR="$MARIADB_SRC_CACHE/mariadb-${MARIADB_PIN_UPSTREAM%-}"
TIDESQL_BUILD="${TIDESQL_BUILD:-$TIDESQL_ROOT/build/mariadb}"
TIDESQL_PLUGIN_DIR="$TIDESQL_BUILD/plugin"
TIDESQL_SERVER_DIR="${TIDESQL_SERVER_DIR:-$TIDESQL_ROOT/build/mariadb-server}"
TIDESQL_SOCKET="${TIDESQL_SOCKET:-$TIDESQL_SERVER_DIR/mysqld.sock}"
TIDESQL_PORT="${TIDESQL_PORT:-3317}"

die() { echo "tidesql: $*" >&2; exit 1; }

# Allocators a server can run on: glibc's malloc (nothing preloaded) or
# Debian's jemalloc, mimalloc and tcmalloc (libjemalloc2, libmimalloc2.0,
# libtcmalloc-minimal4, installed by setup.sh), loaded with LD_PRELOAD.
TIDESQL_MALLOCS="glibc jemalloc mimalloc tcmalloc"

# malloc_lib NAME: prints the library to preload for NAME (nothing for
# glibc), found in the machine's multiarch directory (dpkg-architecture,
# else gcc -print-multiarch) or any /usr/lib/*/; fails naming the package
# to install. Use as lib="$(malloc_lib "$name")" || exit 1.
malloc_lib() {
  local so pkg ma d
  case "$1" in
    glibc) return 0 ;;
    jemalloc) so=libjemalloc.so.2; pkg=libjemalloc2 ;;
    mimalloc) so=libmimalloc.so.2; pkg=libmimalloc2.0 ;;
    tcmalloc) so=libtcmalloc_minimal.so.4; pkg=libtcmalloc-minimal4 ;;
    *) die "unknown allocator '$1' (want one of: $TIDESQL_MALLOCS)" ;;
  esac
  ma="$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || gcc -print-multiarch 2>/dev/null || true)"
  for d in ${ma:+"/usr/lib/$ma" "/lib/$ma"} /usr/lib/*/ /usr/lib; do
    d="${d%/}"
    [ -f "$d/$so" ] && { echo "$d/$so"; return 0; }
  done
  die "allocator $1: $so not found in /usr/lib/${ma:-<multiarch>} or /usr/lib/*/: install $pkg (scripts/mariadb/setup.sh installs it)"
}

# malloc_check PID NAME LIB: fails unless process PID runs on allocator
# NAME: LIB (its library, resolved) mapped, or for glibc no preloadable
# allocator's library mapped.
malloc_check() {
  local maps
  maps="$(cat "/proc/$1/maps" 2>/dev/null)" || die "allocator $2 not verified: cannot read /proc/$1/maps"
  if [ "$2" = glibc ]; then
    if grep -qE '/lib(jemalloc|mimalloc|tcmalloc)[^/]*$' <<<"$maps"; then
      die "allocator glibc asked for, but /proc/$1/maps shows $(grep -oE 'lib(jemalloc|mimalloc|tcmalloc)[^/]*$' <<<"$maps" | sort -u | tr '\n' ' ')"
    fi
  elif ! grep -qF "$(readlink -f "$3")" <<<"$maps"; then
    die "allocator $2 asked for, but $3 is not mapped in the server (/proc/$1/maps)"
  fi
}

# Stop unless the installed server is the version the plugin is built for.
check_server_version() {
  command -v mariadbd >/dev/null 2>&1 || [ -x /usr/sbin/mariadbd ] ||
    die "mariadbd is not installed: run scripts/mariadb/setup.sh as root"
  local v
  v="$(/usr/sbin/mariadbd --version 2>/dev/null)"
  case "$v" in
    *"$MARIADB_PIN_UPSTREAM"*) ;;
    *) die "server version mismatch: mariadbd reports '$v' but the plugin is built for $MARIADB_PIN_UPSTREAM ($MARIADB_PIN_VERSION); a storage-engine plugin only loads into the exact version it was built against. Reinstall the pinned packages (scripts/mariadb/setup.sh) or set MARIADB_PIN_VERSION/MARIADB_PIN_UPSTREAM and rebuild." ;;
  esac
}

# A Go toolchain of at least GO_MIN (the SQL benchmark harnesses and
# go-tpc): the go on PATH if new enough; else one fetched once through the
# Go module proxy (the golang.org/toolchain module holds whole releases)
# into build/go/, using Debian's older golang-go to download it when no go
# is installed. Exports GO (the binary to use).
GO_MIN="${GO_MIN:-1.22}"
GO_FETCH_VERSION="${GO_FETCH_VERSION:-1.22.12}"
go_new_enough() { # go-binary
  local v
  v="$("$1" env GOVERSION 2>/dev/null)" || return 1
  v="${v#go}"
  [ "$(printf '%s\n%s\n' "$GO_MIN" "$v" | sort -V | head -1)" = "$GO_MIN" ]
}
ensure_go() {
  local local_go="$TIDESQL_ROOT/build/go/bin/go"
  if command -v go >/dev/null 2>&1 && go_new_enough go; then GO="$(command -v go)"; export GO; return 0; fi
  if [ -x "$local_go" ] && go_new_enough "$local_go"; then GO="$local_go"; export GO; return 0; fi
  local boot=go
  if ! command -v go >/dev/null 2>&1; then
    [ "$(id -u)" -eq 0 ] || die "no Go toolchain: install Go >= $GO_MIN (or run as root to let the scripts fetch one)"
    echo "go: installing Debian's golang-go to fetch Go $GO_FETCH_VERSION" >&2
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends golang-go >/dev/null ||
      die "apt-get install golang-go failed"
    boot=/usr/bin/go
  fi
  local mod="golang.org/toolchain@v0.0.1-go$GO_FETCH_VERSION.linux-$(dpkg --print-architecture)" tmp dir
  tmp="$(mktemp -d)"
  echo "go: fetching $mod through the module proxy" >&2
  dir="$(cd "$tmp" && GOFLAGS=-mod=mod GOTOOLCHAIN=local "$boot" mod download -json "$mod" |
         sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  rm -rf "$tmp"
  [ -n "$dir" ] && [ -f "$dir/bin/go" ] || die "could not download Go $GO_FETCH_VERSION ($mod)"
  rm -rf "$TIDESQL_ROOT/build/go"
  mkdir -p "$TIDESQL_ROOT/build"
  cp -r "$dir" "$TIDESQL_ROOT/build/go"
  chmod -R u+w "$TIDESQL_ROOT/build/go"
  chmod +x "$TIDESQL_ROOT/build/go/bin/"* "$TIDESQL_ROOT/build/go/pkg/tool/"*/* 2>/dev/null || true
  go_new_enough "$local_go" || die "the fetched Go toolchain in build/go does not run"
  GO="$local_go"; export GO
}

# go-tpc (TPC-C driver): github.com/pingcap/go-tpc at this version, built
# once from the Go module cache into build/go-tpc/ (the checksum database
# does not know the module here: GONOSUMDB for it only).
GOTPC_VERSION="${GOTPC_VERSION:-v1.0.9}"
GOTPC_BIN="${GOTPC_BIN:-$TIDESQL_ROOT/build/go-tpc/go-tpc}"
ensure_gotpc() {
  [ -x "$GOTPC_BIN" ] && return 0
  ensure_go
  local tmp dir
  tmp="$(mktemp -d)"
  echo "go-tpc: downloading github.com/pingcap/go-tpc@$GOTPC_VERSION" >&2
  dir="$(cd "$tmp" && "$GO" mod init tidesql-gotpc >/dev/null 2>&1 &&
         GONOSUMDB=github.com/pingcap/go-tpc GOFLAGS=-mod=mod \
         "$GO" mod download -json "github.com/pingcap/go-tpc@$GOTPC_VERSION" |
         sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  rm -rf "$tmp"
  [ -n "$dir" ] && [ -d "$dir/cmd/go-tpc" ] || die "could not download go-tpc $GOTPC_VERSION"
  mkdir -p "$(dirname "$GOTPC_BIN")"
  echo "go-tpc: building $GOTPC_BIN" >&2
  (cd "$dir" && GONOSUMDB=github.com/pingcap/go-tpc GOFLAGS=-buildvcs=false \
     "$GO" build -o "$GOTPC_BIN.tmp" ./cmd/go-tpc) || die "go-tpc build failed"
  mv -f "$GOTPC_BIN.tmp" "$GOTPC_BIN"
}

# The SQL benchmark harnesses (tools/sql: sqlbench, tpcc, iibench), built
# into build/sql/bin/ with the Go toolchain from ensure_go.
SQL_BIN="$TIDESQL_ROOT/build/sql/bin"
ensure_sql_harnesses() {
  ensure_go
  mkdir -p "$SQL_BIN"
  (cd "$TIDESQL_ROOT/tools/sql" && for c in cmd/*/; do
     "$GO" build -o "$SQL_BIN/$(basename "$c")" "./$c" || exit 1
   done) || die "building the SQL benchmark harnesses (tools/sql) failed"
}

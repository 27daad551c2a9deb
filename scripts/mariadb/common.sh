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

# go-tpc (TPC-C driver): github.com/pingcap/go-tpc at this version, built
# once from the Go module cache into build/go-tpc/ (the checksum database
# does not know the module here: GONOSUMDB for it only).
GOTPC_VERSION="${GOTPC_VERSION:-v1.0.9}"
GOTPC_BIN="${GOTPC_BIN:-$TIDESQL_ROOT/build/go-tpc/go-tpc}"
ensure_gotpc() {
  [ -x "$GOTPC_BIN" ] && return 0
  command -v go >/dev/null 2>&1 || die "go is not installed (needed to build go-tpc)"
  local tmp dir
  tmp="$(mktemp -d)"
  echo "go-tpc: downloading github.com/pingcap/go-tpc@$GOTPC_VERSION" >&2
  dir="$(cd "$tmp" && go mod init tidesql-gotpc >/dev/null 2>&1 &&
         GONOSUMDB=github.com/pingcap/go-tpc GOFLAGS=-mod=mod \
         go mod download -json "github.com/pingcap/go-tpc@$GOTPC_VERSION" |
         sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')"
  rm -rf "$tmp"
  [ -n "$dir" ] && [ -d "$dir/cmd/go-tpc" ] || die "could not download go-tpc $GOTPC_VERSION"
  mkdir -p "$(dirname "$GOTPC_BIN")"
  echo "go-tpc: building $GOTPC_BIN" >&2
  (cd "$dir" && GONOSUMDB=github.com/pingcap/go-tpc GOFLAGS=-buildvcs=false \
     go build -o "$GOTPC_BIN.tmp" ./cmd/go-tpc) || die "go-tpc build failed"
  mv -f "$GOTPC_BIN.tmp" "$GOTPC_BIN"
}

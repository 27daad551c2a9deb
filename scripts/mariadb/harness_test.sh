#!/usr/bin/env bash
# Tests of the SQL benchmark harnesses (tools/sql): go vet, the unit tests
# (parsing and reporting on recorded output, argument errors), then with
# --smoke the integration tests (TIDESQL_IT=1): each harness runs for a few
# seconds against a throw-away server with one engine, a missing plugin and
# a server that fails to start give clear errors; server.sh starts a
# server on jemalloc (and checks it in the server's memory map) and refuses
# an unknown allocator.
#   harness_test.sh [--smoke]
set -euo pipefail
. "$(dirname "$0")/common.sh"

ensure_go
cd "$TIDESQL_ROOT/tools/sql"
"$GO" vet ./...
if [ "${1:-}" = "--smoke" ]; then
  ensure_gotpc
  check_server_version
  [ -e "$TIDESQL_PLUGIN_DIR/ha_tidesdb.so" ] || die "no plugin: run scripts/mariadb/build_plugin.sh"
  TIDESQL_IT=1 "$GO" test -count=1 -p 1 -timeout 20m ./...
  sh_server() { TIDESQL_SERVER_DIR="$TIDESQL_ROOT/build/sql/it-server-sh" TIDESQL_PORT=3398 \
                TIDESQL_SOCKET= bash "$TIDESQL_ROOT/scripts/mariadb/server.sh" "$@"; }
  trap 'sh_server wipe >/dev/null 2>&1 || true' EXIT
  out="$(sh_server start --malloc jemalloc)" || die "server.sh start --malloc jemalloc failed: $out"
  echo "$out"
  grep -q "allocator jemalloc" <<<"$out" || die "server.sh start --malloc jemalloc did not report jemalloc"
  sh_server stop
  out="$(sh_server start --malloc hoard 2>&1)" && die "server.sh started with an unknown allocator: $out"
  grep -q "unknown allocator 'hoard'" <<<"$out" || die "server.sh on an unknown allocator: $out"
else
  "$GO" test -count=1 ./...
fi

#!/usr/bin/env bash
# Tests of the SQL benchmark harnesses (tools/sql): go vet, the unit tests
# (parsing and reporting on recorded output, argument errors), then with
# --smoke the integration tests (TIDESQL_IT=1): each harness runs for a few
# seconds against a throw-away server with one engine, a missing plugin and
# a server that fails to start give clear errors.
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
else
  "$GO" test -count=1 ./...
fi

#!/usr/bin/env bash
# A throw-away MariaDB server for TideSQL development and tests, on a local
# socket with its data directory under build/ (never the system server).
#
#   server.sh start [--cnf FILE] [mariadbd options...]
#       initialise the data directory if needed and start the server with
#       ha_tidesdb.so (and ha_rocksdb.so unless TIDESQL_NO_ROCKSDB=1) loaded
#       under plugin_maturity=gamma; FILE (e.g. mariadb/my.cnf/*.cnf) is
#       included after the generated settings, so its tidesdb_* lines apply
#   server.sh stop          stop it (by the pid in its pid file)
#   server.sh restart [...] stop + start
#   server.sh client [args] the mariadb client on the server's socket
#   server.sh status        running or not
#   server.sh wipe          stop and delete the data directory
set -euo pipefail
. "$(dirname "$0")/common.sh"

D="$TIDESQL_SERVER_DIR"
DATA="$D/data"
PIDF="$D/mysqld.pid"
LOG="$D/error.log"
CNF="$D/my.cnf"

running() { [ -f "$PIDF" ] && kill -0 "$(cat "$PIDF")" 2>/dev/null; }

do_stop() {
  if ! running; then echo "server: not running"; rm -f "$PIDF"; return 0; fi
  local pid; pid="$(cat "$PIDF")"
  kill "$pid"
  for _ in $(seq 1 600); do
    kill -0 "$pid" 2>/dev/null || { echo "server: stopped (pid $pid)"; return 0; }
    sleep 0.1
  done
  die "server pid $pid did not stop within 60 s (see $LOG)"
}

do_start() {
  local user_cnf=""
  if [ "${1:-}" = "--cnf" ]; then user_cnf="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"; shift 2; fi
  check_server_version
  [ -e "$TIDESQL_PLUGIN_DIR/ha_tidesdb.so" ] || die "no plugin: run scripts/mariadb/build_plugin.sh"
  if running; then echo "server: already running (pid $(cat "$PIDF"))"; return 0; fi
  mkdir -p "$D"
  if [ ! -d "$DATA/mysql" ]; then
    echo "server: initialising $DATA"
    mariadb-install-db --no-defaults --user=root --datadir="$DATA" \
      --auth-root-authentication-method=normal --skip-test-db --force >"$D/install-db.log" 2>&1 ||
      die "mariadb-install-db failed: see $D/install-db.log"
  fi
  {
    echo "[mysqld]"
    echo "user=root"
    echo "datadir=$DATA"
    echo "socket=$TIDESQL_SOCKET"
    echo "port=$TIDESQL_PORT"
    echo "bind-address=127.0.0.1"
    echo "skip-name-resolve"
    echo "pid-file=$PIDF"
    echo "log-error=$LOG"
    echo "plugin-dir=$TIDESQL_PLUGIN_DIR"
    echo "plugin_maturity=gamma"
    if [ -z "$user_cnf" ] || ! grep -Eq '^[[:space:]]*plugin[-_]load[-_]add[[:space:]]*=[[:space:]]*ha_tidesdb' "$user_cnf"; then
      echo "plugin-load-add=ha_tidesdb.so"
    fi
    [ "${TIDESQL_NO_ROCKSDB:-0}" = 1 ] || echo "plugin-load-add=ha_rocksdb.so"
    [ -n "$user_cnf" ] && echo "!include $user_cnf"
  } >"$CNF"
  : >"$LOG"
  setsid /usr/sbin/mariadbd --defaults-file="$CNF" "$@" </dev/null >/dev/null 2>&1 &
  for _ in $(seq 1 600); do
    if mariadb-admin --no-defaults --socket="$TIDESQL_SOCKET" -uroot ping >/dev/null 2>&1; then
      echo "server: running (pid $(cat "$PIDF"), socket $TIDESQL_SOCKET)"
      return 0
    fi
    if ! kill -0 $! 2>/dev/null; then
      tail -n 30 "$LOG" >&2
      die "server exited during start-up (log: $LOG)"
    fi
    sleep 0.1
  done
  tail -n 30 "$LOG" >&2
  die "server did not answer within 60 s (log: $LOG)"
}

cmd="${1:-}"
[ $# -gt 0 ] && shift
case "$cmd" in
  start) do_start "$@" ;;
  stop) do_stop ;;
  restart) do_stop; do_start "$@" ;;
  client) exec mariadb --no-defaults --socket="$TIDESQL_SOCKET" -uroot "$@" ;;
  status) if running; then echo "running (pid $(cat "$PIDF"))"; else echo "stopped"; exit 1; fi ;;
  wipe) do_stop; rm -rf "$D"; echo "server: removed $D" ;;
  *) echo "usage: $0 start [--cnf FILE] [opts]|stop|restart|client [args]|status|wipe" >&2; exit 2 ;;
esac

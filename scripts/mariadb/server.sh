#!/usr/bin/env bash
# A throw-away MariaDB server for TideSQL development and tests, on a local
# socket with its data directory under build/ (never the system server).
#
#   server.sh start [--malloc NAME] [--cnf FILE] [mariadbd options...]
#       initialise the data directory if needed and start the server with
#       ha_tidesdb.so (and ha_rocksdb.so unless TIDESQL_NO_ROCKSDB=1) loaded
#       under plugin_maturity=gamma; FILE (e.g. mariadb/my.cnf/*.cnf) is
#       included after the generated settings, so its tidesdb_* lines apply;
#       NAME (default glibc, or TIDESQL_MALLOC) is the allocator: glibc,
#       jemalloc, mimalloc or tcmalloc, preloaded (LD_PRELOAD; an inherited
#       LD_PRELOAD is dropped) and checked mapped in the server after start
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
  local user_cnf="" malloc="${TIDESQL_MALLOC:-glibc}" lib pid
  while [ $# -gt 0 ]; do
    case "$1" in
      --cnf) [ $# -ge 2 ] || die "--cnf needs a file"
             user_cnf="$(cd "$(dirname "$2")" && pwd)/$(basename "$2")"; shift 2 ;;
      --malloc) [ $# -ge 2 ] || die "--malloc needs an allocator ($TIDESQL_MALLOCS)"
                malloc="$2"; shift 2 ;;
      --malloc=*) malloc="${1#--malloc=}"; shift ;;
      *) break ;;
    esac
  done
  lib="$(malloc_lib "$malloc")" || exit 1
  check_server_version
  [ -e "$TIDESQL_PLUGIN_DIR/ha_tidesdb.so" ] || die "no plugin: run scripts/mariadb/build_plugin.sh"
  if running; then echo "server: already running (pid $(cat "$PIDF"); restart to change its allocator)"; return 0; fi
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
  setsid env -u LD_PRELOAD ${lib:+"LD_PRELOAD=$lib"} /usr/sbin/mariadbd --defaults-file="$CNF" "$@" \
    </dev/null >/dev/null 2>&1 &
  for _ in $(seq 1 600); do
    if mariadb-admin --no-defaults --socket="$TIDESQL_SOCKET" -uroot ping >/dev/null 2>&1; then
      pid="$(cat "$PIDF")"
      if ! (malloc_check "$pid" "$malloc" "$lib"); then
        do_stop >/dev/null
        die "server stopped: it did not run on allocator $malloc"
      fi
      echo "server: running (pid $pid, socket $TIDESQL_SOCKET, allocator $malloc${lib:+ ($lib)})"
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
  *) echo "usage: $0 start [--malloc glibc|jemalloc|mimalloc|tcmalloc] [--cnf FILE] [opts]|stop|restart|client [args]|status|wipe" >&2; exit 2 ;;
esac

#!/usr/bin/env bash
# Self-test of scripts/engine_share.py on a hand-written `perf script` text:
# one sample per rule (handler call, commit entry point, background thread,
# SQL layer only), each must land on its side.
set -euo pipefail
cd "$(dirname "$0")/.."
t=$(mktemp)
trap 'rm -f "$t"' EXIT
cat >"$t" <<'PERF'
mariadbd 101
	    7f01 tidesql::ha_tidesdb::write_row+0x12 (/p/ha_tidesdb.so)
	    5501 handler::ha_write_row+0x40 (/usr/sbin/mariadbd)
	    5502 mysql_insert+0x99 (/usr/sbin/mariadbd)
	    5503 do_command+0x10 (/usr/sbin/mariadbd)

mariadbd 102
	    5601 0x0000000000d86fdf (/usr/sbin/mariadbd)
	    5602 ha_commit_trans+0x20 (/usr/sbin/mariadbd)
	    5603 handle_one_connection+0x10 (/usr/sbin/mariadbd)

mariadbd 103
	    7f02 flush_memtable+0x5 (/p/ha_tidesdb.so)
	    7f03 start_thread+0x1 (/usr/lib/libc.so.6)

mariadbd 104
	    5701 MYSQLparse+0x300 (/usr/sbin/mariadbd)
	    5702 do_command+0x10 (/usr/sbin/mariadbd)

mariadbd 105
	    ffff finish_task_switch.isra.0+0x1 ([kernel.kallsyms])
	    5801 vio_read+0x3 (/usr/sbin/mariadbd)
	    5802 do_command+0x10 (/usr/sbin/mariadbd)
PERF
got=$(python3 scripts/engine_share.py --script "$t" --plugin ha_tidesdb.so)
want="samples=5 engine=3 engine_pct=60.0 background=1 plugin_fg=1"
if [ "$got" != "$want" ]; then
  echo "engine_share_test: got '$got', want '$want'" >&2
  exit 1
fi
echo "engine_share_test: ok ($got)"

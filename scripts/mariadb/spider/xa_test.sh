#!/usr/bin/env bash
# What Spider guarantees for a transaction that spans two TidesDB shards,
# tested by killing the second backend (b2) at each moment of the commit
# (issue #21; docs/design/spider.md states the guarantees).
#
# Table xa.t (id INT PRIMARY KEY, v INT): ids 1..1000 on b1, 1001..2000 on
# b2. Each case inserts (n, n + 1000) in one transaction through the front,
# so each row goes to another shard, and b2 dies (SIGKILL) at one point:
#   nonxa_kill_before_commit  spider_internal_xa=OFF; b2 killed after the
#       inserts, before COMMIT. Spider commits the shards one after the
#       other and carries on past a failed one: b1's row is committed, b2's
#       is lost. Expected: COMMIT reports an error, then exactly the b1 half
#       is present (the documented weaker behaviour: no atomicity).
#   xa_kill_before_commit     spider_internal_xa=ON; b2 killed after the
#       inserts, before COMMIT: XA PREPARE on b2 fails, Spider rolls back
#       b1's branch. Expected: COMMIT error, neither row, nothing prepared.
#   xa_kill_after_prepare     ON; b2 kills itself right after preparing its
#       branch (tidesdb_debug_crash_point=xa_after_prepare): the front never
#       records COMMIT and rolls back b1. b2 restarts with its branch still
#       prepared (TidesDB keeps prepared transactions across a crash), its
#       row invisible. Resolved by the front's record (no COMMIT there:
#       roll back). Expected: neither row.
#   xa_kill_before_commit_phase2  ON; b2 kills itself when XA COMMIT
#       reaches it (xa_before_commit): the front has written COMMIT in
#       mysql.spider_xa and commits b1. b2 restarts with the branch
#       prepared; resolved by the front's record (COMMIT: commit it).
#       Expected: both rows; before the resolution, b2's row is invisible
#       and b2 lists the branch in XA RECOVER.
# A case fails on any other outcome. The resolution step (spider_resolve)
# is what an operator does after a participant failed in phase 2: Spider
# records the decision but does not re-drive it to a restarted backend.
# Environment: SPIDER_DIR SPIDER_PORT KEEP=0. About 30 s.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
. "$here/lib.sh"
export TIDESQL_NO_ROCKSDB=1
DB=xa
OUT="$SPIDER_DIR/out/xa"
mkdir -p "$OUT"

[ "${KEEP:-0}" = 1 ] || trap spider_stop_all EXIT
spider_topology 2 "$DB"
for i in 1 2; do q "b$i" "$DB" -e "CREATE TABLE t (id INT PRIMARY KEY, v INT) ENGINE=TidesDB"; done
spider_table 2 "$DB" t id 2000

b2_pid() { cat "$SPIDER_DIR/b2/mysqld.pid"; }
b2_restart() {
  local pid="$1"
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -0 "$pid" 2>/dev/null && die "b2 (pid $pid) still runs"
  spider_run b2
}
has() { q "$1" -N "$DB" -e "SELECT COUNT(*) FROM t WHERE id = $2"; }
# prepared NAME: the XIDs prepared on a server, as SQL literals.
prepared() { q "$1" -N -e "XA RECOVER FORMAT='SQL'" | cut -f4; }

# spider_resolve NAME: completes every branch prepared on backend NAME as
# the front decided: COMMIT if the front's mysql.spider_xa holds the XID
# with status COMMIT, else ROLLBACK. Prints "commit" / "rollback" per XID.
spider_resolve() {
  local x status g b f
  while read -r x; do
    [ -n "$x" ] || continue
    # XA RECOVER FORMAT='SQL' prints gtrid[,bqual[,formatID]] as literals.
    IFS=, read -r g b f <<<"$x"
    status="$(q front -N -e "SELECT status FROM mysql.spider_xa WHERE format_id = ${f:-1}
      AND gtrid_length = LENGTH($g) AND LEFT(data, gtrid_length + bqual_length) = CONCAT($g, ${b:-''})")"
    if [ "$status" = COMMIT ]; then
      q "$1" -e "XA COMMIT $x"; echo commit
    else
      q "$1" -e "XA ROLLBACK $x"; echo rollback
    fi
  done < <(prepared "$1")
}

# txn N XA MODE: inserts (N, N+1000) in one transaction through the front.
# MODE kill: b2 is SIGKILLed after the inserts, before COMMIT; MODE a crash
# point name: b2 kills itself there. Leaves the client's status in $rc and
# its output in $OUT/txn-N.log; b2 restarted.
txn() {
  local n="$1" xa="$2" mode="$3" pid cpid
  pid="$(b2_pid)"
  if [ "$mode" != kill ]; then q b2 -e "SET GLOBAL tidesdb_debug_crash_point = '$mode'"; fi
  q front "$DB" -e "SET SESSION spider_internal_xa = $xa; BEGIN; INSERT INTO t VALUES ($n, 1), ($((n + 1000)), 1);
                    DO SLEEP($([ "$mode" = kill ] && echo 3 || echo 0)); COMMIT" >"$OUT/txn-$n.log" 2>&1 &
  cpid=$!
  if [ "$mode" = kill ]; then
    for _ in $(seq 1 100); do
      [ "$(q front -N -e "SELECT COUNT(*) FROM information_schema.PROCESSLIST WHERE INFO LIKE 'DO SLEEP%'")" = 1 ] && break
      sleep 0.05
    done
    kill -9 "$pid"
  fi
  rc=0
  wait "$cpid" || rc=$?
  b2_restart "$pid"
}

fail=0
check() { # case expected got
  if [ "$2" = "$3" ]; then echo "xa_test: $1: ok ($3)"; else echo "xa_test: $1: FAILED: expected $2, got $3" >&2; fail=1; fi
}
state() { echo "b1=$(has b1 "$1") b2=$(has b2 $(($1 + 1000))) prepared_b1=$(prepared b1 | grep -c . || true) prepared_b2=$(prepared b2 | grep -c . || true)"; }

# Control: a cross-shard transaction commits on both shards.
q front "$DB" -e "SET SESSION spider_internal_xa = 1; BEGIN; INSERT INTO t VALUES (1, 1), (1001, 1); COMMIT"
check control "b1=1 b2=1 prepared_b1=0 prepared_b2=0" "$(state 1)"

txn 2 0 kill
check nonxa_kill_before_commit "rc=1 b1=1 b2=0 prepared_b1=0 prepared_b2=0" "rc=$rc $(state 2)"

txn 3 1 kill
check xa_kill_before_commit "rc=1 b1=0 b2=0 prepared_b1=0 prepared_b2=0" "rc=$rc $(state 3)"

txn 4 1 xa_after_prepare
check xa_kill_after_prepare/in-doubt "rc=1 b1=0 b2=0 prepared_b1=0 prepared_b2=1" "rc=$rc $(state 4)"
check xa_kill_after_prepare/resolve rollback "$(spider_resolve b2 | tr '\n' ' ' | sed 's/ $//')"
check xa_kill_after_prepare "b1=0 b2=0 prepared_b1=0 prepared_b2=0" "$(state 4)"

txn 5 1 xa_before_commit
check xa_kill_before_commit_phase2/in-doubt "rc=1 b1=1 b2=0 prepared_b1=0 prepared_b2=1" "rc=$rc $(state 5)"
check xa_kill_before_commit_phase2/failed-log 1 \
  "$(q front -N -e "SELECT COUNT(*) FROM mysql.spider_xa_failed_log WHERE status = 'COMMIT' AND port = '$(spider_port b2)'")"
check xa_kill_before_commit_phase2/resolve commit "$(spider_resolve b2 | tr '\n' ' ' | sed 's/ $//')"
check xa_kill_before_commit_phase2 "b1=1 b2=1 prepared_b1=0 prepared_b2=0" "$(state 5)"

# Through the front, after all this: exactly the committed rows (2: the
# half the non-XA commit left on b1).
check front_view "1 2 5 1001 1005" "$(q front -N "$DB" -e "SELECT id FROM t ORDER BY id" | tr '\n' ' ' | sed 's/ $//')"
[ "$fail" = 0 ] || die "xa_test FAILED (logs $OUT, servers in $SPIDER_DIR)"
echo "xa_test: all cases passed"

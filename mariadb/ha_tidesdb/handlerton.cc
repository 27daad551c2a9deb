/* handlerton: the transaction callbacks the server calls on the engine
 * (commit, rollback, savepoints, consistent snapshot, KILL, connection
 * close) and the binding of a Trx to its THD (see handlerton.h).
 *
 * Invariants
 *  1. A THD's Trx is stored in its ha_data slot for g_hton, set and cleared
 *     under g_trx_mu: kill_query (another thread) looks it up under that
 *     mutex, so it never sees a Trx being freed (trx.h, invariant 3).
 *  2. A statement registers the engine in the statement, and inside
 *     BEGIN ... COMMIT / autocommit=0 also in the transaction: commit and
 *     rollback with all == false end the statement only, in that case.
 *  3. The library's result of a commit is turned into the server's error
 *     here (my_error): deadlocks and conflicts as ER_LOCK_DEADLOCK, a stall
 *     that outlasted tidesdb_write_stall_timeout as ER_LOCK_WAIT_TIMEOUT.
 *  4. XA. prepare logs the transaction under the server's XID (the binary
 *     log's internal XID, or the user's XA XID) with tdb_txn_prepare; the
 *     same THD then commits or rolls it back through commit/rollback, or,
 *     after its connection ended or the server restarted, the server
 *     resolves it by XID (commit_by_xid / rollback_by_xid, from XA COMMIT
 *     or from binlog recovery, which asks recover for the list).
 *     A connection that ends with a prepared transaction leaves it prepared
 *     (its keys stay locked in the library), as MariaDB expects of XA.
 *  5. Group commit with the binary log (or another transaction coordinator:
 *     the server's XID, not a user's). prepare is synced (the durable
 *     preset's TDB_SYNC_FULL families); the coordinator then syncs its log
 *     and calls commit_ordered, in its commit order, on its group-commit
 *     leader thread: the library commit runs there, its COMMIT marker not
 *     synced (Trx::commit_ordered), so a transaction costs two fsyncs (the
 *     prepare, the binlog), shared by the group, as with InnoDB, not three.
 *     Until the next WAL sync a power loss may take the marker: the
 *     transaction is prepared again after restart and binlog recovery
 *     commits it by XID, since its XID is in the binary log. The
 *     coordinator forgets an XID only after commit_checkpoint_request's
 *     cookie is notified, which commit_sync.cc does after a tdb_sync that
 *     began after the request (its invariants). Everything else commits
 *     in commit(), synced per the sync mode: transactions without the
 *     binary log, user XA (XA COMMIT, also ONE PHASE: binlog recovery does
 *     not resolve user XIDs), and a commit_ordered attempt that failed.
 *  6. Parallel replication. Each library transaction carries its THD as
 *     its user pointer (Trx::begin). Before a row-lock wait the library
 *     calls trx_lock_wait_hook once per transaction ahead (holders, then
 *     queued waiters), on the waiter's thread with only a lock-manager
 *     stripe mutex held, so the blockers' THDs are alive (a THD's
 *     transaction releases its locks before the THD goes). When the waiter
 *     needs wait reports (thd_need_wait_reports: a binlogging server or a
 *     parallel-replication worker), each pair goes to
 *     thd_rpl_deadlock_check: if the blocker is a worker that must commit
 *     after the waiter, the server queues a kill of it (asynchronously, in
 *     its deadlock-kill thread), whose kill_query here cancels the
 *     blocker's lock wait; the worker's statement fails, the server rolls
 *     the transaction back (releasing its locks) and retries it. On the
 *     primary the report also marks the transaction as having waited (the
 *     GTID event's "waited" flag, which optimistic replicas use).
 */
#include "handlerton.h"

#include "commit_sync.h"
#include "sysvars.h"

#include <string.h>

#include <mutex>

namespace tidesql {

/* Inside BEGIN ... COMMIT or with autocommit off. */
static bool in_multi(THD *thd) { return thd_test_options(thd, OPTION_NOT_AUTOCOMMIT | OPTION_BEGIN); }

Trx *trx_get(THD *thd) {
  Trx *trx = (Trx *)thd_get_ha_data(thd, g_hton);
  if (!trx) {
    trx = new Trx(thd);
    std::lock_guard<std::mutex> g(g_trx_mu);
    thd_set_ha_data(thd, g_hton, trx);
  }
  return trx;
}

int trx_register(THD *thd, Trx *trx) {
  bool multi = in_multi(thd);
  if (!trx->stmt_active() || !trx->active()) {
    int err = trx->stmt_begin(multi);
    if (err) return err;
  }
  trans_register_ha(thd, false, g_hton, 0);
  if (multi) trans_register_ha(thd, true, g_hton, 0);
  return 0;
}

/* The THD's Trx if the call (commit or prepare) is for the whole
 * transaction; NULL if it has none, or if the call only ends a statement
 * inside BEGIN ... COMMIT (done here). */
static Trx *trx_for_transaction_end(THD *thd, bool all) {
  Trx *trx = (Trx *)thd_get_ha_data(thd, g_hton);
  if (trx && !all && in_multi(thd)) {
    trx->stmt_end();
    return NULL;
  }
  return trx;
}

int trx_hton_commit(handlerton *, THD *thd, bool all) {
  Trx *trx = trx_for_transaction_end(thd, all);
  if (!trx) return 0;
  if (trx->prepared() && !trx->ordered()) sysvars_crash_point("xa_before_commit");
  int err = trx->commit();
  if (err == HA_ERR_LOCK_DEADLOCK) {
    /* First committer wins: report as a deadlock, as InnoDB and MyRocks
     * do, so clients retry the transaction. */
    my_error(ER_LOCK_DEADLOCK, MYF(0));
  } else if (err == HA_ERR_LOCK_WAIT_TIMEOUT) {
    /* Back-pressure outlasted tidesdb_write_stall_timeout (the only lock
     * wait timeout a commit can meet): the lock-wait-timeout code, so
     * clients retry, with a message that says what waited. */
    my_printf_error(ER_LOCK_WAIT_TIMEOUT, "%s", MYF(0), last_error_detail().c_str());
  } else if (err) {
    my_printf_error(ER_ERROR_DURING_COMMIT, "TidesDB: commit failed (transaction rolled back): %s", MYF(0),
                    last_error_detail().c_str());
  }
  return err;
}

/* Invariant 5: on the coordinator's leader thread, in its commit order;
 * no error may be raised here (commit() reports it). */
void trx_hton_commit_ordered(handlerton *, THD *thd, bool) {
  Trx *trx = (Trx *)thd_get_ha_data(thd, g_hton);
  if (!trx || !trx->prepared()) return;
  sysvars_crash_point("xa_before_commit");
  trx->commit_ordered();
  if (trx->ordered()) sysvars_crash_point("xa_after_commit_ordered");
}

int trx_hton_rollback(handlerton *, THD *thd, bool all) {
  Trx *trx = (Trx *)thd_get_ha_data(thd, g_hton);
  if (!trx) return 0;
  if (all || !in_multi(thd))
    trx->rollback();
  else
    trx->stmt_rollback();
  return 0;
}

int trx_hton_close_connection(handlerton *, THD *thd) {
  Trx *trx = (Trx *)thd_get_ha_data(thd, g_hton);
  if (trx) {
    if (trx->prepared())
      trx->detach_prepared(); /* stays prepared: invariant 4 */
    else
      trx->rollback();
    {
      std::lock_guard<std::mutex> g(g_trx_mu);
      thd_set_ha_data(thd, g_hton, NULL);
    }
    delete trx;
  }
  return 0;
}

/* sv is only a key (see Trx's savepoint invariant): never read or written. */
int trx_hton_savepoint_set(handlerton *, THD *thd, void *sv) { return trx_get(thd)->savepoint_set(sv); }

int trx_hton_savepoint_rollback(handlerton *, THD *thd, void *sv) { return trx_get(thd)->savepoint_rollback(sv); }

int trx_hton_savepoint_release(handlerton *, THD *thd, void *sv) { return trx_get(thd)->savepoint_release(sv); }

/* START TRANSACTION WITH CONSISTENT SNAPSHOT: begin now, so the snapshot
 * (REPEATABLE READ / SERIALIZABLE) is taken at this point. */
int trx_hton_start_consistent_snapshot(handlerton *, THD *thd) {
  Trx *trx = trx_get(thd);
  int err = trx->begin();
  if (err) return err;
  trans_register_ha(thd, true, g_hton, 0);
  return 0;
}

/* KILL [QUERY] from another thread: wake the victim's lock wait. */
void trx_hton_kill_query(handlerton *, THD *thd, enum thd_kill_levels) {
  std::lock_guard<std::mutex> g(g_trx_mu);
  Trx *trx = (Trx *)thd_get_ha_data(thd, g_hton);
  if (trx && trx->txn()) tdb_txn_cancel_wait(trx->txn());
}

/* Server calls for parallel replication (sql_class.cc; exported by the
 * server, declared by each engine that uses them). */
extern "C" int thd_rpl_deadlock_check(MYSQL_THD thd, MYSQL_THD other_thd);
extern "C" int thd_need_wait_reports(const MYSQL_THD thd);

/* Invariant 5. Runs under a library stripe mutex: only server calls that
 * take no lock a thread inside TidesDB may hold (the kill it may queue
 * runs later in another thread). */
void trx_lock_wait_hook(void *, const tdb_lock_block_t *b) {
  THD *waiter = (THD *)b->waiter_user, *blocker = (THD *)b->blocker_user;
  if (!waiter || !blocker || waiter == blocker) return;
  if (!thd_need_wait_reports(waiter)) return;
  thd_rpl_deadlock_check(waiter, blocker);
}

/* ---- XA (invariant 4) ---- */

/* An XID as the library's prepared-transaction name: formatID (8 bytes,
 * little-endian), gtrid and bqual lengths (1 byte each), then their bytes. */
std::string xid_pack(const XID *x) {
  std::string s(10, '\0');
  uint64_t f = (uint64_t)(int64_t)x->formatID;
  for (int i = 0; i < 8; i++) s[i] = (char)(f >> (8 * i));
  s[8] = (char)x->gtrid_length;
  s[9] = (char)x->bqual_length;
  s.append(x->data, (size_t)(x->gtrid_length + x->bqual_length));
  return s;
}

bool xid_unpack(const void *p, size_t n, XID *x) {
  const unsigned char *b = (const unsigned char *)p;
  if (n < 10) return false;
  uint64_t f = 0;
  for (int i = 0; i < 8; i++) f |= (uint64_t)b[i] << (8 * i);
  long gl = b[8], bl = b[9];
  if (gl > MAXGTRIDSIZE || bl > MAXBQUALSIZE || n != (size_t)(10 + gl + bl)) return false;
  x->set((long)(int64_t)f, (const char *)b + 10, gl, (const char *)b + 10 + gl, bl);
  return true;
}

int trx_hton_prepare(handlerton *, THD *thd, bool all) {
  Trx *trx = trx_for_transaction_end(thd, all); /* a statement's end: nothing to prepare */
  if (!trx) return 0;
  XID xid;
  thd_get_xid(thd, (MYSQL_XID *)&xid);
  /* The server's own XID (MySQLXid...), which binlog recovery resolves:
   * invariant 5. */
  int err = trx->prepare(xid_pack(&xid), xid.get_my_xid() != 0);
  if (err) {
    my_printf_error(err == HA_ERR_LOCK_DEADLOCK ? ER_LOCK_DEADLOCK : ER_ERROR_DURING_COMMIT,
                    "TidesDB: prepare failed (transaction rolled back): %s", MYF(0), last_error_detail().c_str());
    return err;
  }
  sysvars_crash_point("xa_after_prepare");
  return 0;
}

struct RecoverList {
  XID *list;
  uint len, got;
};

static int recover_one(void *ctx, const void *xid, size_t n) {
  RecoverList *r = (RecoverList *)ctx;
  if (r->got >= r->len) return 1;
  if (xid_unpack(xid, n, &r->list[r->got]))
    r->got++;
  else
    log_warning("TidesDB: a prepared transaction has a name that is not an XID (%zu bytes): left alone", n);
  return 0;
}

int trx_hton_recover(handlerton *, XID *xid_list, uint len) {
  if (!g_db || !len) return 0;
  RecoverList r = {xid_list, len, 0};
  int rc = tdb_recover_prepared(g_db, recover_one, &r);
  if (rc < 0) {
    log_warning("TidesDB: listing prepared transactions failed: %s", tdb_last_error());
    return 0;
  }
  return (int)r.got;
}

/* X/Open XA return codes (the server tests for 0; binlog recovery relies
 * on a non-zero answer for an XID the engine does not know). */
static const int XA_OK = 0, XAER_RMERR = -3, XAER_NOTA = -4, XAER_RMFAIL = -7;

/* Resolve a prepared transaction by XID. A live handle still resolving it
 * (TDB_ERR_BUSY) is waited for briefly. */
static int resolve_by_xid(XID *xid, bool commit) {
  if (!g_db) return XAER_RMFAIL;
  std::string x = xid_pack(xid);
  int rc;
  for (int tries = 0;; tries++) {
    rc = commit ? tdb_commit_prepared(g_db, x.data(), x.size()) : tdb_rollback_prepared(g_db, x.data(), x.size());
    if (rc != TDB_ERR_BUSY || tries >= 200) break;
    my_sleep(10000);
  }
  if (rc == TDB_OK) return XA_OK;
  if (rc == TDB_ERR_NOT_FOUND) return XAER_NOTA;
  log_warning("TidesDB: %s of a prepared transaction by XID failed: %s", commit ? "commit" : "rollback",
              tdb_last_error());
  return XAER_RMERR;
}

int trx_hton_commit_by_xid(handlerton *, XID *xid) { return resolve_by_xid(xid, true); }

int trx_hton_rollback_by_xid(handlerton *, XID *xid) { return resolve_by_xid(xid, false); }

}  // namespace tidesql

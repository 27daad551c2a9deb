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
 */
#include "handlerton.h"

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

int trx_hton_commit(handlerton *, THD *thd, bool all) {
  Trx *trx = (Trx *)thd_get_ha_data(thd, g_hton);
  if (!trx) return 0;
  if (!all && in_multi(thd)) {
    trx->stmt_end();
    return 0;
  }
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

}  // namespace tidesql

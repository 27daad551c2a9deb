/* ha_tidesdb locks and statement boundaries: the table lock the server
 * takes (store_lock), the row-lock mode of each statement (external_lock,
 * start_stmt), the engine's registration in the statement and transaction,
 * and the per-statement flags (extra, reset). See ha_tidesdb.h.
 *
 * Invariants
 *  1. Outside LOCK TABLES, write locks are weakened to TL_WRITE_ALLOW_WRITE
 *     and TL_READ_NO_INSERT to TL_READ: concurrency is decided by row locks
 *     in the library, not by the table lock.
 *  2. m_row_lock is set once per statement, in external_lock (or
 *     start_stmt under LOCK TABLES), from the statement's table lock; the
 *     handler's invariant 5 says what each mode promises.
 *  3. Every statement ends in reset() or external_lock(F_UNLCK): both
 *     close the iterator and drop m_trx (a TABLE may serve another
 *     connection next), and forget the statement's flags.
 */
#include "ha_tidesdb.h"

#include "handlerton.h"

namespace tidesql {

/* ---- per-statement flags ---- */

/* Hints of the running statement: INSERT IGNORE, REPLACE, ON DUPLICATE KEY UPDATE. */
int ha_tidesdb::extra(enum ha_extra_function op) {
  switch (op) {
    case HA_EXTRA_IGNORE_DUP_KEY:
      m_ignore_dup = true;
      break;
    case HA_EXTRA_NO_IGNORE_DUP_KEY:
      m_ignore_dup = false;
      break;
    case HA_EXTRA_WRITE_CAN_REPLACE:
      m_can_replace = true;
      break;
    case HA_EXTRA_WRITE_CANNOT_REPLACE:
      m_can_replace = false;
      break;
    case HA_EXTRA_INSERT_WITH_UPDATE:
      m_insert_update = true;
      break;
    default:
      break;
  }
  return 0;
}

/* End of a statement: forget its flags, iterator and transaction pointer. */
int ha_tidesdb::reset() {
  m_ignore_dup = m_can_replace = m_insert_update = false;
  m_skip_locked = false;
  close_iter();
  m_last_locked = false;
  m_trx = NULL;
  m_point = false;
  m_rnd_started = false;
  return 0;
}

/* Row lock mode of a statement from its table lock: FOR UPDATE and
 * writes lock exclusively, LOCK IN SHARE MODE (and SERIALIZABLE reads,
 * which the server turns into it) shared. */
static RowLock row_lock_of(thr_lock_type t) {
  if (t == TL_READ_WITH_SHARED_LOCKS || t == TL_READ_SKIP_LOCKED) return ROW_LOCK_SHARED;
  if (t >= TL_WRITE_ALLOW_WRITE) return ROW_LOCK_EXCLUSIVE;
  return ROW_LOCK_NONE;
}

/* SELECT ... FOR UPDATE / LOCK IN SHARE MODE SKIP LOCKED. */
static bool is_skip_locked(thr_lock_type t) { return t == TL_READ_SKIP_LOCKED || t == TL_WRITE_SKIP_LOCKED; }

/* ---- locks ---- */

/* Statement start (lock_type F_RDLCK/F_WRLCK) or end (F_UNLCK) outside
 * LOCK TABLES, or LOCK/UNLOCK TABLES themselves. */
int ha_tidesdb::external_lock(THD *thd, int lock_type) {
  if (lock_type == F_UNLCK) {
    close_iter();
    m_lock_type = F_UNLCK;
    m_row_lock = ROW_LOCK_NONE;
    m_skip_locked = false;
    m_last_locked = false;
    m_trx = NULL;
    return 0;
  }
  if (m_def && m_def->obsolete) {
    int err = refresh_def();
    if (err) return err;
  }
  m_lock_type = lock_type;
  m_row_lock = lock_type == F_WRLCK ? ROW_LOCK_EXCLUSIVE : row_lock_of(m_stored_lock);
  m_skip_locked = is_skip_locked(m_stored_lock);
  m_last_locked = false;
  m_trx = trx_get(thd);
  int err = trx_register(thd, m_trx);
  serializable_reads(thd);
  return err;
}

/* SERIALIZABLE with row locks: reads of a multi-statement transaction
 * take shared locks (as InnoDB), so write skew ends in a lock wait or a
 * deadlock instead of a commit-time failure. Autocommit SELECTs read
 * their snapshot. */
void ha_tidesdb::serializable_reads(THD *thd) {
  if (m_row_lock == ROW_LOCK_NONE && m_trx->active() && m_trx->pessimistic() &&
      m_trx->isolation() == TDB_ISO_SERIALIZABLE && thd_test_options(thd, OPTION_NOT_AUTOCOMMIT | OPTION_BEGIN))
    m_row_lock = ROW_LOCK_SHARED;
}

/* A statement under LOCK TABLES (external_lock ran at LOCK TABLES). */
int ha_tidesdb::start_stmt(THD *thd, thr_lock_type lock_type) {
  close_iter();
  if (m_def && m_def->obsolete) {
    int err = refresh_def();
    if (err) return err;
  }
  m_row_lock = row_lock_of(lock_type);
  m_skip_locked = is_skip_locked(lock_type);
  m_last_locked = false;
  m_trx = trx_get(thd);
  int err = trx_register(thd, m_trx);
  serializable_reads(thd);
  return err;
}

/* The table lock the server should take (invariant 1). */
THR_LOCK_DATA **ha_tidesdb::store_lock(THD *thd, THR_LOCK_DATA **to, enum thr_lock_type lock_type) {
  if (lock_type != TL_IGNORE) m_stored_lock = lock_type;
  if (lock_type != TL_IGNORE && m_lock.type == TL_UNLOCK) {
    /* Row-level engine: let writers run concurrently outside LOCK TABLES. */
    if (lock_type >= TL_WRITE_CONCURRENT_INSERT && lock_type <= TL_WRITE && !thd_in_lock_tables(thd) &&
        !thd_tablespace_op(thd))
      lock_type = TL_WRITE_ALLOW_WRITE;
    if (lock_type == TL_READ_NO_INSERT && !thd_in_lock_tables(thd)) lock_type = TL_READ;
    m_lock.type = lock_type;
  }
  *to++ = &m_lock;
  return to;
}

}  // namespace tidesql

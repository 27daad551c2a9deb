/* trx: the connection's library transaction, statement rollback,
 * savepoints, buffered reads and writes (see trx.h for the mapping and
 * invariants; the handlerton callbacks are in handlerton.cc, the
 * transaction iterator in txn_iter.cc). */
#include "trx.h"

#include "sysvars.h"
#include "txn_iter.h"

#include <string.h>

#include <algorithm>
#include <mutex>
#include <set>

namespace tidesql {

StatCounter Trx::s_commits;
StatCounter Trx::s_rollbacks;
std::atomic<ulonglong> Trx::s_conflicts{0};
std::atomic<ulonglong> Trx::s_deadlocks{0};
std::atomic<ulonglong> Trx::s_lock_timeouts{0};
std::atomic<ulonglong> Trx::s_busy{0};
StatCounter Trx::s_ordered_commits;
std::atomic<long> Trx::s_ordered_failed{0};

/* The internal savepoint taken at the start of every statement of a
 * multi-statement transaction (user savepoints are named "s<n>"). */
static const char *STMT_SP = "\x01stmt";

/* Processlist state while a call may wait for a library row lock. */
static const char *LOCK_WAIT_STATE = "Waiting for TidesDB row lock";
/* ...and while a commit waits out back-pressure. */
static const char *STALL_WAIT_STATE = "Waiting for TidesDB flush/compaction (write stall)";

/* Each library commit call waits out back-pressure at most this long
 * (tdb_txn_options_t.stall_timeout_ms); Trx::commit_waiting retries such
 * slices until tidesdb_write_stall_timeout, checking for KILL in between. */
static const ulong STALL_SLICE_MS = 250;

/* Guards Trx lifetime against kill_query from other threads (invariant 3). */
std::mutex g_trx_mu;

/* The row lock wait bound of a statement, in ms: the smaller of
 * tidesdb_lock_wait_timeout and the server's lock_wait_timeout, which
 * NOWAIT (0) and WAIT n set for their statement, as they set InnoDB's. */
static int64_t stmt_lock_wait_ms(THD *thd) {
  ulong s = std::min<ulong>(sysvars_lock_wait_timeout(thd), thd->variables.lock_wait_timeout);
  return (int64_t)s * 1000;
}

/* Any KILL, soft or hard. thd_killed() is only true for hard ones
 * (KILL [HARD], the statement's default); the server's own kills are
 * soft: parallel replication's kill of a worker that holds a lock an
 * earlier transaction needs is KILL_CONNECTION, which must stop a row-lock
 * wait or a write stall as surely (as InnoDB's trx_is_interrupted does). */
static bool kill_pending(THD *thd) { return thd_kill_level(thd) != THD_IS_NOT_KILLED; }

static void sp_name(uint64_t id, char *buf, size_t n) { snprintf(buf, n, "s%llu", (unsigned long long)id); }

/* Every Trx, for information_schema.TIDESDB_TRX (under g_trx_mu). */
static std::set<Trx *> g_all_trx;

Trx::Trx(THD *thd) : m_thd(thd) {
  tdb_txn_options_default(&m_opts);
  std::lock_guard<std::mutex> g(g_trx_mu);
  g_all_trx.insert(this);
}

Trx::~Trx() {
  detach_iters();
  for (TxnIter *it : m_iters) it->m_trx = NULL;
  m_iters.clear();
  tdb_txn_t *t;
  {
    std::lock_guard<std::mutex> g(g_trx_mu);
    g_all_trx.erase(this);
    t = m_txn;
    m_txn = NULL;
  }
  if (t) tdb_txn_free(t); /* rolls back if still active */
}

void Trx::list_running(std::vector<TrxInfo> *out) {
  std::lock_guard<std::mutex> g(g_trx_mu);
  for (Trx *t : g_all_trx) {
    TrxInfo i;
    i.txn_id = t->m_pub_id;
    if (!i.txn_id) continue;
    i.thread_id = thd_get_thread_id(t->m_thd);
    i.prepared = t->m_pub_prepared;
    i.isolation = t->m_pub_iso;
    i.pessimistic = t->m_pub_pessimistic;
    i.started = t->m_pub_started;
    i.snapshot_seq = t->m_pub_snap;
    out->push_back(i);
  }
}

/* ---- errors ---- */

/* Library code -> handler error; deadlocks and conflicts roll the whole
 * transaction back (the server is told so), timeouts only the statement. */
int Trx::map_err(int rc) {
  switch (rc) {
    case TDB_OK:
      return 0;
    case TDB_ERR_NOT_FOUND:
      return HA_ERR_KEY_NOT_FOUND;
    case TDB_ERR_DEADLOCK:
      s_deadlocks++;
      map_tdb_error(rc);
      m_thd->mark_transaction_to_rollback(true);
      return HA_ERR_LOCK_DEADLOCK;
    case TDB_ERR_CONFLICT:
      s_conflicts++;
      map_tdb_error(rc);
      m_thd->mark_transaction_to_rollback(true);
      return HA_ERR_LOCK_DEADLOCK;
    case TDB_ERR_TIMEOUT:
      s_lock_timeouts++;
      map_tdb_error(rc);
      return HA_ERR_LOCK_WAIT_TIMEOUT;
    case TDB_ERR_ABORTED:
      map_tdb_error(rc);
      return HA_ERR_ABORTED_BY_USER;
    case TDB_ERR_BUSY:
      s_busy++;
      return map_tdb_error(rc);
    case TDB_ERR_TOO_LARGE: {
      /* The transaction's write buffer is full: say what bounds it. */
      int err = map_tdb_error(rc);
      set_error_detail(last_error_detail() + " (a quarter of tidesdb_max_memory_usage; use smaller transactions)");
      return err;
    }
    default:
      return map_tdb_error(rc);
  }
}

/* ---- lifecycle ---- */

int Trx::begin() {
  if (m_active) return 0;
  if (!g_db) return HA_ERR_INTERNAL_ERROR;
  tdb_txn_options_t o;
  tdb_txn_options_default(&o);
  int iso = thd_tx_isolation(m_thd);
  if (iso <= ISO_READ_COMMITTED)
    o.isolation = TDB_ISO_READ_COMMITTED;
  else if (iso == ISO_REPEATABLE_READ)
    o.isolation = TDB_ISO_SNAPSHOT;
  else
    o.isolation = TDB_ISO_SERIALIZABLE;
  /* The library's READ COMMITTED validates nothing at commit: locks are
   * what keeps its writers correct. */
  o.pessimistic = (sysvars_pessimistic_locking(m_thd) || o.isolation == TDB_ISO_READ_COMMITTED) ? 1 : 0;
  o.lock_timeout_ms = stmt_lock_wait_ms(m_thd);
  o.stall_timeout_ms = (int64_t)std::min(STALL_SLICE_MS, sysvars_write_stall_timeout(m_thd));
  detach_iters();
  int rc;
  if (m_txn) {
    rc = tdb_txn_reset(m_txn, &o);
  } else {
    tdb_txn_t *t = NULL;
    rc = tdb_txn_begin(g_db, &o, &t);
    if (rc == TDB_OK) {
      tdb_txn_set_user(t, m_thd); /* for the lock-wait hook (handlerton.cc, invariant 5) */
      std::lock_guard<std::mutex> g(g_trx_mu);
      m_txn = t;
    }
  }
  if (rc != TDB_OK) return map_err(rc);
  /* The reset dropped a cancel meant for the last transaction; a KILL
   * already flagged (the server sets the flag before kill_query) must
   * still stop this one's first lock wait. */
  if (kill_pending(m_thd)) tdb_txn_cancel_wait(m_txn);
  m_opts = o;
  m_active = true;
  m_pub_iso = o.isolation;
  m_pub_pessimistic = o.pessimistic != 0;
  m_pub_snap = tdb_txn_snapshot_sequence(m_txn);
  m_pub_started = time(NULL);
  m_pub_prepared = false;
  m_pub_id = tdb_txn_id(m_txn);
  m_nwrites = 0;
  m_next_sp = 1;
  m_tables.clear();
  m_stmt_tables.clear();
  m_sp_tables.clear();
  m_sp_ids.clear();
  m_stmt_sp = false;
  return 0;
}

int Trx::stmt_begin(bool multi) {
  int err = begin();
  if (err) return err;
  /* Each statement has its own lock wait bound (NOWAIT, WAIT n). */
  int64_t wait_ms = stmt_lock_wait_ms(m_thd);
  if (wait_ms != m_opts.lock_timeout_ms) {
    int rc = tdb_txn_set_lock_timeout(m_txn, wait_ms);
    if (rc != TDB_OK) return map_err(rc);
    m_opts.lock_timeout_ms = wait_ms;
  }
  m_multi = multi;
  m_stmt_active = true;
  m_stmt_tables.clear();
  m_stmt_sp = false;
  if (multi) {
    int rc = tdb_txn_savepoint(m_txn, STMT_SP);
    if (rc != TDB_OK) return map_err(rc);
    m_stmt_sp = true;
  }
  return 0;
}

void Trx::fold_stmt() {
  for (auto &kv : m_stmt_tables) {
    Touched &t = m_tables[kv.first];
    if (!t.def) t.def = kv.second.def;
    t.delta += kv.second.delta;
  }
  m_stmt_tables.clear();
}

void Trx::stmt_end() {
  fold_stmt();
  m_stmt_active = false;
}

int Trx::stmt_rollback() {
  detach_iters();
  int err = 0;
  if (m_active && m_stmt_sp) {
    int rc = tdb_txn_rollback_to_savepoint(m_txn, STMT_SP);
    /* NOT_FOUND: a ROLLBACK TO an older savepoint already removed it. */
    if (rc != TDB_OK && rc != TDB_ERR_NOT_FOUND) err = map_err(rc);
  }
  m_stmt_tables.clear();
  m_stmt_active = false;
  m_stmt_sp = false;
  return err;
}

void Trx::finish() {
  m_pub_id = 0;
  m_pub_prepared = false;
  m_active = false;
  m_prepared = false;
  m_binlog_xid = false;
  if (m_ordered && m_ordered_rc != TDB_OK) s_ordered_failed--; /* retried (commit) or left prepared */
  m_ordered = false;
  m_stmt_active = false;
  m_stmt_sp = false;
  m_nwrites = 0;
  m_tables.clear();
  m_stmt_tables.clear();
  m_sp_tables.clear();
  m_sp_ids.clear();
}

/* Row counts as they are once the commit landed; persisted lazily. */
void Trx::apply_counters() {
  for (auto &kv : m_tables) {
    TableDef *def = kv.second.def.get();
    if (def->obsolete) continue;
    def->rows += kv.second.delta;
    dict_counters_changed(def);
  }
}

/* Retry op, a library call refused with TDB_ERR_BUSY by back-pressure
 * (which leaves the transaction as it was), while it is refused; when
 * bounded, stop at tidesdb_write_stall_timeout since start or at KILL
 * (*killed). The processlist shows STALL_WAIT_STATE meanwhile. */
template <typename F>
static int wait_out_stall(THD *thd, ulonglong start, bool bounded, bool *killed, F op) {
  const ulong limit_ms = sysvars_write_stall_timeout(thd);
  const char *old = thd_proc_info(thd, STALL_WAIT_STATE);
  int rc = TDB_ERR_BUSY;
  *killed = false;
  while (rc == TDB_ERR_BUSY) {
    if (bounded && ((*killed = kill_pending(thd)) || (my_interval_timer() - start) / 1000000 >= limit_ms)) break;
    rc = op();
  }
  thd_proc_info(thd, old);
  return rc;
}

/* Commit, waiting out back-pressure: a commit refused with TDB_ERR_BUSY
 * (its slice of STALL_SLICE_MS passed) leaves the library transaction
 * active, so it is retried until tidesdb_write_stall_timeout has passed or
 * the statement is killed; then the transaction is rolled back and the
 * error names back-pressure (HA_ERR_LOCK_WAIT_TIMEOUT: clients retry it
 * like a lock wait timeout). A prepared transaction is retried without
 * limit: the binary log may hold it already. Other results as
 * tdb_txn_commit. */
int Trx::commit_waiting() {
  const ulonglong start = my_interval_timer();
  int rc = tdb_txn_commit(m_txn);
  if (rc != TDB_ERR_BUSY) return rc;
  bool killed;
  rc = wait_out_stall(m_thd, start, !m_prepared, &killed, [&] { return tdb_txn_commit(m_txn); });
  if (rc != TDB_ERR_BUSY) return rc;
  s_busy++;
  tdb_txn_rollback(m_txn); /* still active in the library: end it cleanly */
  char msg[512];
  snprintf(msg, sizeof msg,
           "TidesDB: write stalled by back-pressure for %llu ms (tidesdb_write_stall_timeout = %lu ms)%s: "
           "flush/compaction cannot keep up with writes; the transaction was rolled back, retry it later",
           (my_interval_timer() - start) / 1000000,
           sysvars_write_stall_timeout(m_thd), killed ? ", interrupted by KILL" : "");
  set_error_detail(msg);
  return TDB_ERR_BUSY;
}

void Trx::commit_ordered() {
  if (!m_active || !m_prepared || !m_binlog_xid || m_ordered) return;
  tdb_commit_options_t o;
  tdb_commit_options_default(&o);
  o.no_sync = 1;
  int rc;
  /* Back-pressure: retried without limit, as commit_waiting does for a
   * prepared transaction (each call waits at most STALL_SLICE_MS). */
  while ((rc = tdb_txn_commit_opt(m_txn, &o)) == TDB_ERR_BUSY) {
  }
  m_ordered = true;
  m_ordered_rc = rc;
  if (rc == TDB_OK)
    s_ordered_commits++;
  else
    s_ordered_failed++; /* still prepared: commit() retries it */
}

int Trx::commit() {
  detach_iters();
  fold_stmt();
  int err = 0;
  if (m_active) {
    bool wrote = m_nwrites != 0;
    bool retry = m_ordered && m_ordered_rc != TDB_OK;
    /* Done by commit_ordered, or (it failed) retried here, synced. */
    int rc = m_ordered && !retry ? TDB_OK : commit_waiting();
    if (rc == TDB_OK) {
      apply_counters();
      s_commits++;
    } else if (rc == TDB_ERR_BUSY) {
      err = HA_ERR_LOCK_WAIT_TIMEOUT; /* detail set by commit_waiting */
      if (wrote) s_rollbacks++;
    } else {
      if (rc == TDB_ERR_CONFLICT) {
        s_conflicts++;
        map_tdb_error(rc);
        err = HA_ERR_LOCK_DEADLOCK;
      } else {
        err = map_err(rc);
      }
      if (wrote) s_rollbacks++;
    }
  }
  finish();
  return err;
}

void Trx::rollback() {
  detach_iters();
  if (m_active) {
    if (m_nwrites) s_rollbacks++;
    tdb_txn_rollback(m_txn);
  }
  finish();
}

int Trx::prepare(const std::string &xid, bool binlog_xid) {
  detach_iters();
  fold_stmt();
  /* Nothing written: nothing to log; commit() ends the read-only
   * transaction as usual. */
  if (!m_active || m_nwrites == 0) return 0;
  if (m_prepared) return HA_ERR_INTERNAL_ERROR;
  const ulonglong start = my_interval_timer();
  auto prep = [&] { return tdb_txn_prepare(m_txn, xid.data(), xid.size(), 0); };
  int rc = prep();
  if (rc == TDB_ERR_BUSY) {
    /* Back-pressure leaves the transaction active: wait as a commit
     * would (a prepare refused in the end rolls the transaction back). */
    bool killed;
    rc = wait_out_stall(m_thd, start, true, &killed, prep);
    if (rc == TDB_ERR_BUSY) {
      s_busy++;
      set_error_detail("TidesDB: XA PREPARE stalled by back-pressure past tidesdb_write_stall_timeout");
      rc = TDB_ERR_TIMEOUT;
    }
  }
  if (rc == TDB_OK) {
    m_prepared = true;
    m_binlog_xid = binlog_xid;
    m_pub_prepared = true;
    m_stmt_active = false;
    return 0;
  }
  /* A failed prepare has finished the library transaction (a conflict)
   * or left it active (any other error): either way it is rolled back. */
  int err = map_err(rc);
  if (rc == TDB_ERR_EXISTS) {
    set_error_detail("TidesDB: a prepared transaction with this XID exists already");
    err = HA_ERR_INTERNAL_ERROR;
  }
  rollback();
  return err;
}

void Trx::detach_prepared() {
  detach_iters();
  tdb_txn_t *t;
  {
    std::lock_guard<std::mutex> g(g_trx_mu);
    t = m_txn;
    m_txn = NULL;
  }
  if (t) tdb_txn_free(t); /* a prepared transaction stays prepared */
  finish();
}

int Trx::bulk_commit() {
  int err = commit();
  if (err) return err;
  /* The statement goes on in a new library transaction. */
  if ((err = begin())) return err;
  m_stmt_active = true;
  return 0;
}

/* ---- savepoints ---- */

uint64_t Trx::sp_id(const void *sv) const {
  auto it = m_sp_ids.find(sv);
  return it == m_sp_ids.end() ? 0 : it->second;
}

void Trx::sp_forget_from(uint64_t from) {
  for (auto it = m_sp_ids.begin(); it != m_sp_ids.end();)
    it = it->second >= from ? m_sp_ids.erase(it) : std::next(it);
}

int Trx::savepoint_set(const void *sv) {
  int err = begin();
  if (err) return err;
  uint64_t id = m_next_sp++;
  char name[32];
  sp_name(id, name, sizeof name);
  int rc = tdb_txn_savepoint(m_txn, name);
  if (rc != TDB_OK) return map_err(rc);
  fold_stmt();
  m_sp_tables[id] = m_tables;
  m_sp_ids[sv] = id; /* SAVEPOINT x again: the same area, the new id */
  return 0;
}

int Trx::savepoint_rollback(const void *sv) {
  if (!m_active) return 0;
  uint64_t id = sp_id(sv);
  if (!id) return HA_ERR_NO_SAVEPOINT;
  detach_iters();
  char name[32];
  sp_name(id, name, sizeof name);
  int rc = tdb_txn_rollback_to_savepoint(m_txn, name);
  if (rc != TDB_OK) return map_err(rc);
  auto it = m_sp_tables.find(id);
  if (it != m_sp_tables.end()) {
    m_tables = it->second;
    m_sp_tables.erase(m_sp_tables.upper_bound(id), m_sp_tables.end());
  }
  m_stmt_tables.clear();
  m_stmt_sp = false; /* later savepoints (the statement's) are gone */
  sp_forget_from(id + 1);
  return 0;
}

int Trx::savepoint_release(const void *sv) {
  if (!m_active) return 0;
  uint64_t id = sp_id(sv);
  if (!id) return 0; /* nothing of ours to release */
  char name[32];
  sp_name(id, name, sizeof name);
  int rc = tdb_txn_release_savepoint(m_txn, name);
  if (rc != TDB_OK && rc != TDB_ERR_NOT_FOUND) return map_err(rc);
  m_sp_tables.erase(m_sp_tables.lower_bound(id), m_sp_tables.end());
  sp_forget_from(id);
  m_stmt_sp = false;
  return 0;
}

/* ---- reads and writes ---- */

/* Run op (a library call that may wait for a row lock): a cancel left
 * over from a KILL QUERY of an earlier statement (the library keeps one
 * pending) is consumed by retrying. */
template <typename F>
static int lock_call(Trx *trx, bool may_wait, F op) {
  const char *old = NULL;
  THD *thd = trx->thd();
  if (may_wait) old = thd_proc_info(thd, LOCK_WAIT_STATE);
  int rc;
  for (int tries = 0;; tries++) {
    rc = op();
    if (rc != TDB_ERR_ABORTED || kill_pending(thd) || tries >= 3) break;
  }
  if (may_wait) thd_proc_info(thd, old);
  return rc;
}

int Trx::put(tdb_cf_t *cf, const std::string &key, const uchar *val, size_t vlen) {
  if (key.empty() || key.size() > TDB_MAX_KEY_SIZE || vlen > TDB_MAX_VALUE_SIZE) {
    char msg[160];
    snprintf(msg, sizeof msg, "TidesDB: key of %zu bytes or value of %zu bytes over the limits (%u, %u bytes)",
             key.size(), vlen, (unsigned)TDB_MAX_KEY_SIZE, (unsigned)TDB_MAX_VALUE_SIZE);
    set_error_detail(msg);
    return HA_ERR_TO_BIG_ROW;
  }
  int err = begin();
  if (err) return err;
  int rc = lock_call(this, pessimistic(), [&] { return tdb_txn_put(m_txn, cf, key.data(), key.size(), val, vlen, 0); });
  if (rc != TDB_OK) return map_err(rc);
  m_nwrites++;
  return 0;
}

int Trx::del(tdb_cf_t *cf, const std::string &key) {
  int err = begin();
  if (err) return err;
  int rc = lock_call(this, pessimistic(), [&] { return tdb_txn_delete(m_txn, cf, key.data(), key.size()); });
  if (rc != TDB_OK) return map_err(rc);
  m_nwrites++;
  return 0;
}

int Trx::get(tdb_cf_t *cf, const uchar *key, size_t klen, std::string *val) {
  int err = begin();
  if (err) return err;
  void *v = NULL;
  size_t vl = 0;
  /* SERIALIZABLE pessimistic reads take shared locks. */
  bool may_wait = pessimistic() && isolation() == TDB_ISO_SERIALIZABLE;
  int rc = lock_call(this, may_wait, [&] { return tdb_txn_get(m_txn, cf, key, klen, &v, &vl); });
  if (rc != TDB_OK) return map_err(rc);
  if (val) val->assign((const char *)v, vl);
  tdb_free(v);
  return 0;
}

int Trx::get_for_update(tdb_cf_t *cf, const uchar *key, size_t klen, bool exclusive, std::string *val,
                        bool skip_locked) {
  int err = begin();
  if (err) return err;
  void *v = NULL;
  size_t vl = 0;
  int rc;
  if (skip_locked && pessimistic()) {
    /* SKIP LOCKED: ask without waiting; a row another transaction holds
     * locked is skipped, not an error. */
    rc = tdb_txn_set_lock_timeout(m_txn, 0);
    if (rc == TDB_OK) rc = tdb_txn_get_for_update(m_txn, cf, key, klen, exclusive ? 1 : 0, &v, &vl);
    int rc2 = tdb_txn_set_lock_timeout(m_txn, m_opts.lock_timeout_ms);
    if (rc == TDB_ERR_TIMEOUT) return HA_ERR_KEY_NOT_FOUND; /* callers skip a missing row */
    if (rc == TDB_OK) rc = rc2;
  } else {
    rc = lock_call(this, pessimistic(),
                   [&] { return tdb_txn_get_for_update(m_txn, cf, key, klen, exclusive ? 1 : 0, &v, &vl); });
  }
  if (rc != TDB_OK) {
    tdb_free(v);
    return map_err(rc);
  }
  if (val) val->assign((const char *)v, vl);
  tdb_free(v);
  return 0;
}

tdb_lock_mark_t Trx::lock_mark() const {
  if (m_txn) return tdb_txn_lock_mark(m_txn);
  tdb_lock_mark_t none = {0, 0, 0};
  return none;
}

bool Trx::unlock_since(const tdb_lock_mark_t &mark) {
  if (!m_active || m_prepared || !m_txn || !pessimistic() || m_opts.isolation > TDB_ISO_READ_COMMITTED) return false;
  return tdb_txn_unlock_since(m_txn, &mark) == TDB_OK;
}

int Trx::lock_range(tdb_cf_t *cf, const std::string &lo, const std::string *hi, bool exclusive, uint64_t *id) {
  int err = begin();
  if (err) return err;
  if (!pessimistic()) return 0;
  auto lock = [&] {
    return tdb_txn_lock_range(m_txn, cf, lo.data(), lo.size(), hi ? hi->data() : NULL, hi ? hi->size() : 0,
                              exclusive ? TDB_RANGE_EXCLUSIVE : 0, id);
  };
  /* Try without waiting first, so the processlist shows the lock-wait
   * state only for a range that has to wait (tests watch that state). */
  int rc = tdb_txn_set_lock_timeout(m_txn, 0);
  if (rc == TDB_OK) rc = lock();
  int rc2 = tdb_txn_set_lock_timeout(m_txn, m_opts.lock_timeout_ms);
  if (rc == TDB_ERR_TIMEOUT && m_opts.lock_timeout_ms > 0) rc = lock_call(this, true, lock);
  if (rc == TDB_OK) rc = rc2;
  return rc != TDB_OK ? map_err(rc) : 0;
}

int Trx::narrow_range(uint64_t id, const std::string *lo, const std::string *hi) {
  if (!m_active || m_prepared || !m_txn || !pessimistic()) return 0;
  int rc = tdb_txn_narrow_range(m_txn, id, lo ? lo->data() : NULL, lo ? lo->size() : 0, hi ? hi->data() : NULL,
                                hi ? hi->size() : 0, TDB_RANGE_HI_INCLUSIVE);
  return rc != TDB_OK ? map_err(rc) : 0;
}

void Trx::add_rows(const TableDefPtr &def, int64_t delta) {
  Touched &t = m_stmt_tables[def.get()];
  if (!t.def) t.def = def;
  t.delta += delta;
}

void Trx::touch_table(const TableDefPtr &def) {
  Touched &t = m_stmt_tables[def.get()];
  if (!t.def) t.def = def;
}

/* ---- iterators ---- */

void Trx::attach(TxnIter *it) { m_iters.push_back(it); }

void Trx::detach(TxnIter *it) {
  auto p = std::find(m_iters.begin(), m_iters.end(), it);
  if (p != m_iters.end()) m_iters.erase(p);
}

void Trx::detach_iters() {
  for (TxnIter *it : m_iters) it->suspend();
}

void Trx::cancel_wait() {
  std::lock_guard<std::mutex> g(g_trx_mu);
  if (m_txn) tdb_txn_cancel_wait(m_txn);
}

}  // namespace tidesql

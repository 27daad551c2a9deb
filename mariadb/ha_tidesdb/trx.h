/*
 * trx: the per-connection transaction of the engine, on top of one library
 * transaction (tdb_txn_t) per MariaDB transaction.
 *
 * Mapping (MariaDB -> library):
 *  - isolation: READ UNCOMMITTED / READ COMMITTED -> TDB_ISO_READ_COMMITTED,
 *    REPEATABLE READ -> TDB_ISO_SNAPSHOT (first committer wins),
 *    SERIALIZABLE -> TDB_ISO_SERIALIZABLE;
 *  - tidesdb_pessimistic_locking ON: pessimistic library transaction (row
 *    locks on every written key and on locking reads, deadlock detection,
 *    lock wait timeout = tidesdb_lock_wait_timeout). OFF: optimistic, the
 *    commit validates (TDB_ERR_CONFLICT). The library's READ COMMITTED has
 *    no commit-time check, so a READ COMMITTED transaction is always
 *    pessimistic (without locks concurrent writers would lose updates and
 *    leave stale index entries);
 *  - the statement: in a multi-statement transaction every statement starts
 *    with the internal savepoint STMT_SP; statement rollback rolls back to
 *    it (undoing the statement's writes and releasing its locks);
 *  - SAVEPOINT / ROLLBACK TO / RELEASE: library savepoints named "s<n>",
 *    found by the address of the server's savepoint area, never stored in
 *    it: for an engine installed at runtime (INSTALL SONAME) MariaDB 10.11
 *    places that area sizeof(SAVEPOINT) bytes past the end of the savepoint's
 *    allocation (handler.cc adds the header size to savepoint_alloc_size
 *    once, at startup), where the next SAVEPOINT overwrote the number we had
 *    written and ROLLBACK TO failed;
 *  - START TRANSACTION WITH CONSISTENT SNAPSHOT begins at once, otherwise
 *    the library transaction begins at the first statement using a
 *    TidesDB table (so its snapshot is taken then).
 *
 * Invariants
 *  1. Nothing reaches the database before commit(); a statement of any size
 *     is atomic (no intermediate commits), except ALTER TABLE's copy
 *     (server transactions off), which commits every BULK_COMMIT_WRITES.
 *  2. Library iterators of the transaction are TxnIters (txn_iter.h)
 *     registered here;
 *     before commit, rollback or a savepoint rollback they are detached
 *     (library iterator destroyed, position kept) and re-attach lazily at
 *     their next move, re-positioned after/before the key they were on.
 *  3. m_txn is only freed in the destructor, under g_trx_mu, so
 *     kill_query (another thread) can call tdb_txn_cancel_wait safely.
 *  4. Row-count deltas of the running statement are kept apart and folded
 *     into the transaction's at statement end; savepoints copy the
 *     transaction's deltas. They are applied to TableDef::rows at commit.
 *  5. A Trx belongs to one THD and is used only by that THD's thread
 *     (except cancel_wait(), and commit_ordered(), which the binary log's
 *     group-commit leader runs while the owner thread waits for it).
 */
#ifndef TIDESQL_TRX_H
#define TIDESQL_TRX_H

#include "dict.h"
#include "stat_counter.h"

#include <map>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace tidesql {

class TxnIter; /* txn_iter.h */

/* A running transaction as information_schema.TIDESDB_TRX shows it. */
struct TrxInfo {
  uint64_t txn_id = 0; /* tdb_txn_id */
  ulong thread_id = 0; /* the connection */
  bool prepared = false;
  int isolation = 0; /* tdb_isolation_t */
  bool pessimistic = false;
  time_t started = 0;
  uint64_t snapshot_seq = 0;
};

/* Row lock mode of a read. */
enum RowLock { ROW_LOCK_NONE = 0, ROW_LOCK_SHARED = 1, ROW_LOCK_EXCLUSIVE = 2 };

class Trx {
 public:
  explicit Trx(THD *thd);
  ~Trx();

  /* Begin the library transaction if none is running (options from the
   * THD: isolation, tidesdb_pessimistic_locking, lock wait timeout). */
  int begin();
  bool active() const { return m_active; }
  /* The running library transaction's id (0: none). */
  uint64_t id() const { return m_pub_id; }
  bool pessimistic() const { return m_opts.pessimistic != 0; }
  int isolation() const { return m_opts.isolation; }

  /* Statement boundaries. multi = inside BEGIN ... COMMIT / autocommit=0. */
  int stmt_begin(bool multi);
  bool stmt_active() const { return m_stmt_active; }
  void stmt_end();
  int stmt_rollback();

  int commit();
  void rollback();

  /* Two-phase commit (handlerton.cc, XA). prepare() logs the transaction
   * as prepared under the server's XID (xid.h bytes, see xid_pack); after
   * it only commit() or rollback() are accepted, a commit is retried
   * through back-pressure without limit (the binary log may hold it
   * already) and is never rolled back by the engine. detach_prepared()
   * lets go of the handle of a prepared transaction (the connection
   * ends): it stays prepared in the library, resolved by XID later.
   * binlog_xid: xid is the server's own (binlog recovery resolves it),
   * not a user's XA XID. */
  int prepare(const std::string &xid, bool binlog_xid);
  bool prepared() const { return m_prepared; }
  void detach_prepared();
  /* The commit_ordered step (handlerton.cc, invariant 5), on the binary
   * log's group-commit leader thread (no THD calls): a transaction
   * prepared under the binary log's own XID commits now, in binlog order,
   * its COMMIT marker not synced (tdb_commit_options_t.no_sync); commit()
   * then only reports the result. Anything else is left to commit(). A
   * failed attempt counts in s_ordered_failed until commit() retried it. */
  void commit_ordered();
  bool ordered() const { return m_ordered; }

  /* Savepoints (SAVEPOINT, ROLLBACK TO, RELEASE). */
  /* sv: the server's savepoint area, used only as a key. */
  int savepoint_set(const void *sv);
  int savepoint_rollback(const void *sv);
  int savepoint_release(const void *sv);

  /* Buffered writes: 0 or a handler error (HA_ERR_LOCK_*, ...). */
  int put(tdb_cf_t *cf, const std::string &key, const uchar *val, size_t vlen);
  int del(tdb_cf_t *cf, const std::string &key);
  /* Reads through the transaction: 0 (value in *val if val), or
   * HA_ERR_KEY_NOT_FOUND, or an error. get_for_update locks the key
   * (pessimistic) or adds it to the commit check (optimistic SNAPSHOT);
   * with skip_locked a key another transaction holds locked is not waited
   * for: HA_ERR_KEY_NOT_FOUND (SELECT ... SKIP LOCKED). */
  int get(tdb_cf_t *cf, const uchar *key, size_t klen, std::string *val);
  int get_for_update(tdb_cf_t *cf, const uchar *key, size_t klen, bool exclusive, std::string *val,
                     bool skip_locked = false);
  /* READ COMMITTED: give back the row locks taken since lock_mark() by a
   * locking read that returns no row (tdb_txn_unlock_since). Where the
   * library refuses (a higher level, a write or savepoint since the mark)
   * the locks are kept, which is always safe: false. */
  tdb_lock_mark_t lock_mark() const;
  bool unlock_since(const tdb_lock_mark_t &mark);

  /* Range lock (pessimistic only; else nothing): keys k of cf with
   * lo <= k < *hi (hi NULL: no upper bound), held to the end of the
   * transaction; inserts of others into it wait (tdb_txn_lock_range);
   * *id names it. narrow_range cuts range id to [*lo, *hi] (NULL: keep). */
  int lock_range(tdb_cf_t *cf, const std::string &lo, const std::string *hi, bool exclusive, uint64_t *id);
  int narrow_range(uint64_t id, const std::string *lo, const std::string *hi);

  /* Row-count change and AUTO_INCREMENT use of a table. */
  void add_rows(const TableDefPtr &def, int64_t delta);
  void touch_table(const TableDefPtr &def);

  uint64_t pending() const { return m_nwrites; }
  /* Commit what is buffered and go on in a new library transaction (ALTER
   * TABLE copy only, invariant 1). */
  int bulk_commit();

  /* Iterator registry (invariant 2). */
  void attach(TxnIter *it);
  void detach(TxnIter *it);
  tdb_txn_t *txn() { return m_txn; }
  THD *thd() const { return m_thd; }

  /* Wake a lock wait of this transaction (KILL QUERY, any thread). */
  void cancel_wait();

  /* Every connection's running library transaction (a copy). */
  static void list_running(std::vector<TrxInfo> *out);

  /* Counters (status variables). */
  static StatCounter s_commits, s_rollbacks;
  static std::atomic<ulonglong> s_conflicts, s_deadlocks, s_lock_timeouts, s_busy;
  /* Commits done by commit_ordered (marker not synced), and those whose
   * commit_ordered attempt failed and commit() has not retried yet. */
  static StatCounter s_ordered_commits;
  static std::atomic<long> s_ordered_failed;

 private:
  struct Touched {
    TableDefPtr def;
    int64_t delta = 0;
  };
  typedef std::unordered_map<TableDef *, Touched> TouchedMap;

  int map_err(int rc);
  int commit_waiting();
  void detach_iters();
  void finish();
  void fold_stmt();
  void apply_counters();

  THD *m_thd;
  tdb_txn_t *m_txn = NULL;
  /* What list_running reports, written by the owner thread: 0 id = none. */
  std::atomic<uint64_t> m_pub_id{0}, m_pub_snap{0};
  std::atomic<time_t> m_pub_started{0};
  std::atomic<int> m_pub_iso{0};
  std::atomic<bool> m_pub_pessimistic{false}, m_pub_prepared{false};
  tdb_txn_options_t m_opts;
  bool m_active = false;
  bool m_prepared = false; /* prepare() succeeded, commit/rollback pending */
  bool m_binlog_xid = false; /* ...under the binary log's XID, not a user's */
  bool m_ordered = false;    /* commit_ordered() ran the library commit */
  int m_ordered_rc = 0;      /* ...with this result */
  bool m_multi = false;
  bool m_stmt_active = false;
  bool m_stmt_sp = false; /* STMT_SP exists for the running statement */
  uint64_t m_nwrites = 0;
  uint64_t m_next_sp = 1;
  std::vector<TxnIter *> m_iters;
  TouchedMap m_tables, m_stmt_tables;
  std::map<uint64_t, TouchedMap> m_sp_tables;
  std::map<const void *, uint64_t> m_sp_ids; /* savepoint area -> id */
  /* The id of a savepoint area, 0 when unknown. */
  uint64_t sp_id(const void *sv) const;
  /* Forget the areas of savepoints numbered from `from` on. */
  void sp_forget_from(uint64_t from);
};

/* Guards every Trx's m_txn pointer and the THDs' ha_data slot of the
 * engine against KILL from another thread (invariant 3, handlerton.cc). */
extern std::mutex g_trx_mu;

}  // namespace tidesql

#endif

/*
 * trx: the per-connection transaction of the engine.
 *
 * Until the library offers transactions, a transaction is an ordered
 * write overlay: for every column family it wrote, a std::map from the
 * encoded key to the pending value or tombstone. Reads go through the
 * overlay first (Trx::get, MergedIter), so a connection sees its own
 * uncommitted writes. COMMIT turns the overlay into one tdb_batch_t (plus
 * the touched tables' counters, dict.h) and applies it with tdb_write:
 * atomic across tables and indexes, durable per the strictest sync mode of
 * the families it touches.
 *
 * Statement rollback and savepoints use an undo log of overlay changes
 * (kept only inside multi-statement transactions; an autocommit statement
 * rolls back by discarding everything).
 *
 * Invariants
 *  1. Nothing reaches the database before commit(); rollback() only drops
 *     memory.
 *  2. The overlay holds the final state per key; the order of operations
 *     inside the transaction does not matter at commit.
 *  3. generation() changes whenever overlay entries are removed (rollback,
 *     commit, statement undo); MergedIter then re-positions itself.
 *  4. A Trx belongs to one THD and is used only by that THD's thread.
 *
 * Isolation without library transactions: plain reads see a snapshot
 * taken per statement plus the transaction's own writes (READ COMMITTED);
 * writers lock the rows they change until commit (lock.h) and read the
 * latest committed version of a locked row (locking reads), so concurrent
 * writers of one row are serialized, as with InnoDB at READ COMMITTED.
 * Swapping in library transactions later changes this file and trx.cc only.
 */
#ifndef TIDESQL_TRX_H
#define TIDESQL_TRX_H

#include "dict.h"
#include "lock.h"

#include <map>
#include <unordered_map>
#include <vector>

namespace tidesql {

struct OvEntry {
  bool deleted;
  std::string value;
};
typedef std::map<std::string, OvEntry> OvMap;

class Trx {
 public:
  Trx();
  ~Trx();
  uint64_t id() const { return m_id; }

  /* Row locks (held until commit/rollback). */
  int lock(tdb_cf_t *cf, const std::string &key, THD *thd, bool *acquired);
  void unlock(tdb_cf_t *cf, const std::string &key);

  /* Statement boundaries (called from external_lock/start_stmt and the
   * handlerton). multi = inside BEGIN ... COMMIT or autocommit=0. */
  void stmt_begin(bool multi);
  bool stmt_active() const { return m_stmt_active; }
  void stmt_end();
  void stmt_rollback();

  int commit();
  void rollback();

  /* Savepoints: the position in the undo log. */
  uint64_t savepoint() const { return m_undo.size(); }
  void rollback_to(uint64_t pos);

  /* Pending writes. */
  int put(tdb_cf_t *cf, const std::string &key, const uchar *val, size_t vlen);
  int del(tdb_cf_t *cf, const std::string &key);
  /* Point read through the overlay: 0 (value in *val, if val), or
   * HA_ERR_KEY_NOT_FOUND, or an error. */
  int get(tdb_cf_t *cf, const uchar *key, size_t klen, std::string *val,
          const tdb_snapshot_t *snap = NULL);

  /* Row-count change and AUTO_INCREMENT use of a table. */
  void add_rows(const TableDefPtr &def, int64_t delta);
  void touch_table(const TableDefPtr &def);

  bool has_writes() const { return m_nwrites != 0; }
  uint64_t pending() const { return m_nwrites; }
  uint64_t generation() const { return m_generation; }
  OvMap &overlay(tdb_cf_t *cf) { return m_ov[cf]; }

  /* Counters (status variables). */
  static std::atomic<ulonglong> s_commits, s_rollbacks;

 private:
  struct Undo {
    tdb_cf_t *cf;         /* NULL: a row-count change */
    std::string key;
    bool existed;
    OvEntry prev;
    TableDef *def;
    int64_t delta;
  };
  struct Touched {
    TableDefPtr def;
    int64_t delta = 0;
  };
  void record_undo(tdb_cf_t *cf, OvMap &m, const std::string &key);
  void clear();
  void release_locks();

  uint64_t m_id;
  std::vector<std::string> m_locks;
  std::unordered_map<tdb_cf_t *, OvMap> m_ov;
  std::unordered_map<TableDef *, Touched> m_tables;
  std::vector<Undo> m_undo;
  size_t m_stmt_undo = 0;  /* undo position at statement start */
  bool m_multi = false;
  bool m_stmt_active = false;
  uint64_t m_nwrites = 0;
  uint64_t m_generation = 0;
};

/* The THD's transaction object (created on first use). */
Trx *trx_get(THD *thd);
/* Register the engine in the statement (and transaction) of thd. */
void trx_register(THD *thd, Trx *trx);

/* Handlerton callbacks. */
int trx_hton_commit(handlerton *hton, THD *thd, bool all);
int trx_hton_rollback(handlerton *hton, THD *thd, bool all);
int trx_hton_close_connection(handlerton *hton, THD *thd);
int trx_hton_savepoint_set(handlerton *hton, THD *thd, void *sv);
int trx_hton_savepoint_rollback(handlerton *hton, THD *thd, void *sv);
int trx_hton_savepoint_release(handlerton *hton, THD *thd, void *sv);

/* An ordered iterator over one column family: the library's view merged
 * with the transaction's overlay (overlay entries win, tombstones hide). */
class MergedIter {
 public:
  MergedIter() = default;
  ~MergedIter() { close(); }
  int open(tdb_cf_t *cf, Trx *trx, const tdb_snapshot_t *snap = NULL);
  void close();
  bool is_open() const { return m_base != NULL; }
  tdb_cf_t *cf() const { return m_cf; }

  void seek(const uchar *k, size_t kl);          /* first >= k */
  void seek_for_prev(const uchar *k, size_t kl); /* last <= k  */
  void seek_to_first();
  void seek_to_last();
  void next();
  void prev();
  bool valid() const { return m_valid; }
  const uchar *key(size_t *len) const;
  const uchar *value(size_t *len) const;
  int status() const;

 private:
  void resolve_fwd();
  void resolve_bwd();
  void reposition_after(const std::string &k);
  void reposition_before(const std::string &k);
  bool base_valid() const;

  tdb_cf_t *m_cf = NULL;
  tdb_iter_t *m_base = NULL;
  Trx *m_trx = NULL;
  OvMap *m_ov = NULL;
  OvMap::iterator m_oi;
  bool m_oi_valid = false;
  int m_dir = 1;
  bool m_valid = false;
  bool m_cur_ov = false;
  uint64_t m_gen = 0;
  std::string m_cur; /* current key (for re-positioning) */
};

}  // namespace tidesql

#endif

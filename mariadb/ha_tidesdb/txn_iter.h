/*
 * txn_iter: an ordered iterator over one column family in a transaction's
 * view (its own writes merged with the isolation level's snapshot), the
 * only way the handler scans (trx.h owns the transaction).
 *
 * Invariants
 *  1. An open TxnIter is registered with its Trx (Trx::attach) until
 *     close(); a Trx destroyed first sets m_trx of its registered
 *     iterators to NULL (their next move fails, none touches freed memory).
 *  2. Before the transaction commits, rolls back or rolls back to a
 *     savepoint, the Trx suspends every registered iterator: the library
 *     iterator is destroyed and the key it was on kept in m_cur.
 *  3. A suspended iterator re-attaches at its next move: next() goes to
 *     the first key > m_cur, prev() to the last key < m_cur, a seek
 *     positions afresh; key() of a suspended iterator is m_cur.
 *  4. Used by one thread: the thread of the Trx's THD.
 */
#ifndef TIDESQL_TXN_ITER_H
#define TIDESQL_TXN_ITER_H

#include "tdb_common.h"

namespace tidesql {

class Trx;

/* An ordered iterator over one column family in the transaction's view
 * (its own writes merged with the isolation level's snapshot). Survives
 * commits and savepoint rollbacks of its transaction (invariants 2, 3). */
class TxnIter {
 public:
  TxnIter() = default;
  ~TxnIter() { close(); }
  int open(Trx *trx, tdb_cf_t *cf);
  void close();
  bool is_open() const { return m_trx != NULL; }
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
  int status() const { return m_status; }

 private:
  friend class Trx;
  void suspend(); /* destroy the library iterator, keep the position */
  bool resume();  /* re-create it; false on error (m_status) */
  void settle();  /* after a move: m_valid, m_status */

  Trx *m_trx = NULL;
  tdb_cf_t *m_cf = NULL;
  tdb_iter_t *m_it = NULL;
  bool m_valid = false;
  bool m_suspended = false;
  int m_status = TDB_OK;
  std::string m_cur; /* key of a suspended iterator's position */
};

}  // namespace tidesql

#endif

/* txn_iter: an ordered iterator over one column family in the view of a
 * Trx, surviving the transaction's commits and savepoint rollbacks (see
 * txn_iter.h for its invariants). */
#include "txn_iter.h"

#include "trx.h"

#include <string.h>

namespace tidesql {

/* memcmp order with the shorter string first on a tie (the library's). */
static int key_cmp(const uchar *a, size_t al, const std::string &b) {
  size_t n = al < b.size() ? al : b.size();
  int c = n ? memcmp(a, b.data(), n) : 0;
  if (c) return c;
  return al < b.size() ? -1 : (al > b.size() ? 1 : 0);
}

int TxnIter::open(Trx *trx, tdb_cf_t *cf) {
  close();
  int err = trx->begin();
  if (err) return err;
  int rc = tdb_txn_iter_create(trx->txn(), cf, &m_it);
  if (rc != TDB_OK) {
    m_it = NULL;
    return map_tdb_error(rc);
  }
  m_trx = trx;
  m_cf = cf;
  m_valid = false;
  m_suspended = false;
  m_status = TDB_OK;
  trx->attach(this);
  return 0;
}

void TxnIter::close() {
  if (m_it) tdb_iter_destroy(m_it);
  m_it = NULL;
  if (m_trx) m_trx->detach(this);
  m_trx = NULL;
  m_valid = false;
  m_suspended = false;
}

void TxnIter::suspend() {
  if (!m_it) return;
  if (m_valid) {
    size_t kl;
    const char *k = (const char *)tdb_iter_key(m_it, &kl);
    m_cur.assign(k, kl);
  }
  tdb_iter_destroy(m_it);
  m_it = NULL;
  m_suspended = true;
}

bool TxnIter::resume() {
  if (m_it) return true;
  if (!m_trx) {
    m_valid = false;
    m_status = TDB_ERR_INVALID_ARG;
    return false;
  }
  int rc = TDB_OK;
  if (m_trx->begin()) rc = TDB_ERR_INVALID_ARG;
  if (rc == TDB_OK) rc = tdb_txn_iter_create(m_trx->txn(), m_cf, &m_it);
  if (rc != TDB_OK) {
    m_it = NULL;
    m_valid = false;
    m_status = rc;
    return false;
  }
  m_suspended = false;
  return true;
}

void TxnIter::settle() {
  m_valid = tdb_iter_valid(m_it) != 0;
  m_status = m_valid ? TDB_OK : tdb_iter_status(m_it);
}

void TxnIter::seek(const uchar *k, size_t kl) {
  if (!resume()) return;
  tdb_iter_seek(m_it, k, kl);
  settle();
}

void TxnIter::seek_for_prev(const uchar *k, size_t kl) {
  if (!resume()) return;
  tdb_iter_seek_for_prev(m_it, k, kl);
  settle();
}

void TxnIter::seek_to_first() {
  if (!resume()) return;
  tdb_iter_seek_to_first(m_it);
  settle();
}

void TxnIter::seek_to_last() {
  if (!resume()) return;
  tdb_iter_seek_to_last(m_it);
  settle();
}

void TxnIter::next() {
  if (!m_valid) return;
  if (m_suspended) {
    /* Re-attach after a commit or rollback: first key > the old one. */
    std::string k = m_cur;
    if (!resume()) return;
    tdb_iter_seek(m_it, k.data(), k.size());
    if (tdb_iter_valid(m_it)) {
      size_t kl;
      const uchar *cur = (const uchar *)tdb_iter_key(m_it, &kl);
      if (key_cmp(cur, kl, k) == 0) tdb_iter_next(m_it);
    }
    settle();
    return;
  }
  tdb_iter_next(m_it);
  settle();
}

void TxnIter::prev() {
  if (!m_valid) return;
  if (m_suspended) {
    std::string k = m_cur;
    if (!resume()) return;
    tdb_iter_seek_for_prev(m_it, k.data(), k.size());
    if (tdb_iter_valid(m_it)) {
      size_t kl;
      const uchar *cur = (const uchar *)tdb_iter_key(m_it, &kl);
      if (key_cmp(cur, kl, k) == 0) tdb_iter_prev(m_it);
    }
    settle();
    return;
  }
  tdb_iter_prev(m_it);
  settle();
}

const uchar *TxnIter::key(size_t *len) const {
  if (m_suspended) {
    *len = m_cur.size();
    return (const uchar *)m_cur.data();
  }
  return (const uchar *)tdb_iter_key(m_it, len);
}

const uchar *TxnIter::value(size_t *len) const {
  if (m_suspended) { /* not reached by the handler: it moves first */
    *len = 0;
    return (const uchar *)"";
  }
  return (const uchar *)tdb_iter_value(m_it, len);
}

}  // namespace tidesql

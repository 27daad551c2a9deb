/* ha_tidesdb range locks of locking scans (next-key locking, as InnoDB at
 * REPEATABLE READ and SERIALIZABLE): a locking index or table scan locks
 * the key range it covers in the scanned family, so no other transaction
 * inserts a phantom into it until this one ends. Library side:
 * tdb_txn_lock_range (docs/design/locks.md, "Range locks").
 *
 * Invariants
 *  1. Only with row locks (pessimistic), at REPEATABLE READ (library
 *     SNAPSHOT) and SERIALIZABLE, in a locking statement (FOR UPDATE, LOCK
 *     IN SHARE MODE, UPDATE/DELETE, SERIALIZABLE reads of a multi-statement
 *     transaction), and not with SKIP LOCKED. READ COMMITTED takes none.
 *  2. The lock is taken before the scan reads anything, from the start key
 *     to the scan's end bound: the end of the prefix for an equality or
 *     prefix scan, the server's end_range for a range (read_range_first),
 *     else the end of the family; backward scans from the start of the
 *     family (or of the prefix) up to the start key. Locking first means no
 *     insert commits between the read and the lock.
 *  3. A scan that stops before its end (LIMIT, the server's own end-range
 *     check) is narrowed at its end to the keys it returned (up to and
 *     including the last one, or from it for backward scans); a scan that
 *     ran into its end keeps the whole range, so an insert just after the
 *     last row (up to the bound) stays blocked.
 *  4. Point reads of a full unique key are not scans: they lock the key
 *     itself, also when the row is absent (so WHERE id = 5 FOR UPDATE on a
 *     missing row blocks an insert of 5).
 *  5. A secondary index scan locks the index's own family: an insert of a
 *     row whose index entry falls inside waits when it writes that entry.
 */
#include "ha_tidesdb.h"

namespace tidesql {

/* Invariant 1. */
bool ha_tidesdb::range_locks_wanted() const {
  return locking() && !m_skip_locked && m_trx && m_trx->pessimistic() &&
         m_trx->isolation() >= TDB_ISO_SNAPSHOT;
}

/* The exclusive upper bound of the server's end_range for index idx, if
 * any (<= E: every key with prefix up to E; < E: keys below E). */
bool ha_tidesdb::scan_end_bound(uint idx, std::string *hi) {
  if (!end_range) return false;
  uint n;
  encode_search_key(idx, end_range->key, end_range->keypart_map, hi, &n);
  if (end_range->flag == HA_READ_BEFORE_KEY) return true;
  return key_successor(*hi);
}

/* Lock [lo, hi) (hi NULL: unbounded) of cf for the scan about to start. */
int ha_tidesdb::lock_scan(tdb_cf_t *cf, const std::string &lo, const std::string *hi, bool forward) {
  finish_scan_lock();
  int err = trx()->lock_range(cf, lo, hi, m_row_lock == ROW_LOCK_EXCLUSIVE, &m_range_id);
  if (err) return err;
  m_range_open = true;
  m_range_fwd = forward;
  m_range_any = false;
  g_counters.range_locks++;
  return 0;
}

/* The range an index_read_map scan of idx with search key P covers. */
int ha_tidesdb::lock_index_scan(uint idx, enum ha_rkey_function flag, const std::string &P) {
  if (!range_locks_wanted()) return 0;
  std::string lo, hi;
  bool have_hi = false, fwd = true;
  switch (flag) {
    case HA_READ_KEY_EXACT:
    case HA_READ_PREFIX:
      lo = hi = P;
      have_hi = key_successor(hi);
      break;
    case HA_READ_KEY_OR_NEXT:
      lo = P;
      have_hi = scan_end_bound(idx, &hi);
      break;
    case HA_READ_AFTER_KEY:
      lo = P;
      if (!key_successor(lo)) return 0; /* nothing after: no scan */
      have_hi = scan_end_bound(idx, &hi);
      break;
    case HA_READ_BEFORE_KEY:
      fwd = false;
      hi = P;
      have_hi = true;
      break;
    case HA_READ_PREFIX_LAST:
      lo = P;
      /* fall through */
    case HA_READ_KEY_OR_PREV:
    case HA_READ_PREFIX_LAST_OR_PREV:
      fwd = false;
      hi = P;
      have_hi = key_successor(hi);
      break;
    default:
      return 0;
  }
  return lock_scan(index_cf(idx), lo, have_hi ? &hi : NULL, fwd);
}

/* The scan returned the entry with key k (invariant 3). */
void ha_tidesdb::note_scan_row(const uchar *k, size_t kl) {
  m_range_last.assign((const char *)k, kl);
  m_range_any = true;
}

/* The scan ends: one that ran into its end (m_range_open cleared by
 * fetch) keeps its range; one stopped early is cut to what it returned. */
void ha_tidesdb::finish_scan_lock() {
  if (!m_range_open) return;
  m_range_open = false;
  if (!m_range_any || !m_trx) return;
  if (m_range_fwd)
    m_trx->narrow_range(m_range_id, NULL, &m_range_last);
  else
    m_trx->narrow_range(m_range_id, &m_range_last, NULL);
}

}  // namespace tidesql

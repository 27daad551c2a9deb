/* ha_tidesdb reads: index lookups and scans in both directions, table
 * scans, rnd_pos, range estimates (see ha_tidesdb.h). */
#include "ha_tidesdb.h"

#include "row_format.h"

#include <string.h>

namespace tidesql {

static bool starts_with(const uchar *k, size_t kl, const std::string &p) {
  return kl >= p.size() && (p.empty() || memcmp(k, p.data(), p.size()) == 0);
}

/* Whether the iterator's current key starts with p. */
static bool iter_at_prefix(const TxnIter &it, const std::string &p) {
  size_t kl;
  const uchar *k = it.key(&kl);
  return starts_with(k, kl, p);
}

/* Index-only reads are honoured except in locking statements, which
 * always get (and lock) whole rows; update_row/delete_row need every
 * column. */
bool ha_tidesdb::want_full_row() { return !keyread_enabled() || m_lock_type == F_WRLCK || locking(); }

/* The columns a row read unpacks (row_format.h, RowColumns): in a
 * statement that only reads this table, its read_set and the key columns;
 * in one that writes it (or reads FOR UPDATE) every column, since
 * update_row and delete_row pack and index whole rows and the server
 * compares whole records to skip unchanged updates. */
const RowColumns *ha_tidesdb::read_columns() const {
  return m_lock_type == F_RDLCK && m_row_lock != ROW_LOCK_EXCLUSIVE ? &m_read_cols : NULL;
}

/* The handler's iterator lives for the statement (external_lock and
 * start_stmt close it): a scan or lookup of the same family re-seeks it
 * instead of building a new one, so a subquery or a lateral derived table
 * executed once per outer row (index_init .. index_end each time) does not
 * create and destroy a library iterator per execution. m_positioned says
 * whether the current scan has placed it; a scan starts unplaced. */
int ha_tidesdb::open_iter(tdb_cf_t *cf) {
  if (m_iter.is_open() && m_iter.cf() == cf) return 0;
  m_counts.iterators++;
  return m_iter.open(trx(), cf);
}

void ha_tidesdb::close_iter() {
  finish_scan_lock();
  m_iter.close();
  m_positioned = false;
  flush_counts();
}

void ha_tidesdb::flush_counts() {
  if (m_counts.rows_read) g_counters.rows_read.add(m_counts.rows_read);
  if (m_counts.point_reads) g_counters.point_reads.add(m_counts.point_reads);
  if (m_counts.iterators) g_counters.iterators.add(m_counts.iterators);
  m_counts = {};
}

/* Whether a row fetched through a secondary-index entry must be checked
 * against the entry: locking reads return the row's latest version, and
 * at READ COMMITTED point reads see newer data than the scan's view. */
bool ha_tidesdb::verify_index_rows() const {
  return locking() || (m_trx && m_trx->isolation() == TDB_ISO_READ_COMMITTED);
}

/* Encode the key parts of a search key image (key_copy format). */
int ha_tidesdb::encode_search_key(uint idx, const uchar *key, key_part_map map, std::string *out,
                                  uint *nparts) {
  KEY *ki = &table->key_info[idx];
  uint n = keypart_count(ki, map);
  uint len = calculate_key_len(table, idx, key, map);
  key_restore(m_scratch, key, ki, len);
  out->resize(m_codecs[idx].prefix_len(n));
  bool has_null = n ? m_codecs[idx].encode(table, m_scratch, n, (uchar *)&(*out)[0]) : false;
  *nparts = n;
  return has_null ? 1 : 0;
}

/* m_last_pk = the n bytes at p: a scan's keys are mostly of one length,
 * copied in place (std::string::assign is a general replace). */
static inline void set_last_pk(std::string &last, const uchar *p, size_t n) {
  if (n && last.size() == n)
    memcpy(&last[0], p, n);
  else
    last.assign((const char *)p, n);
}

/* Read and unpack the row with this encoded primary key. In a locking
 * statement the row is read with get_for_update: locked (pessimistic) or
 * added to the commit check (optimistic). */
int ha_tidesdb::read_row_by_pk(uchar *buf, const uchar *pk, size_t pklen) {
  m_counts.point_reads++;
  m_last_locked = false;
  if (locking()) m_lock_mark = trx()->lock_mark();
  int err = locking() ? trx()->get_for_update(data_cf(), pk, pklen, m_row_lock == ROW_LOCK_EXCLUSIVE, &m_row_buf,
                                              m_skip_locked)
                      : trx()->get(data_cf(), pk, pklen, &m_row_buf);
  if (err) return err;
  m_last_locked = locking();
  set_last_pk(m_last_pk, pk, pklen);
  return row_unpack(table, (const uchar *)m_row_buf.data(), m_row_buf.size(), buf, &m_def->rowfmt,
                    read_columns());
}

/* The iterator's value to build a row from (invariant 3): the value itself,
 * or, when the table has blobs, whose record fields will point into it
 * until the next read, its copy in m_row_buf. */
const uchar *ha_tidesdb::stable_value(const uchar *val, size_t vl) {
  if (!table->s->blob_fields) return val;
  m_row_buf.assign((const char *)val, vl);
  return (const uchar *)m_row_buf.data();
}

/* The row of a scanned entry by primary key: in a locking scan a row
 * found gone (deleted while we waited for its lock) gives the lock back
 * (invariant 7). */
int ha_tidesdb::read_scanned_row(uchar *buf, const uchar *pk, size_t pklen) {
  int err = read_row_by_pk(buf, pk, pklen);
  if (err == HA_ERR_KEY_NOT_FOUND && locking()) unlock_unused_row();
  return err;
}

/* A row from the data family (key = encoded primary key). */
int ha_tidesdb::row_from_data_entry(uchar *buf, const uchar *key, size_t kl, const uchar *val, size_t vl) {
  if (locking()) return read_scanned_row(buf, key, kl);
  m_last_locked = false;
  set_last_pk(m_last_pk, key, kl);
  return row_unpack(table, stable_value(val, vl), vl, buf, &m_def->rowfmt, read_columns());
}

/* A row from a secondary-index entry (key ekey, value val): columns from
 * the key images (index-only read) or the whole row by primary key.
 * HA_ERR_KEY_NOT_FOUND when the row is gone or, in a locking read, no
 * longer has this index entry: callers skip the entry. */
int ha_tidesdb::row_from_index_entry(uchar *buf, uint idx, const uchar *ekey, size_t eklen, const uchar *val,
                                     size_t vl) {
  if (vl < m_pk_len) return HA_ERR_CRASHED;
  if (want_full_row()) {
    m_pk_buf.assign((const char *)val, m_pk_len);
    int err = read_scanned_row(buf, (const uchar *)m_pk_buf.data(), m_pk_len);
    if (err || !verify_index_rows()) return err;
    /* The row may have changed since the entry was read: skip it then. */
    std::string k, v;
    bool has_null;
    encode_index_entry(idx, buf, m_pk_buf, &k, &v, &has_null);
    if (k.size() != eklen || memcmp(k.data(), ekey, eklen) != 0) {
      if (m_last_locked) unlock_unused_row();
      m_last_locked = false;
      return HA_ERR_KEY_NOT_FOUND;
    }
    return 0;
  }
  KEY *ki = &table->key_info[idx];
  KEY *pk = m_def->hidden_pk ? NULL : &table->key_info[table->s->primary_key];
  size_t need = m_pk_len + ki->key_length + (pk ? pk->key_length : 0);
  if (vl < need) return HA_ERR_CRASHED;
  const uchar *img = stable_value(val, vl);
  key_restore(buf, img + m_pk_len, ki, ki->key_length);
  if (pk) key_restore(buf, img + m_pk_len + ki->key_length, pk, pk->key_length);
  set_last_pk(m_last_pk, val, m_pk_len);
  m_last_locked = false;
  return 0;
}

/* Turn the iterator's current entry into a row, skipping entries whose
 * row vanished (or moved); check_prefix bounds the scan to m_scan_prefix. */
int ha_tidesdb::fetch(uchar *buf, int dir, bool check_prefix) {
  bool data = m_iter.cf() == data_cf();
  for (;;) {
    if (!m_iter.valid()) {
      int st = m_iter.status();
      if (st == TDB_OK) m_range_open = false; /* ran into its end: keep the range */
      return st != TDB_OK ? map_tdb_error(st) : HA_ERR_END_OF_FILE;
    }
    size_t kl, vl;
    const uchar *k = m_iter.key(&kl);
    if (check_prefix && !starts_with(k, kl, m_scan_prefix)) {
      m_range_open = false;
      return HA_ERR_END_OF_FILE;
    }
    const uchar *v = m_iter.value(&vl);
    int err = data ? row_from_data_entry(buf, k, kl, v, vl) : row_from_index_entry(buf, active_index, k, kl, v, vl);
    if (err == HA_ERR_KEY_NOT_FOUND) {
      if (dir > 0)
        m_iter.next();
      else
        m_iter.prev();
      continue;
    }
    if (!err) {
      m_counts.rows_read++;
      if (m_range_open) note_scan_row(k, kl);
    }
    return err;
  }
}

/* Exact lookup of a full key of a unique index without NULLs. */
int ha_tidesdb::point_read(uchar *buf, uint idx, const std::string &key) {
  m_point = true;
  m_point_key = key;
  int err;
  if (is_pk_index(idx)) {
    err = read_row_by_pk(buf, (const uchar *)key.data(), key.size());
  } else {
    m_counts.point_reads++;
    /* A locking read locks the unique value too (also when absent: no
     * concurrent insert of it until this transaction ends). */
    err = locking() ? trx()->get_for_update(index_cf(idx), (const uchar *)key.data(), key.size(),
                                            m_row_lock == ROW_LOCK_EXCLUSIVE, &m_val_buf, m_skip_locked)
                    : trx()->get(index_cf(idx), (const uchar *)key.data(), key.size(), &m_val_buf);
    if (!err)
      err = row_from_index_entry(buf, idx, (const uchar *)key.data(), key.size(),
                                 (const uchar *)m_val_buf.data(), m_val_buf.size());
  }
  if (!err) m_counts.rows_read++;
  return err;
}

int ha_tidesdb::index_init(uint idx, bool sorted) {
  finish_scan_lock();
  active_index = idx;
  m_point = false;
  m_positioned = false;
  return 0;
}

int ha_tidesdb::index_end() {
  finish_scan_lock();
  m_positioned = false;
  m_point = false;
  active_index = MAX_KEY;
  return 0;
}

int ha_tidesdb::index_read_map(uchar *buf, const uchar *key, key_part_map keypart_map,
                               enum ha_rkey_function find_flag) {
  uint idx = active_index;
  KEY *ki = &table->key_info[idx];
  uint n;
  bool has_null = encode_search_key(idx, key, keypart_map, &m_scan_prefix, &n) != 0;
  m_point = false;
  const std::string &P = m_scan_prefix;

  if (find_flag == HA_READ_KEY_EXACT && n == ki->user_defined_key_parts &&
      (is_pk_index(idx) || ((ki->flags & HA_NOSAME) && !has_null))) {
    int err = point_read(buf, idx, P);
    return err == HA_ERR_END_OF_FILE ? HA_ERR_KEY_NOT_FOUND : err;
  }

  int err = lock_index_scan(idx, find_flag, P);
  if (err) return err;
  err = open_iter(index_cf(idx));
  if (err) return err;
  m_positioned = true;
  int dir = 1;
  bool check = false;
  std::string s;
  switch (find_flag) {
    case HA_READ_KEY_EXACT:
    case HA_READ_PREFIX:
      check = true;
      /* fall through */
    case HA_READ_KEY_OR_NEXT:
      if (P.empty())
        m_iter.seek_to_first();
      else
        m_iter.seek((const uchar *)P.data(), P.size());
      break;
    case HA_READ_AFTER_KEY:
      s = P;
      if (P.empty() || !key_successor(s)) return HA_ERR_KEY_NOT_FOUND;
      m_iter.seek((const uchar *)s.data(), s.size());
      break;
    case HA_READ_BEFORE_KEY: {
      dir = -1;
      if (P.empty()) return HA_ERR_KEY_NOT_FOUND;
      m_iter.seek_for_prev((const uchar *)P.data(), P.size());
      size_t kl;
      if (m_iter.valid()) {
        const uchar *k = m_iter.key(&kl);
        if (kl == P.size() && memcmp(k, P.data(), kl) == 0) m_iter.prev();
      }
      break;
    }
    case HA_READ_PREFIX_LAST:
      check = true;
      /* fall through */
    case HA_READ_KEY_OR_PREV:
    case HA_READ_PREFIX_LAST_OR_PREV: {
      dir = -1;
      s = P;
      if (P.empty() || !key_successor(s)) {
        m_iter.seek_to_last();
      } else {
        /* last entry < successor(P): the last one with prefix <= P */
        m_iter.seek_for_prev((const uchar *)s.data(), s.size());
        size_t kl;
        if (m_iter.valid()) {
          const uchar *k = m_iter.key(&kl);
          if (kl == s.size() && memcmp(k, s.data(), kl) == 0) m_iter.prev();
        }
      }
      break;
    }
    default:
      return HA_ERR_WRONG_COMMAND;
  }
  err = fetch(buf, dir, check);
  return err == HA_ERR_END_OF_FILE ? HA_ERR_KEY_NOT_FOUND : err;
}

int ha_tidesdb::index_read_last_map(uchar *buf, const uchar *key, key_part_map keypart_map) {
  return index_read_map(buf, key, keypart_map, HA_READ_PREFIX_LAST);
}

int ha_tidesdb::index_next(uchar *buf) {
  if (m_point) {
    /* Continue after a point lookup: position the iterator past it. */
    m_point = false;
    std::string hi;
    bool have_hi = scan_end_bound(active_index, &hi);
    int err = range_locks_wanted() ? lock_scan(index_cf(active_index), m_point_key, have_hi ? &hi : NULL, true) : 0;
    if (!err) err = open_iter(index_cf(active_index));
    if (err) return err;
    m_positioned = true;
    m_iter.seek((const uchar *)m_point_key.data(), m_point_key.size());
    while (m_iter.valid() && iter_at_prefix(m_iter, m_point_key)) m_iter.next();
    return fetch(buf, 1, false);
  }
  if (!m_positioned) return HA_ERR_END_OF_FILE;
  m_iter.next();
  return fetch(buf, 1, false);
}

int ha_tidesdb::index_prev(uchar *buf) {
  if (m_point) {
    m_point = false;
    std::string hi = m_point_key;
    bool have_hi = key_successor(hi);
    int err = range_locks_wanted() ? lock_scan(index_cf(active_index), std::string(), have_hi ? &hi : NULL, false) : 0;
    if (!err) err = open_iter(index_cf(active_index));
    if (err) return err;
    m_positioned = true;
    m_iter.seek_for_prev((const uchar *)m_point_key.data(), m_point_key.size());
    while (m_iter.valid() && iter_at_prefix(m_iter, m_point_key)) m_iter.prev();
    return fetch(buf, -1, false);
  }
  if (!m_positioned) return HA_ERR_END_OF_FILE;
  m_iter.prev();
  return fetch(buf, -1, false);
}

int ha_tidesdb::index_next_same(uchar *buf, const uchar *key, uint keylen) {
  if (m_point) return HA_ERR_END_OF_FILE; /* a unique key has one match */
  if (!m_positioned) return HA_ERR_END_OF_FILE;
  m_iter.next();
  return fetch(buf, 1, true);
}

int ha_tidesdb::index_first(uchar *buf) {
  m_point = false;
  int err = 0;
  if (range_locks_wanted()) {
    std::string hi;
    bool have_hi = scan_end_bound(active_index, &hi);
    err = lock_scan(index_cf(active_index), std::string(), have_hi ? &hi : NULL, true);
  }
  if (!err) err = open_iter(index_cf(active_index));
  if (err) return err;
  m_positioned = true;
  m_iter.seek_to_first();
  return fetch(buf, 1, false);
}

int ha_tidesdb::index_last(uchar *buf) {
  m_point = false;
  int err = range_locks_wanted() ? lock_scan(index_cf(active_index), std::string(), NULL, false) : 0;
  if (!err) err = open_iter(index_cf(active_index));
  if (err) return err;
  m_positioned = true;
  m_iter.seek_to_last();
  return fetch(buf, -1, false);
}

/* ---- table scans and positions ---- */

int ha_tidesdb::rnd_init(bool scan) {
  m_point = false;
  m_rnd_started = false;
  m_positioned = false;
  if (!scan) return 0;
  return open_iter(data_cf());
}

int ha_tidesdb::rnd_end() {
  finish_scan_lock();
  m_positioned = false;
  m_rnd_started = false;
  return 0;
}

int ha_tidesdb::rnd_next(uchar *buf) {
  if (!m_rnd_started) {
    int err = range_locks_wanted() ? lock_scan(data_cf(), std::string(), NULL, true) : 0;
    if (!err) err = open_iter(data_cf());
    if (err) return err;
    m_positioned = true;
    m_iter.seek_to_first();
    m_rnd_started = true;
  } else {
    m_iter.next();
  }
  return fetch(buf, 1, false);
}

int ha_tidesdb::rnd_pos(uchar *buf, uchar *pos) {
  int err = read_row_by_pk(buf, pos, ref_length);
  if (!err) m_counts.rows_read++;
  return err;
}

/* Invariant 7: the lock of the row last read is given back at READ
 * COMMITTED (a refused release keeps it; above READ COMMITTED it is kept
 * to the end of the transaction, as InnoDB does). */
void ha_tidesdb::unlock_unused_row() {
  if (m_trx && trx()->unlock_since(m_lock_mark)) g_counters.rows_unlocked++;
  m_last_locked = false;
}

/* The server does not use the row last returned (its WHERE does not hold). */
void ha_tidesdb::unlock_row() {
  if (m_last_locked) unlock_unused_row();
}

/* The ref of the row in record: its primary key encoded from the record
 * itself, which need not be the last row this handler read (row-based
 * replication positions on an event's before image: using the last row
 * read there updated the wrong row, issue #21). A hidden primary key is
 * not in the record: that ref is the last row read's. */
void ha_tidesdb::position(const uchar *record) {
  if (!m_def->hidden_pk) {
    const IndexCodec &c = m_codecs[table->s->primary_key];
    DBUG_ASSERT(c.full_len() == ref_length);
    c.encode(table, record, c.parts(), ref);
    return;
  }
  memcpy(ref, m_last_pk.data(), m_last_pk.size() < ref_length ? m_last_pk.size() : ref_length);
}

/* ---- range estimates ---- */

/* The most rows a range can hold when one integer per row bounds it: a
 * unique index, no part nullable (a unique index takes any number of
 * NULLs), both ends on every part, equal on all but the last, which is an
 * integer column: one row per value between the ends (id BETWEEN a AND
 * b on an integer primary key). UINT64_MAX when there is no such bound. */
static uint64_t unique_int_range_rows(const KEY *ki, const key_range *min_key, const key_range *max_key) {
  uint parts = ki->user_defined_key_parts;
  if (!(ki->flags & HA_NOSAME) || !min_key || !max_key || !parts) return UINT64_MAX;
  key_part_map all = (key_part_map(1) << parts) - 1;
  if ((min_key->keypart_map & all) != all || (max_key->keypart_map & all) != all) return UINT64_MAX;
  uint off = 0;
  for (uint i = 0; i < parts; i++) {
    const KEY_PART_INFO &kp = ki->key_part[i];
    if (kp.null_bit) return UINT64_MAX;
    if (i + 1 < parts) off += kp.store_length;
  }
  if (memcmp(min_key->key, max_key->key, off) != 0) return UINT64_MAX;
  Field *f = ki->key_part[parts - 1].field;
  switch (f->real_type()) {
    case MYSQL_TYPE_TINY:
    case MYSQL_TYPE_SHORT:
    case MYSQL_TYPE_INT24:
    case MYSQL_TYPE_LONG:
    case MYSQL_TYPE_LONGLONG:
      break;
    default:
      return UINT64_MAX;
  }
  if (ki->key_part[parts - 1].length != f->pack_length()) return UINT64_MAX;
  /* Order-preserving unsigned images of the two ends: a signed value's
   * sign bit flipped. */
  uint64_t flip = f->is_unsigned() ? 0 : (uint64_t)1 << 63;
  uint64_t a = (uint64_t)f->val_int(min_key->key + off) ^ flip;
  uint64_t b = (uint64_t)f->val_int(max_key->key + off) ^ flip;
  if (min_key->flag == HA_READ_AFTER_KEY) { /* > a */
    if (a == UINT64_MAX) return 0;
    a++;
  }
  if (max_key->flag == HA_READ_BEFORE_KEY) { /* < b */
    if (b == 0) return 0;
    b--;
  }
  if (a > b) return 0;
  if (b - a == UINT64_MAX) return UINT64_MAX;
  return b - a + 1;
}

ha_rows ha_tidesdb::records_in_range(uint inx, const key_range *min_key, const key_range *max_key,
                                     page_range *pages) {
  std::string lo, hi;
  uint n;
  bool have_hi = false;
  if (min_key) {
    encode_search_key(inx, min_key->key, min_key->keypart_map, &lo, &n);
    if (min_key->flag == HA_READ_AFTER_KEY && !key_successor(lo)) return 1;
  }
  if (max_key) {
    encode_search_key(inx, max_key->key, max_key->keypart_map, &hi, &n);
    have_hi = max_key->flag == HA_READ_BEFORE_KEY ? true : key_successor(hi);
  }
  /* The library's estimate does not scan (memtable skip-list levels,
   * table block indexes, at most two blocks per table for a short range):
   * microseconds whatever the range, where counting rows cost a merged
   * iterator and a scan per call. It counts every stored version, so it
   * is capped by the table's rows, and by one row per value of a unique
   * integer key's range (then the memtables' versions are not walked
   * when the tables alone reach it). */
  uint64_t est = 0;
  if (tdb_approximate_count_max(g_db, index_cf(inx), lo.data(), lo.size(), have_hi ? hi.data() : NULL,
                                have_hi ? hi.size() : 0, unique_int_range_rows(&table->key_info[inx], min_key, max_key),
                                &est) != TDB_OK)
    return 10;
  ha_rows rows = (ha_rows)est;
  if (stats.records > 0 && rows > stats.records) rows = stats.records;
  return rows ? rows : 1;
}

}  // namespace tidesql

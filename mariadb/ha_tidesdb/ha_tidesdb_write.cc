/* ha_tidesdb writes: write_row, update_row, delete_row. Every change goes
 * to the connection's Trx; duplicate checks read through it so they see
 * the transaction's own earlier writes (see ha_tidesdb.h, trx.h). */
#include "ha_tidesdb.h"

#include "online_log.h"
#include "row_format.h"

#include <string.h>

namespace tidesql {

/* Writes of an ALTER TABLE copy (transactions disabled by the server) are
 * committed every this many keys, bounding the overlay's memory. */
static const uint64_t BULK_COMMIT_WRITES = 100000;

int ha_tidesdb::encode_pk(const uchar *rec, std::string *out) {
  const IndexCodec &c = m_codecs[table->s->primary_key];
  out->resize(c.full_len());
  c.encode(table, rec, c.parts(), (uchar *)&(*out)[0]);
  return 0;
}

/* Key and value of secondary index idx for the row rec with primary key
 * pk (layout in row_format.h). */
void ha_tidesdb::encode_index_entry(uint idx, const uchar *rec, const std::string &pk, std::string *key,
                                    std::string *val, bool *has_null) {
  const IndexCodec &c = m_codecs[idx];
  KEY *ki = &table->key_info[idx];
  key->resize(c.full_len());
  bool hn = c.encode(table, rec, c.parts(), (uchar *)&(*key)[0]);
  if (!(ki->flags & HA_NOSAME) || hn) key->append(pk);
  *has_null = hn;
  KEY *pki = m_def->hidden_pk ? NULL : &table->key_info[table->s->primary_key];
  size_t n = pk.size() + ki->key_length + (pki ? pki->key_length : 0);
  val->resize(n);
  uchar *p = (uchar *)&(*val)[0];
  memcpy(p, pk.data(), pk.size());
  p += pk.size();
  key_copy(p, rec, ki, ki->key_length, true);
  if (pki) key_copy(p + ki->key_length, rec, pki, pki->key_length, true);
}

/* Lock primary key pk and fail with a duplicate if a row holds it. Locking
 * first makes the check see the latest committed row (READ COMMITTED) or
 * fail on a newer one (SNAPSHOT). */
int ha_tidesdb::check_unique_pk(const std::string &pk) {
  int err = trx()->get_for_update(data_cf(), (const uchar *)pk.data(), pk.size(), true, NULL);
  if (!err) {
    m_dup_key = table->s->primary_key;
    g_counters.dup_key_errors++;
    return HA_ERR_FOUND_DUPP_KEY;
  }
  return err == HA_ERR_KEY_NOT_FOUND ? 0 : err;
}

/* Duplicate check of a unique index entry (columns without NULL): the
 * key exists and belongs to another row. The key is read with
 * get_for_update: concurrent inserters of one value are serialized by its
 * lock (pessimistic) or by the commit check (optimistic). */
int ha_tidesdb::check_unique_sec(uint idx, const std::string &key, const std::string &pk) {
  int err = trx()->get_for_update(index_cf(idx), (const uchar *)key.data(), key.size(), true, &m_val_buf2);
  if (err == HA_ERR_KEY_NOT_FOUND) return 0;
  if (err) return err;
  if (m_val_buf2.size() >= pk.size() && memcmp(m_val_buf2.data(), pk.data(), pk.size()) == 0) return 0;
  m_dup_key = idx;
  g_counters.dup_key_errors++;
  return HA_ERR_FOUND_DUPP_KEY;
}

/* tidesdb_skip_unique_check applies to plain inserts only: statements
 * that handle duplicates (IGNORE, REPLACE, ON DUPLICATE KEY UPDATE) need
 * to see them. */
bool ha_tidesdb::must_check_unique() const {
  return !sysvars_skip_unique_check(ha_thd()) || m_ignore_dup || m_can_replace || m_insert_update;
}

/* Raise the table's AUTO_INCREMENT counter above an explicit value. */
void ha_tidesdb::bump_autoinc(const uchar *rec) {
  Field *f = table->found_next_number_field;
  if (!f) return;
  my_ptrdiff_t diff = (my_ptrdiff_t)(rec - table->record[0]);
  if (f->is_null(diff)) return;
  f->move_field_offset(diff);
  longlong raw = f->val_int();
  f->move_field_offset(-diff);
  if (!f->is_unsigned() && raw <= 0) return;
  ulonglong v = (ulonglong)raw;
  if (!v) return;
  uint64_t next = v == ULLONG_MAX ? v : v + 1;
  uint64_t cur = m_def->autoinc_next.load();
  while (cur < next && !m_def->autoinc_next.compare_exchange_weak(cur, next)) {
  }
  trx()->touch_table(m_def);
}

/* During ALTER TABLE's copy the server disables transactions: commit
 * large batches as they fill. Any other statement stays atomic. */
int ha_tidesdb::maybe_bulk_commit() {
  THD *thd = ha_thd();
  if (thd->transaction->on || trx()->pending() < BULK_COMMIT_WRITES) return 0;
  return trx()->bulk_commit();
}

/* The stored row with this primary key, locked (or added to the commit
 * check), as an unpacked record: the version index maintenance must
 * remove when the server's image of the row was not read under a lock. */
int ha_tidesdb::locked_row(const std::string &pk, std::vector<uchar> *rec) {
  int err = trx()->get_for_update(data_cf(), (const uchar *)pk.data(), pk.size(), true, &m_val_buf);
  if (err) return err;
  rec->assign(table->s->default_values, table->s->default_values + table->s->reclength);
  return row_unpack(table, (const uchar *)m_val_buf.data(), m_val_buf.size(), rec->data(), &m_def->rowfmt);
}

/* An index is being built with LOCK=NONE: record that this statement
 * wrote primary key pk, and the row stored before (rec, NULL if none),
 * in the table's change log (online_log.h). */
void ha_tidesdb::log_online(const std::string &pk, const uchar *before) {
  std::shared_ptr<OnlineLog> log = online_log_of(m_def.get());
  if (!log) return;
  std::string row;
  if (before) row_pack(table, before, row, &m_def->rowfmt);
  online_log_append(log.get(), trx()->id(), pk, before ? &row : NULL);
}

int ha_tidesdb::write_row(const uchar *buf) {
  int err;
  Trx *t = trx();
  if (table->next_number_field && buf == table->record[0]) {
    if ((err = update_auto_increment())) return err;
    bump_autoinc(buf);
  }
  std::string pk;
  if (m_def->hidden_pk) {
    pk.resize(8);
    put_be64((uchar *)&pk[0], m_def->hidden_next++);
  } else {
    encode_pk(buf, &pk);
  }
  bool check = must_check_unique();
  if (check && !m_def->hidden_pk && (err = check_unique_pk(pk))) return err;
  uint nkeys = table->s->keys;
  std::vector<std::string> keys(nkeys), vals(nkeys);
  for (uint k = 0; k < nkeys; k++) {
    if (is_pk_index(k)) continue;
    bool has_null;
    encode_index_entry(k, buf, pk, &keys[k], &vals[k], &has_null);
    if (!(table->key_info[k].flags & HA_NOSAME) || has_null) continue;
    if (check && (err = check_unique_sec(k, keys[k], pk))) return err;
  }
  std::string row;
  row_pack(table, buf, row, &m_def->rowfmt);
  if ((err = t->put(data_cf(), pk, (const uchar *)row.data(), row.size()))) return err;
  for (uint k = 0; k < nkeys; k++) {
    if (is_pk_index(k)) continue;
    if ((err = t->put(index_cf(k), keys[k], (const uchar *)vals[k].data(), vals[k].size()))) return err;
  }
  t->add_rows(m_def, 1);
  if (m_def->online_on.load(std::memory_order_acquire)) log_online(pk, NULL);
  m_last_pk = pk;
  m_last_locked = false;
  g_counters.rows_inserted++;
  return maybe_bulk_commit();
}

int ha_tidesdb::update_row(const uchar *old_data, const uchar *new_data) {
  int err;
  Trx *t = trx();
  std::string old_pk, new_pk;
  if (m_def->hidden_pk) {
    if (m_last_pk.size() != 8) return HA_ERR_KEY_NOT_FOUND;
    old_pk = new_pk = m_last_pk;
  } else {
    encode_pk(old_data, &old_pk);
    encode_pk(new_data, &new_pk);
  }
  /* Index maintenance removes the entries of the version stored now: the
   * server's image if this statement read the row under a lock. */
  const uchar *old_rec = old_data;
  std::vector<uchar> cur_rec;
  if (!(m_last_locked && m_last_pk == old_pk)) {
    if ((err = locked_row(old_pk, &cur_rec))) return err;
    old_rec = cur_rec.data();
  }
  bool pk_changed = old_pk != new_pk;
  bool check = must_check_unique();
  if (pk_changed && check && (err = check_unique_pk(new_pk))) return err;
  uint nkeys = table->s->keys;
  std::vector<std::string> okeys(nkeys), nkeys_(nkeys), nvals(nkeys);
  std::vector<bool> changed(nkeys, false);
  for (uint k = 0; k < nkeys; k++) {
    if (is_pk_index(k)) continue;
    std::string ov;
    bool onull, nnull;
    encode_index_entry(k, old_rec, old_pk, &okeys[k], &ov, &onull);
    encode_index_entry(k, new_data, new_pk, &nkeys_[k], &nvals[k], &nnull);
    if (okeys[k] == nkeys_[k] && ov == nvals[k]) continue;
    changed[k] = true;
    if ((table->key_info[k].flags & HA_NOSAME) && !nnull && okeys[k] != nkeys_[k] && check &&
        (err = check_unique_sec(k, nkeys_[k], new_pk)))
      return err;
  }
  std::string row;
  row_pack(table, new_data, row, &m_def->rowfmt);
  if (pk_changed && (err = t->del(data_cf(), old_pk))) return err;
  if ((err = t->put(data_cf(), new_pk, (const uchar *)row.data(), row.size()))) return err;
  for (uint k = 0; k < nkeys; k++) {
    if (!changed[k]) continue;
    if (okeys[k] != nkeys_[k] && (err = t->del(index_cf(k), okeys[k]))) return err;
    if ((err = t->put(index_cf(k), nkeys_[k], (const uchar *)nvals[k].data(), nvals[k].size()))) return err;
  }
  if (m_def->online_on.load(std::memory_order_acquire)) {
    log_online(old_pk, old_rec);
    if (pk_changed) log_online(new_pk, NULL);
  }
  bump_autoinc(new_data);
  m_last_pk = new_pk;
  m_last_locked = true; /* written by this transaction */
  g_counters.rows_updated++;
  return 0;
}

int ha_tidesdb::delete_row(const uchar *buf) {
  int err;
  Trx *t = trx();
  std::string pk;
  if (m_def->hidden_pk) {
    if (m_last_pk.size() != 8) return HA_ERR_KEY_NOT_FOUND;
    pk = m_last_pk;
  } else {
    encode_pk(buf, &pk);
  }
  const uchar *rec = buf;
  std::vector<uchar> cur_rec;
  if (!(m_last_locked && m_last_pk == pk)) { /* not read under a lock */
    if ((err = locked_row(pk, &cur_rec))) return err;
    rec = cur_rec.data();
  }
  if ((err = t->del(data_cf(), pk))) return err;
  for (uint k = 0; k < table->s->keys; k++) {
    if (is_pk_index(k)) continue;
    std::string key, val;
    bool has_null;
    encode_index_entry(k, rec, pk, &key, &val, &has_null);
    if ((err = t->del(index_cf(k), key))) return err;
  }
  t->add_rows(m_def, -1);
  if (m_def->online_on.load(std::memory_order_acquire)) log_online(pk, rec);
  m_last_locked = false;
  g_counters.rows_deleted++;
  return 0;
}

}  // namespace tidesql

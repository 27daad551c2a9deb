/* trx: per-connection write overlay, commit, rollback, savepoints and the
 * merged iterator (see trx.h). */
#include "trx.h"

#include "sysvars.h"

#include <string.h>

namespace tidesql {

std::atomic<ulonglong> Trx::s_commits{0};
std::atomic<ulonglong> Trx::s_rollbacks{0};

/* memcmp order with the shorter string first on a tie (the library's). */
static int key_cmp(const uchar *a, size_t al, const std::string &b) {
  size_t n = al < b.size() ? al : b.size();
  int c = n ? memcmp(a, b.data(), n) : 0;
  if (c) return c;
  return al < b.size() ? -1 : (al > b.size() ? 1 : 0);
}

static std::atomic<uint64_t> s_next_trx_id{1};

Trx::Trx() : m_id(s_next_trx_id++) {}

Trx::~Trx() {
  release_locks();
  clear();
}

/* ---- row locks ---- */

int Trx::lock(tdb_cf_t *cf, const std::string &key, THD *thd, bool *acquired) {
  std::string name = lock_name(cf, key);
  int err = lock_acquire(m_id, name, thd, sysvars_lock_wait_timeout(thd), acquired);
  if (!err && *acquired) m_locks.push_back(std::move(name));
  return err;
}

void Trx::unlock(tdb_cf_t *cf, const std::string &key) {
  std::string name = lock_name(cf, key);
  for (size_t i = m_locks.size(); i-- > 0;) {
    if (m_locks[i] == name) {
      lock_release(m_id, name);
      m_locks.erase(m_locks.begin() + (long)i);
      return;
    }
  }
}

void Trx::release_locks() {
  for (const std::string &n : m_locks) lock_release(m_id, n);
  m_locks.clear();
}

/* Drop every pending write and counter. */
void Trx::clear() {
  /* Keep the per-family maps (open MergedIters point at them), empty. */
  for (auto &cfm : m_ov) cfm.second.clear();
  m_tables.clear();
  m_undo.clear();
  m_stmt_undo = 0;
  m_nwrites = 0;
  m_stmt_active = false;
  m_generation++;
}

/* ---- statements ---- */

void Trx::stmt_begin(bool multi) {
  m_multi = multi;
  m_stmt_active = true;
  m_stmt_undo = m_undo.size();
}

void Trx::stmt_end() { m_stmt_active = false; }

void Trx::stmt_rollback() {
  rollback_to(m_stmt_undo);
  m_stmt_active = false;
}

/* Undo overlay changes and row-count changes back to undo position pos. */
void Trx::rollback_to(uint64_t pos) {
  while (m_undo.size() > pos) {
    Undo &u = m_undo.back();
    if (!u.cf) {
      auto it = m_tables.find(u.def);
      if (it != m_tables.end()) it->second.delta -= u.delta;
    } else {
      OvMap &m = m_ov[u.cf];
      if (u.existed)
        m[u.key] = u.prev;
      else
        m.erase(u.key);
    }
    m_undo.pop_back();
  }
  if (m_stmt_undo > pos) m_stmt_undo = pos;
  m_generation++;
}

/* ---- writes ---- */

/* Remember the overlay state of key before a change (multi-statement
 * transactions only: an autocommit statement is undone by clear()). */
void Trx::record_undo(tdb_cf_t *cf, OvMap &m, const std::string &key) {
  if (!m_multi) return;
  Undo u;
  u.cf = cf;
  u.key = key;
  u.def = NULL;
  u.delta = 0;
  auto it = m.find(key);
  u.existed = it != m.end();
  if (u.existed) u.prev = it->second;
  m_undo.push_back(std::move(u));
}

int Trx::put(tdb_cf_t *cf, const std::string &key, const uchar *val, size_t vlen) {
  if (key.empty() || key.size() > TDB_MAX_KEY_SIZE) return HA_ERR_TO_BIG_ROW;
  if (vlen > TDB_MAX_VALUE_SIZE) return HA_ERR_TO_BIG_ROW;
  OvMap &m = m_ov[cf];
  record_undo(cf, m, key);
  OvEntry &e = m[key];
  e.deleted = false;
  e.value.assign((const char *)val, vlen);
  m_nwrites++;
  return 0;
}

int Trx::del(tdb_cf_t *cf, const std::string &key) {
  OvMap &m = m_ov[cf];
  record_undo(cf, m, key);
  OvEntry &e = m[key];
  e.deleted = true;
  e.value.clear();
  m_nwrites++;
  return 0;
}

int Trx::get(tdb_cf_t *cf, const uchar *key, size_t klen, std::string *val, const tdb_snapshot_t *snap) {
  auto mi = m_ov.find(cf);
  if (mi != m_ov.end()) {
    auto it = mi->second.find(std::string((const char *)key, klen));
    if (it != mi->second.end()) {
      if (it->second.deleted) return HA_ERR_KEY_NOT_FOUND;
      if (val) *val = it->second.value;
      return 0;
    }
  }
  void *v;
  size_t vl;
  int rc = tdb_get(g_db, cf, snap, key, klen, &v, &vl);
  if (rc == TDB_ERR_NOT_FOUND) return HA_ERR_KEY_NOT_FOUND;
  if (rc != TDB_OK) return map_tdb_error(rc);
  if (val) val->assign((const char *)v, vl);
  tdb_free(v);
  return 0;
}

void Trx::add_rows(const TableDefPtr &def, int64_t delta) {
  Touched &t = m_tables[def.get()];
  if (!t.def) t.def = def;
  t.delta += delta;
  if (m_multi) {
    Undo u;
    u.cf = NULL;
    u.existed = false;
    u.def = def.get();
    u.delta = delta;
    m_undo.push_back(std::move(u));
  }
}

void Trx::touch_table(const TableDefPtr &def) {
  Touched &t = m_tables[def.get()];
  if (!t.def) t.def = def;
}

/* ---- commit / rollback ---- */

/* Apply the overlay as one atomic batch, then the counters. */
int Trx::commit() {
  int err = 0;
  if (m_nwrites) {
    tdb_batch_t *b;
    if (tdb_batch_create(&b) != TDB_OK) {
      clear();
      return HA_ERR_OUT_OF_MEM;
    }
    int rc = TDB_OK;
    for (auto &cfm : m_ov) {
      for (auto &kv : cfm.second) {
        if (kv.second.deleted)
          rc = tdb_batch_delete(b, cfm.first, kv.first.data(), kv.first.size());
        else
          rc = tdb_batch_put(b, cfm.first, kv.first.data(), kv.first.size(), kv.second.value.data(),
                             kv.second.value.size(), 0);
        if (rc != TDB_OK) break;
      }
      if (rc != TDB_OK) break;
    }
    /* Row counts as they will be once this batch lands. */
    for (auto &t : m_tables) {
      if (rc != TDB_OK) break;
      if (t.second.def->obsolete) continue;
      t.second.def->rows += t.second.delta;
      t.second.delta = 0;
      if ((err = dict_put_counters(b, t.second.def.get()))) break;
    }
    if (rc == TDB_OK && !err) rc = tdb_write(g_db, b);
    if (rc != TDB_OK && !err) err = map_tdb_error(rc);
    if (err) /* the rows did not land: take the counts back */
      for (auto &t : m_tables) t.second.def->rows -= t.second.delta;
    tdb_batch_destroy(b);
  }
  s_commits++;
  clear();
  release_locks();
  return err;
}

void Trx::rollback() {
  if (m_nwrites) s_rollbacks++;
  clear();
  release_locks();
}

/* ---- THD binding and handlerton callbacks ---- */

Trx *trx_get(THD *thd) {
  Trx *trx = (Trx *)thd_get_ha_data(thd, g_hton);
  if (!trx) {
    trx = new Trx();
    thd_set_ha_data(thd, g_hton, trx);
  }
  return trx;
}

static bool in_multi(THD *thd) { return thd_test_options(thd, OPTION_NOT_AUTOCOMMIT | OPTION_BEGIN); }

void trx_register(THD *thd, Trx *trx) {
  bool multi = in_multi(thd);
  if (!trx->stmt_active()) trx->stmt_begin(multi);
  trans_register_ha(thd, false, g_hton, 0);
  if (multi) trans_register_ha(thd, true, g_hton, 0);
}

int trx_hton_commit(handlerton *, THD *thd, bool all) {
  Trx *trx = (Trx *)thd_get_ha_data(thd, g_hton);
  if (!trx) return 0;
  if (all || !in_multi(thd)) return trx->commit();
  trx->stmt_end();
  return 0;
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
    delete trx;
    thd_set_ha_data(thd, g_hton, NULL);
  }
  return 0;
}

int trx_hton_savepoint_set(handlerton *, THD *thd, void *sv) {
  Trx *trx = trx_get(thd);
  uint64_t pos = trx->savepoint();
  memcpy(sv, &pos, sizeof pos);
  return 0;
}

int trx_hton_savepoint_rollback(handlerton *, THD *thd, void *sv) {
  Trx *trx = trx_get(thd);
  uint64_t pos;
  memcpy(&pos, sv, sizeof pos);
  trx->rollback_to(pos);
  return 0;
}

int trx_hton_savepoint_release(handlerton *, THD *, void *) { return 0; }

/* ---- MergedIter ---- */

int MergedIter::open(tdb_cf_t *cf, Trx *trx, const tdb_snapshot_t *snap) {
  close();
  int rc = tdb_iter_create(g_db, cf, snap, &m_base);
  if (rc != TDB_OK) {
    m_base = NULL;
    return map_tdb_error(rc);
  }
  m_cf = cf;
  m_trx = trx;
  m_ov = trx ? &trx->overlay(cf) : NULL;
  m_gen = trx ? trx->generation() : 0;
  m_valid = false;
  return 0;
}

void MergedIter::close() {
  if (m_base) tdb_iter_destroy(m_base);
  m_base = NULL;
  m_ov = NULL;
  m_trx = NULL;
  m_valid = false;
}

bool MergedIter::base_valid() const { return tdb_iter_valid(m_base) != 0; }

int MergedIter::status() const { return m_base ? tdb_iter_status(m_base) : TDB_OK; }

/* Pick the smallest of both sides; overlay wins ties, tombstones hide. */
void MergedIter::resolve_fwd() {
  m_dir = 1;
  for (;;) {
    bool bv = base_valid();
    bool ov = m_ov && m_oi != m_ov->end();
    if (!bv && !ov) {
      m_valid = false;
      return;
    }
    int c = 1; /* <0: base first, 0: same key, >0: overlay first */
    if (bv && ov) {
      size_t kl;
      const uchar *k = (const uchar *)tdb_iter_key(m_base, &kl);
      c = key_cmp(k, kl, m_oi->first);
    } else if (bv) {
      c = -1;
    }
    if (c < 0) {
      size_t kl;
      const uchar *k = (const uchar *)tdb_iter_key(m_base, &kl);
      m_cur.assign((const char *)k, kl);
      m_cur_ov = false;
      m_valid = true;
      return;
    }
    if (c == 0) tdb_iter_next(m_base); /* shadowed by the overlay */
    if (m_oi->second.deleted) {
      ++m_oi;
      continue;
    }
    m_cur = m_oi->first;
    m_cur_ov = true;
    m_valid = true;
    return;
  }
}

/* Pick the largest of both sides; overlay wins ties, tombstones hide. */
void MergedIter::resolve_bwd() {
  m_dir = -1;
  for (;;) {
    bool bv = base_valid();
    bool ov = m_ov && m_oi_valid;
    if (!bv && !ov) {
      m_valid = false;
      return;
    }
    int c = -1; /* >0: base first, 0: same key, <0: overlay first */
    if (bv && ov) {
      size_t kl;
      const uchar *k = (const uchar *)tdb_iter_key(m_base, &kl);
      c = key_cmp(k, kl, m_oi->first);
    } else if (bv) {
      c = 1;
    }
    if (c > 0) {
      size_t kl;
      const uchar *k = (const uchar *)tdb_iter_key(m_base, &kl);
      m_cur.assign((const char *)k, kl);
      m_cur_ov = false;
      m_valid = true;
      return;
    }
    if (c == 0) tdb_iter_prev(m_base);
    if (m_oi->second.deleted) {
      if (m_oi == m_ov->begin())
        m_oi_valid = false;
      else
        --m_oi;
      continue;
    }
    m_cur = m_oi->first;
    m_cur_ov = true;
    m_valid = true;
    return;
  }
}

void MergedIter::seek(const uchar *k, size_t kl) {
  if (m_trx) m_gen = m_trx->generation();
  tdb_iter_seek(m_base, k, kl);
  if (m_ov) m_oi = m_ov->lower_bound(std::string((const char *)k, kl));
  resolve_fwd();
}

void MergedIter::seek_for_prev(const uchar *k, size_t kl) {
  if (m_trx) m_gen = m_trx->generation();
  tdb_iter_seek_for_prev(m_base, k, kl);
  if (m_ov) {
    m_oi = m_ov->upper_bound(std::string((const char *)k, kl));
    m_oi_valid = m_oi != m_ov->begin();
    if (m_oi_valid) --m_oi;
  }
  resolve_bwd();
}

void MergedIter::seek_to_first() {
  if (m_trx) m_gen = m_trx->generation();
  tdb_iter_seek_to_first(m_base);
  if (m_ov) m_oi = m_ov->begin();
  resolve_fwd();
}

void MergedIter::seek_to_last() {
  if (m_trx) m_gen = m_trx->generation();
  tdb_iter_seek_to_last(m_base);
  if (m_ov) {
    m_oi_valid = !m_ov->empty();
    if (m_oi_valid) m_oi = std::prev(m_ov->end());
  }
  resolve_bwd();
}

/* Both sides at the first entries > k. */
void MergedIter::reposition_after(const std::string &k) {
  if (m_trx) m_gen = m_trx->generation();
  tdb_iter_seek(m_base, k.data(), k.size());
  if (base_valid()) {
    size_t kl;
    const uchar *bk = (const uchar *)tdb_iter_key(m_base, &kl);
    if (key_cmp(bk, kl, k) == 0) tdb_iter_next(m_base);
  }
  if (m_ov) m_oi = m_ov->upper_bound(k);
  resolve_fwd();
}

/* Both sides at the last entries < k. */
void MergedIter::reposition_before(const std::string &k) {
  if (m_trx) m_gen = m_trx->generation();
  tdb_iter_seek_for_prev(m_base, k.data(), k.size());
  if (base_valid()) {
    size_t kl;
    const uchar *bk = (const uchar *)tdb_iter_key(m_base, &kl);
    if (key_cmp(bk, kl, k) == 0) tdb_iter_prev(m_base);
  }
  if (m_ov) {
    m_oi = m_ov->lower_bound(k);
    m_oi_valid = m_oi != m_ov->begin();
    if (m_oi_valid) --m_oi;
  }
  resolve_bwd();
}

void MergedIter::next() {
  if (!m_valid) return;
  if (m_dir != 1 || (m_trx && m_trx->generation() != m_gen)) {
    reposition_after(m_cur);
    return;
  }
  /* A base-side current entry is where the base iterator sits; after an
   * overlay-side one the base iterator is already past it. The overlay
   * side is re-found by key: entries may have been added meanwhile. */
  if (!m_cur_ov) tdb_iter_next(m_base);
  if (m_ov) m_oi = m_ov->upper_bound(m_cur);
  resolve_fwd();
}

void MergedIter::prev() {
  if (!m_valid) return;
  if (m_dir != -1 || (m_trx && m_trx->generation() != m_gen)) {
    reposition_before(m_cur);
    return;
  }
  if (!m_cur_ov) tdb_iter_prev(m_base);
  if (m_ov) {
    m_oi = m_ov->lower_bound(m_cur);
    m_oi_valid = m_oi != m_ov->begin();
    if (m_oi_valid) --m_oi;
  }
  resolve_bwd();
}

const uchar *MergedIter::key(size_t *len) const {
  *len = m_cur.size();
  return (const uchar *)m_cur.data();
}

const uchar *MergedIter::value(size_t *len) const {
  if (m_cur_ov) {
    *len = m_oi->second.value.size();
    return (const uchar *)m_oi->second.value.data();
  }
  return (const uchar *)tdb_iter_value(m_base, len);
}

}  // namespace tidesql

/* ha_tidesdb CHECK TABLE: the table's families read end to end and its
 * secondary indexes checked against its rows.
 *
 * Invariants
 *  1. Everything is read at one library snapshot taken at the start, so a
 *     check under concurrent writes compares one consistent state (CHECK
 *     TABLE holds only a read lock; writers go on).
 *  2. Every entry of every family of the table is visited by an iterator
 *     that verifies each block's checksum: a damaged file makes the check
 *     fail with the library's message, never a crash or a silent pass.
 *  3. Without QUICK, a secondary index is consistent when every row has
 *     exactly its entry (same key, same value as write_row would store)
 *     and the index holds no other entry: the row pass looks up each
 *     row's entries, the index pass counts them.
 *  4. Findings are pushed as warnings (they appear as CHECK TABLE rows);
 *     the result is HA_ADMIN_CORRUPT when anything was found.
 */
#include "ha_tidesdb.h"

#include "row_format.h"

#include <stdarg.h>
#include <stdio.h>

#include <vector>

namespace tidesql {

namespace {

/* A snapshot and iterators over it, released on every path. */
struct CheckView {
  tdb_snapshot_t *snap = NULL;
  ~CheckView() {
    if (snap) tdb_snapshot_release(g_db, snap);
  }
};

struct IterGuard {
  tdb_iter_t *it = NULL;
  ~IterGuard() {
    if (it) tdb_iter_destroy(it);
  }
};

}  // namespace

/* One finding: a warning row of CHECK TABLE. */
static void check_warn(THD *thd, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void check_warn(THD *thd, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  push_warning(thd, Sql_condition::WARN_LEVEL_WARN, ER_NOT_KEYFILE, buf);
}

/* Count the entries of one family at snap (checksums verified by the
 * reads); returns the iterator's final status. */
static int count_family(tdb_cf_t *cf, tdb_snapshot_t *snap, ulonglong *count) {
  IterGuard g;
  int rc = tdb_iter_create(g_db, cf, snap, &g.it);
  if (rc != TDB_OK) return rc;
  *count = 0;
  for (tdb_iter_seek_to_first(g.it); tdb_iter_valid(g.it); tdb_iter_next(g.it)) (*count)++;
  return tdb_iter_status(g.it);
}

int ha_tidesdb::check(THD *thd, HA_CHECK_OPT *opt) {
  if (!g_db || !m_def) return HA_ADMIN_FAILED;
  const bool quick = (opt->flags & T_QUICK) != 0;
  const uint nkeys = table->s->keys;
  CheckView view;
  view.snap = tdb_snapshot_create(g_db);
  if (!view.snap) return HA_ADMIN_FAILED;
  bool corrupt = false;

  /* Pass 1: the rows; each row's index entries (invariant 3). */
  ulonglong rows = 0, undecodable = 0;
  std::vector<ulonglong> missing(nkeys, 0), differ(nkeys, 0);
  {
    IterGuard g;
    int rc = tdb_iter_create(g_db, data_cf(), view.snap, &g.it);
    if (rc != TDB_OK) {
      check_warn(thd, "TidesDB: rows: %s",
                          tdb_last_error());
      return HA_ADMIN_CORRUPT;
    }
    uchar *rec = table->record[0];
    std::string key, val;
    /* Every column is decoded and every indexed virtual column computed. */
    MY_BITMAP *old_read = tmp_use_all_columns(table, &table->read_set);
    for (tdb_iter_seek_to_first(g.it); tdb_iter_valid(g.it); tdb_iter_next(g.it)) {
      rows++;
      if (quick || thd_killed(thd)) continue;
      size_t kl, vl;
      const uchar *k = (const uchar *)tdb_iter_key(g.it, &kl);
      const uchar *v = (const uchar *)tdb_iter_value(g.it, &vl);
      if (row_unpack(table, v, vl, rec, &m_def->rowfmt)) {
        undecodable++;
        continue;
      }
      if (table->vfield) table->update_virtual_fields(this, VCOL_UPDATE_FOR_READ);
      std::string pk((const char *)k, kl);
      for (uint i = 0; i < nkeys; i++) {
        if (is_pk_index(i)) continue;
        bool has_null;
        encode_index_entry(i, rec, pk, &key, &val, &has_null);
        void *got = NULL;
        size_t gl = 0;
        int r = tdb_get(g_db, index_cf(i), view.snap, key.data(), key.size(), &got, &gl);
        if (r == TDB_ERR_NOT_FOUND) {
          missing[i]++;
        } else if (r != TDB_OK) {
          check_warn(thd, "TidesDB: index %s: %s",
                              table->key_info[i].name.str, tdb_last_error());
          tdb_free(got);
          tmp_restore_column_map(&table->read_set, old_read);
          return HA_ADMIN_CORRUPT;
        } else if (gl != val.size() || memcmp(got, val.data(), gl) != 0) {
          differ[i]++;
        }
        tdb_free(got);
      }
    }
    tmp_restore_column_map(&table->read_set, old_read);
    if (thd_killed(thd)) return HA_ADMIN_FAILED;
    rc = tdb_iter_status(g.it);
    if (rc != TDB_OK) {
      check_warn(thd, "TidesDB: rows: %s (after %llu rows)", tdb_last_error(), rows);
      return HA_ADMIN_CORRUPT;
    }
    if (undecodable) {
      check_warn(thd, "TidesDB: %llu of %llu rows cannot be decoded", undecodable, rows);
      corrupt = true;
    }
  }

  /* Pass 2: every index family read through; its entry count. */
  for (uint i = 0; i < nkeys; i++) {
    if (is_pk_index(i)) continue;
    const char *name = table->key_info[i].name.str;
    ulonglong entries = 0;
    int rc = count_family(index_cf(i), view.snap, &entries);
    if (rc != TDB_OK) {
      check_warn(thd, "TidesDB: index %s: %s", name,
                          tdb_last_error());
      return HA_ADMIN_CORRUPT;
    }
    if (quick) continue;
    if (missing[i]) {
      check_warn(thd, "TidesDB: index %s: %llu of %llu rows have no entry", name, missing[i], rows);
      corrupt = true;
    }
    if (differ[i]) {
      check_warn(thd, "TidesDB: index %s: %llu of %llu rows have an entry with a wrong value", name, differ[i],
                 rows);
      corrupt = true;
    }
    ulonglong found = rows - missing[i];
    if (entries != found) {
      check_warn(thd, "TidesDB: index %s: %llu entries, but %llu rows have one (entries without their row)", name,
                 entries, found);
      corrupt = true;
    }
  }
  return corrupt ? HA_ADMIN_CORRUPT : HA_ADMIN_OK;
}

}  // namespace tidesql

/* ha_tidesdb DDL: CREATE/DROP/RENAME/TRUNCATE TABLE, the answers to ALTER
 * TABLE, SHOW CREATE TABLE's AUTO_INCREMENT, and OPTIMIZE TABLE (see
 * ha_tidesdb.h; the dictionary side of each is in dict.cc).
 *
 * Invariants
 *  1. A table is created only if every index's encoded key (with the
 *     primary key appended to a secondary index) fits MAX_ENCODED_KEY;
 *     FULLTEXT and SPATIAL indexes, and temporary tables, are refused.
 *  2. The dictionary record of a table carries the version of the .frm
 *     it was created or last altered with (dict.h); ALTER TABLE in place
 *     is in ha_tidesdb_alter.cc.
 *  3. DROP, RENAME and TRUNCATE go through the dictionary (dict.h), which
 *     retires the old definition; open handlers re-fetch theirs at their
 *     next statement (ha_tidesdb.h, invariant 1). TRUNCATE rebinds at once.
 */
#include "ha_tidesdb.h"

namespace tidesql {

/* ---- CREATE, DROP, RENAME, TRUNCATE ---- */

/* CREATE TABLE: check the indexes encode within limits, then create the
 * table's column families and dictionary entry. */
int ha_tidesdb::create(const char *name, TABLE *form, HA_CREATE_INFO *create_info) {
  if (!g_db) return HA_ERR_INTERNAL_ERROR;
  if (create_info->tmp_table()) return HA_ERR_UNSUPPORTED;
  TABLE_SHARE *s = form->s;
  for (uint k = 0; k < s->keys; k++) {
    KEY *key = &form->key_info[k];
    if (key->flags & (HA_FULLTEXT | HA_SPATIAL)) return HA_ERR_UNSUPPORTED;
    IndexCodec c;
    c.init(key);
    uint32 len = c.full_len();
    if (k != s->primary_key && s->primary_key != MAX_KEY) {
      IndexCodec pk;
      pk.init(&form->key_info[s->primary_key]);
      len += pk.full_len();
    }
    if (len > MAX_ENCODED_KEY) {
      my_printf_error(ER_TOO_LONG_KEY, "TidesDB: index %s encodes to %u bytes (limit %u)", MYF(0),
                      key->name.str, len, MAX_ENCODED_KEY);
      return HA_ERR_UNSUPPORTED;
    }
  }
  tdb_cf_config_t cfg;
  sysvars_cf_config(s->option_struct, &cfg);
  std::string version((const char *)s->tabledef_version.str, s->tabledef_version.length);
  int err = dict_create(dict_name_from_path(name), s->keys, s->primary_key == MAX_KEY, cfg,
                        create_info->auto_increment_value, version);
  /* A library refusal (a table option in the server's range that the
   * library cannot honour, e.g. WRITE_BUFFER_SIZE=1, or an I/O error):
   * the server would only say "errno: 201 Unknown error"; say what. */
  if (err == HA_ERR_LAST + 1 && !ha_thd()->is_error())
    my_printf_error(ER_CANT_CREATE_TABLE, "Can't create table `%s`.`%s` (%s)", MYF(0), s->db.str,
                    s->table_name.str, last_error_detail().c_str());
  return err;
}

/* DROP TABLE. */
int ha_tidesdb::delete_table(const char *name) {
  if (!g_db) return HA_ERR_INTERNAL_ERROR;
  return dict_drop(dict_name_from_path(name));
}

/* RENAME TABLE (and ALTER's final swap). */
int ha_tidesdb::rename_table(const char *from, const char *to) {
  if (!g_db) return HA_ERR_INTERNAL_ERROR;
  return dict_rename(dict_name_from_path(from), dict_name_from_path(to));
}

/* TRUNCATE TABLE: new, empty column families; rebind this handler. */
int ha_tidesdb::truncate() {
  close_iter();
  TableDefPtr def;
  int err = dict_truncate(m_def->name, &def);
  if (err) return err;
  if ((err = bind_def(def))) return err;
  load_counters();
  return 0;
}

/* SHOW CREATE TABLE and ALTER: the table's next AUTO_INCREMENT value. */
void ha_tidesdb::update_create_info(HA_CREATE_INFO *create_info) {
  if (!(create_info->used_fields & HA_CREATE_USED_AUTO)) {
    info(HA_STATUS_AUTO);
    create_info->auto_increment_value = stats.auto_increment_value;
  }
}

/* ---- OPTIMIZE TABLE ---- */

/* Compact every column family of the table. */
int ha_tidesdb::optimize(THD *thd, HA_CHECK_OPT *check_opt) {
  for (tdb_cf_t *cf : m_def->cfs) {
    int rc = tdb_compact(g_db, cf);
    if (rc != TDB_OK) {
      map_tdb_error(rc);
      return HA_ADMIN_FAILED;
    }
  }
  return HA_ADMIN_OK;
}

}  // namespace tidesql

/* ha_tidesdb: capabilities, open/close, DDL entry points, locking and
 * AUTO_INCREMENT (see ha_tidesdb.h; statistics in ha_tidesdb_stats.cc). */
#include "ha_tidesdb.h"

#include "row_format.h"

#include <string.h>

namespace tidesql {

/* Encoded key budget (the library allows 64 KiB). */
static const uint32 MAX_ENCODED_KEY = 16384;

ha_tidesdb::ha_tidesdb(handlerton *hton, TABLE_SHARE *share) : handler(hton, share) {}

ha_tidesdb::~ha_tidesdb() {
  close_iter();
  my_free(m_scratch);
}

/* ---- capabilities ---- */

handler::Table_flags ha_tidesdb::table_flags() const {
  return HA_BINLOG_ROW_CAPABLE | HA_BINLOG_STMT_CAPABLE | HA_REC_NOT_IN_SEQ | HA_NULL_IN_KEY |
         HA_CAN_INDEX_BLOBS | HA_PRIMARY_KEY_IN_READ_INDEX | HA_PRIMARY_KEY_REQUIRED_FOR_POSITION |
         HA_PRIMARY_KEY_REQUIRED_FOR_DELETE | HA_REQUIRES_KEY_COLUMNS_FOR_DELETE |
         HA_CAN_BIT_FIELD | HA_CAN_GEOMETRY | HA_TABLE_SCAN_ON_INDEX |
         HA_CAN_VIRTUAL_COLUMNS | HA_CRASH_SAFE;
}

ulong ha_tidesdb::index_flags(uint idx, uint part, bool all_parts) const {
  ulong f = HA_READ_NEXT | HA_READ_PREV | HA_READ_ORDER | HA_READ_RANGE | HA_KEYREAD_ONLY;
  if (table_share && idx == table_share->primary_key) f |= HA_CLUSTERED_INDEX;
  return f;
}

/* Full scan cost: pages of the data family plus a per-row cost. */
double ha_tidesdb::scan_time() {
  return (double)(stats.data_file_length / 16384 + 2) + (double)stats.records / 20.0;
}

/* Clustered primary key ranges cost a share of a scan; secondary index
 * ranges one lookup per row. */
double ha_tidesdb::read_time(uint index, uint ranges, ha_rows rows) {
  if (table->s->primary_key != MAX_KEY && index == table->s->primary_key) {
    double total = scan_time();
    ha_rows n = stats.records ? stats.records : 1;
    if (rows >= n) return total + ranges;
    return ranges + (double)rows / (double)n * total;
  }
  return handler::read_time(index, ranges, rows);
}

enum_alter_inplace_result ha_tidesdb::check_if_supported_inplace_alter(TABLE *altered_table,
                                                                       Alter_inplace_info *info) {
  /* Column families keep the options they were created with: changing
   * table options rebuilds the table. */
  if (info->handler_flags & ALTER_CHANGE_CREATE_OPTION) return HA_ALTER_INPLACE_NOT_SUPPORTED;
  return handler::check_if_supported_inplace_alter(altered_table, info);
}

/* ---- open/close ---- */

TdbShare *ha_tidesdb::get_share() {
  lock_shared_ha_data();
  TdbShare *s = static_cast<TdbShare *>(get_ha_share_ptr());
  if (!s) {
    s = new TdbShare();
    set_ha_share_ptr(s);
  }
  unlock_shared_ha_data();
  return s;
}

/* The transaction of the thread using this handler. The pointer is
 * dropped at the end of every statement: a TABLE (and its handler) may be
 * used by another connection next. */
Trx *ha_tidesdb::trx() {
  if (!m_trx) m_trx = trx_get(ha_thd());
  return m_trx;
}

/* Attach a definition: check it matches the .frm, build the key codecs. */
int ha_tidesdb::bind_def(const TableDefPtr &def) {
  TABLE_SHARE *s = table->s;
  bool hidden = s->primary_key == MAX_KEY;
  if (def->nkeys != s->keys || def->hidden_pk != hidden) {
    log_warning("TidesDB: table %s: dictionary has %u keys%s, the .frm %u keys%s", def->name.c_str(),
                def->nkeys, def->hidden_pk ? " (hidden pk)" : "", s->keys, hidden ? " (hidden pk)" : "");
    return HA_ERR_TABLE_DEF_CHANGED;
  }
  m_codecs.resize(s->keys);
  for (uint k = 0; k < s->keys; k++) m_codecs[k].init(&table->key_info[k]);
  m_pk_len = hidden ? 8 : m_codecs[s->primary_key].full_len();
  m_def = def;
  close_iter();
  return 0;
}

/* Re-fetch the definition after DDL retired ours. */
int ha_tidesdb::refresh_def() {
  TableDefPtr def;
  int err = dict_get(m_def->name, &def);
  if (err) return err;
  if ((err = bind_def(def))) return err;
  load_counters();
  return 0;
}

int ha_tidesdb::open(const char *name, int mode, uint test_if_locked) {
  if (!g_db) return HA_ERR_INTERNAL_ERROR;
  TableDefPtr def;
  int err = dict_get(dict_name_from_path(name), &def);
  if (err) return err;
  if ((err = bind_def(def))) return err;
  if (!(m_share = get_share())) return HA_ERR_OUT_OF_MEM;
  thr_lock_data_init(&m_share->lock, &m_lock, NULL);
  m_scratch = (uchar *)my_malloc(PSI_NOT_INSTRUMENTED, table->s->reclength + 8, MYF(MY_WME));
  if (!m_scratch) return HA_ERR_OUT_OF_MEM;
  memcpy(m_scratch, table->s->default_values, table->s->reclength);
  ref_length = m_pk_len;
  /* Table scans walk the primary key: an UPDATE changing it must buffer
   * the rows first (the server checks key_used_on_scan). */
  key_used_on_scan = table->s->primary_key;
  load_counters();
  info(HA_STATUS_NO_LOCK | HA_STATUS_VARIABLE | HA_STATUS_CONST);
  return 0;
}

int ha_tidesdb::close(void) {
  close_iter();
  m_def.reset();
  my_free(m_scratch);
  m_scratch = NULL;
  return 0;
}

/* Initialise the hidden row id and AUTO_INCREMENT counters of the
 * definition from the largest stored keys (once per definition). */
void ha_tidesdb::load_counters() {
  TableDef *def = m_def.get();
  std::lock_guard<std::mutex> g(def->mu);
  if (def->counters_loaded) return;
  tdb_iter_t *it;
  if (def->hidden_pk && tdb_iter_create(g_db, data_cf(), NULL, &it) == TDB_OK) {
    tdb_iter_seek_to_last(it);
    size_t kl;
    if (tdb_iter_valid(it)) {
      const uchar *k = (const uchar *)tdb_iter_key(it, &kl);
      if (kl == 8) def->hidden_next = get_be64(k) + 1;
    }
    tdb_iter_destroy(it);
  }
  Field *ai = table->found_next_number_field;
  uint idx = table->s->next_number_index;
  if (ai && idx < table->s->keys && table->s->next_number_keypart == 0 &&
      tdb_iter_create(g_db, index_cf(idx), NULL, &it) == TDB_OK) {
    tdb_iter_seek_to_last(it);
    if (tdb_iter_valid(it)) {
      size_t kl, vl;
      const uchar *k = (const uchar *)tdb_iter_key(it, &kl);
      const uchar *v = (const uchar *)tdb_iter_value(it, &vl);
      bool ok;
      if (is_pk_index(idx)) {
        ok = row_unpack(table, v, vl, m_scratch) == 0;
      } else {
        KEY *ki = &table->key_info[idx];
        ok = vl >= m_pk_len + ki->key_length;
        if (ok) key_restore(m_scratch, v + m_pk_len, ki, ki->key_length);
      }
      (void)k;
      if (ok) {
        my_ptrdiff_t diff = (my_ptrdiff_t)(m_scratch - table->record[0]);
        ai->move_field_offset(diff);
        longlong raw = ai->val_int();
        bool neg = !ai->is_unsigned() && raw < 0;
        ai->move_field_offset(-diff);
        ulonglong next = neg ? 1 : (ulonglong)raw + 1;
        if (!neg && (ulonglong)raw == ULLONG_MAX) next = ULLONG_MAX;
        if (next > def->autoinc_next) def->autoinc_next = next;
      }
      memcpy(m_scratch, table->s->default_values, table->s->reclength);
    }
    tdb_iter_destroy(it);
  }
  if (def->autoinc_next == 0) def->autoinc_next = 1;
  def->counters_loaded = true;
}

/* ---- DDL ---- */

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
  int err = dict_create(dict_name_from_path(name), s->keys, s->primary_key == MAX_KEY, cfg,
                        create_info->auto_increment_value);
  /* A library refusal (a table option in the server's range that the
   * library cannot honour, e.g. WRITE_BUFFER_SIZE=1, or an I/O error):
   * the server would only say "errno: 201 Unknown error"; say what. */
  if (err == HA_ERR_LAST + 1 && !ha_thd()->is_error())
    my_printf_error(ER_CANT_CREATE_TABLE, "Can't create table `%s`.`%s` (%s)", MYF(0), s->db.str,
                    s->table_name.str, last_error_detail().c_str());
  return err;
}

int ha_tidesdb::delete_table(const char *name) {
  if (!g_db) return HA_ERR_INTERNAL_ERROR;
  return dict_drop(dict_name_from_path(name));
}

int ha_tidesdb::rename_table(const char *from, const char *to) {
  if (!g_db) return HA_ERR_INTERNAL_ERROR;
  return dict_rename(dict_name_from_path(from), dict_name_from_path(to));
}

int ha_tidesdb::truncate() {
  close_iter();
  TableDefPtr def;
  int err = dict_truncate(m_def->name, &def);
  if (err) return err;
  if ((err = bind_def(def))) return err;
  load_counters();
  return 0;
}

void ha_tidesdb::update_create_info(HA_CREATE_INFO *create_info) {
  if (!(create_info->used_fields & HA_CREATE_USED_AUTO)) {
    info(HA_STATUS_AUTO);
    create_info->auto_increment_value = stats.auto_increment_value;
  }
}

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

bool ha_tidesdb::get_error_message(int error, String *buf) {
  /* The server's texts of these say it all (the library's detail names
   * internal transaction ids). */
  if (error == HA_ERR_LOCK_DEADLOCK || error == HA_ERR_LOCK_WAIT_TIMEOUT) return false;
  /* The library's detail names a file at best (an SST of a damaged
   * table): say which table, so the user knows what is damaged. */
  std::string d = last_error_detail();
  if (d.empty()) d = "TidesDB: error " + std::to_string(error);
  if (table_share)
    d += std::string(" (table ") + table_share->db.str + "." + table_share->table_name.str + ")";
  buf->copy(d.data(), d.size(), system_charset_info);
  return false;
}

/* ---- statement boundaries and locks ---- */

int ha_tidesdb::extra(enum ha_extra_function op) {
  switch (op) {
    case HA_EXTRA_IGNORE_DUP_KEY:
      m_ignore_dup = true;
      break;
    case HA_EXTRA_NO_IGNORE_DUP_KEY:
      m_ignore_dup = false;
      break;
    case HA_EXTRA_WRITE_CAN_REPLACE:
      m_can_replace = true;
      break;
    case HA_EXTRA_WRITE_CANNOT_REPLACE:
      m_can_replace = false;
      break;
    case HA_EXTRA_INSERT_WITH_UPDATE:
      m_insert_update = true;
      break;
    default:
      break;
  }
  return 0;
}

int ha_tidesdb::reset() {
  m_ignore_dup = m_can_replace = m_insert_update = false;
  close_iter();
  m_last_locked = false;
  m_trx = NULL;
  m_point = false;
  m_rnd_started = false;
  return 0;
}

/* Row lock mode of a statement from its table lock: FOR UPDATE and
 * writes lock exclusively, LOCK IN SHARE MODE (and SERIALIZABLE reads,
 * which the server turns into it) shared. */
static RowLock row_lock_of(thr_lock_type t) {
  if (t == TL_READ_WITH_SHARED_LOCKS) return ROW_LOCK_SHARED;
  if (t >= TL_WRITE_ALLOW_WRITE) return ROW_LOCK_EXCLUSIVE;
  return ROW_LOCK_NONE;
}

int ha_tidesdb::external_lock(THD *thd, int lock_type) {
  if (lock_type == F_UNLCK) {
    close_iter();
    m_lock_type = F_UNLCK;
    m_row_lock = ROW_LOCK_NONE;
    m_last_locked = false;
    m_trx = NULL;
    return 0;
  }
  if (m_def && m_def->obsolete) {
    int err = refresh_def();
    if (err) return err;
  }
  m_lock_type = lock_type;
  m_row_lock = lock_type == F_WRLCK ? ROW_LOCK_EXCLUSIVE : row_lock_of(m_stored_lock);
  m_last_locked = false;
  m_trx = trx_get(thd);
  int err = trx_register(thd, m_trx);
  serializable_reads(thd);
  return err;
}

/* SERIALIZABLE with row locks: reads of a multi-statement transaction
 * take shared locks (as InnoDB), so write skew ends in a lock wait or a
 * deadlock instead of a commit-time failure. Autocommit SELECTs read
 * their snapshot. */
void ha_tidesdb::serializable_reads(THD *thd) {
  if (m_row_lock == ROW_LOCK_NONE && m_trx->active() && m_trx->pessimistic() &&
      m_trx->isolation() == TDB_ISO_SERIALIZABLE && thd_test_options(thd, OPTION_NOT_AUTOCOMMIT | OPTION_BEGIN))
    m_row_lock = ROW_LOCK_SHARED;
}

/* A statement under LOCK TABLES (external_lock ran at LOCK TABLES). */
int ha_tidesdb::start_stmt(THD *thd, thr_lock_type lock_type) {
  close_iter();
  if (m_def && m_def->obsolete) {
    int err = refresh_def();
    if (err) return err;
  }
  m_row_lock = row_lock_of(lock_type);
  m_last_locked = false;
  m_trx = trx_get(thd);
  int err = trx_register(thd, m_trx);
  serializable_reads(thd);
  return err;
}

THR_LOCK_DATA **ha_tidesdb::store_lock(THD *thd, THR_LOCK_DATA **to, enum thr_lock_type lock_type) {
  if (lock_type != TL_IGNORE) m_stored_lock = lock_type;
  if (lock_type != TL_IGNORE && m_lock.type == TL_UNLOCK) {
    /* Row-level engine: let writers run concurrently outside LOCK TABLES. */
    if (lock_type >= TL_WRITE_CONCURRENT_INSERT && lock_type <= TL_WRITE && !thd_in_lock_tables(thd) &&
        !thd_tablespace_op(thd))
      lock_type = TL_WRITE_ALLOW_WRITE;
    if (lock_type == TL_READ_NO_INSERT && !thd_in_lock_tables(thd)) lock_type = TL_READ;
    m_lock.type = lock_type;
  }
  *to++ = &m_lock;
  return to;
}

/* ---- AUTO_INCREMENT ---- */

/* Reserve nb_desired_values values of the series offset + k * increment
 * from the table's shared counter (lock-free: concurrent inserts never
 * get the same value). */
void ha_tidesdb::get_auto_increment(ulonglong offset, ulonglong increment, ulonglong nb_desired_values,
                                    ulonglong *first_value, ulonglong *nb_reserved_values) {
  TableDef *def = m_def.get();
  if (!def->counters_loaded) load_counters();
  if (increment == 0) increment = 1;
  if (nb_desired_values == 0) nb_desired_values = 1;
  uint64_t cur = def->autoinc_next.load();
  for (;;) {
    ulonglong first = cur ? cur : 1;
    if (increment > 1) {
      /* Smallest value >= first of the form offset + k * increment. */
      if (first <= offset) {
        first = offset;
      } else {
        ulonglong k = (first - offset + increment - 1) / increment;
        first = offset + k * increment;
        if (first < offset) first = ULLONG_MAX; /* overflow */
      }
    }
    ulonglong span = nb_desired_values * increment;
    ulonglong end = (span / increment != nb_desired_values || first + span < first) ? ULLONG_MAX : first + span;
    if (def->autoinc_next.compare_exchange_weak(cur, end)) {
      *first_value = first;
      *nb_reserved_values = nb_desired_values;
      break;
    }
  }
  trx()->touch_table(m_def);
}

}  // namespace tidesql

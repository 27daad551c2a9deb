/* ha_tidesdb: the handler's capabilities and costs, open/close, binding a
 * table definition, and error messages (see ha_tidesdb.h for the
 * handler's invariants and the file of each group of methods). */
#include "ha_tidesdb.h"

#include "handlerton.h"

#include <string.h>

namespace tidesql {

ha_tidesdb::ha_tidesdb(handlerton *hton, TABLE_SHARE *share) : handler(hton, share) {}

ha_tidesdb::~ha_tidesdb() {
  close_iter();
  my_free(m_scratch);
}

/* ---- capabilities ---- */

/* HA_CAN_ONLINE_BACKUPS: a hot backup takes our tables from a checkpoint
 * under BACKUP STAGE BLOCK_COMMIT (hot_backup.cc), so BACKUP STAGE FLUSH must
 * not flush them as non-transactional tables: that waits for every
 * statement using them, which under a steady load stalled the backup and
 * the clients' transactions behind it for tens of seconds. */
handler::Table_flags ha_tidesdb::table_flags() const {
  return HA_BINLOG_ROW_CAPABLE | HA_BINLOG_STMT_CAPABLE | HA_REC_NOT_IN_SEQ | HA_NULL_IN_KEY |
         HA_CAN_INDEX_BLOBS | HA_PRIMARY_KEY_IN_READ_INDEX | HA_PRIMARY_KEY_REQUIRED_FOR_POSITION |
         HA_PRIMARY_KEY_REQUIRED_FOR_DELETE | HA_REQUIRES_KEY_COLUMNS_FOR_DELETE |
         HA_CAN_BIT_FIELD | HA_CAN_GEOMETRY | HA_TABLE_SCAN_ON_INDEX |
         HA_CAN_VIRTUAL_COLUMNS | HA_CRASH_SAFE | HA_CAN_SKIP_LOCKED | HA_CAN_ONLINE_BACKUPS;
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
  row_columns_init(table, &m_read_cols);
  {
    std::lock_guard<std::mutex> g(def->mu);
    if (def->key_names.empty())
      for (uint k = 0; k < s->keys; k++) def->key_names.push_back(table->key_info[k].name.str);
  }
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

/* ---- errors ---- */

/* The text of an engine error: the library's detail and the table. */
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

}  // namespace tidesql

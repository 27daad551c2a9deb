/* information_schema tables of the engine: storage per index, running
 * transactions, row-lock waits, background work.
 *
 * Invariants
 *  1. Every fill reads a copy: the dictionary's table list, the library's
 *     statistics and lock-wait list, Trx::list_running; nothing here holds
 *     a lock of the engine while rows are stored (storing may block on the
 *     client).
 *  2. TIDESDB_TRX and TIDESDB_LOCK_WAITS need the PROCESS privilege (as
 *     InnoDB's INNODB_TRX and INNODB_LOCK_WAITS); without it they are empty.
 *  3. Figures the library keeps per database (cache hits, amplification,
 *     stalls) are in TIDESDB_BACKGROUND, not repeated per index.
 */
#include "info_schema.h"

#include "dict.h"
#include "sql_i_s.h"
#include "sql_acl.h"
#include "tztime.h"
#include "trx.h"

#include <map>
#include <string>
#include <vector>

namespace tidesql {

namespace {

/* "db/table" or "db/table#P#p0" -> schema and table parts. */
void split_name(const std::string &name, std::string *db, std::string *table) {
  size_t slash = name.find('/');
  *db = slash == std::string::npos ? std::string() : name.substr(0, slash);
  *table = slash == std::string::npos ? name : name.substr(slash + 1);
}

void store_str(Field *f, const std::string &s) {
  f->set_notnull();
  f->store(s.data(), s.size(), system_charset_info);
}

void store_u(Field *f, ulonglong v) {
  f->set_notnull();
  f->store((longlong)v, true);
}

std::string hex(const void *p, size_t n, size_t max) {
  static const char *d = "0123456789abcdef";
  const unsigned char *b = (const unsigned char *)p;
  std::string s;
  for (size_t i = 0; i < n && i < max; i++) {
    s += d[b[i] >> 4];
    s += d[b[i] & 15];
  }
  if (n > max) s += "...";
  return s;
}

const char *iso_name(int iso) {
  switch (iso) {
    case TDB_ISO_READ_UNCOMMITTED:
    case TDB_ISO_READ_COMMITTED:
      return "READ COMMITTED";
    case TDB_ISO_REPEATABLE_READ:
    case TDB_ISO_SNAPSHOT:
      return "REPEATABLE READ";
    default:
      return "SERIALIZABLE";
  }
}

/* Where a column family belongs: table and index. */
struct FamilyOwner {
  std::string db, table, index;
  uint key_no = 0;
};

/* Every TidesDB table's families, by family name (a copy, invariant 1). */
std::map<std::string, FamilyOwner> family_owners() {
  std::map<std::string, FamilyOwner> out;
  for (const std::string &name : dict_table_names()) {
    TableDefPtr def;
    if (dict_get(name, &def)) continue; /* dropped meanwhile */
    std::vector<std::string> keys;
    {
      std::lock_guard<std::mutex> g(def->mu);
      keys = def->key_names;
    }
    for (uint k = 0; k < def->cfs.size(); k++) {
      if (!def->cfs[k]) continue;
      FamilyOwner o;
      split_name(def->name, &o.db, &o.table);
      o.key_no = k;
      if (k == def->nkeys) o.index = "(hidden primary key)";
      else if (k < keys.size()) o.index = keys[k];
      out[tdb_cf_name(def->cfs[k])] = o;
    }
  }
  return out;
}

bool has_process_acl(THD *thd) { return !check_global_access(thd, PROCESS_ACL, true); }

/* ---- TIDESDB_INDEX_STATS ---- */

ST_FIELD_INFO index_stats_fields[] = {
    Show::Column("TABLE_SCHEMA", Show::Name(), NOT_NULL),
    Show::Column("TABLE_NAME", Show::Varchar(NAME_CHAR_LEN * 2), NOT_NULL),
    Show::Column("INDEX_NAME", Show::Name(), NULLABLE),
    Show::Column("INDEX_NUMBER", Show::ULong(), NOT_NULL),
    Show::Column("COLUMN_FAMILY", Show::Varchar(255), NOT_NULL),
    Show::Column("MEMTABLE_BYTES", Show::ULonglong(), NOT_NULL),
    Show::Column("IMMUTABLE_MEMTABLES", Show::ULonglong(), NOT_NULL),
    Show::Column("LEVELS", Show::ULong(), NOT_NULL),
    Show::Column("FILES", Show::ULonglong(), NOT_NULL),
    Show::Column("FILE_BYTES", Show::ULonglong(), NOT_NULL),
    Show::Column("LEVEL_FILES", Show::Varchar(255), NOT_NULL),
    Show::Column("ENTRIES_ESTIMATE", Show::ULonglong(), NOT_NULL),
    Show::Column("FLUSHES_PENDING", Show::ULonglong(), NOT_NULL),
    Show::Column("COMPACTIONS_PENDING", Show::ULonglong(), NOT_NULL),
    Show::CEnd()};

int fill_index_stats(THD *thd, TABLE_LIST *tables, COND *) {
  if (!g_db) return 0; /* the engine did not start */
  TABLE *t = tables->table;
  for (auto &kv : family_owners()) {
    tdb_cf_t *cf = NULL;
    if (tdb_get_cf(g_db, kv.first.c_str(), &cf) != TDB_OK) continue;
    tdb_stats_t st;
    if (tdb_get_stats(g_db, cf, &st) != TDB_OK) continue;
    const FamilyOwner &o = kv.second;
    Field **f = t->field;
    store_str(f[0], o.db);
    store_str(f[1], o.table);
    if (o.index.empty()) f[2]->set_null();
    else store_str(f[2], o.index);
    store_u(f[3], o.key_no);
    store_str(f[4], kv.first);
    store_u(f[5], st.memtable_bytes);
    store_u(f[6], st.immutable_memtables);
    ulonglong levels = 0, files = 0, bytes = 0;
    std::string shape;
    for (int l = 1; l < TDB_MAX_LEVELS; l++) {
      if (!st.levels[l].files) continue;
      levels++;
      files += st.levels[l].files;
      bytes += st.levels[l].bytes;
      if (!shape.empty()) shape += ' ';
      shape += "L" + std::to_string(l) + ":" + std::to_string(st.levels[l].files);
    }
    store_u(f[7], levels);
    store_u(f[8], files);
    store_u(f[9], bytes);
    store_str(f[10], shape);
    store_u(f[11], st.num_entries_estimate);
    store_u(f[12], st.flushes_pending);
    store_u(f[13], st.compactions_pending);
    if (schema_table_store_record(thd, t)) return 1;
  }
  return 0;
}

/* ---- TIDESDB_TRX ---- */

ST_FIELD_INFO trx_fields[] = {
    Show::Column("TRX_ID", Show::ULonglong(), NOT_NULL),
    Show::Column("THREAD_ID", Show::ULonglong(), NOT_NULL),
    Show::Column("STATE", Show::Varchar(16), NOT_NULL),
    Show::Column("ISOLATION_LEVEL", Show::Varchar(16), NOT_NULL),
    Show::Column("LOCKING", Show::Varchar(12), NOT_NULL),
    Show::Column("STARTED", Show::Datetime(0), NOT_NULL),
    Show::Column("SNAPSHOT_SEQUENCE", Show::ULonglong(), NOT_NULL),
    Show::Column("WAITING_FOR_TRX_ID", Show::ULonglong(), NULLABLE),
    Show::CEnd()};

struct WaitPair {
  uint64_t waiter, holder;
  std::string cf, key;
  int wx, hx;
};

/* A row lock's key in hex; a range lock's as "lo..hi" ("lo.." when it has
 * no upper bound, "lo..hi]" when hi is included). */
int collect_wait(void *ctx, const tdb_lock_wait_t *w) {
  std::string key = hex(w->key, w->klen, 64);
  if (w->is_range) {
    key += "..";
    if (w->hi) key += hex(w->hi, w->hilen, 64) + (w->hi_inclusive ? "]" : "");
  }
  ((std::vector<WaitPair> *)ctx)
      ->push_back({w->waiter_txn_id, w->holder_txn_id, w->cf_name, key, w->waiter_exclusive, w->holder_exclusive});
  return 0;
}

std::vector<WaitPair> lock_waits() {
  std::vector<WaitPair> v;
  if (tdb_list_lock_waits(g_db, collect_wait, &v) < 0) v.clear();
  return v;
}

int fill_trx(THD *thd, TABLE_LIST *tables, COND *) {
  if (!g_db) return 0; /* the engine did not start */
  if (!has_process_acl(thd)) return 0;
  TABLE *t = tables->table;
  std::vector<TrxInfo> trxs;
  Trx::list_running(&trxs);
  std::map<uint64_t, uint64_t> waits_for; /* first holder per waiter */
  for (const WaitPair &w : lock_waits()) waits_for.emplace(w.waiter, w.holder);
  for (const TrxInfo &i : trxs) {
    Field **f = t->field;
    auto w = waits_for.find(i.txn_id);
    store_u(f[0], i.txn_id);
    store_u(f[1], i.thread_id);
    store_str(f[2], i.prepared ? "PREPARED" : w != waits_for.end() ? "LOCK WAIT" : "RUNNING");
    store_str(f[3], iso_name(i.isolation));
    store_str(f[4], i.pessimistic ? "PESSIMISTIC" : "OPTIMISTIC");
    MYSQL_TIME tm;
    thd->variables.time_zone->gmt_sec_to_TIME(&tm, (my_time_t)i.started);
    f[5]->set_notnull();
    f[5]->store_time(&tm);
    store_u(f[6], i.snapshot_seq);
    if (w == waits_for.end()) f[7]->set_null();
    else store_u(f[7], w->second);
    if (schema_table_store_record(thd, t)) return 1;
  }
  return 0;
}

/* ---- TIDESDB_LOCK_WAITS ---- */

ST_FIELD_INFO lock_wait_fields[] = {
    Show::Column("REQUESTING_TRX_ID", Show::ULonglong(), NOT_NULL),
    Show::Column("REQUESTING_THREAD_ID", Show::ULonglong(), NULLABLE),
    Show::Column("REQUESTED_MODE", Show::Varchar(1), NOT_NULL),
    Show::Column("BLOCKING_TRX_ID", Show::ULonglong(), NOT_NULL),
    Show::Column("BLOCKING_THREAD_ID", Show::ULonglong(), NULLABLE),
    Show::Column("BLOCKING_MODE", Show::Varchar(1), NOT_NULL),
    Show::Column("TABLE_SCHEMA", Show::Name(), NULLABLE),
    Show::Column("TABLE_NAME", Show::Varchar(NAME_CHAR_LEN * 2), NULLABLE),
    Show::Column("INDEX_NAME", Show::Name(), NULLABLE),
    Show::Column("COLUMN_FAMILY", Show::Varchar(255), NOT_NULL),
    Show::Column("LOCKED_KEY", Show::Varchar(140), NOT_NULL),
    Show::CEnd()};

int fill_lock_waits(THD *thd, TABLE_LIST *tables, COND *) {
  if (!g_db) return 0; /* the engine did not start */
  if (!has_process_acl(thd)) return 0;
  TABLE *t = tables->table;
  std::vector<WaitPair> waits = lock_waits();
  if (waits.empty()) return 0;
  std::vector<TrxInfo> trxs;
  Trx::list_running(&trxs);
  std::map<uint64_t, ulong> thread_of;
  for (const TrxInfo &i : trxs) thread_of[i.txn_id] = i.thread_id;
  std::map<std::string, FamilyOwner> owners = family_owners();
  for (const WaitPair &w : waits) {
    Field **f = t->field;
    auto wt = thread_of.find(w.waiter), ht = thread_of.find(w.holder);
    store_u(f[0], w.waiter);
    if (wt == thread_of.end()) f[1]->set_null();
    else store_u(f[1], wt->second);
    store_str(f[2], w.wx ? "X" : "S");
    store_u(f[3], w.holder);
    if (ht == thread_of.end()) f[4]->set_null(); /* e.g. a detached XA PREPARED transaction */
    else store_u(f[4], ht->second);
    store_str(f[5], w.hx ? "X" : "S");
    auto o = owners.find(w.cf);
    if (o == owners.end()) {
      f[6]->set_null();
      f[7]->set_null();
      f[8]->set_null();
    } else {
      store_str(f[6], o->second.db);
      store_str(f[7], o->second.table);
      if (o->second.index.empty()) f[8]->set_null();
      else store_str(f[8], o->second.index);
    }
    store_str(f[9], w.cf);
    store_str(f[10], w.key);
    if (schema_table_store_record(thd, t)) return 1;
  }
  return 0;
}

/* ---- TIDESDB_BACKGROUND ---- */

ST_FIELD_INFO background_fields[] = {
    Show::Column("IMMUTABLE_MEMTABLES", Show::ULonglong(), NOT_NULL),
    Show::Column("FLUSHES_PENDING", Show::ULonglong(), NOT_NULL),
    Show::Column("COMPACTIONS_PENDING", Show::ULonglong(), NOT_NULL),
    Show::Column("FLUSHES", Show::ULonglong(), NOT_NULL),
    Show::Column("COMPACTIONS", Show::ULonglong(), NOT_NULL),
    Show::Column("FLUSH_BYTES_WRITTEN", Show::ULonglong(), NOT_NULL),
    Show::Column("COMPACTION_BYTES_READ", Show::ULonglong(), NOT_NULL),
    Show::Column("COMPACTION_BYTES_WRITTEN", Show::ULonglong(), NOT_NULL),
    Show::Column("WRITE_AMPLIFICATION", Show::Double(12), NOT_NULL),
    Show::Column("BLOCK_CACHE_HITS", Show::ULonglong(), NOT_NULL),
    Show::Column("BLOCK_CACHE_MISSES", Show::ULonglong(), NOT_NULL),
    Show::Column("STALLS", Show::ULonglong(), NOT_NULL),
    Show::Column("SLOWDOWNS", Show::ULonglong(), NOT_NULL),
    Show::Column("STALL_MICROS", Show::ULonglong(), NOT_NULL),
    Show::Column("BACKGROUND_PAUSED", Show::ULong(), NOT_NULL),
    Show::CEnd()};

int fill_background(THD *thd, TABLE_LIST *tables, COND *) {
  if (!g_db) return 0; /* the engine did not start */
  TABLE *t = tables->table;
  tdb_stats_t st;
  if (tdb_get_stats(g_db, NULL, &st) != TDB_OK) return 0;
  Field **f = t->field;
  store_u(f[0], st.immutable_memtables);
  store_u(f[1], st.flushes_pending);
  store_u(f[2], st.compactions_pending);
  store_u(f[3], st.flushes);
  store_u(f[4], st.compactions);
  store_u(f[5], st.flush_bytes_written);
  store_u(f[6], st.compaction_bytes_read);
  store_u(f[7], st.compaction_bytes_written);
  double written = (double)(st.wal_bytes_written + st.flush_bytes_written + st.compaction_bytes_written);
  f[8]->set_notnull();
  f[8]->store(st.user_bytes_written ? written / (double)st.user_bytes_written : 0.0);
  store_u(f[9], st.block_cache_hits);
  store_u(f[10], st.block_cache_misses);
  store_u(f[11], st.stalls);
  store_u(f[12], st.slowdowns);
  store_u(f[13], st.stall_micros);
  store_u(f[14], (ulonglong)st.background_paused);
  return schema_table_store_record(thd, t) ? 1 : 0;
}

}  // namespace

#define IS_INIT(fn, fields, filler)            \
  int fn(void *p) {                            \
    ST_SCHEMA_TABLE *s = (ST_SCHEMA_TABLE *)p; \
    s->fields_info = fields;                   \
    s->fill_table = filler;                    \
    return 0;                                  \
  }

IS_INIT(is_index_stats_init, index_stats_fields, fill_index_stats)
IS_INIT(is_trx_init, trx_fields, fill_trx)
IS_INIT(is_lock_waits_init, lock_wait_fields, fill_lock_waits)
IS_INIT(is_background_init, background_fields, fill_background)

struct st_mysql_information_schema is_plugin_descriptor = {MYSQL_INFORMATION_SCHEMA_INTERFACE_VERSION};

}  // namespace tidesql

/*
 * ha_tidesdb: the handler (one per open TABLE instance).
 *
 * Storage layout (dict.h, key_codec.h, row_format.h): a table's rows live
 * in its data column family keyed by the encoded primary key (or a hidden
 * 8-byte row id); each secondary index has its own column family keyed by
 * the encoded index columns (+ primary key). All writes of a statement go
 * to the connection's Trx (trx.h) and reach the database at commit.
 *
 * Invariants
 *  1. m_def is the table's current definition; when DDL retires it
 *     (obsolete), the next statement re-fetches it (external_lock).
 *  2. m_last_pk is the encoded primary key of the last row returned;
 *     position() copies it into ref (ref_length = encoded PK length).
 *  3. m_row_buf holds the value of the last row returned when blob columns
 *     of the record point into it (until the next read); a scan of a table
 *     without blobs unpacks straight from the iterator's value.
 *  4. One TxnIter per handler (txn_iter.h); it is closed at the end of each scan
 *     and statement.
 *  5. m_row_lock is the row lock mode of the running statement: EXCLUSIVE
 *     in statements that write the table and SELECT ... FOR UPDATE, SHARED
 *     for LOCK IN SHARE MODE (and SERIALIZABLE reads), else NONE. Every
 *     row a locking statement returns was read with
 *     tdb_txn_get_for_update (locked, or added to the commit check), and
 *     an index entry whose row no longer matches it is skipped. With
 *     m_skip_locked (SKIP LOCKED) a row another transaction holds locked
 *     is skipped without waiting, like a row that is gone.
 *  6. m_last_locked: the row of m_last_pk was read by a locking read in
 *     this statement, so update_row/delete_row can use the server's image
 *     of it for index maintenance; otherwise they lock and re-read it.
 *  7. At READ COMMITTED a locking read that returns no row gives its lock
 *     back, as InnoDB does: a scan's row found gone once its lock was
 *     granted (deleted meanwhile), an index entry whose row moved, a row
 *     the server rejects (unlock_row). m_lock_mark is taken before each
 *     locking read of a row; a point read of an absent key keeps its lock
 *     (it reserves the key). Above READ COMMITTED every lock is kept.
 *  8. Reads are counted in m_counts, which close_iter() (statement end,
 *     close) adds to g_counters: a scan writes no shared cache line per
 *     row. The status variables lag by the statements running.
 */
#ifndef TIDESQL_HA_TIDESDB_H
#define TIDESQL_HA_TIDESDB_H

#include "dict.h"
#include "key_codec.h"
#include "sysvars.h"
#include "trx.h"
#include "txn_iter.h"

#include "thr_lock.h"

#include <vector>

namespace tidesql {

/* Encoded key budget of an index (the library allows 64 KiB). */
static const uint32 MAX_ENCODED_KEY = 16384;

class TdbAlterCtx;

/* What every handler of one TABLE_SHARE shares: the table lock. */
class TdbShare : public Handler_share {
 public:
  THR_LOCK lock;
  TdbShare() { thr_lock_init(&lock); }
  ~TdbShare() override { thr_lock_delete(&lock); }
};

class ha_tidesdb : public handler {
 public:
  ha_tidesdb(handlerton *hton, TABLE_SHARE *share);
  ~ha_tidesdb() override;

  /* ---- capabilities and costs (ha_tidesdb.cc) ---- */
  const char *index_type(uint) override { return "LSM"; }
  Table_flags table_flags() const override;
  ulong index_flags(uint idx, uint part, bool all_parts) const override;
  uint max_supported_record_length() const override { return HA_MAX_REC_LENGTH; }
  uint max_supported_keys() const override { return MAX_KEY; }
  uint max_supported_key_parts() const override { return MAX_REF_PARTS; }
  uint max_supported_key_length() const override { return 3072; }
  uint max_supported_key_part_length() const override { return 3072; }
  double scan_time() override;
  double read_time(uint index, uint ranges, ha_rows rows) override;

  /* ---- open/close, errors (ha_tidesdb.cc) ---- */
  int open(const char *name, int mode, uint test_if_locked) override;
  int close(void) override;
  bool get_error_message(int error, String *buf) override;

  /* ---- DDL (ha_tidesdb_ddl.cc) ---- */
  int create(const char *name, TABLE *form, HA_CREATE_INFO *create_info) override;
  int delete_table(const char *name) override;
  int rename_table(const char *from, const char *to) override;
  int truncate() override;

  /* ---- ALTER TABLE in place (ha_tidesdb_alter.cc) ---- */
  enum_alter_inplace_result check_if_supported_inplace_alter(TABLE *altered_table,
                                                             Alter_inplace_info *info) override;
  bool can_convert_nocopy(const Field &field, const Column_definition &new_type) const override;
  bool prepare_inplace_alter_table(TABLE *altered_table, Alter_inplace_info *info) override;
  bool inplace_alter_table(TABLE *altered_table, Alter_inplace_info *info) override;
  bool commit_inplace_alter_table(TABLE *altered_table, Alter_inplace_info *info, bool commit) override;
  void update_create_info(HA_CREATE_INFO *create_info) override;
  int optimize(THD *thd, HA_CHECK_OPT *check_opt) override;

  /* ---- locks and statement boundaries (ha_tidesdb_lock.cc) ---- */
  int extra(enum ha_extra_function operation) override;
  int reset() override;
  int external_lock(THD *thd, int lock_type) override;
  int start_stmt(THD *thd, thr_lock_type lock_type) override;
  THR_LOCK_DATA **store_lock(THD *thd, THR_LOCK_DATA **to, enum thr_lock_type lock_type) override;

  /* ---- AUTO_INCREMENT (ha_tidesdb_autoinc.cc) ---- */
  void get_auto_increment(ulonglong offset, ulonglong increment, ulonglong nb_desired_values,
                          ulonglong *first_value, ulonglong *nb_reserved_values) override;

  /* ---- statistics (ha_tidesdb_stats.cc) ---- */
  int info(uint flag) override;
  int analyze(THD *thd, HA_CHECK_OPT *check_opt) override;

  /* ---- CHECK TABLE (ha_tidesdb_check.cc) ---- */
  int check(THD *thd, HA_CHECK_OPT *check_opt) override;

  /* ---- writes (ha_tidesdb_write.cc) ---- */
  int write_row(const uchar *buf) override;
  int update_row(const uchar *old_data, const uchar *new_data) override;
  int delete_row(const uchar *buf) override;

  /* ---- reads (ha_tidesdb_read.cc) ---- */
  int index_init(uint idx, bool sorted) override;
  int index_end() override;
  int index_read_map(uchar *buf, const uchar *key, key_part_map keypart_map,
                     enum ha_rkey_function find_flag) override;
  int index_read_last_map(uchar *buf, const uchar *key, key_part_map keypart_map) override;
  int index_next(uchar *buf) override;
  int index_prev(uchar *buf) override;
  int index_first(uchar *buf) override;
  int index_last(uchar *buf) override;
  int index_next_same(uchar *buf, const uchar *key, uint keylen) override;
  int rnd_init(bool scan) override;
  int rnd_end() override;
  int rnd_next(uchar *buf) override;
  int rnd_pos(uchar *buf, uchar *pos) override;
  void position(const uchar *record) override;
  void unlock_row() override;
  ha_rows records_in_range(uint inx, const key_range *min_key, const key_range *max_key,
                           page_range *pages) override;

 private:
  /* ha_tidesdb.cc */
  int bind_def(const TableDefPtr &def);
  int refresh_def();
  TdbShare *get_share();
  Trx *trx();
  /* ha_tidesdb_autoinc.cc */
  void load_counters();
  /* ha_tidesdb_alter.cc */
  int build_indexes(TABLE *altered, TdbAlterCtx *ctx);
  int catch_up(TABLE *altered, TdbAlterCtx *ctx, bool final, size_t *left);
  /* ha_tidesdb_lock.cc */
  void serializable_reads(THD *thd);
  /* ha_tidesdb_stats.cc */
  void compute_cardinality(bool thorough);
  bool refresh_cardinality();
  void refresh_sizes();

  /* ha_tidesdb_read.cc */
  bool is_pk_index(uint idx) const { return !m_def->hidden_pk && idx == table->s->primary_key; }
  tdb_cf_t *index_cf(uint idx) const { return m_def->cfs[idx]; }
  tdb_cf_t *data_cf() const { return m_def->data_cf(table->s->primary_key); }
  int open_iter(tdb_cf_t *cf);
  void close_iter();
  void flush_counts(); /* invariant 8 */
  int encode_search_key(uint idx, const uchar *key, key_part_map map, std::string *out, uint *nparts);
  bool locking() const { return m_row_lock != ROW_LOCK_NONE; }
  void unlock_unused_row(); /* invariant 7 */
  bool verify_index_rows() const;
  int read_row_by_pk(uchar *buf, const uchar *pk, size_t pklen);
  int read_scanned_row(uchar *buf, const uchar *pk, size_t pklen);
  const uchar *stable_value(const uchar *val, size_t vl);
  int row_from_data_entry(uchar *buf, const uchar *key, size_t kl, const uchar *val, size_t vl);
  int row_from_index_entry(uchar *buf, uint idx, const uchar *ekey, size_t eklen, const uchar *val,
                           size_t vl);
  int locked_row(const std::string &pk, std::vector<uchar> *rec);
  int fetch(uchar *buf, int dir, bool check_prefix);
  int point_read(uchar *buf, uint idx, const std::string &key);
  bool want_full_row();
  const RowColumns *read_columns() const;

  /* ha_tidesdb_range.cc */
  bool range_locks_wanted() const;
  bool scan_end_bound(uint idx, std::string *hi);
  int lock_scan(tdb_cf_t *cf, const std::string &lo, const std::string *hi, bool forward);
  int lock_index_scan(uint idx, enum ha_rkey_function flag, const std::string &P);
  void note_scan_row(const uchar *k, size_t kl);
  void finish_scan_lock();

  /* ha_tidesdb_write.cc */
  int encode_pk(const uchar *rec, std::string *out);
  void encode_index_entry(uint idx, const uchar *rec, const std::string &pk, std::string *key,
                          std::string *val, bool *has_null);
  int check_unique_pk(const std::string &pk);
  int check_unique_sec(uint idx, const std::string &key, const std::string &pk);
  bool must_check_unique() const;
  void bump_autoinc(const uchar *rec);
  int maybe_bulk_commit();
  void log_online(const std::string &pk, const uchar *before);

  THR_LOCK_DATA m_lock;
  TdbShare *m_share = NULL;
  TableDefPtr m_def;
  std::vector<IndexCodec> m_codecs; /* per key */
  RowColumns m_read_cols;           /* skip rules of partial reads (read_columns()) */
  uint32 m_pk_len = 0;              /* encoded primary key bytes */
  Trx *m_trx = NULL;
  int m_lock_type = F_UNLCK;
  RowLock m_row_lock = ROW_LOCK_NONE;
  bool m_skip_locked = false; /* SKIP LOCKED: rows locked by others are skipped */
  thr_lock_type m_stored_lock = TL_IGNORE; /* from store_lock() */

  TxnIter m_iter;            /* kept for the statement: see open_iter() */
  bool m_positioned = false; /* the current scan has placed m_iter */
  bool m_rnd_started = false;
  std::string m_scan_prefix; /* index_next_same bound */
  bool m_point = false;      /* last index read was a point lookup */
  std::string m_point_key;
  /* The running scan's range lock (ha_tidesdb_range.cc): taken, not yet
   * ended by EOF; its direction and the last key it returned. */
  bool m_range_open = false, m_range_fwd = true, m_range_any = false;
  uint64_t m_range_id = 0;
  std::string m_range_last;

  /* Reads not yet added to g_counters (invariant 8). */
  struct {
    ulonglong rows_read = 0, point_reads = 0, iterators = 0;
  } m_counts;

  std::string m_last_pk;
  bool m_last_locked = false; /* invariant 6 */
  tdb_lock_mark_t m_lock_mark = {0, 0, 0}; /* invariant 7 */
  std::string m_row_buf;
  std::string m_key_buf, m_key_buf2, m_val_buf, m_val_buf2, m_pk_buf;
  uchar *m_scratch = NULL; /* a record buffer for search keys */
  uint64_t m_card_version = ~0ULL; /* TableDef::card_version copied into key_info */

  bool m_ignore_dup = false, m_can_replace = false, m_insert_update = false;
  uint m_dup_key = MAX_KEY;
};

/* handlerton check_version: crash recovery of an in-place ALTER asks
 * whether the engine's table matches the new .frm (ha_tidesdb_alter.cc). */
int alter_check_version(handlerton *hton, const char *path, const LEX_CUSTRING *version,
                        ulonglong create_id);

}  // namespace tidesql

#endif

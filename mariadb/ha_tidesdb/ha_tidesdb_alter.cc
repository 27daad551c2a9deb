/* ha_tidesdb ALTER TABLE in place: which changes run INSTANT, which
 * INPLACE, and the build of added indexes (see ha_tidesdb.h; the
 * dictionary side is dict.h, invariant 7).
 *
 * What a change touches in our storage (row_format.h, key_codec.h):
 *  - the dictionary record holds no column: names, defaults, comments and
 *    index names live only in the .frm;
 *  - a row value is the null bytes then Field::pack() of each stored
 *    column in column order: changing a column's type or nullability
 *    changes every row (COPY); adding, dropping or reordering columns
 *    makes a new row version (row_format.h): the dictionary keeps how
 *    rows of every older version are laid out and which current column
 *    each of their columns became, new rows carry the version, old rows
 *    are read through theirs (cannot_change_columns);
 *  - a VARCHAR packs its length in 1 byte up to 255 bytes of capacity, else
 *    2: extending it on the same side of 255 leaves the packed row as it
 *    is; index keys encode it at its full width, so only a column no index
 *    uses is extended in place;
 *  - an index is a column family listed in the record in key order.
 *
 * Answers
 *  INSTANT: RENAME COLUMN, column DEFAULT, RENAME INDEX, index comment and
 *    IGNORED, DROP CHECK, table COMMENT, VARCHAR extension (above), DROP
 *    INDEX (not the primary key; its family is dropped after the commit),
 *    RENAME TO, ADD COLUMN anywhere (constant default), DROP COLUMN and
 *    column reorder (cannot_change_columns: no BIT column in the table,
 *    built-in types for dropped columns, at most MAX_ROW_VERSIONS) — and
 *    any mix of these. A dropped column's index goes with it (DROP
 *    INDEX); an index that loses one of its columns is rebuilt (INPLACE).
 *  INPLACE (NOCOPY, LOCK=NONE): ADD INDEX / ADD UNIQUE (not the primary
 *    key; ADD UNIQUE not under ALTER IGNORE, which drops duplicate rows),
 *    with any INSTANT change. HA_ALTER_INPLACE_NOCOPY_NO_LOCK: the server
 *    holds the exclusive metadata lock in prepare and commit only; in
 *    between (the build, under MDL_SHARED_UPGRADABLE) reads and writes go
 *    on. LOCK=SHARED / EXCLUSIVE, when asked, block them for the whole
 *    ALTER as MariaDB documents.
 *
 * Online index build (LOCK=NONE), in three steps:
 *  prepare (no writer running): install the table's change log
 *    (online_log.h), then take the build snapshot;
 *  inplace (writes go on): write the index entries of every row of the
 *    snapshot into the new family, then catch-up passes (catch_up);
 *  commit (no writer running): a final catch-up pass over every primary
 *    key left, sync, then the dictionary switch (invariants 2-3).
 *  A catch-up pass makes the index agree, for each logged primary key,
 *  with the latest committed row: it deletes the keys the row's logged
 *  versions had that are not its key now and puts its key now. It needs
 *  no order among the writes and may run again on the same key.
 *  Everything else: HA_ALTER_INPLACE_NOT_SUPPORTED (with a reason where
 *    it is ours: table options, key changes, index limits), so that
 *    ALGORITHM=INSTANT/INPLACE/NOCOPY is an error and the default copies.
 *  Counters (AUTO_INCREMENT, rows) move to the new definition in the
 *  record's batch.
 *
 * Invariants
 *  1. A new index is written only to its own new family, which no record
 *     lists until commit: a failed, killed or crashed build leaves the
 *     table as it was (the family is dropped at rollback or next start).
 *  2. The engine's switch to the new definition is the one synced write
 *     of the table's record (dict_alter_commit), in commit, before the
 *     server renames the new .frm into place; the record carries the new
 *     .frm's version, which recovery compares (alter_check_version) to
 *     keep the .frm that matches.
 *  3. A new index's rows are durable (tdb_sync) before the record lists it.
 *  4. Every write that the build snapshot does not hold is in the change
 *     log: the log is installed before the snapshot is taken, both under
 *     the exclusive metadata lock (no write in flight), and a writer logs
 *     before its transaction commits (online_log.h).
 *  5. After the final catch-up pass (no writer) each logged primary key
 *     has exactly its current key in each new index: every key a row
 *     held since the snapshot is the snapshot's (deleted as the first
 *     logged version), a logged version, or one a pass put (remembered
 *     until a pass runs after all its writers ended); a unique-form key
 *     (no primary key inside) is deleted only if its entry holds this
 *     row. Rows never logged did not change since the snapshot.
 *  6. A UNIQUE key whose entry holds another row is a duplicate only if
 *     both rows hold it in one snapshot: the ALTER then fails with
 *     ER_DUP_ENTRY (invariant 1 leaves the table as it was, the writes
 *     made meanwhile stay). Otherwise the other row's entry is stale and
 *     is overwritten. A change log past tidesdb_online_alter_log_size
 *     fails the ALTER, never a writer.
 */
#include "ha_tidesdb.h"

#include "online_log.h"
#include "row_format.h"
#include "trx.h"

#include <string.h>

#include <set>
#include <unordered_map>

namespace tidesql {

/* Changes that leave every stored byte as it is. */
static const alter_table_operations INSTANT_OPS =
    ALTER_COLUMN_NAME | ALTER_RENAME_COLUMN | ALTER_CHANGE_COLUMN_DEFAULT |
    ALTER_COLUMN_TYPE_CHANGE_BY_ENGINE | ALTER_RENAME_INDEX | ALTER_INDEX_IGNORABILITY |
    ALTER_CHANGE_INDEX_COMMENT | ALTER_DROP_CHECK_CONSTRAINT | ALTER_RENAME | ALTER_CHANGE_CREATE_OPTION |
    ALTER_INDEX_ORDER | ALTER_DROP_NON_UNIQUE_NON_PRIM_INDEX | ALTER_DROP_UNIQUE_INDEX;
/* Adding, dropping and reordering stored columns: old rows are read
 * through their row version (row_format.h, cannot_change_columns). */
static const alter_table_operations COLUMN_OPS =
    ALTER_ADD_STORED_BASE_COLUMN | ALTER_DROP_STORED_COLUMN | ALTER_STORED_COLUMN_ORDER;
/* Changes that build new index families. */
static const alter_table_operations ADD_INDEX_OPS = ALTER_ADD_NON_UNIQUE_NON_PRIM_INDEX | ALTER_ADD_UNIQUE_INDEX;

/* Rows of an index build written per batch. */
static const size_t BUILD_BATCH_ROWS = 10000;

/* What prepare decided, for inplace and commit. */
class TdbAlterCtx : public inplace_alter_handler_ctx {
 public:
  std::vector<std::string> cf_names;   /* the new record's list, key order */
  std::vector<uint> added;             /* new key numbers built here */
  std::vector<tdb_cf_t *> added_cfs;   /* their families */
  std::vector<std::string> added_names;
  bool keys_changed = false;
  bool columns_changed = false; /* fmt is a new row version */
  RowVersions fmt;              /* how rows read under the new definition */
  bool committed = false;
  /* Online build (LOCK=NONE): the table whose writers log, their log, the
   * build's snapshot (taken after the log was installed: invariant 4) and
   * the primary keys still to be checked again (catch_up). */
  TableDefPtr def;
  std::shared_ptr<OnlineLog> log;
  tdb_snapshot_t *snap = NULL;
  struct PkState {
    std::vector<std::set<std::string>> keys; /* per added index: keys it may hold for this row */
    std::set<uint64_t> txns;                 /* writers that logged it, maybe still running */
  };
  std::unordered_map<std::string, PkState> known;
  /* For the error log: passes run, keys caught up, build start (us). */
  uint passes = 0;
  ulonglong caught_up = 0, start_us = 0;
  void end_online() {
    if (def) online_log_stop(def.get());
    log.reset();
    if (snap) tdb_snapshot_release(g_db, snap);
    snap = NULL;
  }
  ~TdbAlterCtx() override {
    end_online();
    /* Never committed (an error before commit(false) was called): invariant 1. */
    if (!committed && !added_names.empty()) dict_alter_drop_families(added_names);
  }
};

/* For each column of the old table, its index in the new one (-1:
 * dropped), from the server's list of new columns. False if the list does
 * not line up with the new table. */
static bool column_map(TABLE *table, TABLE *altered, Alter_inplace_info *info, std::vector<int> *new_of_old) {
  new_of_old->assign(table->s->fields, -1);
  List_iterator_fast<Create_field> it(info->alter_info->create_list);
  uint j = 0;
  while (const Create_field *cf = it++) {
    if (j >= altered->s->fields) return false;
    if (cf->field) {
      uint i = cf->field->field_index;
      if (i >= table->s->fields || table->field[i] != cf->field) return false;
      (*new_of_old)[i] = (int)j;
    }
    j++;
  }
  return j == altered->s->fields;
}

/* Same stored index: same parts over the same columns (old column i is
 * new column new_of_old[i]), same flags. */
static bool same_key(const KEY *a, const KEY *b, const std::vector<int> &new_of_old) {
  const ulong f = HA_NOSAME | HA_NULL_PART_KEY | HA_FULLTEXT | HA_SPATIAL;
  if (a->user_defined_key_parts != b->user_defined_key_parts || ((a->flags ^ b->flags) & f) ||
      a->algorithm != b->algorithm)
    return false;
  for (uint i = 0; i < a->user_defined_key_parts; i++) {
    const KEY_PART_INFO *p = &a->key_part[i], *q = &b->key_part[i];
    if (p->fieldnr < 1 || p->fieldnr > new_of_old.size() || new_of_old[p->fieldnr - 1] + 1 != (int)q->fieldnr ||
        p->length != q->length ||
        ((p->key_part_flag ^ q->key_part_flag) & HA_REVERSE_SORT))
      return false;
  }
  return true;
}

/* For each key of the new table: the old key it keeps (its family), or -1
 * for a key added by this ALTER. False if a kept key's name cannot be
 * traced or its stored form would change. */
static bool map_keys(TABLE *table, TABLE *altered, Alter_inplace_info *info, std::vector<int> *old_of_new) {
  old_of_new->assign(altered->s->keys, -1);
  std::vector<int> new_of_old;
  if (!column_map(table, altered, info, &new_of_old)) return false;
  for (uint j = 0; j < altered->s->keys; j++) {
    KEY *nk = &altered->key_info[j];
    bool added = false;
    for (uint a = 0; a < info->index_add_count; a++)
      if (info->index_add_buffer[a] == j) added = true; /* positions in the new key array */
    if (added) continue;
    const char *old_name = nk->name.str;
    for (const auto &rk : info->rename_keys)
      if (!strcmp(rk.new_key->name.str, nk->name.str)) old_name = rk.old_key->name.str;
    int found = -1;
    for (uint k = 0; k < table->s->keys; k++) {
      bool dropped = false;
      for (uint d = 0; d < info->index_drop_count; d++)
        if (info->index_drop_buffer[d] == &table->key_info[k]) dropped = true;
      if (!dropped && !strcmp(table->key_info[k].name.str, old_name)) found = (int)k;
    }
    if (found < 0 || !same_key(&table->key_info[found], nk, new_of_old)) return false;
    (*old_of_new)[j] = found;
  }
  return true;
}

/* Whether the new index nk can be built here; else why not. */
static const char *cannot_build(TABLE *altered, const KEY *nk) {
  if (nk->flags & (HA_FULLTEXT | HA_SPATIAL) || nk->algorithm == HA_KEY_ALG_LONG_HASH)
    return "TidesDB builds only plain B-tree-like (LSM) indexes in place";
  for (uint i = 0; i < nk->user_defined_key_parts; i++)
    if (!nk->key_part[i].field->stored_in_db()) return "TidesDB does not build an index on a virtual column in place";
  IndexCodec c;
  c.init(nk);
  uint32 len = c.full_len();
  if (altered->s->primary_key != MAX_KEY) {
    IndexCodec pk;
    pk.init(&altered->key_info[altered->s->primary_key]);
    len += pk.full_len();
  }
  if (len > MAX_ENCODED_KEY) return "the index key is too long for TidesDB";
  return NULL;
}

/* Packed default of altered column f (what rows written before it was
 * added read). */
static InstantDefault instant_default(TABLE *t, Field *f, uint16 field) {
  InstantDefault d;
  d.field = field;
  my_ptrdiff_t off = (my_ptrdiff_t)(t->s->default_values - t->record[0]);
  d.null = f->is_null(off);
  if (!d.null) {
    size_t cap = f->pack_length() + 8;
    if (f->flags & BLOB_FLAG) cap += ((Field_blob *)f)->get_length(f->ptr + off);
    d.packed.resize(cap);
    uchar *end = f->pack((uchar *)&d.packed[0], f->ptr + off);
    d.packed.resize((size_t)(end - (uchar *)d.packed.data()));
  }
  return d;
}

/* The row versions of the new table when columns are added, dropped or
 * reordered (row_format.h): every older version's columns mapped onto
 * the new ones, the old table's layout as the newest older version, the
 * packed defaults of the added columns. Else why not. */
static const char *cannot_change_columns(TABLE *table, TABLE *altered, Alter_inplace_info *info,
                                         const RowVersions &cur, RowVersions *out) {
  TABLE_SHARE *o = table->s, *n = altered->s;
  if (cur.current >= MAX_ROW_VERSIONS)
    return "TidesDB keeps at most 64 row versions of a table; ALGORITHM=COPY rebuilds it";
  std::vector<int> new_of_old;
  if (!column_map(table, altered, info, &new_of_old)) return "TidesDB cannot trace the columns of this ALTER";
  std::vector<bool> kept(n->fields, false);
  for (uint i = 0; i < o->fields; i++) {
    Field *a = table->field[i];
    if (a->real_type() == MYSQL_TYPE_BIT)
      return "TidesDB changes columns instantly only in tables without BIT columns";
    if (new_of_old[i] < 0) continue;
    Field *b = altered->field[new_of_old[i]];
    kept[new_of_old[i]] = true;
    if (a->stored_in_db() != b->stored_in_db() || a->real_type() != b->real_type() || !a->null_ptr != !b->null_ptr)
      return "TidesDB rewrites every row for this change";
  }
  for (uint j = 0; j < n->fields; j++) {
    Field *b = altered->field[j];
    if (kept[j]) continue;
    if (b->real_type() == MYSQL_TYPE_BIT)
      return "TidesDB changes columns instantly only in tables without BIT columns";
    if (!b->stored_in_db() || (b->flags & AUTO_INCREMENT_FLAG) || b->default_value || b->vcol_info ||
        b->has_update_default_function() || b->has_default_now_unireg_check())
      return "TidesDB adds instantly only columns with a constant default (no AUTO_INCREMENT, generated "
             "column or default computed per row)";
  }
  const char *unknown = "TidesDB drops instantly only columns of built-in types";
  out->legacy = cur.legacy;
  out->versions.clear();
  out->defaults.clear();
  /* Older versions, remapped. */
  for (const RowVersion &v : cur.versions) {
    RowVersion nv = v;
    for (RowColumn &c : nv.cols) {
      if (c.field == RowColumn::DROPPED) continue;
      if (c.field >= o->fields) return "TidesDB found a damaged row version";
      int j = new_of_old[c.field];
      if (j < 0 && c.skip == RowColumn::SKIP_UNKNOWN) return unknown;
      c.field = j < 0 ? RowColumn::DROPPED : (uint16)j;
    }
    out->versions.push_back(nv);
  }
  /* The old table's own layout: the version its rows carry. */
  RowVersion last;
  last.null_bytes = o->null_bytes;
  uint stored = 0;
  for (uint i = 0; i < o->fields; i++) {
    Field *a = table->field[i];
    if (!a->stored_in_db()) continue;
    RowColumn c;
    c.field = new_of_old[i] < 0 ? RowColumn::DROPPED : (uint16)new_of_old[i];
    if (a->null_ptr) {
      c.null_off = (uint16)(a->null_ptr - table->record[0]);
      c.null_bit = (uchar)a->null_bit;
    }
    row_skip_rule(a, &c.skip, &c.skip_len);
    if (c.field == RowColumn::DROPPED && c.skip == RowColumn::SKIP_UNKNOWN) return unknown;
    last.cols.push_back(c);
    /* Appended before row versions: legacy rows read its default. */
    if (!cur.current && cur.legacy.fields && stored++ >= cur.legacy.fields && new_of_old[i] >= 0)
      out->defaults.push_back(instant_default(table, a, (uint16)new_of_old[i]));
  }
  out->versions.push_back(last);
  out->current = (uint)out->versions.size();
  for (const InstantDefault &d : cur.defaults) {
    if (d.field >= o->fields) return "TidesDB found a damaged row version";
    if (new_of_old[d.field] < 0) continue;
    InstantDefault nd = d;
    nd.field = (uint16)new_of_old[d.field];
    out->defaults.push_back(nd);
  }
  for (uint j = 0; j < n->fields; j++)
    if (!kept[j]) out->defaults.push_back(instant_default(altered, altered->field[j], (uint16)j));
  return NULL;
}

/* A VARCHAR widened within its length bytes, on a column no index uses:
 * the packed row is unchanged (see the file comment). */
bool ha_tidesdb::can_convert_nocopy(const Field &field, const Column_definition &new_type) const {
  if (field.real_type() != MYSQL_TYPE_VARCHAR || new_type.type_handler() != field.type_handler())
    return false;
  if (new_type.charset != field.charset() || !new_type.compression_method() != !field.compression_method() ||
      field.compression_method())
    return false;
  if (new_type.length < field.field_length || (new_type.length > 255) != (field.field_length > 255))
    return false;
  for (uint k = 0; k < table->s->keys; k++) {
    const KEY *key = &table->key_info[k];
    for (uint i = 0; i < key->user_defined_key_parts; i++)
      if (key->key_part[i].fieldnr == field.field_index + 1) return false;
  }
  return true;
}

/* How an ALTER can run (see the file comment). */
enum_alter_inplace_result ha_tidesdb::check_if_supported_inplace_alter(TABLE *altered_table,
                                                                       Alter_inplace_info *info) {
  alter_table_operations f = info->handler_flags;
  /* A change of the rows themselves: the server's own message
   * (ER_ALTER_OPERATION_NOT_SUPPORTED, "Try ALGORITHM=COPY"), as for any
   * engine that copies; the cases below say why in TidesDB's terms. */
  if (f & ~(INSTANT_OPS | ADD_INDEX_OPS | COLUMN_OPS)) return HA_ALTER_INPLACE_NOT_SUPPORTED;
  if (f & COLUMN_OPS) {
    /* A column whose implicit default is invalid (e.g. DATE NOT NULL in
     * strict mode): only the copy reports it for a non-empty table. */
    if (info->error_if_not_empty) return HA_ALTER_INPLACE_NOT_SUPPORTED;
    RowVersions fmt;
    if (const char *why = cannot_change_columns(table, altered_table, info, m_def->rowfmt, &fmt)) {
      info->unsupported_reason = why;
      return HA_ALTER_INPLACE_NOT_SUPPORTED;
    }
  }
  /* ALTER IGNORE keeps the first row of each duplicate: only a copy
   * drops rows. */
  if (info->ignore && (f & ALTER_ADD_UNIQUE_INDEX)) {
    info->unsupported_reason = "ALTER IGNORE removes duplicate rows, which TidesDB does by copying";
    return HA_ALTER_INPLACE_NOT_SUPPORTED;
  }
  if (f & ALTER_CHANGE_CREATE_OPTION) {
    HA_CREATE_INFO *ci = info->create_info;
    /* Column families keep the options they were created with. */
    if ((ci->used_fields & ~(ulong)HA_CREATE_USED_COMMENT) || ci->option_list ||
        table->s->row_type != ci->row_type) {
      info->unsupported_reason = "TidesDB applies table options other than COMMENT by rebuilding the table";
      return HA_ALTER_INPLACE_NOT_SUPPORTED;
    }
  }
  if (altered_table->versioned() || table->versioned()) {
    info->unsupported_reason = "TidesDB alters system-versioned tables by copying";
    return HA_ALTER_INPLACE_NOT_SUPPORTED;
  }
  if ((table->s->primary_key == MAX_KEY) != (altered_table->s->primary_key == MAX_KEY)) {
    info->unsupported_reason = "TidesDB rewrites every row when the primary key changes";
    return HA_ALTER_INPLACE_NOT_SUPPORTED;
  }
  std::vector<int> old_of_new;
  if (!map_keys(table, altered_table, info, &old_of_new)) {
    info->unsupported_reason = "TidesDB rebuilds an index whose columns or order change";
    return HA_ALTER_INPLACE_NOT_SUPPORTED;
  }
  bool adds = false;
  for (uint j = 0; j < altered_table->s->keys; j++) {
    if (old_of_new[j] >= 0) continue;
    adds = true;
    if (altered_table->s->primary_key == j) {
      info->unsupported_reason = "TidesDB rewrites every row when the primary key changes";
      return HA_ALTER_INPLACE_NOT_SUPPORTED;
    }
    if (const char *why = cannot_build(altered_table, &altered_table->key_info[j])) {
      info->unsupported_reason = why;
      return HA_ALTER_INPLACE_NOT_SUPPORTED;
    }
  }
  if (!adds) return HA_ALTER_INPLACE_INSTANT;
  /* Exclusive metadata lock in prepare and commit only (invariants 4-6);
   * the reason is reported if ALGORITHM=INSTANT was asked. */
  info->unsupported_reason = "TidesDB builds a new index from the table's rows (ALGORITHM=INPLACE, LOCK=NONE)";
  return HA_ALTER_INPLACE_NOCOPY_NO_LOCK;
}

/* Decide the new family list; create the families of added indexes. */
bool ha_tidesdb::prepare_inplace_alter_table(TABLE *altered_table, Alter_inplace_info *info) {
  std::vector<int> old_of_new;
  if (!map_keys(table, altered_table, info, &old_of_new)) {
    my_error(ER_INTERNAL_ERROR, MYF(0), "TidesDB: ALTER cannot trace the table's indexes");
    return true;
  }
  std::vector<std::string> old_names;
  int err = dict_families(m_def->name, &old_names);
  if (err) {
    print_error(err, MYF(0));
    return true;
  }
  TdbAlterCtx *ctx = new TdbAlterCtx;
  info->handler_ctx = ctx;
  ctx->fmt = m_def->rowfmt;
  ctx->columns_changed = (info->handler_flags & COLUMN_OPS) != 0;
  if (ctx->columns_changed) {
    if (const char *why = cannot_change_columns(table, altered_table, info, m_def->rowfmt, &ctx->fmt)) {
      my_error(ER_INTERNAL_ERROR, MYF(0), why);
      return true;
    }
  }
  for (uint j = 0; j < altered_table->s->keys; j++)
    if (old_of_new[j] < 0) ctx->added.push_back(j);
  if (!ctx->added.empty() &&
      (err = dict_alter_add_families(m_def->name, (uint)ctx->added.size(), &ctx->added_names, &ctx->added_cfs))) {
    print_error(err, MYF(0));
    return true;
  }
  if (!ctx->added.empty()) {
    /* Invariant 4: writers log from now on (no writer is running: this
     * phase holds the exclusive metadata lock), then the build snapshot. */
    ctx->def = m_def;
    ctx->log = online_log_start(m_def.get(), (size_t)sysvars_online_alter_log_size());
    if (!(ctx->snap = tdb_snapshot_create(g_db))) {
      print_error(HA_ERR_OUT_OF_MEM, MYF(0));
      return true;
    }
  }
  size_t a = 0;
  for (uint j = 0; j < altered_table->s->keys; j++)
    ctx->cf_names.push_back(old_of_new[j] < 0 ? ctx->added_names[a++] : old_names[old_of_new[j]]);
  if (m_def->hidden_pk) ctx->cf_names.push_back(old_names.back());
  ctx->keys_changed = info->index_add_count || info->index_drop_count || table->s->keys != altered_table->s->keys;
  for (uint j = 0; j < altered_table->s->keys && !ctx->keys_changed; j++)
    ctx->keys_changed = old_of_new[j] != (int)j;
  return false;
}

/* Catch-up passes while writes go on (inplace phase), stopping early once
 * fewer primary keys than CATCHUP_FINAL_MAX are left for the final pass
 * (commit, writes blocked). */
static const int CATCHUP_PASSES = 8;
static const size_t CATCHUP_FINAL_MAX = 1000;
/* catch_up's error was reported already (my_error). */
static const int ERR_REPORTED = -2;

/* How the added indexes' entries are formed from a row of the new table
 * (layout in row_format.h). */
class NewEntries {
 public:
  NewEntries(TABLE *altered, const TdbAlterCtx *ctx, bool hidden_pk) : m_t(altered) {
    m_codecs.resize(ctx->added.size());
    for (size_t i = 0; i < ctx->added.size(); i++) {
      m_keys.push_back(&altered->key_info[ctx->added[i]]);
      m_codecs[i].init(m_keys[i]);
    }
    m_pki = hidden_pk ? NULL : &altered->key_info[altered->s->primary_key];
  }
  size_t size() const { return m_keys.size(); }
  KEY *key_info(size_t i) const { return m_keys[i]; }
  /* Key (and value if val) of index i for the row rec with primary key
   * pk. True if the key is the unique form, which holds no primary key. */
  bool entry(size_t i, const uchar *rec, const std::string &pk, std::string *key, std::string *val) const {
    KEY *ki = m_keys[i];
    key->resize(m_codecs[i].full_len());
    bool has_null = m_codecs[i].encode(m_t, rec, m_codecs[i].parts(), (uchar *)&(*key)[0]);
    bool unique = (ki->flags & HA_NOSAME) && !has_null;
    if (!unique) key->append(pk);
    if (val) {
      val->resize(pk.size() + ki->key_length + (m_pki ? m_pki->key_length : 0));
      uchar *p = (uchar *)&(*val)[0];
      memcpy(p, pk.data(), pk.size());
      p += pk.size();
      key_copy(p, rec, ki, ki->key_length, true);
      if (m_pki) key_copy(p + ki->key_length, rec, m_pki, m_pki->key_length, true);
    }
    return unique;
  }

 private:
  TABLE *m_t;
  std::vector<KEY *> m_keys;
  std::vector<IndexCodec> m_codecs;
  KEY *m_pki;
};

/* Row pk of the data family cf (snap NULL: the latest committed version)
 * unpacked into rec as a row of the new table; buf keeps its bytes. 0,
 * HA_ERR_KEY_NOT_FOUND or an error. */
static int read_new_row(TABLE *altered, tdb_cf_t *cf, const tdb_snapshot_t *snap, const std::string &pk,
                        std::string *buf, uchar *rec, const RowVersions *fmt) {
  void *v;
  size_t vl;
  int rc = tdb_get(g_db, cf, snap, pk.data(), pk.size(), &v, &vl);
  if (rc == TDB_ERR_NOT_FOUND) return HA_ERR_KEY_NOT_FOUND;
  if (rc != TDB_OK) return map_tdb_error(rc);
  buf->assign((const char *)v, vl);
  tdb_free(v);
  memcpy(rec, altered->s->default_values, altered->s->reclength);
  return row_unpack(altered, (const uchar *)buf->data(), buf->size(), rec, fmt);
}

/* Build the added indexes from the snapshot taken in prepare, then catch
 * up with the writes made meanwhile (invariants 4-6), which go on. */
bool ha_tidesdb::inplace_alter_table(TABLE *altered_table, Alter_inplace_info *info) {
  TdbAlterCtx *ctx = static_cast<TdbAlterCtx *>(info->handler_ctx);
  if (!ctx || ctx->added.empty()) return false;
  ctx->start_us = my_interval_timer() / 1000;
  int err = build_indexes(altered_table, ctx);
  if (!err) {
    sysvars_pause_point(ha_thd(), "alter_after_build");
    size_t left = 0;
    for (int p = 0; p < CATCHUP_PASSES && !err; p++) {
      err = catch_up(altered_table, ctx, false, &left);
      if (left < CATCHUP_FINAL_MAX) break;
    }
  }
  if (err == HA_ERR_FOUND_DUPP_KEY || err == ERR_REPORTED) return true; /* reported */
  if (err) {
    print_error(err, MYF(0));
    return true;
  }
  return false;
}

/* Scan the build snapshot of the data family once; write each added
 * index's entries into its family. A duplicate in a UNIQUE index stops
 * the build with ER_DUP_ENTRY. */
int ha_tidesdb::build_indexes(TABLE *altered, TdbAlterCtx *ctx) {
  NewEntries ne(altered, ctx, m_def->hidden_pk);
  const size_t n = ne.size();
  std::vector<std::set<std::string>> pending(n); /* unique keys of the batch not yet written */
  uchar *rec = altered->record[0];
  THD *thd = ha_thd();

  tdb_iter_t *it = NULL;
  tdb_batch_t *b = NULL;
  int err = 0, rc = tdb_iter_create(g_db, data_cf(), ctx->snap, &it);
  if (rc != TDB_OK) {
    err = map_tdb_error(rc);
    goto done;
  }
  if (tdb_batch_create(&b) != TDB_OK) {
    err = HA_ERR_OUT_OF_MEM;
    goto done;
  }
  {
    std::string key, val, pk;
    size_t rows = 0;
    for (tdb_iter_seek_to_first(it); tdb_iter_valid(it); tdb_iter_next(it)) {
      size_t kl, vl;
      const uchar *k = (const uchar *)tdb_iter_key(it, &kl);
      const uchar *v = (const uchar *)tdb_iter_value(it, &vl);
      if ((err = row_unpack(altered, v, vl, rec, &ctx->fmt))) goto done;
      pk.assign((const char *)k, kl);
      for (size_t i = 0; i < n; i++) {
        bool unique = ne.entry(i, rec, pk, &key, &val);
        if (unique) {
          void *dv;
          size_t dl;
          bool dup = pending[i].count(key) > 0;
          if (!dup) {
            rc = tdb_get(g_db, ctx->added_cfs[i], NULL, key.data(), key.size(), &dv, &dl);
            if (rc == TDB_OK) {
              tdb_free(dv);
              dup = true;
            } else if (rc != TDB_ERR_NOT_FOUND) {
              err = map_tdb_error(rc);
              goto done;
            }
          }
          if (dup) {
            print_keydup_error(altered, ne.key_info(i), MYF(0));
            err = HA_ERR_FOUND_DUPP_KEY;
            goto done;
          }
          pending[i].insert(key);
        }
        if ((rc = tdb_batch_put(b, ctx->added_cfs[i], key.data(), key.size(), val.data(), val.size(), 0)) !=
            TDB_OK) {
          err = map_tdb_error(rc);
          goto done;
        }
      }
      g_counters.alter_index_rows++;
      if (++rows % BUILD_BATCH_ROWS == 0) {
        if (thd_killed(thd)) {
          err = HA_ERR_ABORTED_BY_USER;
          goto done;
        }
        for (;;) {
          rc = tdb_write(g_db, b);
          if (rc != TDB_ERR_BUSY) break;
        }
        if (rc != TDB_OK) {
          err = map_tdb_error(rc);
          goto done;
        }
        tdb_batch_clear(b);
        for (auto &s : pending) s.clear();
        sysvars_crash_point("alter_build_batch");
      }
    }
    if ((rc = tdb_iter_status(it)) != TDB_OK) {
      err = map_tdb_error(rc);
      goto done;
    }
    if (tdb_batch_count(b)) {
      while ((rc = tdb_write(g_db, b)) == TDB_ERR_BUSY) {
      }
      if (rc != TDB_OK) err = map_tdb_error(rc);
    }
  }
done:
  if (b) tdb_batch_destroy(b);
  if (it) tdb_iter_destroy(it);
  /* The snapshot is no longer needed: let compaction drop what it held. */
  if (ctx->snap) tdb_snapshot_release(g_db, ctx->snap);
  ctx->snap = NULL;
  return err;
}

/* One catch-up pass (invariant 5): drain the change log into ctx->known,
 * then for every primary key there make the added indexes agree with the
 * latest committed row: delete the keys its logged versions (and earlier
 * passes) gave it that are not its key now — a unique-form key only if
 * its entry holds this primary key —, then put its key now. A unique key
 * whose entry holds another row is a duplicate only if both rows hold the
 * key in one snapshot (invariant 6). A key is forgotten after the pass
 * unless a writer that logged it was still running when the log was
 * drained (it may commit after the read); final (writes blocked, commit)
 * forgets all. *left: keys still to check, logged or kept. */
int ha_tidesdb::catch_up(TABLE *altered, TdbAlterCtx *ctx, bool final, size_t *left) {
  std::vector<OnlineLogEntry> ents;
  bool overflow;
  {
    std::lock_guard<std::mutex> g(ctx->log->mu);
    ents.swap(ctx->log->entries);
    ctx->log->bytes = 0;
    overflow = ctx->log->overflow;
  }
  if (overflow) {
    my_printf_error(ER_UNKNOWN_ERROR,
                    "TidesDB: the rows written while the index was built exceeded "
                    "tidesdb_online_alter_log_size (%llu bytes); run the ALTER again with a larger "
                    "value, when fewer writes run, or with LOCK=SHARED",
                    MYF(0), (ulonglong)ctx->log->limit);
    return ERR_REPORTED;
  }
  NewEntries ne(altered, ctx, m_def->hidden_pk);
  const size_t n = ne.size();
  TABLE_SHARE *ns = altered->s;
  uchar *rec = altered->record[0];
  std::vector<uchar> other(ns->reclength);
  std::string buf, obuf, key, val, k2;
  THD *thd = ha_thd();
  int err = 0;

  for (OnlineLogEntry &e : ents) {
    TdbAlterCtx::PkState &st = ctx->known[e.pk];
    if (st.keys.empty()) st.keys.resize(n);
    st.txns.insert(e.txn);
    if (!e.has_before) continue;
    memcpy(rec, ns->default_values, ns->reclength);
    if ((err = row_unpack(altered, (const uchar *)e.before.data(), e.before.size(), rec, &ctx->fmt)))
      return err;
    for (size_t i = 0; i < n; i++) {
      bool u = ne.entry(i, rec, e.pk, &key, NULL);
      st.keys[i].insert((u ? "U" : "N") + key);
    }
  }
  ents.clear();
  ents.shrink_to_fit();
  /* Writers still running now may commit after this pass reads their
   * rows; a writer not listed had committed or rolled back already. */
  std::set<uint64_t> running;
  bool keep_all = false;
  if (!final) {
    std::vector<TrxInfo> l;
    Trx::list_running(&l);
    for (const TrxInfo &t : l) running.insert(t.txn_id);
    /* A prepared XA transaction whose connection went away is in no
     * list but may still commit: then forget nothing in this pass. */
    keep_all = tdb_recover_prepared(g_db, [](void *, const void *, size_t) { return 0; }, NULL) != 0;
  }

  tdb_cf_t *dcf = data_cf();
  tdb_batch_t *b = NULL;
  if (tdb_batch_create(&b) != TDB_OK) return HA_ERR_OUT_OF_MEM;
  /* This pass's writes not yet flushed, per index: key -> (present, value),
   * read before the family (a later key of the pass may meet them). */
  std::vector<std::unordered_map<std::string, std::pair<bool, std::string>>> overlay(n);
  auto flush = [&]() -> int {
    if (!tdb_batch_count(b)) return 0;
    int rc;
    while ((rc = tdb_write(g_db, b)) == TDB_ERR_BUSY) {
    }
    if (rc != TDB_OK) return map_tdb_error(rc);
    tdb_batch_clear(b);
    for (auto &o : overlay) o.clear();
    return 0;
  };
  auto lookup = [&](size_t i, const std::string &k, std::string *v) -> int {
    auto o = overlay[i].find(k);
    if (o != overlay[i].end()) {
      if (!o->second.first) return HA_ERR_KEY_NOT_FOUND;
      *v = o->second.second;
      return 0;
    }
    void *p;
    size_t l;
    int rc = tdb_get(g_db, ctx->added_cfs[i], NULL, k.data(), k.size(), &p, &l);
    if (rc == TDB_ERR_NOT_FOUND) return HA_ERR_KEY_NOT_FOUND;
    if (rc != TDB_OK) return map_tdb_error(rc);
    v->assign((const char *)p, l);
    tdb_free(p);
    return 0;
  };
  auto holds = [](const std::string &v, const std::string &pk) {
    return v.size() >= pk.size() && memcmp(v.data(), pk.data(), pk.size()) == 0;
  };
  size_t done_keys = 0;
  for (auto it = ctx->known.begin(); it != ctx->known.end();) {
    const std::string &pk = it->first;
    TdbAlterCtx::PkState &st = it->second;
    err = read_new_row(altered, dcf, NULL, pk, &buf, rec, &ctx->fmt);
    const bool found = err == 0;
    if (err && err != HA_ERR_KEY_NOT_FOUND) goto done;
    err = 0;
    for (size_t i = 0; i < n; i++) {
      std::string cur, v;
      bool u = false;
      if (found) {
        u = ne.entry(i, rec, pk, &key, &val);
        cur = (u ? "U" : "N") + key;
      }
      for (const std::string &tk : st.keys[i]) {
        if (found && tk == cur) continue;
        k2.assign(tk, 1, std::string::npos);
        if (tk[0] == 'U') {
          int r = lookup(i, k2, &v);
          if (r == HA_ERR_KEY_NOT_FOUND) continue;
          if (r) {
            err = r;
            goto done;
          }
          if (!holds(v, pk)) continue; /* another row's entry */
        }
        int rc = tdb_batch_delete(b, ctx->added_cfs[i], k2.data(), k2.size());
        if (rc != TDB_OK) {
          err = map_tdb_error(rc);
          goto done;
        }
        overlay[i][k2] = std::make_pair(false, std::string());
      }
      if (!found) continue;
      if (u) {
        int r = lookup(i, key, &v);
        if (r && r != HA_ERR_KEY_NOT_FOUND) {
          err = r;
          goto done;
        }
        if (!r && !holds(v, pk)) {
          /* Another row's entry: both rows read from one snapshot. */
          std::string opk(v, 0, pk.size());
          bool x_has = false, o_has = false;
          tdb_snapshot_t *s = tdb_snapshot_create(g_db);
          if (!s) {
            err = HA_ERR_OUT_OF_MEM;
            goto done;
          }
          r = read_new_row(altered, dcf, s, pk, &obuf, other.data(), &ctx->fmt);
          if (!r) x_has = ne.entry(i, other.data(), pk, &k2, NULL) && k2 == key;
          if (!r && x_has) {
            r = read_new_row(altered, dcf, s, opk, &obuf, other.data(), &ctx->fmt);
            if (!r) o_has = ne.entry(i, other.data(), opk, &k2, NULL) && k2 == key;
          }
          tdb_snapshot_release(g_db, s);
          if (r && r != HA_ERR_KEY_NOT_FOUND) {
            err = r;
            goto done;
          }
          if (x_has && o_has) {
            print_keydup_error(altered, ne.key_info(i), MYF(0)); /* rec: this row */
            err = HA_ERR_FOUND_DUPP_KEY;
            goto done;
          }
          /* This row changed again since it was read: logged, the next
           * pass puts its key. */
          if (!x_has) continue;
        }
      }
      int rc = tdb_batch_put(b, ctx->added_cfs[i], key.data(), key.size(), val.data(), val.size(), 0);
      if (rc != TDB_OK) {
        err = map_tdb_error(rc);
        goto done;
      }
      overlay[i][key] = std::make_pair(true, val);
      st.keys[i].insert(cur); /* removed by a later pass if the row moves on */
    }
    g_counters.alter_catchup_rows++;
    ctx->caught_up++;
    {
      bool keep = keep_all;
      for (auto t = st.txns.begin(); t != st.txns.end();) {
        if (running.count(*t)) {
          keep = true;
          ++t;
        } else {
          t = st.txns.erase(t);
        }
      }
      if (keep)
        ++it;
      else
        it = ctx->known.erase(it);
    }
    if (tdb_batch_count(b) >= BUILD_BATCH_ROWS && (err = flush())) goto done;
    if (!final && ++done_keys % 1000 == 0 && thd_killed(thd)) {
      err = HA_ERR_ABORTED_BY_USER;
      goto done;
    }
  }
  if ((err = flush())) goto done;
  ctx->passes++;
  if (final) sysvars_crash_point("alter_catchup_final");
done:
  tdb_batch_destroy(b);
  if (!err) {
    std::lock_guard<std::mutex> g(ctx->log->mu);
    *left = ctx->known.size() + ctx->log->entries.size();
  }
  return err;
}

/* Commit: the final catch-up pass (writes blocked), the new indexes made
 * durable (invariant 3), then the dictionary switched to the new family
 * list and .frm version (invariant 2). Rollback: drop the families built
 * (invariant 1). */
bool ha_tidesdb::commit_inplace_alter_table(TABLE *altered_table, Alter_inplace_info *info, bool commit) {
  TdbAlterCtx *ctx = static_cast<TdbAlterCtx *>(info->handler_ctx);
  if (!ctx) return false;
  if (!commit) {
    ctx->end_online();
    if (!ctx->added_names.empty()) dict_alter_drop_families(ctx->added_names);
    ctx->added_names.clear();
    ctx->committed = true;
    return false;
  }
  close_iter();
  if (ctx->log) {
    size_t left, final_keys = ctx->known.size();
    ulonglong t0 = my_interval_timer() / 1000;
    {
      std::lock_guard<std::mutex> g(ctx->log->mu);
      final_keys += ctx->log->entries.size();
    }
    int err = catch_up(altered_table, ctx, true, &left);
    if (!err)
      sql_print_information(
          "TidesDB: ADD INDEX on %s: built and caught up in %.3f s (%u catch-up passes, %llu keys); "
          "final pass with writes blocked: about %zu keys in %.3f s",
          m_def->name.c_str(), (t0 - ctx->start_us) / 1e6, ctx->passes, ctx->caught_up, final_keys,
          (my_interval_timer() / 1000 - t0) / 1e6);
    ctx->end_online();
    if (!err) {
      int rc = tdb_sync(g_db);
      if (rc != TDB_OK) err = map_tdb_error(rc);
    }
    if (err && err != HA_ERR_FOUND_DUPP_KEY && err != ERR_REPORTED) print_error(err, MYF(0));
    if (err) return true;
  }
  const LEX_CUSTRING &v = altered_table->s->tabledef_version;
  std::string version((const char *)v.str, v.length);
  int err = dict_alter_commit(m_def->name, ctx->cf_names, version, ctx->keys_changed,
                              ctx->columns_changed ? &ctx->fmt : NULL);
  if (err) {
    print_error(err, MYF(0));
    return true;
  }
  ctx->committed = true;
  if (ctx->added.empty())
    g_counters.alter_instant++;
  else
    g_counters.alter_inplace++;
  return false;
}

/* Crash recovery of an in-place ALTER (handlerton check_version): 0 if
 * the engine's table already carries the new .frm's version. */
int alter_check_version(handlerton *, const char *path, const LEX_CUSTRING *version, ulonglong) {
  /* path: <datadir>/<db>/<table>; the dictionary knows "db/table". */
  std::string p(path);
  size_t t = p.rfind('/');
  if (t == std::string::npos || t == 0) return 1;
  size_t d = p.rfind('/', t - 1);
  std::string name = p.substr(d == std::string::npos ? 0 : d + 1);
  return dict_check_version(name, std::string((const char *)version->str, version->length)) == 0 ? 0 : 1;
}

}  // namespace tidesql

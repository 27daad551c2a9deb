/*
 * dict: the data dictionary. Maps MariaDB tables to TidesDB column
 * families and keeps per-table counters (AUTO_INCREMENT, row count,
 * index cardinality) in the database itself.
 *
 * Two system column families:
 *   tidesql_dict (sync FULL): "T" + "db/table" -> table record
 *                              "S" + "next_id"  -> next table id (u64 BE)
 *   tidesql_meta (sync NONE): "A" + id -> next AUTO_INCREMENT value
 *                              "R" + id -> row count (i64)
 *                              "K" + id -> index cardinalities
 * A table record: [2][table id u64][flags u8][cf count u16]
 *                 then per column family [name length u16][name],
 *                 then [length u8][the .frm's tabledef_version]
 *                 [, legacy V1 row layout: stored columns u16, null bytes u8,
 *                  once a column was appended instantly before row
 *                  versions, always in format 3]
 *                 format 3 (once columns changed instantly) then has the
 *                 row versions: [current u16], per older version [null
 *                 bytes u8][columns u16] and per column [field u16][null
 *                 byte u16][null bit u8][skip kind u8][skip length u16];
 *                 [instant defaults u16], each [field u16][null u8]
 *                 [length u32 BE][packed default] (row_format.h)
 *                 (format 1, still read, has no version).
 * The record lists the families in MariaDB key order (then the hidden-key
 * data family). They are named "t<id>_<n>", n unique within the table: at
 * CREATE n is the key number; an index added in place takes the next
 * unused n. Column families never change name; RENAME and in-place ALTER
 * only rewrite the record.
 *
 * Invariants (crash consistency of DDL)
 *  1. A column family named t<id>_<n> is live iff a table record lists
 *     it. At startup every t*_* family no record lists is dropped
 *     (leftovers of a CREATE, DROP, TRUNCATE or ALTER cut short by a
 *     crash).
 *  2. CREATE creates the families first, then writes the record (and the
 *     next id) in one synced batch: the table exists iff the batch landed.
 *  3. DROP deletes the record and the table's meta keys in one synced
 *     batch, then drops the families.
 *  4. TRUNCATE creates families under a new id, then replaces the record
 *     (and meta keys) in one synced batch, then drops the old families.
 *  5. RENAME deletes the old name's record and writes the new one in one
 *     synced batch.
 *  6. Meta keys are written outside the transactions (a shared counter
 *     key in every transaction would make all writers of a table
 *     conflict), with sync NONE, at most once a second per table after a
 *     commit changed them and at shutdown; after a crash they may lag
 *     (auto-increment is then also bounded below by the largest key, row
 *     counts are estimates).
 *  7. In-place ALTER (ha_tidesdb_alter.cc) creates the families of added
 *     indexes first, then writes the new record (family list and the new
 *     .frm's version) in one synced batch, then drops the families of
 *     dropped indexes. The record's version tells crash recovery which .frm
 *     the engine's table matches (handlerton check_version).
 *
 * Locking: g_dict_mu guards the name -> TableDef cache and serializes DDL.
 * A TableDef is shared by every handler of the table (shared_ptr); its
 * counters are atomics; `obsolete` is set when DROP/TRUNCATE/RENAME
 * retires it, and handlers re-fetch the definition at their next
 * statement.
 */
#ifndef TIDESQL_DICT_H
#define TIDESQL_DICT_H

#include "row_format.h"
#include "tdb_common.h"

#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

namespace tidesql {

struct OnlineLog; /* online_log.h */

/* A table's mapping and shared counters. */
struct TableDef {
  std::string name; /* "db/table" */
  uint64_t id = 0;
  bool hidden_pk = false;
  uint nkeys = 0;              /* MariaDB keys */
  std::vector<tdb_cf_t *> cfs; /* cfs[k] for key k; cfs[nkeys]: hidden pk */
  RowVersions rowfmt;          /* row versions (row_format.h) */
  std::atomic<bool> obsolete{false};

  std::mutex mu;                        /* guards what follows */
  bool counters_loaded = false;         /* autoinc/hidden id initialised */
  std::atomic<uint64_t> autoinc_next{0}; /* next value to hand out */
  std::atomic<uint64_t> hidden_next{1};
  std::atomic<int64_t> rows{0};
  std::vector<std::vector<ulong>> rec_per_key; /* per key, per part */
  std::vector<std::string> key_names; /* from the first handler bound to it */
  bool card_from_analyze = false;
  std::atomic<int64_t> card_rows{-1}; /* rows when rec_per_key was made (-1: none, or loaded and not yet compared) */
  ulonglong card_time = 0;     /* when (us) */
  std::atomic<uint64_t> card_version{0}; /* bumped by every new rec_per_key */
  std::atomic<bool> card_busy{false};    /* a handler is recomputing it */
  std::atomic<ulonglong> counters_saved{0}; /* when last persisted (us) */
  /* Size estimate cache (bytes of the data family and of all others). */
  ulonglong size_time = 0;
  uint64_t data_bytes = 0, index_bytes = 0;

  /* ADD INDEX with LOCK=NONE (online_log.h): while set, every writer of
   * the table records its rows in online_log (guarded by online_mu). */
  std::atomic<bool> online_on{false};
  std::mutex online_mu;
  std::shared_ptr<OnlineLog> online_log;

  tdb_cf_t *data_cf(uint primary_key) const {
    return hidden_pk ? cfs[nkeys] : cfs[primary_key];
  }
};
typedef std::shared_ptr<TableDef> TableDefPtr;

/* Open or create the system families, load the id counter and drop
 * orphaned families (invariant 1). */
int dict_init(tdb_t *db);
void dict_shutdown();

/* "./db/t1" -> "db/t1". */
std::string dict_name_from_path(const char *path);

/* Definition of a table (cached). HA_ERR_NO_SUCH_TABLE if absent. */
int dict_get(const std::string &name, TableDefPtr *out);

/* Create the families and the record. nfamilies = keys (+1 if hidden pk);
 * cfg applies to every family. */
int dict_create(const std::string &name, uint nkeys, bool hidden_pk, const tdb_cf_config_t &cfg,
                uint64_t autoinc_start, const std::string &version);
int dict_drop(const std::string &name);
int dict_rename(const std::string &from, const std::string &to);
/* Replace the table's families by empty ones (new id); returns the new
 * definition. */
int dict_truncate(const std::string &name, TableDefPtr *out);

/* In-place ALTER (invariant 7). The families the record lists, in order. */
int dict_families(const std::string &name, std::vector<std::string> *cf_names);
/* Create n new families for the table (options of its first family). */
int dict_alter_add_families(const std::string &name, uint n, std::vector<std::string> *names,
                            std::vector<tdb_cf_t *> *cfs);
/* Drop families no record lists (an ALTER rolled back). */
void dict_alter_drop_families(const std::vector<std::string> &names);
/* Replace the table's family list and .frm version (one synced batch),
 * and, if fmt, the table's new row versions (one record: the old or new
 * definition, never a mix);
 * retire the cached definition, drop the families no longer listed. */
int dict_alter_commit(const std::string &name, const std::vector<std::string> &cf_names,
                      const std::string &version, bool keys_changed, const RowVersions *fmt);
/* 0 if the table's record carries this .frm version, 1 if another. */
int dict_check_version(const std::string &name, const std::string &version);

/* Add the table's current AUTO_INCREMENT and row count to a batch. */
int dict_put_counters(tdb_batch_t *b, TableDef *def);
/* A commit changed the table's counters: persist them if they were last
 * written more than a second ago (invariant 6). */
void dict_counters_changed(TableDef *def);
/* Persist the table's cardinality statistics. */
int dict_save_cardinality(TableDef *def);

/* Names of all tables in the dictionary (SHOW ENGINE STATUS). */
std::vector<std::string> dict_table_names();

}  // namespace tidesql

#endif

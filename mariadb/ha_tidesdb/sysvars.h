/*
 * sysvars: the tidesdb_* system variables, per-table options, status
 * variables and SHOW ENGINE TIDESDB STATUS.
 *
 * Database-wide settings (cache, threads, memtable mode, log level) are
 * read-only: they are applied when the engine opens the database.
 * tidesdb_default_* settings are dynamic and apply to tables created
 * afterwards (each table's column families keep the settings they were
 * created with; the library persists them). Per-table options in CREATE
 * TABLE (COMPRESSION='ZSTD', SYNC_MODE='NONE', ...) override them.
 * Ratios are given in parts per 10,000 (tidesdb_default_bloom_fpr = 100
 * -> 0.01), as in the seed configurations.
 */
#ifndef TIDESQL_SYSVARS_H
#define TIDESQL_SYSVARS_H

#include "stat_counter.h"
#include "tdb_common.h"

/* Parsed engine-defined table options (CREATE TABLE ... COMPRESSION=...).
 * Enum values: 0 = use the tidesdb_default_* variable. */
struct ha_table_option_struct {
  uint compression;            /* DEFAULT,NONE,SNAPPY,LZ4,ZSTD */
  uint sync_mode;              /* DEFAULT,NONE,INTERVAL,FULL   */
  ulonglong write_buffer_size; /* bytes; 0 = default          */
  ulonglong bloom_fpr;         /* parts per 10,000; 10000 = default */
  ulonglong block_size;        /* bytes; 0 = default          */
};

namespace tidesql {

extern struct st_mysql_sys_var *g_sysvars[];
extern struct st_mysql_show_var g_status_vars[];
extern ha_create_table_option g_table_options[];

/* Database settings from the variables. */
void sysvars_db_config(tdb_config_t *cfg);
/* tidesdb_malloc_threshold (bytes; 0 = leave glibc's thresholds). */
size_t sysvars_malloc_threshold();
/* Settings of a new table's column families: defaults + table options. */
void sysvars_cf_config(const ha_table_option_struct *opt, tdb_cf_config_t *cfg);
/* tidesdb_skip_unique_check for this session. */
bool sysvars_skip_unique_check(THD *thd);
/* tidesdb_lock_wait_timeout (seconds) for this session. */
ulong sysvars_lock_wait_timeout(THD *thd);
/* tidesdb_write_stall_timeout (milliseconds) for this session. */
ulong sysvars_write_stall_timeout(THD *thd);
/* tidesdb_pessimistic_locking for this session. */
bool sysvars_pessimistic_locking(THD *thd);
/* Whether the unified memtable ended up active (library may refuse it). */
extern bool g_unified_active;
/* tidesdb_unified_memtable_sync_mode (a tdb_sync_mode_t). */
int sysvars_unified_sync_mode();
/* Testing only: if tidesdb_debug_crash_point names this point, kill the
 * server (SIGKILL, as kill -9) right here. Used by the mtr suite to cut DDL
 * short between its steps (dict.h, crash consistency). */
void sysvars_crash_point(const char *point);
/* Testing only: wait here while tidesdb_debug_alter_pause names this point
 * (or until the statement is killed). */
void sysvars_pause_point(THD *thd, const char *point);
/* tidesdb_online_alter_log_size (bytes). */
ulonglong sysvars_online_alter_log_size();

/* Engine counters shown as status variables. */
struct Counters {
  StatCounter rows_read, rows_inserted, rows_updated, rows_deleted;
  StatCounter dup_key_errors, point_reads, iterators;
  /* ALTER TABLE in place: committed INSTANT and INPLACE (index build)
   * alters, and rows read to build indexes. */
  StatCounter alter_instant, alter_inplace, alter_index_rows;
  /* Primary keys an online ADD INDEX caught up (rows changed meanwhile). */
  StatCounter alter_catchup_rows;
  /* Range locks taken by locking scans (ha_tidesdb_range.cc). */
  StatCounter range_locks;
  StatCounter rows_unlocked; /* READ COMMITTED locks given back (ha_tidesdb.h invariant 7) */
};
extern Counters g_counters;

bool show_engine_status(handlerton *hton, THD *thd, stat_print_fn *print, enum ha_stat_type stat);

}  // namespace tidesql

#endif

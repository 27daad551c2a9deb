/* sysvars: tidesdb_* variables, table options, status (see sysvars.h). */
#include "sysvars.h"

#include "commit_sync.h"
#include "dict.h"
#include "hot_backup.h"
#include "malloc_tuning.h"
#include "trx.h"

#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

namespace tidesql {

Counters g_counters;
bool g_unified_active = false;

/* ---- enum value lists ---- */

static const char *sync_names[] = {"NONE", "INTERVAL", "FULL", NullS};
static TYPELIB sync_typelib = {array_elements(sync_names) - 1, "", sync_names, NULL};
static const char *compression_names[] = {"NONE", "SNAPPY", "LZ4", "ZSTD", NullS};
static TYPELIB compression_typelib = {array_elements(compression_names) - 1, "", compression_names,
                                      NULL};
static const char *log_level_names[] = {"DEBUG", "INFO", "WARN", "ERROR", "FATAL", "NONE", NullS};
static TYPELIB log_level_typelib = {array_elements(log_level_names) - 1, "", log_level_names, NULL};

/* ---- database-wide (read-only) ---- */

static ulonglong v_block_cache_size;
static my_bool v_unified_memtable;
static my_bool v_release_locks_before_sync;
static my_bool v_mmap_reads;
static ulonglong v_unified_wbs;
static ulong v_unified_sync_mode;
static uint v_flush_threads;
static uint v_compaction_threads;
static uint v_max_open_sstables;
static ulong v_log_level;
static ulonglong v_max_memory_usage;
static ulonglong v_malloc_threshold;

static MYSQL_SYSVAR_ULONGLONG(block_cache_size, v_block_cache_size, PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_READONLY,
                              "Block cache size in bytes (0 disables the cache)", NULL, NULL,
                              64ULL << 20, 0, ULLONG_MAX, 0);
static MYSQL_SYSVAR_BOOL(unified_memtable, v_unified_memtable, PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_READONLY,
                         "One memtable shared by all column families (falls back to one memtable "
                         "per column family with a warning if the library does not support it)",
                         NULL, NULL, FALSE);
static MYSQL_SYSVAR_BOOL(release_locks_before_sync, v_release_locks_before_sync,
                         PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_READONLY,
                         "A durable COMMIT makes its rows visible and releases its row locks before "
                         "the log fsync, and returns after it, as InnoDB does (OFF: after the fsync)",
                         NULL, NULL, TRUE);
static MYSQL_SYSVAR_BOOL(mmap_reads, v_mmap_reads, PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_READONLY,
                         "A table block read once is read again, after the block cache dropped it, "
                         "through a read-only mapping of its file (no system call, no copy; the pages "
                         "count in the server's RSS), while such reads find their pages in memory. "
                         "OFF: every block cache miss is a pread",
                         NULL, NULL, TRUE);
static MYSQL_SYSVAR_ULONGLONG(unified_memtable_write_buffer_size, v_unified_wbs,
                              PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_READONLY,
                              "Size of the unified memtable before it is flushed", NULL, NULL,
                              64ULL << 20, 64ULL << 10, 4ULL << 30, 0);
static MYSQL_SYSVAR_ENUM(unified_memtable_sync_mode, v_unified_sync_mode,
                         PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_READONLY,
                         "WAL sync mode of the unified memtable: NONE, INTERVAL or FULL", NULL, NULL,
                         TDB_SYNC_FULL, &sync_typelib);
static MYSQL_SYSVAR_UINT(flush_threads, v_flush_threads, PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_READONLY,
                         "Background flush threads", NULL, NULL, 2, 1, 64, 0);
static MYSQL_SYSVAR_UINT(compaction_threads, v_compaction_threads, PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_READONLY,
                         "Background compaction threads", NULL, NULL, 2, 1, 64, 0);
static MYSQL_SYSVAR_UINT(max_open_sstables, v_max_open_sstables, PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_READONLY,
                         "Bound of the open SSTable cache", NULL, NULL, 512, 16, 1 << 20, 0);
static MYSQL_SYSVAR_ENUM(log_level, v_log_level, PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_READONLY,
                         "Library log level (DEBUG, INFO, WARN, ERROR, FATAL, NONE); the log is "
                         "#tidesdb/LOG in the data directory",
                         NULL, NULL, 1, &log_level_typelib);
static MYSQL_SYSVAR_ULONGLONG(max_memory_usage, v_max_memory_usage, PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_READONLY,
                              "Memory bound of the library in bytes (0 = half of the physical RAM, or of "
                              "the server's cgroup memory limit where that is lower)",
                              NULL, NULL, 0, 0, ULLONG_MAX, 0);
static MYSQL_SYSVAR_ULONGLONG(malloc_threshold, v_malloc_threshold, PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_READONLY,
                              "glibc malloc's mmap and trim thresholds for the whole server, in bytes, "
                              "fixed when the engine starts (malloc_tuning.h). 0 leaves glibc's "
                              "adaptive thresholds, which the server's start-up raises to about 19 and "
                              "38 MiB: each malloc arena (up to 8 per core) then keeps tens of MiB it "
                              "no longer uses. No effect under another allocator",
                              NULL, NULL, 4ULL << 20, 0, MALLOC_THRESHOLD_MAX, 0);

/* ---- defaults for new tables (dynamic) ---- */

static ulong v_default_sync_mode;
static ulonglong v_default_sync_interval_us;
static ulong v_default_compression;
static ulonglong v_default_write_buffer_size;
static uint v_default_bloom_fpr;
static uint v_default_l0_stall;
static uint v_default_l1_trigger;
static uint v_default_level_ratio;
static uint v_default_tomb_trigger;
static ulonglong v_default_tomb_min;

static MYSQL_SYSVAR_ENUM(default_sync_mode, v_default_sync_mode, PLUGIN_VAR_RQCMDARG,
                         "WAL sync mode of new tables: NONE, INTERVAL or FULL (FULL: a commit is "
                         "durable when it returns)",
                         NULL, NULL, TDB_SYNC_FULL, &sync_typelib);
static MYSQL_SYSVAR_ULONGLONG(default_sync_interval_us, v_default_sync_interval_us, PLUGIN_VAR_RQCMDARG,
                              "WAL fsync period for tables in INTERVAL sync mode (microseconds)", NULL,
                              NULL, 128000, 1, ULLONG_MAX, 0);
static MYSQL_SYSVAR_ENUM(default_compression, v_default_compression, PLUGIN_VAR_RQCMDARG,
                         "Block compression of new tables: NONE, SNAPPY, LZ4 or ZSTD", NULL, NULL,
                         TDB_COMPRESS_LZ4, &compression_typelib);
static MYSQL_SYSVAR_ULONGLONG(default_write_buffer_size, v_default_write_buffer_size, PLUGIN_VAR_RQCMDARG,
                              "Memtable size of each column family of new tables", NULL, NULL,
                              64ULL << 20, 64ULL << 10, 4ULL << 30, 0);
static MYSQL_SYSVAR_UINT(default_bloom_fpr, v_default_bloom_fpr, PLUGIN_VAR_RQCMDARG,
                         "Bloom filter false-positive rate of new tables in parts per 10,000 "
                         "(100 = 1%; 0 disables the filter)",
                         NULL, NULL, 100, 0, 9999, 0);
static MYSQL_SYSVAR_UINT(default_l0_queue_stall_threshold, v_default_l0_stall, PLUGIN_VAR_RQCMDARG,
                         "Immutable memtables queued before writers of new tables wait", NULL, NULL,
                         10, 1, 1024, 0);
static MYSQL_SYSVAR_UINT(default_l1_file_count_trigger, v_default_l1_trigger, PLUGIN_VAR_RQCMDARG,
                         "Level-1 files that start a compaction in new tables", NULL, NULL, 4, 1, 1024,
                         0);
static MYSQL_SYSVAR_UINT(default_level_size_ratio, v_default_level_ratio, PLUGIN_VAR_RQCMDARG,
                         "Size ratio between levels of new tables", NULL, NULL, 10, 2, 100, 0);
static MYSQL_SYSVAR_UINT(default_tombstone_density_trigger, v_default_tomb_trigger, PLUGIN_VAR_RQCMDARG,
                         "Tombstone share of a file (parts per 10,000) that compacts it early in "
                         "new tables",
                         NULL, NULL, 5000, 1, 10000, 0);
static MYSQL_SYSVAR_ULONGLONG(default_tombstone_density_min_entries, v_default_tomb_min, PLUGIN_VAR_RQCMDARG,
                              "Entries a file needs before its tombstone density counts", NULL, NULL,
                              2048, 0, ULLONG_MAX, 0);
static MYSQL_THDVAR_BOOL(pessimistic_locking, PLUGIN_VAR_RQCMDARG,
                         "ON: transactions lock the rows they write and read FOR UPDATE / LOCK IN "
                         "SHARE MODE (waits end with ER_LOCK_WAIT_TIMEOUT or ER_LOCK_DEADLOCK). "
                         "OFF: optimistic at REPEATABLE READ and SERIALIZABLE (first committer "
                         "wins: a conflicting transaction fails with ER_LOCK_DEADLOCK, at the "
                         "latest at COMMIT). READ COMMITTED transactions always lock. Applies to "
                         "transactions begun afterwards",
                         NULL, NULL, TRUE);
static MYSQL_THDVAR_BOOL(skip_unique_check, PLUGIN_VAR_RQCMDARG,
                         "Skip duplicate-key checks on INSERT (REPLACE and INSERT ... ON DUPLICATE "
                         "KEY UPDATE still check). Unsafe: a duplicate silently overwrites",
                         NULL, NULL, FALSE);

static MYSQL_THDVAR_ULONG(lock_wait_timeout, PLUGIN_VAR_RQCMDARG,
                          "Seconds a transaction waits for a row lock held by another transaction "
                          "before giving up with ER_LOCK_WAIT_TIMEOUT (applies to transactions "
                          "begun afterwards)",
                          NULL, NULL, 50, 1, 1024 * 1024 * 1024, 0);

static MYSQL_THDVAR_ULONG(write_stall_timeout, PLUGIN_VAR_RQCMDARG,
                          "Milliseconds a COMMIT waits for background flush/compaction when the "
                          "library applies back-pressure (memtables full, level 1 far behind) "
                          "before it fails with ER_LOCK_WAIT_TIMEOUT and rolls the transaction "
                          "back; KILL ends the wait sooner",
                          NULL, NULL, 10000, 1, 1024UL * 1024 * 1024, 0);

/* tidesdb_debug_pause_background: ON holds one tdb_pause_background. */
static my_bool v_debug_pause_background;
static void update_debug_pause(THD *, struct st_mysql_sys_var *, void *var, const void *save) {
  my_bool on = *(const my_bool *)save;
  if (!g_db || on == v_debug_pause_background) {
    *(my_bool *)var = g_db ? on : FALSE;
    return;
  }
  int rc = on ? tdb_pause_background(g_db) : tdb_continue_background(g_db);
  if (rc == TDB_OK) *(my_bool *)var = on;
  else log_warning("TidesDB: tidesdb_debug_pause_background: %s", tdb_last_error());
}
static MYSQL_SYSVAR_BOOL(debug_pause_background, v_debug_pause_background, PLUGIN_VAR_OPCMDARG,
                         "Testing only: ON pauses the library's background flushes and compactions "
                         "(writes then meet back-pressure), OFF resumes them",
                         NULL, update_debug_pause, FALSE);

static char *v_debug_crash_point;
static MYSQL_SYSVAR_STR(debug_crash_point, v_debug_crash_point, PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_MEMALLOC,
                        "Testing only: the server kills itself (SIGKILL) when DDL or two-phase "
                        "commit reaches the named point (DDL: create_after_families, "
                        "drop_after_record, drop_after_families, truncate_after_families, "
                        "truncate_after_record, rename_after_record, alter_*; XA: "
                        "xa_after_prepare, xa_before_commit; backup: backup_before_pos_file); "
                        "empty: never",
                        NULL, NULL, "");

static char *v_debug_alter_pause;
static MYSQL_SYSVAR_STR(debug_alter_pause, v_debug_alter_pause, PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_MEMALLOC,
                        "Testing only: an online ADD INDEX waits at the named point "
                        "(alter_after_build: index built from the snapshot, before the catch-up "
                        "of concurrent writes) until the variable names another point; "
                        "the processlist shows 'TidesDB: paused at <point>'. Empty: never",
                        NULL, NULL, "");

static ulonglong v_online_alter_log_size;
static MYSQL_SYSVAR_ULONGLONG(online_alter_log_size, v_online_alter_log_size, PLUGIN_VAR_RQCMDARG,
                              "Bytes of row changes an ADD INDEX with LOCK=NONE keeps in memory "
                              "while it builds (the change log of concurrent writes, drained as it "
                              "catches up); past it the ALTER fails and the writes go on",
                              NULL, NULL, 128ULL << 20, 4096, ~0ULL, 0);

/* tidesdb_backup_dir: setting it takes a hot backup (hot_backup.cc). */
static char *v_backup_dir;
static MYSQL_SYSVAR_STR(backup_dir, v_backup_dir,
                        PLUGIN_VAR_RQCMDARG | PLUGIN_VAR_MEMALLOC | PLUGIN_VAR_NOCMDOPT,
                        "SET GLOBAL tidesdb_backup_dir='/path' takes a hot, consistent backup of "
                        "every TidesDB table into /path (absent, or an empty directory): the "
                        "library checkpoint, the tables' .frm files and the binary log position "
                        "and GTID of the backup point (file tidesdb_binlog_pos), under BACKUP "
                        "STAGE BLOCK_COMMIT. The value is the last backup's directory. See "
                        "scripts/mariadb/backup.sh and restore.sh",
                        backup_dir_check, NULL, "");

struct st_mysql_sys_var *g_sysvars[] = {
    MYSQL_SYSVAR(block_cache_size),
    MYSQL_SYSVAR(unified_memtable),
    MYSQL_SYSVAR(release_locks_before_sync),
    MYSQL_SYSVAR(mmap_reads),
    MYSQL_SYSVAR(unified_memtable_write_buffer_size),
    MYSQL_SYSVAR(unified_memtable_sync_mode),
    MYSQL_SYSVAR(flush_threads),
    MYSQL_SYSVAR(compaction_threads),
    MYSQL_SYSVAR(max_open_sstables),
    MYSQL_SYSVAR(log_level),
    MYSQL_SYSVAR(max_memory_usage),
    MYSQL_SYSVAR(malloc_threshold),
    MYSQL_SYSVAR(default_sync_mode),
    MYSQL_SYSVAR(default_sync_interval_us),
    MYSQL_SYSVAR(default_compression),
    MYSQL_SYSVAR(default_write_buffer_size),
    MYSQL_SYSVAR(default_bloom_fpr),
    MYSQL_SYSVAR(default_l0_queue_stall_threshold),
    MYSQL_SYSVAR(default_l1_file_count_trigger),
    MYSQL_SYSVAR(default_level_size_ratio),
    MYSQL_SYSVAR(default_tombstone_density_trigger),
    MYSQL_SYSVAR(default_tombstone_density_min_entries),
    MYSQL_SYSVAR(pessimistic_locking),
    MYSQL_SYSVAR(skip_unique_check),
    MYSQL_SYSVAR(lock_wait_timeout),
    MYSQL_SYSVAR(write_stall_timeout),
    MYSQL_SYSVAR(debug_pause_background),
    MYSQL_SYSVAR(debug_crash_point),
    MYSQL_SYSVAR(debug_alter_pause),
    MYSQL_SYSVAR(online_alter_log_size),
    MYSQL_SYSVAR(backup_dir),
    NULL};

/* ---- table options ---- */

ha_create_table_option g_table_options[] = {
    HA_TOPTION_ENUM("COMPRESSION", compression, "DEFAULT,NONE,SNAPPY,LZ4,ZSTD", 0),
    HA_TOPTION_ENUM("SYNC_MODE", sync_mode, "DEFAULT,NONE,INTERVAL,FULL", 0),
    HA_TOPTION_NUMBER("WRITE_BUFFER_SIZE", write_buffer_size, 0, 0, 4ULL << 30, 1),
    HA_TOPTION_NUMBER("BLOOM_FPR", bloom_fpr, 10000, 0, 10000, 1),
    HA_TOPTION_NUMBER("BLOCK_SIZE", block_size, 0, 0, 16ULL << 20, 1),
    HA_TOPTION_END};

/* ---- configuration builders ---- */

void sysvars_db_config(tdb_config_t *cfg) {
  tdb_config_default(cfg);
  cfg->block_cache_size = (size_t)v_block_cache_size;
  cfg->max_open_sstables = (int)v_max_open_sstables;
  cfg->flush_threads = (int)v_flush_threads;
  cfg->compaction_threads = (int)v_compaction_threads;
  cfg->log_level = v_log_level == 5 ? TDB_LOG_NONE : (int)v_log_level;
  cfg->max_memory_usage = (size_t)v_max_memory_usage;
  cfg->unified_memtable = v_unified_memtable ? 1 : 0;
  cfg->unified_memtable_write_buffer_size = (size_t)v_unified_wbs;
  cfg->unified_memtable_sync_mode = (int)v_unified_sync_mode;
  cfg->release_before_sync = v_release_locks_before_sync ? 1 : 0;
  cfg->mmap_reads = v_mmap_reads ? 1 : 0;
  sysvars_cf_config(NULL, &cfg->default_cf);
}

size_t sysvars_malloc_threshold() { return (size_t)v_malloc_threshold; }

void sysvars_cf_config(const ha_table_option_struct *opt, tdb_cf_config_t *cfg) {
  tdb_cf_config_default(cfg);
  cfg->sync_mode = (int)v_default_sync_mode;
  cfg->sync_interval_us = v_default_sync_interval_us;
  cfg->compression = (int)v_default_compression;
  cfg->write_buffer_size = (size_t)v_default_write_buffer_size;
  cfg->bloom_fpr = v_default_bloom_fpr / 10000.0;
  cfg->l0_queue_stall_threshold = (int)v_default_l0_stall;
  cfg->l1_file_count_trigger = (int)v_default_l1_trigger;
  cfg->level_size_ratio = (int)v_default_level_ratio;
  cfg->tombstone_density_trigger = v_default_tomb_trigger / 10000.0;
  cfg->tombstone_density_min_entries = v_default_tomb_min;
  if (!opt) return;
  if (opt->compression) cfg->compression = (int)opt->compression - 1;
  if (opt->sync_mode) cfg->sync_mode = (int)opt->sync_mode - 1;
  if (opt->write_buffer_size) cfg->write_buffer_size = (size_t)opt->write_buffer_size;
  if (opt->bloom_fpr < 10000) cfg->bloom_fpr = opt->bloom_fpr / 10000.0;
  if (opt->block_size) cfg->block_size = (uint32_t)opt->block_size;
}

int sysvars_unified_sync_mode() { return (int)v_unified_sync_mode; }

void sysvars_crash_point(const char *point) {
  const char *p = v_debug_crash_point;
  if (!p || strcmp(p, point) != 0) return;
  sql_print_information("TidesDB: tidesdb_debug_crash_point '%s' reached: killing the server", point);
  kill(getpid(), SIGKILL);
}

void sysvars_pause_point(THD *thd, const char *point) {
  const char *p = v_debug_alter_pause;
  if (!p || strcmp(p, point) != 0) return;
  char state[96];
  snprintf(state, sizeof state, "TidesDB: paused at %s", point);
  const char *old = thd_proc_info(thd, state);
  sql_print_information("TidesDB: tidesdb_debug_alter_pause: paused at '%s'", point);
  while ((p = v_debug_alter_pause) && strcmp(p, point) == 0 && !thd_killed(thd)) usleep(10000);
  thd_proc_info(thd, old);
}

ulonglong sysvars_online_alter_log_size() { return v_online_alter_log_size; }

bool sysvars_skip_unique_check(THD *thd) { return THDVAR(thd, skip_unique_check); }

ulong sysvars_lock_wait_timeout(THD *thd) { return thd ? THDVAR(thd, lock_wait_timeout) : 50; }

ulong sysvars_write_stall_timeout(THD *thd) { return thd ? THDVAR(thd, write_stall_timeout) : 10000; }

bool sysvars_pessimistic_locking(THD *thd) { return THDVAR(thd, pessimistic_locking); }

/* ---- status variables ---- */

/* Values of one SHOW STATUS call. The server reads them right after
 * show_tidesdb_vars() returns, on the same thread: per-thread storage keeps
 * concurrent SHOW STATUS calls apart. */
struct StatusValues {
  ulonglong block_cache_hits, block_cache_misses, block_cache_bytes;
  ulonglong memtable_bytes, immutable_memtables, num_entries_estimate;
  ulonglong user_bytes_written, wal_bytes_written, flush_bytes_written;
  ulonglong compaction_bytes_read, compaction_bytes_written;
  ulonglong flushes, compactions, stall_micros, stall_max_micros, stalls, slowdowns, last_sequence;
  ulonglong sst_files, sst_bytes;
  double write_amplification;
  ulonglong rows_read, rows_inserted, rows_updated, rows_deleted;
  ulonglong commits, rollbacks, dup_key_errors, point_reads, iterators;
  ulonglong unified_memtable_active, tables, column_families;
  ulonglong conflicts, lock_deadlocks, lock_wait_timeouts, write_stalls_busy;
  ulonglong lock_waits, lock_wait_micros, lock_wait_max_micros, flushes_pending, compactions_pending;
  ulonglong alter_instant, alter_inplace, alter_index_rows, alter_catchup_rows;
  ulonglong range_locks, rows_unlocked;
  ulonglong wal_syncs, commits_ordered, commit_checkpoints;
  char build[16];
};
static thread_local StatusValues t_sv;

#define SV(name, type) {#name, (char *)offsetof(StatusValues, name), type}
/* Offsets into StatusValues; show_tidesdb_vars() turns them into this
 * thread's addresses. */
static const SHOW_VAR status_template[] = {
    SV(block_cache_hits, SHOW_ULONGLONG),
    SV(block_cache_misses, SHOW_ULONGLONG),
    SV(block_cache_bytes, SHOW_ULONGLONG),
    SV(memtable_bytes, SHOW_ULONGLONG),
    SV(immutable_memtables, SHOW_ULONGLONG),
    SV(num_entries_estimate, SHOW_ULONGLONG),
    SV(user_bytes_written, SHOW_ULONGLONG),
    SV(wal_bytes_written, SHOW_ULONGLONG),
    SV(flush_bytes_written, SHOW_ULONGLONG),
    SV(compaction_bytes_read, SHOW_ULONGLONG),
    SV(compaction_bytes_written, SHOW_ULONGLONG),
    SV(flushes, SHOW_ULONGLONG),
    SV(compactions, SHOW_ULONGLONG),
    SV(stall_micros, SHOW_ULONGLONG),
    SV(stall_max_micros, SHOW_ULONGLONG),
    SV(stalls, SHOW_ULONGLONG),
    SV(slowdowns, SHOW_ULONGLONG),
    SV(last_sequence, SHOW_ULONGLONG),
    SV(sst_files, SHOW_ULONGLONG),
    SV(sst_bytes, SHOW_ULONGLONG),
    SV(write_amplification, SHOW_DOUBLE),
    SV(rows_read, SHOW_ULONGLONG),
    SV(rows_inserted, SHOW_ULONGLONG),
    SV(rows_updated, SHOW_ULONGLONG),
    SV(rows_deleted, SHOW_ULONGLONG),
    SV(commits, SHOW_ULONGLONG),
    SV(rollbacks, SHOW_ULONGLONG),
    SV(dup_key_errors, SHOW_ULONGLONG),
    SV(point_reads, SHOW_ULONGLONG),
    SV(iterators, SHOW_ULONGLONG),
    SV(unified_memtable_active, SHOW_ULONGLONG),
    SV(tables, SHOW_ULONGLONG),
    SV(column_families, SHOW_ULONGLONG),
    SV(conflicts, SHOW_ULONGLONG),
    SV(lock_deadlocks, SHOW_ULONGLONG),
    SV(lock_wait_timeouts, SHOW_ULONGLONG),
    SV(write_stalls_busy, SHOW_ULONGLONG),
    SV(lock_waits, SHOW_ULONGLONG),
    SV(lock_wait_micros, SHOW_ULONGLONG),
    SV(lock_wait_max_micros, SHOW_ULONGLONG),
    SV(flushes_pending, SHOW_ULONGLONG),
    SV(compactions_pending, SHOW_ULONGLONG),
    SV(alter_instant, SHOW_ULONGLONG),
    SV(alter_inplace, SHOW_ULONGLONG),
    SV(alter_index_rows, SHOW_ULONGLONG),
    SV(alter_catchup_rows, SHOW_ULONGLONG),
    SV(range_locks, SHOW_ULONGLONG),
    SV(rows_unlocked, SHOW_ULONGLONG),
    SV(wal_syncs, SHOW_ULONGLONG),
    SV(commits_ordered, SHOW_ULONGLONG),
    SV(commit_checkpoints, SHOW_ULONGLONG),
    SV(build, SHOW_CHAR),
    {NullS, NullS, SHOW_LONG}};
#undef SV
static const size_t N_STATUS = array_elements(status_template);
static thread_local SHOW_VAR t_status_array[N_STATUS];

/* Refresh t_sv from the library and the engine counters. */
static int show_tidesdb_vars(THD *, SHOW_VAR *var, void *, struct system_status_var *, enum enum_var_type) {
  StatusValues &v = t_sv;
  memset(&v, 0, sizeof v);
  static_assert(sizeof(TIDESQL_BUILD_KIND) <= sizeof v.build, "build kind too long");
  memcpy(v.build, TIDESQL_BUILD_KIND, sizeof(TIDESQL_BUILD_KIND));
  tdb_stats_t st;
  if (g_db && tdb_get_stats(g_db, NULL, &st) == TDB_OK) {
    v.block_cache_hits = st.block_cache_hits;
    v.block_cache_misses = st.block_cache_misses;
    v.block_cache_bytes = st.block_cache_bytes;
    v.memtable_bytes = st.memtable_bytes;
    v.immutable_memtables = st.immutable_memtables;
    v.num_entries_estimate = st.num_entries_estimate;
    v.user_bytes_written = st.user_bytes_written;
    v.wal_bytes_written = st.wal_bytes_written;
    v.flush_bytes_written = st.flush_bytes_written;
    v.compaction_bytes_read = st.compaction_bytes_read;
    v.compaction_bytes_written = st.compaction_bytes_written;
    v.flushes = st.flushes;
    v.compactions = st.compactions;
    v.stall_micros = st.stall_micros;
    v.stall_max_micros = st.stall_max_micros;
    v.stalls = st.stalls;
    v.slowdowns = st.slowdowns;
    v.last_sequence = st.last_sequence;
    v.lock_waits = st.lock_waits;
    v.lock_wait_micros = st.lock_wait_micros;
    v.lock_wait_max_micros = st.lock_wait_max_micros;
    v.flushes_pending = st.flushes_pending;
    v.compactions_pending = st.compactions_pending;
    v.wal_syncs = st.wal_syncs;
    for (int l = 1; l < TDB_MAX_LEVELS; l++) {
      v.sst_files += st.levels[l].files;
      v.sst_bytes += st.levels[l].bytes;
    }
    if (st.user_bytes_written)
      v.write_amplification =
          (double)(st.wal_bytes_written + st.flush_bytes_written + st.compaction_bytes_written) /
          (double)st.user_bytes_written;
  }
  v.rows_read = g_counters.rows_read;
  v.rows_inserted = g_counters.rows_inserted;
  v.rows_updated = g_counters.rows_updated;
  v.rows_deleted = g_counters.rows_deleted;
  v.commits = Trx::s_commits;
  v.rollbacks = Trx::s_rollbacks;
  v.dup_key_errors = g_counters.dup_key_errors;
  v.point_reads = g_counters.point_reads;
  v.iterators = g_counters.iterators;
  v.alter_instant = g_counters.alter_instant;
  v.alter_inplace = g_counters.alter_inplace;
  v.alter_index_rows = g_counters.alter_index_rows;
  v.alter_catchup_rows = g_counters.alter_catchup_rows;
  v.range_locks = g_counters.range_locks;
  v.rows_unlocked = g_counters.rows_unlocked;
  v.unified_memtable_active = g_unified_active;
  v.tables = dict_table_names().size();
  v.conflicts = Trx::s_conflicts;
  v.lock_deadlocks = Trx::s_deadlocks;
  v.lock_wait_timeouts = Trx::s_lock_timeouts;
  v.write_stalls_busy = Trx::s_busy;
  v.commits_ordered = Trx::s_ordered_commits;
  v.commit_checkpoints = commit_sync_notified();
  char **names;
  size_t count;
  if (g_db && tdb_list_cfs(g_db, &names, &count) == TDB_OK) {
    v.column_families = count;
    for (size_t i = 0; i < count; i++) tdb_free(names[i]);
    tdb_free(names);
  }
  for (size_t i = 0; i < N_STATUS; i++) {
    t_status_array[i] = status_template[i];
    if (status_template[i].name)
      t_status_array[i].value = (char *)&v + (size_t)status_template[i].value;
  }
  var->type = SHOW_ARRAY;
  var->value = (char *)t_status_array;
  return 0;
}

struct st_mysql_show_var g_status_vars[] = {{"tidesdb", (char *)&show_tidesdb_vars, SHOW_FUNC},
                                            {NullS, NullS, SHOW_LONG}};

/* ---- SHOW ENGINE TIDESDB STATUS ---- */

static void appendf(std::string &s, const char *fmt, ...) ATTRIBUTE_FORMAT(printf, 2, 3);
static void appendf(std::string &s, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof buf, fmt, ap);
  va_end(ap);
  if (n > 0) s.append(buf, (size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1);
}

bool show_engine_status(handlerton *, THD *thd, stat_print_fn *print, enum ha_stat_type stat) {
  if (stat != HA_ENGINE_STATUS || !g_db) return false;
  std::string s;
  tdb_stats_t st;
  s += "\n======== TidesDB engine status ========\n";
  appendf(s, "library %d.%d.%d, memtable mode: %s\n", TIDESDB_VERSION_MAJOR, TIDESDB_VERSION_MINOR,
          TIDESDB_VERSION_PATCH, g_unified_active ? "unified" : "per column family");
  if (tdb_get_stats(g_db, NULL, &st) == TDB_OK) {
    s += "---- LSM tree (all column families)\n";
    for (int l = 1; l < TDB_MAX_LEVELS; l++)
      if (st.levels[l].files)
        appendf(s, "level %d: %llu files, %llu bytes\n", l, (ulonglong)st.levels[l].files,
                (ulonglong)st.levels[l].bytes);
    appendf(s, "memtables: %llu bytes, %llu immutable queued\n", (ulonglong)st.memtable_bytes,
            (ulonglong)st.immutable_memtables);
    appendf(s, "pending: %llu flushes, %llu compactions%s\n", (ulonglong)st.flushes_pending,
            (ulonglong)st.compactions_pending, st.background_paused ? " (background work paused)" : "");
    appendf(s, "row locks: %llu waits (%llu us in all, longest %llu us), %llu deadlocks, %llu timeouts\n",
            (ulonglong)st.lock_waits, (ulonglong)st.lock_wait_micros, (ulonglong)st.lock_wait_max_micros,
            (ulonglong)st.lock_deadlocks, (ulonglong)st.lock_timeouts);
    appendf(s, "entries (estimate): %llu, last sequence: %llu\n", (ulonglong)st.num_entries_estimate,
            (ulonglong)st.last_sequence);
    appendf(s, "block cache: %llu hits, %llu misses, %llu bytes\n", (ulonglong)st.block_cache_hits,
            (ulonglong)st.block_cache_misses, (ulonglong)st.block_cache_bytes);
    appendf(s, "bytes written: user %llu, wal %llu, flush %llu, compaction %llu (read %llu)\n",
            (ulonglong)st.user_bytes_written, (ulonglong)st.wal_bytes_written,
            (ulonglong)st.flush_bytes_written, (ulonglong)st.compaction_bytes_written,
            (ulonglong)st.compaction_bytes_read);
    if (st.user_bytes_written)
      appendf(s, "write amplification: %.2f\n",
              (double)(st.wal_bytes_written + st.flush_bytes_written + st.compaction_bytes_written) /
                  (double)st.user_bytes_written);
    appendf(s, "flushes: %llu, compactions: %llu\n", (ulonglong)st.flushes, (ulonglong)st.compactions);
    appendf(s, "writers: %llu stops (longest %llu us), %llu slowdowns, %llu us delayed in all\n",
            (ulonglong)st.stalls, (ulonglong)st.stall_max_micros, (ulonglong)st.slowdowns,
            (ulonglong)st.stall_micros);
  }
  s += "---- engine\n";
  appendf(s, "rows read %llu, inserted %llu, updated %llu, deleted %llu\n",
          (ulonglong)g_counters.rows_read, (ulonglong)g_counters.rows_inserted,
          (ulonglong)g_counters.rows_updated, (ulonglong)g_counters.rows_deleted);
  appendf(s, "commits %llu, rollbacks %llu, duplicate-key errors %llu\n", (ulonglong)Trx::s_commits,
          (ulonglong)Trx::s_rollbacks, (ulonglong)g_counters.dup_key_errors);
  appendf(s, "conflicts %llu, deadlocks %llu, lock wait timeouts %llu, busy %llu\n",
          (ulonglong)Trx::s_conflicts, (ulonglong)Trx::s_deadlocks, (ulonglong)Trx::s_lock_timeouts,
          (ulonglong)Trx::s_busy);
  std::vector<std::string> names = dict_table_names();
  appendf(s, "---- tables: %zu\n", names.size());
  size_t shown = 0;
  for (const std::string &n : names) {
    if (++shown > 100) {
      s += "...\n";
      break;
    }
    TableDefPtr def;
    if (dict_get(n, &def)) continue;
    uint64_t bytes = 0;
    for (tdb_cf_t *cf : def->cfs) {
      tdb_stats_t cs;
      if (tdb_get_stats(g_db, cf, &cs) != TDB_OK) continue;
      bytes += cs.memtable_bytes;
      for (int l = 1; l < TDB_MAX_LEVELS; l++) bytes += cs.levels[l].bytes;
    }
    appendf(s, "%s: id %llu, %zu column families, ~%lld rows, %llu bytes", n.c_str(), (ulonglong)def->id,
            def->cfs.size(), (long long)def->rows.load(), (ulonglong)bytes);
    /* The settings the table's families were created with (table
     * options over the tidesdb_default_* variables). */
    tdb_cf_config_t cc;
    if (!def->cfs.empty() && tdb_cf_get_config(def->cfs[0], &cc) == TDB_OK) {
      const char *comp = cc.compression >= 0 && cc.compression < 4 ? compression_names[cc.compression] : "?";
      const char *sync = cc.sync_mode >= 0 && cc.sync_mode < 3 ? sync_names[cc.sync_mode] : "?";
      appendf(s, "; compression %s, sync %s, write buffer %llu, bloom fpr %g, block size %u", comp, sync,
              (ulonglong)cc.write_buffer_size, cc.bloom_fpr, (uint)cc.block_size);
    }
    s += "\n";
  }
  return print(thd, "TidesDB", 7, "", 0, s.data(), s.size());
}

}  // namespace tidesql

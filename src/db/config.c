/* db/config: settings (defaults, validation, derived), the info log, the clock. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "db/db_impl.h"

/* Fill the documented per-family defaults. */
void tdb_cf_config_default(tdb_cf_config_t *c) {
    memset(c, 0, sizeof *c);
    c->write_buffer_size = 64u << 20;
    c->compression = TDB_COMPRESS_LZ4;
    c->bloom_fpr = 0.01;
    c->sync_mode = TDB_SYNC_FULL;
    c->sync_interval_us = 128000;
    c->block_size = 4096;
    c->value_threshold = 512;
    c->l0_queue_stall_threshold = 10;
    c->l1_file_count_trigger = 4;
    c->level_size_ratio = 10;
    c->tombstone_density_trigger = 0.7;
    c->tombstone_density_min_entries = 2048;
}

/* Fill the documented database defaults. */
void tdb_config_default(tdb_config_t *c) {
    memset(c, 0, sizeof *c);
    c->create_if_missing = 1;
    c->block_cache_size = 64u << 20;
    c->max_open_sstables = 512;
    c->flush_threads = 2;
    c->compaction_threads = 2;
    c->log_level = TDB_LOG_INFO;
    c->max_memory_usage = 0;
    c->unified_memtable = 0;
    c->unified_memtable_write_buffer_size = 64u << 20;
    c->unified_memtable_sync_mode = TDB_SYNC_FULL;
    c->write_stall_timeout_ms = 0;
    c->mmap_reads = 1;
    c->l1_idle_file_trigger = 2;
    c->release_before_sync = 0;
    tdb_cf_config_default(&c->default_cf);
}

/* Check a family config for values the engine cannot honour. */
int db_validate_cf_config(const tdb_cf_config_t *c) {
    if (c->write_buffer_size < (64u << 10) || c->write_buffer_size > ((size_t)4 << 30))
        return tdb_err(TDB_ERR_INVALID_ARG, "write_buffer_size %zu out of [64 KiB, 4 GiB]", c->write_buffer_size);
    if (c->compression < TDB_COMPRESS_NONE || c->compression > TDB_COMPRESS_ZSTD)
        return tdb_err(TDB_ERR_INVALID_ARG, "unknown compression %d", c->compression);
    if (!(c->bloom_fpr >= 0.0 && c->bloom_fpr < 1.0))
        return tdb_err(TDB_ERR_INVALID_ARG, "bloom_fpr %g out of [0, 1)", c->bloom_fpr);
    if (c->sync_mode < TDB_SYNC_NONE || c->sync_mode > TDB_SYNC_FULL)
        return tdb_err(TDB_ERR_INVALID_ARG, "unknown sync_mode %d", c->sync_mode);
    if (c->sync_mode == TDB_SYNC_INTERVAL && c->sync_interval_us == 0)
        return tdb_err(TDB_ERR_INVALID_ARG, "sync_interval_us must be > 0 with TDB_SYNC_INTERVAL");
    if (c->block_size < 256 || c->block_size > (16u << 20))
        return tdb_err(TDB_ERR_INVALID_ARG, "block_size %u out of [256, 16 MiB]", c->block_size);
    if (c->l0_queue_stall_threshold < 1)
        return tdb_err(TDB_ERR_INVALID_ARG, "l0_queue_stall_threshold must be >= 1");
    if (c->l1_file_count_trigger < 1)
        return tdb_err(TDB_ERR_INVALID_ARG, "l1_file_count_trigger must be >= 1");
    if (c->level_size_ratio < 2 || c->level_size_ratio > 100)
        return tdb_err(TDB_ERR_INVALID_ARG, "level_size_ratio %d out of [2, 100]", c->level_size_ratio);
    if (!(c->tombstone_density_trigger > 0.0 && c->tombstone_density_trigger <= 1.0))
        return tdb_err(TDB_ERR_INVALID_ARG, "tombstone_density_trigger out of (0, 1]");
    return TDB_OK;
}

/* Check a database config. */
int db_validate_config(const tdb_config_t *c) {
    if (c->max_open_sstables < 16)
        return tdb_err(TDB_ERR_INVALID_ARG, "max_open_sstables must be >= 16");
    if (c->flush_threads < 1 || c->flush_threads > 64)
        return tdb_err(TDB_ERR_INVALID_ARG, "flush_threads out of [1, 64]");
    if (c->compaction_threads < 1 || c->compaction_threads > 64)
        return tdb_err(TDB_ERR_INVALID_ARG, "compaction_threads out of [1, 64]");
    if (c->write_stall_timeout_ms < 0)
        return tdb_err(TDB_ERR_INVALID_ARG, "write_stall_timeout_ms must be >= 0 (0 = no bound)");
    if (c->mmap_reads != 0 && c->mmap_reads != 1)
        return tdb_err(TDB_ERR_INVALID_ARG, "mmap_reads must be 0 or 1");
    if (c->l1_idle_file_trigger < 0)
        return tdb_err(TDB_ERR_INVALID_ARG, "l1_idle_file_trigger must be >= 0 (0 = the families' own trigger)");
    if (c->release_before_sync != 0 && c->release_before_sync != 1)
        return tdb_err(TDB_ERR_INVALID_ARG, "release_before_sync must be 0 or 1");
    if (c->unified_memtable) {
        if (c->unified_memtable_write_buffer_size < (64u << 10) ||
            c->unified_memtable_write_buffer_size > ((size_t)16 << 30))
            return tdb_err(TDB_ERR_INVALID_ARG, "unified_memtable_write_buffer_size out of [64 KiB, 16 GiB]");
        if (c->unified_memtable_sync_mode < TDB_SYNC_NONE || c->unified_memtable_sync_mode > TDB_SYNC_FULL)
            return tdb_err(TDB_ERR_INVALID_ARG, "unknown unified_memtable_sync_mode %d", c->unified_memtable_sync_mode);
    }
    return db_validate_cf_config(&c->default_cf);
}

/* Read-triggered level-1 compaction (docs/design/version.md,
 * "Read-triggered level 1"): level 1 holds at least DB_L1_READ_MIN_DELETES
 * tombstones, and since it was last picked scans stepped over more dead
 * keys than it holds entries (mu held). */
bool db_l1_read_due(const tdb_cf_t *cf) {
    /* The count must exceed level 1's entries, at least its tombstones:
     * below the minimum, level 1 need not be looked at. */
    uint64_t dead = atomic_load_explicit(&((tdb_cf_t *)(uintptr_t)cf)->dead_stepped, memory_order_relaxed);
    if (dead <= DB_L1_READ_MIN_DELETES) return false;
    version_t *v = cf->current;
    int n = v ? version_num_files(v, 1) : 0;
    uint64_t entries = 0, deletes = 0;
    for (int i = 0; i < n; i++) {
        entries += version_file(v, 1, i)->num_entries;
        deletes += version_file(v, 1, i)->num_deletes;
    }
    return deletes >= DB_L1_READ_MIN_DELETES && dead > entries;
}

/* Compaction policy settings derived from a family's config and state
 * (mu held). */
compaction_opts_t db_compaction_opts(const tdb_cf_t *cf) {
    compaction_opts_t o;
    memset(&o, 0, sizeof o);
    o.l1_file_count_trigger = cf->cfg.l1_file_count_trigger;
    o.level_size_ratio = cf->cfg.level_size_ratio;
    /* The base level holds about what level 1 holds when it triggers. */
    o.base_level_bytes = (uint64_t)cf->cfg.write_buffer_size * (uint64_t)cf->cfg.l1_file_count_trigger;
    o.target_file_size = cf->cfg.write_buffer_size;
    if (o.target_file_size > (64u << 20)) o.target_file_size = 64u << 20;
    o.tombstone_density_trigger = cf->cfg.tombstone_density_trigger;
    o.tombstone_density_min_entries = cf->cfg.tombstone_density_min_entries;
    /* Targets follow the bottom level's size; level 1 goes to the base
     * level (see version/compaction.h). */
    o.dynamic_level_bytes = 1;
    o.allow_trivial_move = 1;
    /* Idle: this family's memtables are empty (writes_pending 0) and the
     * database took no write since its last memtable switch, or a caller
     * waits in tdb_wait_idle. A family left alone while others load (a
     * bulk load going table by table) is not idle. */
    bool quiet = cf->db->settling ||
                 atomic_load_explicit(&cf->db->last_seq, memory_order_relaxed) == cf->db->switch_seq;
    o.l1_idle_trigger = quiet ? cf->db->cfg.l1_idle_file_trigger : 0;
    /* Data in the memtables will become level-1 files (level-1 batching),
     * unless a caller waits for the tree to settle (tdb_wait_idle). */
    o.writes_pending = !cf->db->settling && (cf->nimm > 0 || (cf->mem.mem && memtable_num_entries(cf->mem.mem) > 0));
    o.l1_read_due = db_l1_read_due(cf);
    return o;
}

/* Table format settings derived from a family's config. */
sst_options_t db_sst_options(const tdb_cf_t *cf) {
    sst_options_t o;
    memset(&o, 0, sizeof o);
    o.compression = cf->cfg.compression;
    o.block_size = cf->cfg.block_size;
    o.bloom_fpr = cf->cfg.bloom_fpr;
    o.value_threshold = cf->cfg.value_threshold;
    return o;
}

/* Append a line to <dir>/LOG if level passes the configured threshold. */
void db_log(tdb_t *db, int level, const char *fmt, ...) {
    static const char *names[] = {"DEBUG", "INFO", "WARN", "ERROR", "FATAL"};
    if (!db->log || level < db->cfg.log_level) return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    localtime_r(&ts.tv_sec, &tm);
    char line[1024];
    int n = snprintf(line, sizeof line, "%04d-%02d-%02d %02d:%02d:%02d.%06ld %s ", tm.tm_year + 1900,
                     tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, ts.tv_nsec / 1000,
                     level >= 0 && level <= TDB_LOG_FATAL ? names[level] : "?");
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof line) vsnprintf(line + n, sizeof line - (size_t)n, fmt, ap);
    va_end(ap);
    fprintf(db->log, "%s\n", line);
    fflush(db->log);
}

/* Current wall-clock time in unix seconds (TTL reference). */
int64_t db_now_unix(void) { return (int64_t)time(NULL); }

/* Strip the TTL prefix of a value; 0 if the value has expired. */
int db_value_live(unsigned t, slice_t raw, int64_t now, slice_t *user_value) {
    if (t == KT_PUT_TTL) {
        if (raw.size < 8) return 0;
        int64_t exp = (int64_t)dec_fixed64(raw.data);
        if (exp <= now) return 0;
        *user_value = slice_make(raw.data + 8, raw.size - 8);
        return 1;
    }
    *user_value = raw;
    return 1;
}

/* The sync mode that governs writes to cf: the unified one in unified mode. */
int db_cf_sync_mode(const tdb_t *db, const tdb_cf_t *cf) {
    return db->cfg.unified_memtable ? db->cfg.unified_memtable_sync_mode : cf->cfg.sync_mode;
}

/* The active-memtable size at which cf switches (the shared size in
 * unified mode). */
size_t db_write_buffer_limit(const tdb_t *db, const tdb_cf_t *cf) {
    return db->cfg.unified_memtable ? db->cfg.unified_memtable_write_buffer_size : cf->cfg.write_buffer_size;
}

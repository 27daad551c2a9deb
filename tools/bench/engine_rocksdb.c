/*
 * engine_rocksdb.c: the RocksDB adapter, through RocksDB's C API.
 *
 * Matched settings: write_buffer_size, an LRU block cache of cache_size,
 * block_size, a full bloom filter of bloom_bits bits per key, compression
 * (one type for every level), max_background_jobs = bg_threads, and
 * WriteOptions.sync. Everything else keeps RocksDB's defaults (leveled
 * compaction, max_write_buffer_number 2, 64 MiB target files). Point reads
 * use Get into a PinnableSlice, as RocksDB's own db_bench does. Statistics
 * stay off (they cost throughput); stall time comes from the always-on DB
 * stats ("Cumulative stall" in the rocksdb.dbstats property).
 */
#include "engine.h"

#include <rocksdb/c.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct rdb_adapter {
    rocksdb_t                           *db;
    rocksdb_options_t                   *opts;
    rocksdb_block_based_table_options_t *topts;
    rocksdb_cache_t                     *cache;
    rocksdb_filterpolicy_t              *filter;
    rocksdb_readoptions_t               *ro;
    rocksdb_writeoptions_t              *wo;
} rdb_adapter_t;

/* Print and release a RocksDB error string; -1 if there was one. */
static int rdbe_check(const char *what, char *err)
{
    if (!err)
        return 0;
    fprintf(stderr, "rocksdb: %s: %s\n", what, err);
    rocksdb_free(err);
    return -1;
}

/* Map a bench compression onto a RocksDB one. */
static int rdbe_compression(int c)
{
    switch (c) {
    case BENCH_COMPRESS_LZ4: return rocksdb_lz4_compression;
    case BENCH_COMPRESS_ZSTD: return rocksdb_zstd_compression;
    case BENCH_COMPRESS_SNAPPY: return rocksdb_snappy_compression;
    default: return rocksdb_no_compression;
    }
}

/* Describe how the bench settings map onto RocksDB options. */
static void rdbe_describe(const engine_settings_t *s, char *buf, size_t n)
{
    snprintf(buf, n,
             "max_background_jobs=%d; full bloom filter %d bits/key;"
             " leveled compaction defaults; settle: rocksdb_flush, then poll flush/compaction"
             " pending+running properties; get into a PinnableSlice",
             s->bg_threads, s->bloom_bits);
}

/* Release every object the adapter holds. */
static void rdbe_free(rdb_adapter_t *a)
{
    if (a->db)
        rocksdb_close(a->db);
    if (a->ro)
        rocksdb_readoptions_destroy(a->ro);
    if (a->wo)
        rocksdb_writeoptions_destroy(a->wo);
    if (a->opts)
        rocksdb_options_destroy(a->opts);
    if (a->topts)
        rocksdb_block_based_options_destroy(a->topts); /* owns the filter */
    if (a->cache)
        rocksdb_cache_destroy(a->cache);
    free(a);
}

/* Open (creating) a database in dir with the matched settings. */
static int rdbe_open(const engine_settings_t *s, const char *dir, void **out)
{
    rdb_adapter_t *a = calloc(1, sizeof(*a));
    if (!a)
        return -1;
    a->opts = rocksdb_options_create();
    rocksdb_options_set_create_if_missing(a->opts, 1);
    rocksdb_options_set_write_buffer_size(a->opts, s->write_buffer_size);
    rocksdb_options_set_max_background_jobs(a->opts, s->bg_threads);
    rocksdb_options_set_compression(a->opts, rdbe_compression(s->compression));

    a->topts = rocksdb_block_based_options_create();
    rocksdb_block_based_options_set_block_size(a->topts, s->block_size);
    if (s->cache_size > 0) {
        a->cache = rocksdb_cache_create_lru(s->cache_size);
        rocksdb_block_based_options_set_block_cache(a->topts, a->cache);
    } else {
        rocksdb_block_based_options_set_no_block_cache(a->topts, 1);
    }
    if (s->bloom_bits > 0) {
        a->filter = rocksdb_filterpolicy_create_bloom_full(s->bloom_bits);
        rocksdb_block_based_options_set_filter_policy(a->topts, a->filter);
    }
    rocksdb_options_set_block_based_table_factory(a->opts, a->topts);

    a->ro = rocksdb_readoptions_create();
    a->wo = rocksdb_writeoptions_create();
    rocksdb_writeoptions_set_sync(a->wo, s->sync ? 1 : 0);

    char *err = NULL;
    a->db = rocksdb_open(a->opts, dir, &err);
    if (rdbe_check("open", err) != 0 || !a->db) {
        rdbe_free(a);
        return -1;
    }
    *out = a;
    return 0;
}

/* Close the database and release its options. */
static void rdbe_close(void *db)
{
    rdbe_free(db);
}

/* Write one key. */
static int rdbe_put(void *db, const char *k, size_t kl, const char *v,
                    size_t vl)
{
    rdb_adapter_t *a = db;
    char *err = NULL;
    rocksdb_put(a->db, a->wo, k, kl, v, vl, &err);
    return rdbe_check("put", err);
}

/* Delete one key. */
static int rdbe_del(void *db, const char *k, size_t kl)
{
    rdb_adapter_t *a = db;
    char *err = NULL;
    rocksdb_delete(a->db, a->wo, k, kl, &err);
    return rdbe_check("delete", err);
}

/* New empty write batch. */
static void *rdbe_batch_new(void *db)
{
    (void)db;
    return rocksdb_writebatch_create();
}

/* Add a put to the batch. */
static int rdbe_batch_put(void *b, const char *k, size_t kl, const char *v,
                          size_t vl)
{
    rocksdb_writebatch_put(b, k, kl, v, vl);
    return 0;
}

/* Apply the batch, then clear it. */
static int rdbe_batch_write(void *db, void *b)
{
    rdb_adapter_t *a = db;
    char *err = NULL;
    rocksdb_write(a->db, a->wo, b, &err);
    rocksdb_writebatch_clear(b);
    return rdbe_check("write", err);
}

/* Destroy a batch. */
static void rdbe_batch_free(void *b)
{
    if (b)
        rocksdb_writebatch_destroy(b);
}

/* Point lookup into a PinnableSlice (no value copy). */
static int rdbe_get(void *db, const char *k, size_t kl, size_t *vlen)
{
    rdb_adapter_t *a = db;
    char *err = NULL;
    rocksdb_pinnableslice_t *p = rocksdb_get_pinned(a->db, a->ro, k, kl, &err);
    if (rdbe_check("get", err) != 0)
        return -1;
    if (!p)
        return 0;
    size_t vl = 0;
    (void)rocksdb_pinnableslice_value(p, &vl);
    *vlen = vl;
    rocksdb_pinnableslice_destroy(p);
    return 1;
}

/* New iterator over the latest state. */
static void *rdbe_iter_new(void *db)
{
    rdb_adapter_t *a = db;
    return rocksdb_create_iterator(a->db, a->ro);
}

/* Position at the first key >= k. */
static void rdbe_iter_seek(void *it, const char *k, size_t kl)
{
    rocksdb_iter_seek(it, k, kl);
}

/* Position at the first key. */
static void rdbe_iter_seek_first(void *it)
{
    rocksdb_iter_seek_to_first(it);
}

/* 1 while positioned on an entry, 0 at the end, -1 on an iterator error. */
static int rdbe_iter_valid(void *it)
{
    if (rocksdb_iter_valid(it))
        return 1;
    char *err = NULL;
    rocksdb_iter_get_error(it, &err);
    return rdbe_check("iterator", err);
}

/* Step to the next entry. */
static void rdbe_iter_next(void *it)
{
    rocksdb_iter_next(it);
}

/* Key at the iterator. */
static const char *rdbe_iter_key(void *it, size_t *kl)
{
    return rocksdb_iter_key(it, kl);
}

/* Value at the iterator. */
static const char *rdbe_iter_value(void *it, size_t *vl)
{
    return rocksdb_iter_value(it, vl);
}

/* Destroy an iterator. */
static void rdbe_iter_free(void *it)
{
    if (it)
        rocksdb_iter_destroy(it);
}

/* Integer property, 0 when unavailable. */
static uint64_t rdbe_prop(rdb_adapter_t *a, const char *name)
{
    uint64_t v = 0;
    if (rocksdb_property_int(a->db, name, &v) != 0)
        return 0;
    return v;
}

/* Flush the memtable and wait for it (rocksdb_flush, wait = 1). */
static int rdbe_flush(void *db)
{
    rdb_adapter_t *a = db;
    rocksdb_flushoptions_t *fo = rocksdb_flushoptions_create();
    if (!fo)
        return -1;
    rocksdb_flushoptions_set_wait(fo, 1);
    char *err = NULL;
    rocksdb_flush(a->db, fo, &err);
    rocksdb_flushoptions_destroy(fo);
    return rdbe_check("flush", err);
}

/* Poll until no flush or compaction is pending or running, twice in a row
 * 10 ms apart (this version's C API has no blocking wait). Fails if a
 * background error appears (the work would never finish) or after 15
 * minutes. */
static int rdbe_wait_idle(void *db)
{
    static const char *const props[] = {
        "rocksdb.mem-table-flush-pending", "rocksdb.compaction-pending",
        "rocksdb.num-running-flushes", "rocksdb.num-running-compactions",
    };
    rdb_adapter_t *a = db;
    uint64_t errors = rdbe_prop(a, "rocksdb.background-errors");
    int quiet = 0;
    for (long polls = 0; quiet < 2; polls++) {
        if (rdbe_prop(a, "rocksdb.background-errors") > errors) {
            fprintf(stderr, "rocksdb: wait_idle: background error (see LOG)\n");
            return -1;
        }
        if (polls > 15L * 60 * 100) {
            fprintf(stderr, "rocksdb: wait_idle: still busy after 15 minutes\n");
            return -1;
        }
        uint64_t busy = 0;
        for (size_t i = 0; i < sizeof(props) / sizeof(props[0]); i++)
            busy += rdbe_prop(a, props[i]);
        quiet = busy ? 0 : quiet + 1;
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    return 0;
}

/* Stall time: "Cumulative stall: HH:MM:SS.sss" in rocksdb.dbstats. */
static void rdbe_stats(void *db, engine_stats_t *out)
{
    rdb_adapter_t *a = db;
    out->stall_micros = -1;
    char *s = rocksdb_property_value(a->db, "rocksdb.dbstats");
    if (!s)
        return;
    const char *p = strstr(s, "Cumulative stall:");
    unsigned h = 0, m = 0;
    double sec = 0;
    if (p && sscanf(p, "Cumulative stall: %u:%u:%lf", &h, &m, &sec) == 3)
        out->stall_micros = (int64_t)(((double)h * 3600 + m * 60 + sec) * 1e6);
    rocksdb_free(s);
}

const engine_vtable_t engine_rocksdb = {
    .name = "rocksdb",
    .describe = rdbe_describe,
    .open = rdbe_open,
    .close = rdbe_close,
    .put = rdbe_put,
    .del = rdbe_del,
    .batch_new = rdbe_batch_new,
    .batch_put = rdbe_batch_put,
    .batch_write = rdbe_batch_write,
    .batch_free = rdbe_batch_free,
    .get = rdbe_get,
    .iter_new = rdbe_iter_new,
    .iter_seek = rdbe_iter_seek,
    .iter_seek_first = rdbe_iter_seek_first,
    .iter_valid = rdbe_iter_valid,
    .iter_next = rdbe_iter_next,
    .iter_key = rdbe_iter_key,
    .iter_value = rdbe_iter_value,
    .iter_free = rdbe_iter_free,
    .flush = rdbe_flush,
    .wait_idle = rdbe_wait_idle,
    .stats = rdbe_stats,
};

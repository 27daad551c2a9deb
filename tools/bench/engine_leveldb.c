/*
 * engine_leveldb.c: the LevelDB adapter, through LevelDB's C API.
 *
 * Matched settings: write_buffer_size, an LRU block cache of cache_size,
 * block_size, a bloom filter of bloom_bits bits per key, and
 * WriteOptions.sync. LevelDB has one background thread whatever the
 * setting, and only snappy compression: lz4 and zstd fall back to snappy
 * (said in describe()). LevelDB exposes neither stall time nor a way to wait
 * for compactions: wait_idle polls until the "leveldb.stats" text and this
 * process's write_bytes both stay unchanged for three 100 ms polls with
 * fewer than four level-0 files (LevelDB's compaction trigger), giving up
 * after 15 minutes.
 */
#include "engine.h"
#include "sysstat.h"

#include <leveldb/c.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct ldb_adapter {
    leveldb_t              *db;
    leveldb_options_t      *opts;
    leveldb_cache_t        *cache;
    leveldb_filterpolicy_t *filter;
    leveldb_readoptions_t  *ro;
    leveldb_writeoptions_t *wo;
} ldb_adapter_t;

/* Print and release a LevelDB error string; -1 if there was one. */
static int ldbe_check(const char *what, char *err)
{
    if (!err)
        return 0;
    fprintf(stderr, "leveldb: %s: %s\n", what, err);
    leveldb_free(err);
    return -1;
}

/* Describe how the bench settings map onto LevelDB options. */
static void ldbe_describe(const engine_settings_t *s, char *buf, size_t n)
{
    const char *comp = s->compression == BENCH_COMPRESS_NONE ? "none" : "snappy";
    snprintf(buf, n,
             "compression=%s%s; one background thread (bg_threads ignored);"
             " stall time n/a; no flush call (memtable carries over to the next step);"
             " settle: poll stats text + write_bytes quiet"
             " 300 ms; get copies the value",
             comp,
             (s->compression == BENCH_COMPRESS_LZ4 ||
              s->compression == BENCH_COMPRESS_ZSTD)
                 ? " (LevelDB has no lz4/zstd)"
                 : "");
}

/* Release every object the adapter holds. */
static void ldbe_free(ldb_adapter_t *a)
{
    if (a->db)
        leveldb_close(a->db);
    if (a->ro)
        leveldb_readoptions_destroy(a->ro);
    if (a->wo)
        leveldb_writeoptions_destroy(a->wo);
    if (a->opts)
        leveldb_options_destroy(a->opts);
    if (a->filter)
        leveldb_filterpolicy_destroy(a->filter);
    if (a->cache)
        leveldb_cache_destroy(a->cache);
    free(a);
}

/* Open (creating) a database in dir with the matched settings. */
static int ldbe_open(const engine_settings_t *s, const char *dir, void **out)
{
    ldb_adapter_t *a = calloc(1, sizeof(*a));
    if (!a)
        return -1;
    a->opts = leveldb_options_create();
    leveldb_options_set_create_if_missing(a->opts, 1);
    leveldb_options_set_write_buffer_size(a->opts, s->write_buffer_size);
    leveldb_options_set_block_size(a->opts, s->block_size);
    leveldb_options_set_compression(a->opts, s->compression == BENCH_COMPRESS_NONE
                                                 ? leveldb_no_compression
                                                 : leveldb_snappy_compression);
    /* cache_size 0 means no cache; given none, LevelDB would make its own
     * 8 MiB one, so give it a one-byte cache instead. */
    a->cache = leveldb_cache_create_lru(s->cache_size ? s->cache_size : 1);
    leveldb_options_set_cache(a->opts, a->cache);
    if (s->bloom_bits > 0) {
        a->filter = leveldb_filterpolicy_create_bloom(s->bloom_bits);
        leveldb_options_set_filter_policy(a->opts, a->filter);
    }
    a->ro = leveldb_readoptions_create();
    a->wo = leveldb_writeoptions_create();
    leveldb_writeoptions_set_sync(a->wo, s->sync ? 1 : 0);

    char *err = NULL;
    a->db = leveldb_open(a->opts, dir, &err);
    if (ldbe_check("open", err) != 0 || !a->db) {
        ldbe_free(a);
        return -1;
    }
    *out = a;
    return 0;
}

/* Close the database and release its options. */
static void ldbe_close(void *db)
{
    ldbe_free(db);
}

/* Write one key. */
static int ldbe_put(void *db, const char *k, size_t kl, const char *v,
                    size_t vl)
{
    ldb_adapter_t *a = db;
    char *err = NULL;
    leveldb_put(a->db, a->wo, k, kl, v, vl, &err);
    return ldbe_check("put", err);
}

/* Delete one key. */
static int ldbe_del(void *db, const char *k, size_t kl)
{
    ldb_adapter_t *a = db;
    char *err = NULL;
    leveldb_delete(a->db, a->wo, k, kl, &err);
    return ldbe_check("delete", err);
}

/* New empty write batch. */
static void *ldbe_batch_new(void *db)
{
    (void)db;
    return leveldb_writebatch_create();
}

/* Add a put to the batch. */
static int ldbe_batch_put(void *b, const char *k, size_t kl, const char *v,
                          size_t vl)
{
    leveldb_writebatch_put(b, k, kl, v, vl);
    return 0;
}

/* Apply the batch, then clear it. */
static int ldbe_batch_write(void *db, void *b)
{
    ldb_adapter_t *a = db;
    char *err = NULL;
    leveldb_write(a->db, a->wo, b, &err);
    leveldb_writebatch_clear(b);
    return ldbe_check("write", err);
}

/* Destroy a batch. */
static void ldbe_batch_free(void *b)
{
    if (b)
        leveldb_writebatch_destroy(b);
}

/* Point lookup: LevelDB's C API returns a malloc'd copy. */
static int ldbe_get(void *db, const char *k, size_t kl, size_t *vlen)
{
    ldb_adapter_t *a = db;
    char *err = NULL;
    size_t vl = 0;
    char *v = leveldb_get(a->db, a->ro, k, kl, &vl, &err);
    if (ldbe_check("get", err) != 0)
        return -1;
    if (!v)
        return 0;
    *vlen = vl;
    leveldb_free(v);
    return 1;
}

/* New iterator over the latest state. */
static void *ldbe_iter_new(void *db)
{
    ldb_adapter_t *a = db;
    return leveldb_create_iterator(a->db, a->ro);
}

/* Position at the first key >= k. */
static void ldbe_iter_seek(void *it, const char *k, size_t kl)
{
    leveldb_iter_seek(it, k, kl);
}

/* Position at the first key. */
static void ldbe_iter_seek_first(void *it)
{
    leveldb_iter_seek_to_first(it);
}

/* 1 while positioned on an entry, 0 at the end, -1 on an iterator error. */
static int ldbe_iter_valid(void *it)
{
    if (leveldb_iter_valid(it))
        return 1;
    char *err = NULL;
    leveldb_iter_get_error(it, &err);
    return ldbe_check("iterator", err);
}

/* Step to the next entry. */
static void ldbe_iter_next(void *it)
{
    leveldb_iter_next(it);
}

/* Key at the iterator. */
static const char *ldbe_iter_key(void *it, size_t *kl)
{
    return leveldb_iter_key(it, kl);
}

/* Value at the iterator. */
static const char *ldbe_iter_value(void *it, size_t *vl)
{
    return leveldb_iter_value(it, vl);
}

/* Destroy an iterator. */
static void ldbe_iter_free(void *it)
{
    if (it)
        leveldb_iter_destroy(it);
}

/* Number of level-0 files, 0 when the property is missing. */
static int ldbe_l0_files(ldb_adapter_t *a)
{
    char *v = leveldb_property_value(a->db, "leveldb.num-files-at-level0");
    int n = v ? atoi(v) : 0;
    leveldb_free(v);
    return n;
}

/* Poll until compaction stats and written bytes stop moving. */
static int ldbe_wait_idle(void *db)
{
    ldb_adapter_t *a = db;
    char *prev = NULL;
    int64_t prev_io = -1;
    int quiet = 0;
    for (long polls = 0; quiet < 3; polls++) {
        if (polls > 15L * 60 * 10) {
            fprintf(stderr, "leveldb: wait_idle: still busy after 15 minutes\n");
            leveldb_free(prev);
            return -1;
        }
        struct timespec ts = {0, 100 * 1000 * 1000};
        nanosleep(&ts, NULL);
        char *cur = leveldb_property_value(a->db, "leveldb.stats");
        int64_t io = sys_io_write_bytes();
        int same = prev && cur && strcmp(prev, cur) == 0 && io == prev_io;
        quiet = (same && ldbe_l0_files(a) < 4) ? quiet + 1 : 0;
        leveldb_free(prev);
        prev = cur;
        prev_io = io;
    }
    leveldb_free(prev);
    return 0;
}

/* LevelDB does not report stall time. */
static void ldbe_stats(void *db, engine_stats_t *out)
{
    (void)db;
    out->stall_micros = -1;
}

const engine_vtable_t engine_leveldb = {
    .name = "leveldb",
    .describe = ldbe_describe,
    .open = ldbe_open,
    .close = ldbe_close,
    .put = ldbe_put,
    .del = ldbe_del,
    .batch_new = ldbe_batch_new,
    .batch_put = ldbe_batch_put,
    .batch_write = ldbe_batch_write,
    .batch_free = ldbe_batch_free,
    .get = ldbe_get,
    .iter_new = ldbe_iter_new,
    .iter_seek = ldbe_iter_seek,
    .iter_seek_first = ldbe_iter_seek_first,
    .iter_valid = ldbe_iter_valid,
    .iter_next = ldbe_iter_next,
    .iter_key = ldbe_iter_key,
    .iter_value = ldbe_iter_value,
    .iter_free = ldbe_iter_free,
    .wait_idle = ldbe_wait_idle,
    .stats = ldbe_stats,
};

/*
 * engine_tidesdb.c: the TidesDB adapter, written against the public header
 * only. Settings map one to one: write_buffer_size, block_cache_size,
 * block_size, compression, bloom_fpr = 0.6185^bits (the false-positive rate
 * of an optimal bloom filter with that many bits per key), sync mode FULL
 * or NONE, and background threads split like RocksDB splits
 * max_background_jobs (a quarter, at least one, for flushes).
 */
#include "engine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <tidesdb/tidesdb.h>

typedef struct tdb_adapter {
    tdb_t    *db;
    tdb_cf_t *cf;
} tdb_adapter_t;

/* Print a TidesDB error with its detail. */
static int tdbe_fail(const char *what, int rc)
{
    fprintf(stderr, "tidesdb: %s: %s (%s)\n", what, tdb_strerror(rc),
            tdb_last_error());
    return -1;
}

/* Bloom false-positive rate equivalent to `bits` bits per key. */
static double tdbe_fpr(int bits)
{
    return bits > 0 ? pow(0.6185, (double)bits) : 0.0;
}

/* Flush and compaction thread counts for a background-thread budget. */
static void tdbe_threads(int bg, int *flush, int *compact)
{
    int f = bg / 4 > 1 ? bg / 4 : 1;
    int c = bg - f > 1 ? bg - f : 1;
    *flush = f;
    *compact = c;
}

/* Describe how the bench settings map onto TidesDB options. */
static void tdbe_describe(const engine_settings_t *s, char *buf, size_t n)
{
    int f, c;
    tdbe_threads(s->bg_threads, &f, &c);
    snprintf(buf, n,
             "bloom_fpr=%.4g (0.6185^%d); flush_threads=%d compaction_threads=%d;"
             " sync_mode=%s; settle: tdb_flush + tdb_wait_idle; get copies the value",
             tdbe_fpr(s->bloom_bits), s->bloom_bits, f, c,
             s->sync ? "FULL" : "NONE");
}

/* Map a bench compression onto a TidesDB one. */
static int tdbe_compression(int c)
{
    switch (c) {
    case BENCH_COMPRESS_LZ4: return TDB_COMPRESS_LZ4;
    case BENCH_COMPRESS_ZSTD: return TDB_COMPRESS_ZSTD;
    case BENCH_COMPRESS_SNAPPY: return TDB_COMPRESS_SNAPPY;
    default: return TDB_COMPRESS_NONE;
    }
}

/* Open (creating) a database in dir with the matched settings. */
static int tdbe_open(const engine_settings_t *s, const char *dir, void **out)
{
    tdb_config_t cfg;
    tdb_config_default(&cfg);
    cfg.create_if_missing = 1;
    cfg.block_cache_size = s->cache_size;
    tdbe_threads(s->bg_threads, &cfg.flush_threads, &cfg.compaction_threads);
    cfg.log_level = TDB_LOG_WARN;
    cfg.default_cf.write_buffer_size = s->write_buffer_size;
    cfg.default_cf.compression = tdbe_compression(s->compression);
    cfg.default_cf.bloom_fpr = tdbe_fpr(s->bloom_bits);
    cfg.default_cf.sync_mode = s->sync ? TDB_SYNC_FULL : TDB_SYNC_NONE;
    cfg.default_cf.block_size = (uint32_t)s->block_size;

    tdb_adapter_t *a = calloc(1, sizeof(*a));
    if (!a)
        return -1;
    int rc = tdb_open(dir, &cfg, &a->db);
    if (rc != TDB_OK) {
        free(a);
        return tdbe_fail("open", rc);
    }
    rc = tdb_get_cf(a->db, TDB_DEFAULT_CF, &a->cf);
    if (rc != TDB_OK) {
        tdb_close(a->db);
        free(a);
        return tdbe_fail("get_cf", rc);
    }
    *out = a;
    return 0;
}

/* Close the database and free the adapter. */
static void tdbe_close(void *db)
{
    tdb_adapter_t *a = db;
    int rc = tdb_close(a->db);
    if (rc != TDB_OK)
        tdbe_fail("close", rc);
    free(a);
}

/* Write one key. */
static int tdbe_put(void *db, const char *k, size_t kl, const char *v,
                    size_t vl)
{
    tdb_adapter_t *a = db;
    int rc = tdb_put(a->db, a->cf, k, kl, v, vl, 0);
    return rc == TDB_OK ? 0 : tdbe_fail("put", rc);
}

/* Delete one key. */
static int tdbe_del(void *db, const char *k, size_t kl)
{
    tdb_adapter_t *a = db;
    int rc = tdb_delete(a->db, a->cf, k, kl);
    return rc == TDB_OK ? 0 : tdbe_fail("delete", rc);
}

typedef struct tdbe_batch {
    tdb_adapter_t *a;
    tdb_batch_t   *b;
} tdbe_batch_t;

/* New empty batch bound to the default column family. */
static void *tdbe_batch_new(void *db)
{
    tdbe_batch_t *b = calloc(1, sizeof(*b));
    if (!b)
        return NULL;
    b->a = db;
    int rc = tdb_batch_create(&b->b);
    if (rc != TDB_OK) {
        tdbe_fail("batch_create", rc);
        free(b);
        return NULL;
    }
    return b;
}

/* Add a put to the batch. */
static int tdbe_batch_put(void *bp, const char *k, size_t kl, const char *v,
                          size_t vl)
{
    tdbe_batch_t *b = bp;
    int rc = tdb_batch_put(b->b, b->a->cf, k, kl, v, vl, 0);
    return rc == TDB_OK ? 0 : tdbe_fail("batch_put", rc);
}

/* Apply the batch, then clear it. */
static int tdbe_batch_write(void *db, void *bp)
{
    tdb_adapter_t *a = db;
    tdbe_batch_t *b = bp;
    int rc = tdb_write(a->db, b->b);
    tdb_batch_clear(b->b);
    return rc == TDB_OK ? 0 : tdbe_fail("write", rc);
}

/* Destroy a batch. */
static void tdbe_batch_free(void *bp)
{
    tdbe_batch_t *b = bp;
    if (!b)
        return;
    tdb_batch_destroy(b->b);
    free(b);
}

/* Point lookup: the value copy is released at once. */
static int tdbe_get(void *db, const char *k, size_t kl, size_t *vlen)
{
    tdb_adapter_t *a = db;
    void *v = NULL;
    size_t vl = 0;
    int rc = tdb_get(a->db, a->cf, NULL, k, kl, &v, &vl);
    if (rc == TDB_ERR_NOT_FOUND)
        return 0;
    if (rc != TDB_OK)
        return tdbe_fail("get", rc);
    *vlen = vl;
    tdb_free(v);
    return 1;
}

/* New iterator over the latest state of the default family. */
static void *tdbe_iter_new(void *db)
{
    tdb_adapter_t *a = db;
    tdb_iter_t *it = NULL;
    int rc = tdb_iter_create(a->db, a->cf, NULL, &it);
    if (rc != TDB_OK) {
        tdbe_fail("iter_create", rc);
        return NULL;
    }
    return it;
}

/* Position at the first key >= k. */
static void tdbe_iter_seek(void *it, const char *k, size_t kl)
{
    tdb_iter_seek(it, k, kl);
}

/* Position at the first key. */
static void tdbe_iter_seek_first(void *it)
{
    tdb_iter_seek_to_first(it);
}

/* 1 while positioned on an entry, 0 at the end, -1 on an iterator error. */
static int tdbe_iter_valid(void *it)
{
    if (tdb_iter_valid(it))
        return 1;
    int rc = tdb_iter_status(it);
    return rc == TDB_OK ? 0 : tdbe_fail("iterator", rc);
}

/* Step to the next entry. */
static void tdbe_iter_next(void *it)
{
    tdb_iter_next(it);
}

/* Key at the iterator. */
static const char *tdbe_iter_key(void *it, size_t *kl)
{
    return tdb_iter_key(it, kl);
}

/* Value at the iterator. */
static const char *tdbe_iter_value(void *it, size_t *vl)
{
    return tdb_iter_value(it, vl);
}

/* Destroy an iterator. */
static void tdbe_iter_free(void *it)
{
    if (it)
        tdb_iter_destroy(it);
}

/* Write the memtables out and wait (tdb_flush). */
static int tdbe_flush(void *db)
{
    tdb_adapter_t *a = db;
    int rc = tdb_flush(a->db, NULL);
    return rc == TDB_OK ? 0 : tdbe_fail("flush", rc);
}

/* Wait for flushes and compactions to finish. */
static int tdbe_wait_idle(void *db)
{
    tdb_adapter_t *a = db;
    int rc = tdb_wait_idle(a->db);
    return rc == TDB_OK ? 0 : tdbe_fail("wait_idle", rc);
}

/* Stall time from the database counters. */
static void tdbe_stats(void *db, engine_stats_t *out)
{
    tdb_adapter_t *a = db;
    tdb_stats_t st;
    out->stall_micros = -1;
    if (tdb_get_stats(a->db, NULL, &st) == TDB_OK)
        out->stall_micros = (int64_t)st.stall_micros;
}

/* One put in its own transaction (SNAPSHOT isolation, the default), reusing
 * the thread's transaction handle through reset. */
static int tdbe_txn_put(void *db, void **ctx, const char *k, size_t kl, const char *v, size_t vl)
{
    tdb_adapter_t *a = db;
    tdb_txn_t *t = *ctx;
    int rc = t ? tdb_txn_reset(t, NULL) : tdb_txn_begin(a->db, NULL, &t);
    if (rc != TDB_OK)
        return tdbe_fail("txn_begin", rc);
    *ctx = t;
    rc = tdb_txn_put(t, a->cf, k, kl, v, vl, 0);
    if (rc == TDB_OK)
        rc = tdb_txn_commit(t);
    return rc == TDB_OK ? 0 : tdbe_fail("txn_put", rc);
}

/* A get through a read-only SNAPSHOT transaction (begun per get). */
static int tdbe_snapshot_get(void *db, void **ctx, const char *k, size_t kl, size_t *vlen)
{
    tdb_adapter_t *a = db;
    tdb_txn_t *t = *ctx;
    tdb_txn_options_t o;
    tdb_txn_options_default(&o);
    o.read_only = 1;
    int rc = t ? tdb_txn_reset(t, &o) : tdb_txn_begin(a->db, &o, &t);
    if (rc != TDB_OK)
        return tdbe_fail("txn_begin", rc);
    *ctx = t;
    void *v;
    size_t n;
    rc = tdb_txn_get(t, a->cf, k, kl, &v, &n);
    if (rc == TDB_ERR_NOT_FOUND) {
        tdb_txn_commit(t);
        return 0;
    }
    if (rc != TDB_OK)
        return tdbe_fail("txn_get", rc);
    *vlen = n;
    tdb_free(v);
    tdb_txn_commit(t);
    return 1;
}

static void tdbe_txn_ctx_free(void *ctx) { tdb_txn_free(ctx); }

const engine_vtable_t engine_tidesdb = {
    .name = "tidesdb",
    .describe = tdbe_describe,
    .open = tdbe_open,
    .close = tdbe_close,
    .put = tdbe_put,
    .del = tdbe_del,
    .batch_new = tdbe_batch_new,
    .batch_put = tdbe_batch_put,
    .batch_write = tdbe_batch_write,
    .batch_free = tdbe_batch_free,
    .get = tdbe_get,
    .iter_new = tdbe_iter_new,
    .iter_seek = tdbe_iter_seek,
    .iter_seek_first = tdbe_iter_seek_first,
    .iter_valid = tdbe_iter_valid,
    .iter_next = tdbe_iter_next,
    .iter_key = tdbe_iter_key,
    .iter_value = tdbe_iter_value,
    .iter_free = tdbe_iter_free,
    .txn_put = tdbe_txn_put,
    .snapshot_get = tdbe_snapshot_get,
    .txn_ctx_free = tdbe_txn_ctx_free,
    .flush = tdbe_flush,
    .wait_idle = tdbe_wait_idle,
    .stats = tdbe_stats,
};

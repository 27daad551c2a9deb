/* version/table_cache: open-table cache (see table_cache.h for invariants). */
#include "version/table_cache.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/error.h"

struct table_cache {
    env_t *env;
    char *dbdir;
    lru_cache_t *readers;     /* value: sst_reader_t*, one reader ref each */
    lru_cache_t *block_cache; /* borrowed */
    int map_reads;            /* sst_reader_map every opened table */
    int max_pinned;           /* max_open */
    int pinned;               /* pins handed out and not unpinned (atomic) */
};

/* LRU deleter: drop the cache's reader reference. */
static void table_cache_deleter(void *value, void *ctx) {
    (void)ctx;
    sst_reader_unref((sst_reader_t *)value);
}

/* Format the path of table `number`. */
void sst_file_name(char *out, size_t cap, const char *dbdir, uint64_t number) {
    snprintf(out, cap, "%s/%06llu.sst", dbdir, (unsigned long long)number);
}

/* Create the cache. */
table_cache_t *table_cache_create(env_t *env, const char *dbdir, int max_open, lru_cache_t *block_cache) {
    table_cache_t *tc = (table_cache_t *)calloc(1, sizeof *tc);
    if (!tc) return NULL;
    tc->env = env;
    tc->block_cache = block_cache;
    tc->dbdir = strdup(dbdir);
    size_t cap = max_open > 0 ? (size_t)max_open : 0;
    tc->max_pinned = max_open > 0 ? max_open : 0;
    /* Shards only when each still holds a useful number of tables. */
    int bits = cap >= 256 ? 4 : cap >= 64 ? 2 : 0;
    tc->readers = lru_cache_create(cap, bits, table_cache_deleter, NULL);
    if (!tc->dbdir || !tc->readers) {
        table_cache_destroy(tc);
        return NULL;
    }
    return tc;
}

/* Map tables opened from now on (sst_reader_map). */
void table_cache_set_map_reads(table_cache_t *tc, int on) { tc->map_reads = on; }

/* Close every cached reader and free tc. */
void table_cache_destroy(table_cache_t *tc) {
    if (!tc) return;
    if (tc->readers) lru_cache_destroy(tc->readers);
    free(tc->dbdir);
    free(tc);
}

/* Cached reader of `number`, opening the table on a miss. */
int table_cache_get(table_cache_t *tc, uint64_t number, sst_reader_t **out) {
    *out = NULL;
    lru_handle_t *h = lru_cache_lookup(tc->readers, number, 0);
    if (h) {
        sst_reader_t *r = (sst_reader_t *)lru_handle_value(h);
        sst_reader_ref(r);
        lru_cache_release(tc->readers, h);
        *out = r;
        return TDB_OK;
    }
    char path[4096];
    sst_file_name(path, sizeof path, tc->dbdir, number);
    sst_reader_t *r = NULL;
    TDB_RET(sst_reader_open(tc->env, path, number, tc->block_cache, &r));
    /* A table that cannot be mapped is still read, with pread only. */
    if (tc->map_reads) (void)sst_reader_map(r);
    sst_reader_ref(r); /* the caller's reference; the open one goes to the cache */
    h = lru_cache_insert(tc->readers, number, 0, r, 1);
    if (!h) {
        sst_reader_unref(r); /* not owned by the cache on failure */
    } else {
        lru_cache_release(tc->readers, h);
    }
    *out = r;
    return TDB_OK;
}

/* A reader to keep while the file lives, within the pin budget. */
int table_cache_pin(table_cache_t *tc, uint64_t number, sst_reader_t **out) {
    *out = NULL;
    /* Spent budgets are common in large databases: look before writing
     * the shared count. */
    if (__atomic_load_n(&tc->pinned, __ATOMIC_RELAXED) >= tc->max_pinned) return TDB_OK;
    if (__atomic_add_fetch(&tc->pinned, 1, __ATOMIC_RELAXED) > tc->max_pinned) {
        __atomic_sub_fetch(&tc->pinned, 1, __ATOMIC_RELAXED);
        return TDB_OK;
    }
    int rc = table_cache_get(tc, number, out);
    if (rc != TDB_OK) __atomic_sub_fetch(&tc->pinned, 1, __ATOMIC_RELAXED);
    return rc;
}

/* Drop a pin. */
void table_cache_unpin(table_cache_t *tc, sst_reader_t *r) {
    sst_reader_unref(r);
    __atomic_sub_fetch(&tc->pinned, 1, __ATOMIC_RELAXED);
}

/* Forget the cached reader of `number`. */
void table_cache_evict(table_cache_t *tc, uint64_t number) { lru_cache_erase(tc->readers, number, 0); }

/*
 * version/table_cache: the cache of open SSTable readers, bounded by
 * max_open_sstables, on top of the LRU cache (key = (file number, 0),
 * charge 1 per open table).
 *
 * Invariants
 *  - The cache holds one reader reference per cached table; every
 *    table_cache_get hands the caller its own reference, so an evicted or
 *    erased reader stays usable until its last user unrefs it.
 *  - File numbers are never reused, so a cached reader never goes stale;
 *    table_cache_evict is called when a file is deleted to close it early.
 *  - Thread-safe (the LRU cache shards carry the locking); two threads
 *    missing on the same file may both open it, the later insert wins and
 *    the other reader is closed when its users let go.
 *  - Pins: table_cache_pin hands out a reference meant to live as long as
 *    the file does (version.c keeps one in the file's metadata, so a
 *    lookup needs neither the cache's lock nor a reference count). At most
 *    max_open readers are pinned at once; an evicted table stays open
 *    while pinned, so up to twice max_open tables may be open. Every pin
 *    is unpinned before the cache is destroyed.
 */
#ifndef TDB_VERSION_TABLE_CACHE_H
#define TDB_VERSION_TABLE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#include "cache/cache.h"
#include "env/env.h"
#include "sst/sst.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct table_cache table_cache_t;

/* max_open <= 0 caches nothing (every get opens the file). block_cache may be
 * NULL. dbdir is copied. NULL on OOM. */
table_cache_t *table_cache_create(env_t *env, const char *dbdir, int max_open, lru_cache_t *block_cache);
/* on: tables opened from now on read repeated blocks through a mapping
 * (sst_reader_map; off by default). Call before tc is shared. */
void table_cache_set_map_reads(table_cache_t *tc, int on);
/* All readers obtained from tc must have been unref'd or stay valid on their
 * own refs; closes the cached ones. */
void table_cache_destroy(table_cache_t *tc);
/* Reader of table `number` (opened on a miss); caller sst_reader_unref()s. */
int table_cache_get(table_cache_t *tc, uint64_t number, sst_reader_t **out);
/* Like table_cache_get, for a reference kept while the file lives; *out
 * NULL (and TDB_OK) when max_open readers are pinned already. */
int table_cache_pin(table_cache_t *tc, uint64_t number, sst_reader_t **out);
/* Drop a pin's reference. */
void table_cache_unpin(table_cache_t *tc, sst_reader_t *r);
/* Drop the cached reader of `number`, if any. */
void table_cache_evict(table_cache_t *tc, uint64_t number);
/* "<dir>/%06llu.sst" into out (truncated to cap). */
void sst_file_name(char *out, size_t cap, const char *dbdir, uint64_t number);

#ifdef __cplusplus
}
#endif
#endif

/*
 * cache/cache: a sharded LRU cache with a byte capacity. Used as the block
 * cache (key = (file number, block offset)) and as the open-table cache
 * (key = (file number, 0), charge 1).
 *
 * Invariants
 *  - Every entry is in exactly one shard (chosen by tdb_hash64 of the key),
 *    and all of an entry's fields are guarded by that shard's mutex.
 *  - An entry is "in cache" while it is reachable from the shard's hash
 *    table; it is on the shard's LRU list iff it is in cache and unpinned
 *    (refs == 1, the cache's own reference).
 *  - usage = sum of charges of in-cache entries. After any insert or
 *    capacity change, usage <= capacity unless the excess is pinned.
 *  - The deleter runs exactly once per inserted value, outside the shard
 *    lock, when the last reference (cache's or a handle's) goes away.
 *  - A handle stays valid (and its value alive) until lru_cache_release,
 *    even if the entry is erased, replaced or evicted meanwhile.
 *  - capacity 0 caches nothing: insert returns a handle to an entry that is
 *    not in the cache and is freed on release.
 */
#ifndef TDB_CACHE_CACHE_H
#define TDB_CACHE_CACHE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lru_cache lru_cache_t;
typedef struct lru_handle lru_handle_t;
typedef void (*lru_deleter_fn)(void *value, void *ctx);

/* num_shard_bits 0..8; NULL on OOM. */
lru_cache_t *lru_cache_create(size_t capacity, int num_shard_bits, lru_deleter_fn deleter, void *ctx);
/* All handles must be released. Runs the deleter on every remaining value. */
void lru_cache_destroy(lru_cache_t *c);
/* Lookup: a handle pinning the entry (counts a hit or miss), or NULL. */
lru_handle_t *lru_cache_lookup(lru_cache_t *c, uint64_t k1, uint64_t k2);
/* Insert (replacing an existing entry with the same key, which is freed once
 * unpinned); returns a pinned handle; evicts unpinned LRU entries while over
 * capacity. The cache may exceed capacity only by pinned entries. NULL on
 * OOM (value is then NOT owned: caller frees). */
lru_handle_t *lru_cache_insert(lru_cache_t *c, uint64_t k1, uint64_t k2, void *value, size_t charge);
/* Bytes an entry needs when kept inside its value (see below); a multiple
 * of 8. */
#define LRU_HANDLE_SPACE 80
/* Like lru_cache_insert, but the entry lives in `space` (LRU_HANDLE_SPACE
 * bytes, 8-aligned, inside value's allocation, which the deleter frees):
 * no allocation, so never NULL, and a lookup's entry access lands in
 * memory the value's user touches next anyway. */
lru_handle_t *lru_cache_insert_embedded(lru_cache_t *c, uint64_t k1, uint64_t k2, void *value, size_t charge,
                                        void *space);
void *lru_handle_value(const lru_handle_t *h);
/* Prefetch hints for a lookup of (k1,k2) coming soon, taking no lock and
 * changing and counting nothing: stage 0 loads the hash-table slot of
 * h = lru_cache_key_hash(k1,k2), stage 1 (after 0 had time to land) the
 * entry that slot names. A hint that meets a moved or absent entry only
 * costs the load. Several callers' stages interleaved overlap their misses. */
uint64_t lru_cache_key_hash(uint64_t k1, uint64_t k2);
void lru_cache_prefetch(lru_cache_t *c, uint64_t h, int stage);
void lru_cache_release(lru_cache_t *c, lru_handle_t *h);
/* Drop if present (freed when unpinned). */
void lru_cache_erase(lru_cache_t *c, uint64_t k1, uint64_t k2);
/* Drop every entry whose k1 == file (used when a file is deleted); pinned
 * ones are freed when released. O(entries). */
void lru_cache_erase_k1(lru_cache_t *c, uint64_t k1);

typedef struct lru_stats {
    uint64_t hits, misses, usage, capacity, entries;
} lru_stats_t;
void lru_cache_stats(lru_cache_t *c, lru_stats_t *out);
void lru_cache_set_capacity(lru_cache_t *c, size_t capacity);

#ifdef __cplusplus
}
#endif
#endif

/*
 * cache/cache: sharded LRU cache.
 *
 * Each shard has a pthread mutex guarding everything in it: a chained hash
 * table (power-of-two buckets, doubled when entries exceed buckets), a
 * circular doubly-linked LRU list (sentinel `lru`; lru.next is the oldest)
 * of in-cache unpinned entries, usage and capacity. Hit/miss counters are
 * relaxed atomics, read without the lock by lru_cache_stats.
 *
 * Reference counting: `refs` counts handles plus one for the cache while
 * the entry is in the table (in_cache). An in-cache entry with refs == 1 is
 * on the LRU list; any other entry is not. An entry is freed (deleter run,
 * outside the lock) when refs reaches 0.
 *
 * The shard is chosen by the top bits of tdb_hash64(k1,k2), the bucket by
 * the low bits, so the two are independent.
 */
#include "cache/cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "util/checksum.h"
#include "util/coding.h"

#define CACHE_HASH_SEED 0x63616368655f7464ull /* "cache_td" */
#define INITIAL_BUCKETS 16

struct lru_handle {
    uint64_t k1, k2, hash;
    void *value;
    size_t charge;
    struct lru_handle *next_hash; /* bucket chain; reused as free-list link */
    struct lru_handle *prev, *next; /* LRU list, when refs == 1 && in_cache */
    uint32_t refs;
    bool in_cache;
};
typedef struct lru_handle entry_t;

typedef struct shard {
    pthread_mutex_t mu;
    entry_t **buckets;
    size_t nbuckets; /* power of two */
    size_t entries;  /* entries in the table */
    size_t usage;    /* sum of charges in the table */
    size_t capacity;
    entry_t lru; /* sentinel */
    _Atomic uint64_t hits, misses;
    char pad[64];
} shard_t;

struct lru_cache {
    int shard_bits;
    int nshards;
    _Atomic size_t capacity;
    lru_deleter_fn deleter;
    void *ctx;
    shard_t *shards;
};

/* Hash of the two-part key. */
static inline uint64_t key_hash(uint64_t k1, uint64_t k2) {
    char b[16];
    enc_fixed64(b, k1);
    enc_fixed64(b + 8, k2);
    return tdb_hash64(b, sizeof(b), CACHE_HASH_SEED);
}

/* The shard owning hash h. */
static inline shard_t *shard_of(lru_cache_t *c, uint64_t h) {
    return &c->shards[c->shard_bits ? (size_t)(h >> (64 - c->shard_bits)) : 0];
}

/* Unlink e from the LRU list. */
static inline void lru_unlink(entry_t *e) {
    e->prev->next = e->next;
    e->next->prev = e->prev;
    e->prev = e->next = NULL;
}

/* Append e as the most recently used entry of s. */
static inline void lru_append(shard_t *s, entry_t *e) {
    e->next = &s->lru;
    e->prev = s->lru.prev;
    e->prev->next = e;
    s->lru.prev = e;
}

/* Pointer to the chain slot holding key (or to the terminating NULL). */
static entry_t **table_find(shard_t *s, uint64_t k1, uint64_t k2, uint64_t h) {
    entry_t **p = &s->buckets[h & (s->nbuckets - 1)];
    while (*p && ((*p)->hash != h || (*p)->k1 != k1 || (*p)->k2 != k2)) p = &(*p)->next_hash;
    return p;
}

/* Double the bucket array; on allocation failure keep the current one. */
static void table_grow(shard_t *s) {
    size_t n = s->nbuckets * 2;
    entry_t **nb = (entry_t **)calloc(n, sizeof(entry_t *));
    if (!nb) return;
    for (size_t i = 0; i < s->nbuckets; i++) {
        entry_t *e = s->buckets[i];
        while (e) {
            entry_t *next = e->next_hash;
            entry_t **slot = &nb[e->hash & (n - 1)];
            e->next_hash = *slot;
            *slot = e;
            e = next;
        }
    }
    free(s->buckets);
    s->buckets = nb;
    s->nbuckets = n;
}

/* Take e (already unlinked from its chain) out of the cache: drop the
 * cache's reference; if that was the last, push e on *dead. */
static void detach(shard_t *s, entry_t *e, entry_t **dead) {
    e->in_cache = false;
    s->usage -= e->charge;
    s->entries--;
    if (e->refs == 1) {
        lru_unlink(e);
        e->refs = 0;
        e->next_hash = *dead;
        *dead = e;
    } else {
        e->refs--;
    }
}

/* Evict LRU entries while s is over capacity. */
static void evict(shard_t *s, entry_t **dead) {
    while (s->usage > s->capacity && s->lru.next != &s->lru) {
        entry_t *e = s->lru.next;
        entry_t **p = table_find(s, e->k1, e->k2, e->hash);
        *p = e->next_hash;
        detach(s, e, dead);
    }
}

/* Run the deleter on and free every entry of a dead list (no lock held). */
static void free_dead(lru_cache_t *c, entry_t *dead) {
    while (dead) {
        entry_t *next = dead->next_hash;
        if (c->deleter) c->deleter(dead->value, c->ctx);
        free(dead);
        dead = next;
    }
}

/* Share of the total capacity given to shard i (shares sum to the total). */
static size_t shard_capacity(const lru_cache_t *c, size_t total, int i) {
    size_t n = (size_t)c->nshards;
    return total / n + ((size_t)i < total % n ? 1 : 0);
}

/* Create a cache of `capacity` charge units over 2^num_shard_bits shards. */
lru_cache_t *lru_cache_create(size_t capacity, int num_shard_bits, lru_deleter_fn deleter, void *ctx) {
    if (num_shard_bits < 0 || num_shard_bits > 8) return NULL;
    lru_cache_t *c = (lru_cache_t *)calloc(1, sizeof(*c));
    if (!c) return NULL;
    c->shard_bits = num_shard_bits;
    c->nshards = 1 << num_shard_bits;
    c->deleter = deleter;
    c->ctx = ctx;
    atomic_init(&c->capacity, capacity);
    c->shards = (shard_t *)calloc((size_t)c->nshards, sizeof(shard_t));
    if (!c->shards) goto fail;
    for (int i = 0; i < c->nshards; i++) {
        shard_t *s = &c->shards[i];
        s->buckets = (entry_t **)calloc(INITIAL_BUCKETS, sizeof(entry_t *));
        if (!s->buckets || pthread_mutex_init(&s->mu, NULL) != 0) {
            free(s->buckets);
            s->buckets = NULL;
            for (int j = 0; j < i; j++) {
                pthread_mutex_destroy(&c->shards[j].mu);
                free(c->shards[j].buckets);
            }
            goto fail;
        }
        s->nbuckets = INITIAL_BUCKETS;
        s->capacity = shard_capacity(c, capacity, i);
        s->lru.next = s->lru.prev = &s->lru;
        atomic_init(&s->hits, 0);
        atomic_init(&s->misses, 0);
    }
    return c;
fail:
    free(c->shards);
    free(c);
    return NULL;
}

/* Free the cache and every value in it; all handles must be released. */
void lru_cache_destroy(lru_cache_t *c) {
    if (!c) return;
    for (int i = 0; i < c->nshards; i++) {
        shard_t *s = &c->shards[i];
        entry_t *dead = NULL;
        for (size_t b = 0; b < s->nbuckets; b++) {
            entry_t *e = s->buckets[b];
            while (e) {
                entry_t *next = e->next_hash;
                /* refs > 1 means an unreleased handle: misuse; free anyway. */
                e->next_hash = dead;
                dead = e;
                e = next;
            }
        }
        free_dead(c, dead);
        free(s->buckets);
        pthread_mutex_destroy(&s->mu);
    }
    free(c->shards);
    free(c);
}

/* Find (k1,k2) and pin it; counts a hit or a miss. */
lru_handle_t *lru_cache_lookup(lru_cache_t *c, uint64_t k1, uint64_t k2) {
    uint64_t h = key_hash(k1, k2);
    shard_t *s = shard_of(c, h);
    pthread_mutex_lock(&s->mu);
    entry_t *e = *table_find(s, k1, k2, h);
    if (e) {
        if (e->refs == 1) lru_unlink(e);
        e->refs++;
    }
    pthread_mutex_unlock(&s->mu);
    atomic_fetch_add_explicit(e ? &s->hits : &s->misses, 1, memory_order_relaxed);
    return e;
}

/* Insert value under (k1,k2), replacing any entry with that key; returns it pinned. */
lru_handle_t *lru_cache_insert(lru_cache_t *c, uint64_t k1, uint64_t k2, void *value, size_t charge) {
    entry_t *e = (entry_t *)malloc(sizeof(*e));
    if (!e) return NULL;
    uint64_t h = key_hash(k1, k2);
    e->k1 = k1;
    e->k2 = k2;
    e->hash = h;
    e->value = value;
    e->charge = charge;
    e->prev = e->next = NULL;
    e->next_hash = NULL;
    shard_t *s = shard_of(c, h);
    entry_t *dead = NULL;
    pthread_mutex_lock(&s->mu);
    entry_t **p = table_find(s, k1, k2, h);
    entry_t *old = *p;
    if (old) {
        *p = old->next_hash;
        detach(s, old, &dead);
    }
    if (s->capacity == 0) {
        /* Caching disabled: the entry lives only as long as the handle. */
        e->refs = 1;
        e->in_cache = false;
    } else {
        e->refs = 2;
        e->in_cache = true;
        e->next_hash = *p;
        *p = e;
        s->usage += charge;
        s->entries++;
        if (s->entries > s->nbuckets) table_grow(s);
        evict(s, &dead);
    }
    pthread_mutex_unlock(&s->mu);
    free_dead(c, dead);
    return e;
}

/* The value a handle pins. */
void *lru_handle_value(const lru_handle_t *h) { return h->value; }

/* Unpin a handle; frees the entry if nothing references it anymore. */
void lru_cache_release(lru_cache_t *c, lru_handle_t *e) {
    if (!e) return;
    shard_t *s = shard_of(c, e->hash);
    entry_t *dead = NULL;
    pthread_mutex_lock(&s->mu);
    e->refs--;
    if (e->refs == 0) {
        dead = e;
        e->next_hash = NULL;
    } else if (e->refs == 1 && e->in_cache) {
        if (s->usage > s->capacity || s->capacity == 0) {
            /* Over capacity only because of pinned entries: drop this one. */
            entry_t **p = table_find(s, e->k1, e->k2, e->hash);
            *p = e->next_hash;
            e->in_cache = false;
            s->usage -= e->charge;
            s->entries--;
            e->refs = 0;
            e->next_hash = NULL;
            dead = e;
        } else {
            lru_append(s, e);
        }
    }
    pthread_mutex_unlock(&s->mu);
    free_dead(c, dead);
}

/* Remove (k1,k2) from the cache; pinned values are freed when released. */
void lru_cache_erase(lru_cache_t *c, uint64_t k1, uint64_t k2) {
    uint64_t h = key_hash(k1, k2);
    shard_t *s = shard_of(c, h);
    entry_t *dead = NULL;
    pthread_mutex_lock(&s->mu);
    entry_t **p = table_find(s, k1, k2, h);
    entry_t *e = *p;
    if (e) {
        *p = e->next_hash;
        detach(s, e, &dead);
    }
    pthread_mutex_unlock(&s->mu);
    free_dead(c, dead);
}

/* Remove every entry whose k1 matches (scans all shards). */
void lru_cache_erase_k1(lru_cache_t *c, uint64_t k1) {
    for (int i = 0; i < c->nshards; i++) {
        shard_t *s = &c->shards[i];
        entry_t *dead = NULL;
        pthread_mutex_lock(&s->mu);
        for (size_t b = 0; b < s->nbuckets; b++) {
            entry_t **p = &s->buckets[b];
            while (*p) {
                entry_t *e = *p;
                if (e->k1 == k1) {
                    *p = e->next_hash;
                    detach(s, e, &dead);
                } else {
                    p = &e->next_hash;
                }
            }
        }
        pthread_mutex_unlock(&s->mu);
        free_dead(c, dead);
    }
}

/* Snapshot of the counters (summed over shards; not atomic across shards). */
void lru_cache_stats(lru_cache_t *c, lru_stats_t *out) {
    memset(out, 0, sizeof(*out));
    for (int i = 0; i < c->nshards; i++) {
        shard_t *s = &c->shards[i];
        out->hits += atomic_load_explicit(&s->hits, memory_order_relaxed);
        out->misses += atomic_load_explicit(&s->misses, memory_order_relaxed);
        pthread_mutex_lock(&s->mu);
        out->usage += s->usage;
        out->entries += s->entries;
        pthread_mutex_unlock(&s->mu);
    }
    out->capacity = atomic_load_explicit(&c->capacity, memory_order_relaxed);
}

/* Change the capacity, evicting unpinned entries as needed. */
void lru_cache_set_capacity(lru_cache_t *c, size_t capacity) {
    atomic_store_explicit(&c->capacity, capacity, memory_order_relaxed);
    for (int i = 0; i < c->nshards; i++) {
        shard_t *s = &c->shards[i];
        entry_t *dead = NULL;
        pthread_mutex_lock(&s->mu);
        s->capacity = shard_capacity(c, capacity, i);
        evict(s, &dead);
        pthread_mutex_unlock(&s->mu);
        free_dead(c, dead);
    }
}

/*
 * cache/cache: sharded LRU cache.
 *
 * Each shard has a pthread mutex guarding everything in it: an
 * open-addressing hash table (linear probing over a power-of-two array of
 * (hash, entry) slots, at most half full, doubled as it fills; removal
 * shifts the following probe run back, so no tombstones), a circular
 * doubly-linked list (sentinel `lru`; lru.next is the oldest) of every
 * in-cache entry, usage and capacity. A lookup compares the
 * full 64-bit hashes stored in the slots and dereferences only an entry
 * whose hash matches, so a miss touches no entry at all (a chained table
 * cost a cache miss per chain node: 15% of a 10M-key random-seek profile).
 * Hit/miss counters are plain fields under the shard's lock (an atomic
 * beside it would be one more cache line moving between cores per lookup).
 *
 * Reference counting: `refs` counts handles plus one for the cache while
 * the entry is in the table (in_cache). An entry is on the list iff it is
 * in the table. An entry is freed (deleter run, outside the lock) when refs
 * reaches 0.
 *
 * Replacement is CLOCK (second chance), an approximation of LRU: a lookup
 * only sets the entry's `referenced` bit, in the cache line it already
 * touched, instead of moving it to the list's end (an unlink writes both
 * neighbours: two more cache misses inside the lock, a third of a random-seek
 * profile's cache time). Eviction takes entries from the list's head: a
 * pinned (refs > 1) or referenced entry goes to the end with its bit
 * cleared, the first other one is evicted. After two passes without an
 * evictable entry (everything pinned) it stops, over capacity; a pinned
 * entry released while the shard is over capacity is dropped then.
 * New entries start unreferenced at the end.
 *
 * Prefetch hints (lru_cache_prefetch) read a shard's slot array without its
 * lock, so: slot fields and `slots`/`nslots` are written with atomic
 * stores (under the lock) and read there with atomic loads; `nslots` is
 * published after `slots` and read before it, so a hint never indexes past
 * the array it reads; a replaced slot array is kept (on `retired`) until
 * the cache is destroyed, since a hint may still be reading it (arrays
 * only double, so the retired ones together are smaller than the live
 * one). A hint only ever prefetches the entry pointer it reads, never
 * dereferences it: the entry may be gone.
 *
 * The shard is chosen by the top bits of tdb_hash64(k1,k2), the home slot by
 * the low bits, so the two are independent.
 */
#include "cache/cache.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "util/checksum.h"
#include "util/coding.h"
#include "util/mutex.h"

#define CACHE_HASH_SEED 0x63616368655f7464ull /* "cache_td" */
#define INITIAL_SLOTS 32

/* What a lookup touches (key, value, refs, bits) comes first, within 40
 * bytes, so an entry embedded right after a 24-byte header on a 64-byte
 * boundary (sst_block_t) shares one cache line with that header. */
struct lru_handle {
    uint64_t k1, k2, hash;
    void *value;
    uint32_t refs;
    bool in_cache;
    bool referenced; /* looked up since it last passed the list's head */
    bool embedded;   /* lives inside value: freed by the deleter, not free() */
    size_t charge;
    struct lru_handle *next_dead; /* link of a list of entries to free */
    struct lru_handle *prev, *next; /* the list, while in_cache */
};
typedef struct lru_handle entry_t;

_Static_assert(sizeof(entry_t) <= LRU_HANDLE_SPACE, "LRU_HANDLE_SPACE too small");
_Static_assert(offsetof(entry_t, embedded) < 40, "hot entry fields past 40 bytes");

typedef struct slot {
    uint64_t hash;
    entry_t *e; /* NULL: empty */
} slot_t;

/* A slot array replaced by a bigger one, kept for lock-free hints. */
typedef struct retired {
    struct retired *next;
    slot_t *slots;
} retired_t;

typedef struct shard {
    pthread_mutex_t mu;
    slot_t *slots;
    size_t nslots;   /* power of two, >= 2 * entries */
    retired_t *retired;
    size_t entries;  /* entries in the table */
    size_t usage;    /* sum of charges in the table */
    size_t capacity;
    entry_t lru; /* sentinel */
    uint64_t hits, misses; /* under mu: no second cache line to bounce */
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

/* The entry with key (k1,k2) and hash h, or NULL. */
static entry_t *table_find(const shard_t *s, uint64_t k1, uint64_t k2, uint64_t h) {
    size_t mask = s->nslots - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        const slot_t *sl = &s->slots[i];
        if (!sl->e) return NULL;
        if (sl->hash == h && sl->e->k1 == k1 && sl->e->k2 == k2) return sl->e;
    }
}

/* Write slot i (atomic stores: hints read slots without the lock). */
static inline void slot_set(slot_t *slots, size_t i, uint64_t hash, entry_t *e) {
    __atomic_store_n(&slots[i].hash, hash, __ATOMIC_RELAXED);
    __atomic_store_n(&slots[i].e, e, __ATOMIC_RELAXED);
}

/* Put e (whose key is not in the table) into the first free slot of its run. */
static void slots_put(slot_t *slots, size_t nslots, entry_t *e) {
    size_t mask = nslots - 1, i = e->hash & mask;
    while (slots[i].e) i = (i + 1) & mask;
    slot_set(slots, i, e->hash, e);
}

/* Double the slot array; on allocation failure keep the current one
 * (table_insert keeps a slot empty). The old array is retired, not freed. */
static void table_grow(shard_t *s) {
    size_t n = s->nslots * 2;
    slot_t *ns = (slot_t *)calloc(n, sizeof(slot_t));
    retired_t *old = (retired_t *)malloc(sizeof *old);
    if (!ns || !old) {
        free(ns);
        free(old);
        return;
    }
    for (size_t i = 0; i < s->nslots; i++)
        if (s->slots[i].e) slots_put(ns, n, s->slots[i].e);
    old->slots = s->slots;
    old->next = s->retired;
    s->retired = old;
    __atomic_store_n(&s->slots, ns, __ATOMIC_RELEASE);
    __atomic_store_n(&s->nslots, n, __ATOMIC_RELEASE);
}

/* Add e (key not present); false if that would leave no empty slot (every
 * growth since the table was half full failed: out of memory), so probes
 * always end. */
static bool table_insert(shard_t *s, entry_t *e) {
    if (s->entries + 2 > s->nslots) return false;
    slots_put(s->slots, s->nslots, e);
    s->entries++;
    if (s->entries * 2 > s->nslots) table_grow(s);
    return true;
}

/* Remove e (present) and close the gap: later entries of the probe run that
 * may not live past the freed slot move back into it. */
static void table_remove(shard_t *s, entry_t *e) {
    size_t mask = s->nslots - 1, i = e->hash & mask;
    while (s->slots[i].e != e) i = (i + 1) & mask;
    for (size_t j = (i + 1) & mask; s->slots[j].e; j = (j + 1) & mask) {
        size_t home = s->slots[j].hash & mask;
        /* The entry at j may move to i iff its home is not in (i, j]. */
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            slot_set(s->slots, i, s->slots[j].hash, s->slots[j].e);
            i = j;
        }
    }
    slot_set(s->slots, i, 0, NULL);
    s->entries--;
}

/* Take e (already removed from the table) out of the cache: drop the
 * cache's reference; if that was the last, push e on *dead. */
static void detach(shard_t *s, entry_t *e, entry_t **dead) {
    e->in_cache = false;
    s->usage -= e->charge;
    lru_unlink(e);
    if (e->refs == 1) {
        e->refs = 0;
        e->next_dead = *dead;
        *dead = e;
    } else {
        e->refs--;
    }
}

/* Evict while s is over capacity (CLOCK, see the top). Every entry passes
 * the head at most twice: once to lose its bit, once to go. */
static void evict(shard_t *s, entry_t **dead) {
    size_t budget = 2 * s->entries + 1;
    while (s->usage > s->capacity && s->lru.next != &s->lru && budget-- > 0) {
        entry_t *e = s->lru.next;
        if (e->refs > 1 || e->referenced) {
            e->referenced = false;
            lru_unlink(e);
            lru_append(s, e);
            continue;
        }
        table_remove(s, e);
        detach(s, e, dead);
    }
}

/* Run the deleter on and free every entry of a dead list (no lock held). */
static void free_dead(lru_cache_t *c, entry_t *dead) {
    while (dead) {
        entry_t *next = dead->next_dead;
        bool embedded = dead->embedded; /* the deleter frees an embedded entry */
        if (c->deleter) c->deleter(dead->value, c->ctx);
        if (!embedded) free(dead);
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
        s->slots = (slot_t *)calloc(INITIAL_SLOTS, sizeof(slot_t));
        if (!s->slots || tdb_mutex_init_short(&s->mu) != 0) {
            free(s->slots);
            s->slots = NULL;
            for (int j = 0; j < i; j++) {
                pthread_mutex_destroy(&c->shards[j].mu);
                free(c->shards[j].slots);
            }
            goto fail;
        }
        s->nslots = INITIAL_SLOTS;
        s->capacity = shard_capacity(c, capacity, i);
        s->lru.next = s->lru.prev = &s->lru;
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
        for (size_t i = 0; i < s->nslots; i++) {
            entry_t *e = s->slots[i].e;
            if (!e) continue;
            /* refs > 1 means an unreleased handle: misuse; free anyway. */
            e->next_dead = dead;
            dead = e;
        }
        free_dead(c, dead);
        free(s->slots);
        while (s->retired) {
            retired_t *r = s->retired;
            s->retired = r->next;
            free(r->slots);
            free(r);
        }
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
    entry_t *e = table_find(s, k1, k2, h);
    if (e) {
        e->refs++;
        e->referenced = true;
        s->hits++;
    } else {
        s->misses++;
    }
    pthread_mutex_unlock(&s->mu);
    return e;
}

/* The hash a (k1,k2) lookup uses. */
uint64_t lru_cache_key_hash(uint64_t k1, uint64_t k2) { return key_hash(k1, k2); }

/* Lock-free prefetch hint (rules at the top). Stage 1 looks at the first
 * few slots of h's probe run for a matching hash. */
void lru_cache_prefetch(lru_cache_t *c, uint64_t h, int stage) {
    shard_t *s = shard_of(c, h);
    size_t mask = __atomic_load_n(&s->nslots, __ATOMIC_ACQUIRE) - 1;
    const slot_t *slots = __atomic_load_n(&s->slots, __ATOMIC_ACQUIRE);
    size_t i = h & mask;
    if (stage == 0) {
        __builtin_prefetch(&slots[i]);
        return;
    }
    for (int probe = 0; probe < 4; probe++, i = (i + 1) & mask) {
        entry_t *e = __atomic_load_n(&slots[i].e, __ATOMIC_RELAXED);
        if (!e) return;
        if (__atomic_load_n(&slots[i].hash, __ATOMIC_RELAXED) == h) {
            __builtin_prefetch(e);
            return;
        }
    }
}

/* Insert e (fresh memory for an entry) holding value under (k1,k2). */
static lru_handle_t *insert_entry(lru_cache_t *c, entry_t *e, bool embedded, uint64_t k1, uint64_t k2, void *value,
                                  size_t charge) {
    uint64_t h = key_hash(k1, k2);
    e->embedded = embedded;
    e->k1 = k1;
    e->k2 = k2;
    e->hash = h;
    e->value = value;
    e->charge = charge;
    e->prev = e->next = NULL;
    e->next_dead = NULL;
    e->referenced = false;
    shard_t *s = shard_of(c, h);
    entry_t *dead = NULL;
    pthread_mutex_lock(&s->mu);
    entry_t *old = table_find(s, k1, k2, h);
    if (old) {
        table_remove(s, old);
        detach(s, old, &dead);
    }
    if (s->capacity != 0 && table_insert(s, e)) {
        e->refs = 2;
        e->in_cache = true;
        s->usage += charge;
        lru_append(s, e);
        evict(s, &dead);
    } else {
        /* Caching disabled (or no memory for a bigger table): the entry
         * lives only as long as the handle. */
        e->refs = 1;
        e->in_cache = false;
    }
    pthread_mutex_unlock(&s->mu);
    free_dead(c, dead);
    return e;
}

/* Insert value under (k1,k2), replacing any entry with that key; returns it pinned. */
lru_handle_t *lru_cache_insert(lru_cache_t *c, uint64_t k1, uint64_t k2, void *value, size_t charge) {
    entry_t *e = (entry_t *)malloc(sizeof(*e));
    return e ? insert_entry(c, e, false, k1, k2, value, charge) : NULL;
}

/* Insert with the entry kept in `space`, inside value. */
lru_handle_t *lru_cache_insert_embedded(lru_cache_t *c, uint64_t k1, uint64_t k2, void *value, size_t charge,
                                        void *space) {
    return insert_entry(c, (entry_t *)space, true, k1, k2, value, charge);
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
        e->next_dead = NULL;
    } else if (e->refs == 1 && e->in_cache && (s->usage > s->capacity || s->capacity == 0)) {
        /* Over capacity only because of pinned entries: drop this one. */
        table_remove(s, e);
        detach(s, e, &dead);
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
    entry_t *e = table_find(s, k1, k2, h);
    if (e) {
        table_remove(s, e);
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
        /* Collect first: removal shifts entries between slots. */
        entry_t *hits = NULL;
        for (size_t j = 0; j < s->nslots; j++) {
            entry_t *e = s->slots[j].e;
            if (e && e->k1 == k1) {
                e->next_dead = hits;
                hits = e;
            }
        }
        while (hits) {
            entry_t *e = hits;
            hits = e->next_dead;
            table_remove(s, e);
            detach(s, e, &dead);
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
        pthread_mutex_lock(&s->mu);
        out->hits += s->hits;
        out->misses += s->misses;
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

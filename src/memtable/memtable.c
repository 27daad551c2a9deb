/*
 * memtable: arena-backed lock-free skip list of internal keys (invariants
 * in memtable.h).
 */
#include "memtable/memtable.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "memtable/arena.h"
#include "memtable/skiplist.h"
#include "util/checksum.h"
#include "util/coding.h"
#include "util/error.h"
#include "util/ikey.h"

/* Largest arena block; blocks start at ARENA_MIN_BLOCK and double up to
 * this, so the flush trigger overshoots by at most one block. */
#define MEMTABLE_BLOCK_SIZE ARENA_HUGE_USABLE /* blocks grow up to one huge page */

/* A node of the range-tombstone list: points at the skip-list entry. */
typedef struct rd_node {
    struct rd_node *next; /* older node; immutable once published */
    const char *entry;
} rd_node_t;

/* A node of the point index (see memtable.h): the newest point entry of
 * one user key. hash and the key never change; entry only moves to a
 * newer version (higher sequence). */
typedef struct mt_hnode {
    struct mt_hnode *next; /* the bucket's older node; immutable once published */
    _Atomic(const char *) entry;
    uint64_t hash;
} mt_hnode_t;

/* A point-index bucket: its chain, and a filter of the keys on it (two of
 * the 64 bits per key, from the hash's high bits: mt_filter_bits), so a
 * key with no entry is told in one cache line, without walking a chain of
 * cold arena nodes. A chain averages a few nodes in a full memtable, and
 * an insert of a new key asked for it three times (the engine's duplicate
 * check, the version link, the indexing). A key's bits are set before its
 * node is pushed, and bits are never cleared. */
typedef struct mt_bucket {
    _Atomic(mt_hnode_t *) head;
    _Atomic uint64_t filter;
} mt_bucket_t;

/* Point-index buckets: a power of two fixed at creation, one per
 * MT_INDEX_BYTES_PER_BUCKET of the memtable's capacity within
 * [MT_INDEX_MIN_BUCKETS, MT_INDEX_MAX_BUCKETS]: 16 bytes per 256 of
 * capacity (6%), 2 MiB at most; virtual memory until a bucket's page is
 * first written. */
#define MT_INDEX_BYTES_PER_BUCKET 256u
#define MT_INDEX_MIN_BUCKETS ((size_t)1 << 10)
#define MT_INDEX_MAX_BUCKETS ((size_t)1 << 17)
/* Versions stepped over from the indexed (newest) one before a lookup
 * at an older snapshot falls back to a skip-list descent. */
#define MT_INDEX_MAX_STEPS 16
/* Keys ahead whose buckets a sorted add prefetches. */
#define MT_INDEX_PREFETCH 8

struct memtable {
    _Atomic int refs;
    _Atomic uint64_t entries;
    _Atomic uint64_t deletes;
    _Atomic uint64_t range_dels;
    _Atomic(rd_node_t *) rd_head; /* newest range tombstone */
    arena_t *arena;
    skiplist_t *list;
    memtable_hint_t serial; /* memtable_add_serial's hint (callers serialised) */
    uint64_t id;            /* unique in the process (memtable_id) */
    mt_bucket_t *index;           /* index_mask + 1 buckets (NULL: no index, lookups descend) */
    size_t index_mask;
    _Atomic bool index_ok;        /* every point entry's key is indexed (false after an OOM) */
};

static _Atomic uint64_t next_memtable_id = 1;

/* Whether m's point index is the one-huge-page kind (mt_index_map_huge)
 * rather than calloc'd: decided by its size alone. */
static inline bool mt_index_huge(const memtable_t *m) {
    return (m->index_mask + 1) * sizeof(mt_bucket_t) == ARENA_HUGE_BLOCK;
}

/* The largest point index, one huge page, mapped writable up front. A full
 * memtable touches every page of its index, and a bucket is read before it
 * is first written (lookups of new keys), so left to faults each page was
 * mapped twice: the zero page on the read, then a copy on the write, whose
 * TLB shootdown interrupts the other cores (mariadbd, TPC-C schema build:
 * 3.9% of the server's CPU in such faults). */
static mt_bucket_t *mt_index_map_huge(void) {
    char *p = (char *)arena_map_huge();
    if (!p) return NULL;
#ifdef MADV_POPULATE_WRITE
    if (madvise(p, ARENA_HUGE_BLOCK, MADV_POPULATE_WRITE) == 0) return (mt_bucket_t *)p;
#endif
    memset(p, 0, ARENA_HUGE_BLOCK); /* the same, by write faults */
    return (mt_bucket_t *)p;
}

/* Create an empty memtable with one reference. */
memtable_t *memtable_create(void) { return memtable_create_sized(MEMTABLE_DEFAULT_CAPACITY); }

memtable_t *memtable_create_sized(size_t capacity) {
    memtable_t *m = (memtable_t *)malloc(sizeof *m);
    if (!m) return NULL;
    m->arena = arena_create(MEMTABLE_BLOCK_SIZE);
    m->list = m->arena ? skiplist_create(m->arena) : NULL;
    if (!m->list) {
        arena_destroy(m->arena);
        free(m);
        return NULL;
    }
    /* calloc: zero pages mapped on first write, so an idle memtable's
     * index costs address space only. Without it lookups descend. */
    size_t buckets = MT_INDEX_MIN_BUCKETS;
    while (buckets < MT_INDEX_MAX_BUCKETS && buckets * MT_INDEX_BYTES_PER_BUCKET < capacity) buckets <<= 1;
    m->index_mask = buckets - 1;
    m->index = mt_index_huge(m) ? mt_index_map_huge() : (mt_bucket_t *)calloc(buckets, sizeof *m->index);
    atomic_init(&m->index_ok, m->index != NULL);
    atomic_init(&m->refs, 1);
    atomic_init(&m->entries, 0);
    atomic_init(&m->deletes, 0);
    atomic_init(&m->range_dels, 0);
    atomic_init(&m->rd_head, NULL);
    memset(&m->serial, 0, sizeof m->serial); /* climb = 0: unrelated keys are common */
    m->id = atomic_fetch_add_explicit(&next_memtable_id, 1, memory_order_relaxed);
    return m;
}

uint64_t memtable_id(const memtable_t *m) { return m->id; }

/* Take a reference. */
void memtable_ref(memtable_t *m) { atomic_fetch_add_explicit(&m->refs, 1, memory_order_relaxed); }

/* Drop a reference; the last one frees everything. */
void memtable_unref(memtable_t *m) {
    if (!m) return;
    /* acq_rel: the freeing thread must see every other holder's accesses
     * as finished (release by them, acquire by it). */
    if (atomic_fetch_sub_explicit(&m->refs, 1, memory_order_acq_rel) != 1) return;
    arena_destroy(m->arena);
    if (mt_index_huge(m)) arena_unmap_huge(m->index);
    else free(m->index);
    free(m);
}

/* Encode the entry once into a fresh node, then link it. */
int memtable_add(memtable_t *m, uint64_t seq, unsigned type, slice_t user_key, slice_t value) {
    return memtable_add_hint(m, NULL, seq, type, user_key, value);
}

/* A fresh hint for keys in ascending order (climbs the splice). */
void memtable_hint_init(memtable_hint_t *hint) {
    memset(hint, 0, sizeof *hint);
    hint->splice.climb = 1;
}

/* memtable_add through the memtable's own (serialised) hint. */
int memtable_add_serial(memtable_t *m, uint64_t seq, unsigned type, slice_t user_key, slice_t value) {
    return memtable_add_hint(m, &m->serial, seq, type, user_key, value);
}

/* Check and encode one entry into a fresh, unlinked node: *e, *height; a
 * range tombstone also gets its list node (*rd, else NULL). */
static int mt_build(memtable_t *m, uint64_t seq, unsigned type, slice_t user_key, slice_t value, char **e_out,
                    int *height, rd_node_t **rd) {
    if (type >= 0x80 || seq > SEQ_MAX)
        return tdb_err(TDB_ERR_INVALID_ARG, "memtable add: bad type %u or seq %llu", type,
                       (unsigned long long)seq);
    if (user_key.size > UINT32_MAX - IKEY_TRAILER || value.size > UINT32_MAX)
        return tdb_err(TDB_ERR_TOO_LARGE, "memtable add: key %zu / value %zu bytes", user_key.size,
                       value.size);
    uint32_t klen = (uint32_t)(user_key.size + IKEY_TRAILER);
    uint32_t vlen = (uint32_t)value.size;
    size_t size = (size_t)varint_length(klen) + klen + (size_t)varint_length(vlen) + vlen;
    char *e = skiplist_alloc(m->list, size, height);
    if (!e) return tdb_err(TDB_ERR_NOMEM, "memtable add: arena allocation of %zu bytes", size);

    char *p = enc_varint32(e, klen);
    if (user_key.size) memcpy(p, user_key.data, user_key.size);
    enc_fixed64(p + user_key.size, ikey_pack(seq, type));
    p = enc_varint32(p + klen, vlen);
    if (vlen) memcpy(p, value.data, vlen);

    *rd = NULL;
    if (type == KT_RANGE_DELETE) { /* allocate before linking: no half-added tombstone */
        *rd = (rd_node_t *)arena_alloc(m->arena, sizeof **rd);
        if (!*rd) return tdb_err(TDB_ERR_NOMEM, "memtable add: range tombstone node");
        (*rd)->entry = e;
    }
    *e_out = e;
    return TDB_OK;
}

static uint64_t mt_hash(slice_t user_key) { return tdb_hash64(user_key.data, user_key.size, 0x6d74); }

/* The bucket filter's bits for a key of hash h (the bucket is chosen by
 * h's low bits). */
static inline uint64_t mt_filter_bits(uint64_t h) { return (1ull << ((h >> 52) & 63)) | (1ull << ((h >> 58) & 63)); }

/* The index node of user_key (hash h) in bucket b, or NULL; *head (if
 * not NULL) gets the chain's head the search started from. The head is
 * read first, then the filter: a node on that chain was pushed after its
 * key's bits were set (mt_index_add), so the filter shows them, and a
 * filter without them means the chain holds no node of the key. The walk
 * over the chain's cold nodes happens only when it may. */
static mt_hnode_t *mt_bucket_find(mt_bucket_t *b, uint64_t h, slice_t user_key, mt_hnode_t **head) {
    mt_hnode_t *n = atomic_load_explicit(&b->head, memory_order_acquire);
    if (head) *head = n;
    uint64_t bits = mt_filter_bits(h);
    if ((atomic_load_explicit(&b->filter, memory_order_acquire) & bits) != bits) return NULL;
    for (; n; n = n->next) {
        if (n->hash != h) continue;
        const char *e = atomic_load_explicit(&n->entry, memory_order_acquire);
        if (slice_equal(ikey_user(skiplist_entry_key(e, NULL)), user_key)) return n;
    }
    return NULL;
}

/* Move index node n to e (sequence seq) unless a newer version is indexed
 * already: concurrent versions of a key race here. */
static void mt_index_advance(mt_hnode_t *n, const char *e, uint64_t seq) {
    const char *cur = atomic_load_explicit(&n->entry, memory_order_acquire);
    while (ikey_seq(skiplist_entry_key(cur, NULL)) < seq &&
           !atomic_compare_exchange_weak_explicit(&n->entry, &cur, e, memory_order_release, memory_order_acquire)) {
    }
}

/* After linking e: make a point entry its key's indexed entry unless a
 * newer version is indexed already (range tombstones are not indexed); h
 * is mt_hash(user_key). On OOM the key is left out of the index and the
 * memtable stops using it (lookups descend), and later adds skip it too. */
static void mt_index_add(memtable_t *m, const char *e, unsigned type, uint64_t seq, slice_t user_key, uint64_t h) {
    if (type == KT_RANGE_DELETE || !atomic_load_explicit(&m->index_ok, memory_order_relaxed)) return;
    mt_bucket_t *b = &m->index[h & m->index_mask];
    mt_hnode_t *fresh = NULL;
    for (;;) {
        mt_hnode_t *head;
        mt_hnode_t *n = mt_bucket_find(b, h, user_key, &head);
        if (n) {
            mt_index_advance(n, e, seq);
            return; /* a fresh node left over from a lost race stays unused in the arena */
        }
        if (!fresh) {
            fresh = (mt_hnode_t *)arena_alloc(m->arena, sizeof *fresh);
            if (!fresh) { /* readers must not trust an index that misses a key */
                atomic_store_explicit(&m->index_ok, false, memory_order_release);
                return;
            }
            fresh->hash = h;
            atomic_init(&fresh->entry, e);
            atomic_fetch_or_explicit(&b->filter, mt_filter_bits(h), memory_order_release);
        }
        fresh->next = head;
        if (atomic_compare_exchange_weak_explicit(&b->head, &head, fresh, memory_order_release, memory_order_relaxed))
            return;
    }
}

/* Link a newer version of an indexed key without a descent: just before
 * the key's indexed (newest) entry, from that node's predecessor hint
 * (skiplist_insert_before), then index it (h: mt_hash(user_key), which
 * the caller keeps for mt_index_add otherwise). False, nothing linked, when the
 * key is not indexed, the indexed version is not older, or the node is
 * taller than one level (three in four are not): the caller descends. */
static bool mt_link_version(memtable_t *m, char *e, int height, unsigned type, uint64_t seq, slice_t user_key,
                            uint64_t h) {
    if (height != 1 || type == KT_RANGE_DELETE || !atomic_load_explicit(&m->index_ok, memory_order_relaxed))
        return false;
    mt_hnode_t *n = mt_bucket_find(&m->index[h & m->index_mask], h, user_key, NULL);
    if (!n) return false; /* a new key */
    const char *cur = atomic_load_explicit(&n->entry, memory_order_acquire);
    if (ikey_seq(skiplist_entry_key(cur, NULL)) >= seq || !skiplist_insert_before(m->list, e, height, cur))
        return false;
    mt_index_advance(n, e, seq);
    return true;
}

/* After linking: publish a range tombstone's list node, count the entry. */
static void mt_account(memtable_t *m, unsigned type, rd_node_t *node) {
    if (node) {
        rd_node_t *head = atomic_load_explicit(&m->rd_head, memory_order_relaxed);
        do {
            node->next = head;
        } while (!atomic_compare_exchange_weak_explicit(&m->rd_head, &head, node, memory_order_release,
                                                        memory_order_relaxed));
        atomic_fetch_add_explicit(&m->range_dels, 1, memory_order_relaxed);
    }
    atomic_fetch_add_explicit(&m->entries, 1, memory_order_relaxed);
    if (type == KT_DELETE || type == KT_SINGLE_DELETE)
        atomic_fetch_add_explicit(&m->deletes, 1, memory_order_relaxed);
}

/* memtable_add through a splice (NULL: a full descent). */
int memtable_add_hint(memtable_t *m, memtable_hint_t *hint, uint64_t seq, unsigned type, slice_t user_key,
                      slice_t value) {
    char *e;
    int height;
    rd_node_t *node;
    TDB_RET(mt_build(m, seq, type, user_key, value, &e, &height, &node));
    uint64_t h = mt_hash(user_key);
    if (!mt_link_version(m, e, height, type, seq, user_key, h)) {
        if (hint) skiplist_insert_splice(m->list, e, height, &hint->splice);
        else skiplist_insert(m->list, e, height);
        mt_index_add(m, e, type, seq, user_key, h);
    }
    mt_account(m, type, node);
    return TDB_OK;
}

int memtable_add_sorted(memtable_t *m, const memtable_item_t *items, size_t n) {
    if (n == 0) return TDB_OK;
    char **es = (char **)malloc(n * (sizeof(uint64_t) + 2 * sizeof(char *) + sizeof(rd_node_t *) + 2 * sizeof(int)));
    if (!es) { /* no memory for the arrays: one at a time */
        memtable_hint_t hint;
        memtable_hint_init(&hint);
        for (size_t i = 0; i < n; i++) {
            TDB_RET(memtable_add_hint(m, &hint, items[i].seq, items[i].type, items[i].key, items[i].value));
        }
        return TDB_OK;
    }
    rd_node_t **rds = (rd_node_t **)(es + n);
    char **lane_es = (char **)(rds + n); /* the entries left for the lanes */
    uint64_t *khash = (uint64_t *)(lane_es + n); /* mt_hash of each key */
    int *hs = (int *)(khash + n);
    int *lane_hs = hs + n;
    size_t built = 0; /* on failure, the entries before the failed one are linked */
    int rc = TDB_OK;
    while (built < n && (rc = mt_build(m, items[built].seq, items[built].type, items[built].key, items[built].value,
                                       &es[built], &hs[built], &rds[built])) == TDB_OK)
        built++;
    /* New versions of indexed keys link without a descent; the rest go in
     * as a sorted run (es[i] NULL: linked and indexed already). */
    size_t nl = 0;
    for (size_t i = 0; i < built; i++) khash[i] = mt_hash(items[i].key);
    for (size_t i = 0; i < built; i++) {
        /* Each key's bucket is a random slot of an array of up to 2 MiB, so
         * cold: fetch a few keys ahead. */
        if (m->index && i + MT_INDEX_PREFETCH < built)
            __builtin_prefetch(&m->index[khash[i + MT_INDEX_PREFETCH] & m->index_mask]);
        if (mt_link_version(m, es[i], hs[i], items[i].type, items[i].seq, items[i].key, khash[i])) {
            es[i] = NULL;
        } else {
            lane_es[nl] = es[i];
            lane_hs[nl++] = hs[i];
        }
    }
    skiplist_insert_sorted(m->list, lane_es, lane_hs, nl);
    for (size_t i = 0; i < built; i++) {
        if (es[i]) mt_index_add(m, es[i], items[i].type, items[i].seq, items[i].key, khash[i]);
        mt_account(m, items[i].type, rds[i]);
    }
    free(es);
    return rc;
}

/* The point index's entry for user_key, then forward to the newest
 * version <= snap_seq; a descent to (user_key, snap_seq, KT_SEEK) when
 * there is no index or many newer versions to step over. */
int memtable_get(memtable_t *m, slice_t user_key, uint64_t snap_seq, unsigned *type, uint64_t *seq,
                 slice_t *value) {
    if (snap_seq > SEQ_MAX) snap_seq = SEQ_MAX;
    /* An empty memtable (the active one just after a flush) has nothing to
     * find: no hash, and no probe of a cold index bucket. An entry is
     * visible only once linked at level 0, so this is the descent's own
     * first step. */
    if (!skiplist_first(m->list)) return 0;
    const char *e = NULL, *rest;
    slice_t k;
    if (atomic_load_explicit(&m->index_ok, memory_order_acquire)) {
        uint64_t h = mt_hash(user_key);
        mt_hnode_t *n = mt_bucket_find(&m->index[h & m->index_mask], h, user_key, NULL);
        if (!n) return 0; /* no point entry of the key (see memtable.h, point index) */
        e = atomic_load_explicit(&n->entry, memory_order_acquire);
        for (int steps = 0; e; e = skiplist_next(e)) { /* newer versions, range tombstones */
            k = skiplist_entry_key(e, &rest);
            if (!slice_equal(ikey_user(k), user_key)) return 0;
            if (ikey_seq(k) <= snap_seq && ikey_type(k) != KT_RANGE_DELETE) goto found;
            if (++steps == MT_INDEX_MAX_STEPS) break; /* descend instead */
        }
        if (!e) return 0;
    }
    e = skiplist_seek(m->list, user_key, ikey_pack(snap_seq, KT_SEEK));
    for (;; e = skiplist_next(e)) { /* step over range tombstones starting at user_key */
        if (!e) return 0;
        k = skiplist_entry_key(e, &rest);
        if (!slice_equal(ikey_user(k), user_key)) return 0;
        if (ikey_type(k) != KT_RANGE_DELETE) break;
    }
found:;
    uint64_t t = ikey_trailer(k);
    if (type) *type = (unsigned)(t & 0xff);
    if (seq) *seq = t >> 8;
    if (value) *value = skiplist_entry_value(rest);
    return 1;
}

/* Arena bytes reserved. */
size_t memtable_memory_usage(const memtable_t *m) { return arena_memory_usage(m->arena); }

/* The skip list itself (white-box tests). */
const struct skiplist *memtable_skiplist(const memtable_t *m) { return m->list; }

/* Entries added so far. */
uint64_t memtable_num_entries(const memtable_t *m) {
    return atomic_load_explicit(&((memtable_t *)(uintptr_t)m)->entries, memory_order_relaxed);
}

/* Approximate entries in a user-key range. */
uint64_t memtable_approx_entries(const memtable_t *m, const slice_t *lo, const slice_t *hi) {
    return skiplist_approx_count(m->list, lo, hi);
}

/* Deletion entries added so far. */
uint64_t memtable_num_deletes(const memtable_t *m) {
    return atomic_load_explicit(&((memtable_t *)(uintptr_t)m)->deletes, memory_order_relaxed);
}

/* Range tombstones added so far. */
uint64_t memtable_num_range_deletes(const memtable_t *m) {
    return atomic_load_explicit(&((memtable_t *)(uintptr_t)m)->range_dels, memory_order_relaxed);
}

/* Decode a tombstone entry into start, end and seq. */
static void rd_decode(const char *e, slice_t *start, slice_t *end, uint64_t *seq) {
    const char *rest;
    slice_t k = skiplist_entry_key(e, &rest);
    *start = ikey_user(k);
    *seq = ikey_seq(k);
    *end = skiplist_entry_value(rest);
}

/* Walk the tombstone list for the newest cover of user_key. */
uint64_t memtable_range_del_seq(memtable_t *m, slice_t user_key, uint64_t snap_seq) {
    uint64_t best = 0;
    for (rd_node_t *n = atomic_load_explicit(&m->rd_head, memory_order_acquire); n; n = n->next) {
        slice_t s, e;
        uint64_t seq;
        rd_decode(n->entry, &s, &e, &seq);
        if (seq <= snap_seq && seq > best && slice_compare(s, user_key) <= 0 && slice_compare(user_key, e) < 0)
            best = seq;
    }
    return best;
}

/* Visit every range tombstone. */
int memtable_range_dels(memtable_t *m, int (*fn)(void *ctx, slice_t start, slice_t end, uint64_t seq),
                        void *ctx) {
    for (rd_node_t *n = atomic_load_explicit(&m->rd_head, memory_order_acquire); n; n = n->next) {
        slice_t s, e;
        uint64_t seq;
        rd_decode(n->entry, &s, &e, &seq);
        TDB_RET(fn(ctx, s, e, seq));
    }
    return TDB_OK;
}

/* ---------------------------------------------------------------------- */
/* Iterator                                                                */
/* ---------------------------------------------------------------------- */

typedef struct mt_iter {
    iter_t base;
    memtable_t *m;
    const char *node; /* current entry or NULL */
    slice_t key, value;
} mt_iter_t;

/* Move to entry e (or invalid if NULL), decoding key and value once. The
 * nodes a scan may visit next are prefetched: the following node, its link
 * and whole entry (sized like e's), which next() visits, and which a scan
 * steps onto even when it is an older version of e's key (to find it the
 * same key); and, when e heads a run of older versions, the run's end,
 * where next_user_key then jumps. A scan's nodes are scattered over the
 * arena and mostly cold, and the caller's work on this entry (a row handed
 * to the SQL layer) hides the fetch. */
static void mt_iter_set(mt_iter_t *it, const char *e) {
    it->node = e;
    if (e) {
        const char *rest;
        it->key = skiplist_entry_key(e, &rest);
        it->value = skiplist_entry_value(rest);
        const char *end = skiplist_run_end(e);
        const char *nx = skiplist_next(e);
        if (nx) skiplist_prefetch(nx, (size_t)(it->value.data + it->value.size - e));
        if (end != e) skiplist_prefetch(end, 1); /* next_user_key reads its link */
    }
}

/* Valid while on an entry. */
static int mt_iter_valid(const iter_t *it) { return ((const mt_iter_t *)it)->node != NULL; }

/* First entry. */
static void mt_iter_seek_to_first(iter_t *it) {
    mt_iter_t *mi = (mt_iter_t *)it;
    mt_iter_set(mi, skiplist_first(mi->m->list));
}

/* Last entry. */
static void mt_iter_seek_to_last(iter_t *it) {
    mt_iter_t *mi = (mt_iter_t *)it;
    mt_iter_set(mi, skiplist_last(mi->m->list));
}

/* The first entry of user_key from the point index, without a descent:
 * its indexed (newest) point entry. A version newer than that one is still
 * being added, its sequence unpublished, so no reader can see it (see
 * memtable.h, point index); a range tombstone starting at the key would
 * sort before it, so a memtable holding any is not answered here. NULL:
 * the key has no point entry, or the index cannot say. */
static const char *mt_index_first(memtable_t *m, slice_t user_key) {
    if (!atomic_load_explicit(&m->index_ok, memory_order_acquire) ||
        atomic_load_explicit(&m->range_dels, memory_order_acquire))
        return NULL;
    uint64_t h = mt_hash(user_key);
    mt_hnode_t *n = mt_bucket_find(&m->index[h & m->index_mask], h, user_key, NULL);
    return n ? atomic_load_explicit(&n->entry, memory_order_acquire) : NULL;
}

/* First entry >= t. A target too short to be an internal key is taken as a
 * bare user key (before all of its versions). A target before every
 * version of a key (an iterator's seek) that has an entry here starts at
 * the index's entry of the key; otherwise a descent. */
static void mt_iter_seek(iter_t *it, slice_t t) {
    mt_iter_t *mi = (mt_iter_t *)it;
    const char *e;
    if (ikey_valid(t) && ikey_trailer(t) == ikey_pack(SEQ_MAX, KT_SEEK) && (e = mt_index_first(mi->m, ikey_user(t))))
        mt_iter_set(mi, e);
    else if (ikey_valid(t)) mt_iter_set(mi, skiplist_seek(mi->m->list, ikey_user(t), ikey_trailer(t)));
    else mt_iter_set(mi, skiplist_seek(mi->m->list, t, UINT64_MAX));
}

/* Nodes visited from the current position before seek_forward descends
 * from the head instead. */
#define MT_FORWARD_STEPS 4

/* seek(t) from a position < t: walk on from where the iterator is, jumping
 * over each user key's run of versions (skiplist_run_end), which is what a
 * scan skipping a hot key's older versions asks for; a target further away
 * than MT_FORWARD_STEPS runs is sought from the head. */
static void mt_iter_seek_forward(iter_t *it, slice_t t) {
    mt_iter_t *mi = (mt_iter_t *)it;
    if (!mi->node || !ikey_valid(t)) {
        mt_iter_seek(it, t);
        return;
    }
    const char *n = mi->node; /* < t */
    for (int step = 0; step < MT_FORWARD_STEPS; step++) {
        const char *end = skiplist_run_end(n);
        if (end != n && ikey_compare(skiplist_entry_key(end, NULL), t) < 0) n = end;
        const char *nx = skiplist_next(n);
        if (!nx || ikey_compare(skiplist_entry_key(nx, NULL), t) >= 0) {
            mt_iter_set(mi, nx);
            return;
        }
        n = nx;
    }
    mt_iter_seek(it, t);
}

/* Past the current user key's versions: jump to its run's end
 * (skiplist_run_end), step on, and again while a later version of the key
 * follows (a run end that stopped short). */
static void mt_iter_next_user_key(iter_t *it, slice_t user) {
    mt_iter_t *mi = (mt_iter_t *)it;
    if (!mi->node) return;
    const char *n = mi->node;
    do {
        n = skiplist_next(skiplist_run_end(n));
    } while (n && slice_equal(ikey_user(skiplist_entry_key(n, NULL)), user));
    mt_iter_set(mi, n);
}

/* Following entry (level-0 link). */
static void mt_iter_next(iter_t *it) {
    mt_iter_t *mi = (mt_iter_t *)it;
    if (mi->node) mt_iter_set(mi, skiplist_next(mi->node));
}

/* Preceding entry: from the current node's predecessor hint. */
static void mt_iter_prev(iter_t *it) {
    mt_iter_t *mi = (mt_iter_t *)it;
    if (mi->node) mt_iter_set(mi, skiplist_prev(mi->m->list, mi->node));
}

/* Internal key of the current entry. */
static slice_t mt_iter_key(const iter_t *it) { return ((const mt_iter_t *)it)->key; }

/* Value of the current entry. */
static slice_t mt_iter_value(const iter_t *it) { return ((const mt_iter_t *)it)->value; }

/* Memtable iterators cannot fail. */
static int mt_iter_status(const iter_t *it) { (void)it; return TDB_OK; }

/* Drop the iterator's reference. */
static void mt_iter_destroy(iter_t *it) {
    mt_iter_t *mi = (mt_iter_t *)it;
    memtable_unref(mi->m);
    free(mi);
}

static const iter_ops_t g_mt_iter_ops = {
    mt_iter_valid, mt_iter_seek_to_first, mt_iter_seek_to_last, mt_iter_seek,   mt_iter_next,
    mt_iter_prev,  mt_iter_key,           mt_iter_value,        mt_iter_status, mt_iter_destroy,
    NULL, /* seek_prepare */
    mt_iter_seek_forward,
    mt_iter_next_user_key,
    NULL, /* seek_for_prev: seek and step back */
};

/* New iterator holding its own reference on m. */
iter_t *memtable_iter(memtable_t *m) {
    mt_iter_t *it = (mt_iter_t *)malloc(sizeof *it);
    if (!it) {
        tdb_err(TDB_ERR_NOMEM, "memtable iterator");
        return iter_empty(TDB_ERR_NOMEM);
    }
    it->base.ops = &g_mt_iter_ops;
    memtable_ref(m);
    it->m = m;
    it->node = NULL;
    it->key = it->value = slice_make("", 0);
    return &it->base;
}

/*
 * memtable: the in-memory write buffer of an LSM tree. Entries are internal
 * keys (util/ikey.h) with their values, kept sorted in a lock-free skip list
 * (memtable/skiplist.h) whose nodes and entries live in an arena
 * (memtable/arena.h).
 *
 * Invariants
 *  - Append-only: an entry, once added, is never changed or removed until
 *    the memtable is freed. Each entry is encoded once in the arena as
 *        varint32 ikey_len | ikey | varint32 value_len | value
 *    directly after its node's links; an add allocates nothing else but,
 *    for the first point entry of a user key, its point-index node.
 *  - (seq, user_key) pairs are unique (the caller guarantees it), so no two
 *    entries have equal internal keys.
 *  - Range tombstones (KT_RANGE_DELETE: user_key = start, value = end,
 *    deleting [start, end)) are entries of the skip list like any other, so
 *    iterators return them in internal-key order (flush writes them out from
 *    that stream; the db iterator skips them). memtable_get never returns
 *    one. Each is also linked into a separate append-only list (a lock-free
 *    stack of arena nodes, pushed with a release CAS, read with acquire
 *    loads), so they can be enumerated and checked without scanning points.
 *
 *  - Point index: a hash of user keys (fixed bucket array, chains of
 *    arena nodes pushed with a release CAS) to the newest point entry
 *    (not range tombstone) of each key. An add links its entry into the
 *    skip list first, then indexes it (a node's entry only ever moves to a
 *    higher sequence, by CAS), all before memtable_add returns: an entry
 *    whose sequence a reader can see (published after the add returned)
 *    or that a later commit's conflict check must see (run after earlier
 *    adds returned) is indexed, so memtable_get finds its key with one
 *    hash probe instead of a descent, and a key with no entry with no
 *    descent at all; an iterator's seek to a key's first version starts
 *    at its indexed entry (unless the memtable holds range tombstones,
 *    which sort before a key's points). Each bucket carries a filter of
 *    its keys' hashes (64 bits, two per key, set before the key's node is
 *    pushed, never cleared): a key with no entry is told from the bucket
 *    alone, without walking its chain of cold nodes. An arena OOM while
 *    indexing turns the index off for good (lookups and seeks descend).
 *  - A newer version of an indexed key whose node has one level (three in
 *    four) is linked without a descent: just before the indexed entry,
 *    from that node's predecessor hint (skiplist_insert_before). Any other
 *    add descends.
 *
 * Thread-safety
 *  - memtable_add (and _hint with a hint per thread) may be called by many
 *    threads at once (memtable_add_serial by one at a time), concurrently with
 *    any number of readers (memtable_get, iterators, the statistics). No
 *    locks: inserts CAS into the skip list, readers use acquire loads.
 *  - A reader sees each concurrent add either completely or not at all; it
 *    is the caller's job (sequence numbers / snapshots) to hide adds that
 *    are not yet committed. An iterator sees entries present when it was
 *    created plus some subset of later ones, always in order.
 *  - Counters (entries, deletes, memory usage) are updated with relaxed
 *    atomics: exact once writers are quiescent, approximate meanwhile.
 *  - An iterator is used by one thread at a time (util/iter.h).
 *
 * Lifetime
 *  - Reference counted: memtable_create() returns one reference;
 *    memtable_ref/unref are thread-safe; the last unref frees the arena and
 *    with it every entry. Each iterator holds its own reference.
 *  - Slices returned by memtable_get and by iterators point into the arena:
 *    valid while the caller holds a reference (for an iterator: until it is
 *    destroyed; iterator key/value slices until it moves, per util/iter.h).
 *  - No add may be running or start when the last reference is dropped.
 */
#ifndef TDB_MEMTABLE_MEMTABLE_H
#define TDB_MEMTABLE_MEMTABLE_H

#include <stddef.h>
#include <stdint.h>

#include "memtable/skiplist.h"
#include "util/iter.h"
#include "util/slice.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct memtable memtable_t;

/* The capacity memtable_create assumes: a column family's default write
 * buffer in the MariaDB engine. */
#define MEMTABLE_DEFAULT_CAPACITY ((size_t)4 << 20)

/* A new empty memtable with one reference; NULL on OOM. capacity is the
 * size it is expected to reach (its write buffer): it sizes the point
 * index (up to 2 MiB, about 6% of capacity). memtable_create assumes
 * MEMTABLE_DEFAULT_CAPACITY. */
memtable_t *memtable_create_sized(size_t capacity);
memtable_t *memtable_create(void);
void memtable_ref(memtable_t *m);
/* Drop a reference; frees the memtable at zero. NULL is ignored. */
void memtable_unref(memtable_t *m);
/* A number no other memtable of this process has (never 0): tells whether
 * a hint kept across calls was made on this memtable. */
uint64_t memtable_id(const memtable_t *m);

/* Insert an entry (thread-safe). type is a KT_* value (< 0x80: else
 * TDB_ERR_INVALID_ARG); seq <= SEQ_MAX (else TDB_ERR_INVALID_ARG).
 * TDB_ERR_NOMEM if the arena cannot grow. */
int memtable_add(memtable_t *m, uint64_t seq, unsigned type, slice_t user_key, slice_t value);

/* An insert hint for adds in ascending internal-key order (a sorted
 * batch): the skip-list splice of the previous add made through it
 * (memtable/skiplist.h), so an add re-descends only the levels that no
 * longer bracket its key. Owned by one thread; memtable_hint_init it
 * before first use and again before using it after the memtable it was
 * used on may have been freed (it points into that memtable). Any order
 * is correct, only slower. */
typedef struct memtable_hint {
    skiplist_splice_t splice;
} memtable_hint_t;

void memtable_hint_init(memtable_hint_t *hint);

/* memtable_add through a hint (NULL: same as memtable_add). */
int memtable_add_hint(memtable_t *m, memtable_hint_t *hint, uint64_t seq, unsigned type, slice_t user_key,
                      slice_t value);

/* One entry of memtable_add_sorted. */
typedef struct memtable_item {
    uint64_t seq;
    unsigned type;
    slice_t key;
    slice_t value;
} memtable_item_t;

/* Insert n entries whose internal keys (key, seq) are strictly ascending,
 * e.g. a sorted batch (thread-safe like memtable_add; the lanes of
 * skiplist_insert_sorted overlap their cache misses). On an error at item
 * i, items before it are in the memtable and the error is returned, as with
 * n memtable_add calls that stop at the first failure. */
int memtable_add_sorted(memtable_t *m, const memtable_item_t *items, size_t n);

/* memtable_add through the memtable's own hint, which remembers where the
 * previous memtable_add_serial landed: a key just above it (sequential
 * keys) is linked without a descent; any other key costs at most two
 * extra comparisons. Calls of memtable_add_serial on one memtable must not
 * overlap (the caller serialises them, with happens-before between them);
 * any other add may run concurrently with them. */
int memtable_add_serial(memtable_t *m, uint64_t seq, unsigned type, slice_t user_key, slice_t value);

/* Newest point entry for user_key with seq <= snap_seq (values above SEQ_MAX
 * are treated as SEQ_MAX): returns 1 and fills *type, *seq and *value
 * (pointing into the memtable, valid while the caller holds a reference), or
 * 0 if there is none. Deletions are returned like any entry (by their type);
 * range tombstones are not (see memtable_range_del_seq). One point-index
 * probe, then a step from the newest version to the one at snap_seq (a
 * skip-list descent past MT_INDEX_MAX_STEPS newer versions). */
int memtable_get(memtable_t *m, slice_t user_key, uint64_t snap_seq, unsigned *type, uint64_t *seq,
                 slice_t *value);

/* Bytes reserved by the arena: the flush trigger. The point index's bucket
 * array (up to 2 MiB, see memtable_create_sized) is not counted. */
size_t memtable_memory_usage(const memtable_t *m);
uint64_t memtable_num_entries(const memtable_t *m);
/* Approximate entries (every version) with user key in [lo, hi) (NULL:
 * no bound): skiplist_approx_count. */
uint64_t memtable_approx_entries(const memtable_t *m, const slice_t *lo, const slice_t *hi);
/* KT_DELETE + KT_SINGLE_DELETE entries. */
uint64_t memtable_num_deletes(const memtable_t *m);
/* KT_RANGE_DELETE entries (also counted by memtable_num_entries). */
uint64_t memtable_num_range_deletes(const memtable_t *m);

/* Highest sequence <= snap_seq of a range tombstone covering user_key, 0 if
 * none. Walks the tombstone list: O(range tombstones in this memtable). */
uint64_t memtable_range_del_seq(memtable_t *m, slice_t user_key, uint64_t snap_seq);
/* Call fn(ctx, start, end, seq) for every range tombstone (most recently
 * added first; slices valid while the caller holds a reference). Stops
 * and returns fn's value when it is not TDB_OK; else TDB_OK. */
int memtable_range_dels(memtable_t *m, int (*fn)(void *ctx, slice_t start, slice_t end, uint64_t seq),
                        void *ctx);

/* Iterator over internal keys in ikey order, values as stored. Takes its
 * own reference on m (dropped by iter_destroy). Never NULL: on OOM it
 * returns an always-invalid iterator whose status is TDB_ERR_NOMEM.
 * prev() costs one O(log n) descent (search for the last entry < current). */
iter_t *memtable_iter(memtable_t *m);

/* The memtable's skip list, for white-box checks of its structure (tests);
 * valid while the memtable is referenced. */
struct skiplist;
const struct skiplist *memtable_skiplist(const memtable_t *m);

#ifdef __cplusplus
}
#endif
#endif

/*
 * util/iter: the internal iterator interface. Memtables, blocks, tables,
 * levels, merges and the user-facing DB iterator all implement it, so they
 * compose.
 *
 * An iterator is a struct whose first member is `iter_t`. Keys are internal
 * keys (see util/ikey.h) unless an implementation says otherwise; ordering
 * is given by the comparator the iterator was built with.
 *
 * Contract
 *  - key()/value() may be called only while valid(); the slices they return
 *    stay valid until the iterator moves or is destroyed.
 *  - seek(t) positions at the first entry >= t; iter_seek_for_prev(t) at
 *    the last entry <= t (an iterator's own seek_for_prev op, else seek(t)
 *    and one step back).
 *  - On error the iterator becomes invalid and status() returns the code.
 *  - Not thread-safe: one thread at a time.
 */
#ifndef TDB_UTIL_ITER_H
#define TDB_UTIL_ITER_H

#include "util/error.h"
#include "util/slice.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct iter iter_t;

typedef struct iter_ops {
    int (*valid)(const iter_t *it);
    void (*seek_to_first)(iter_t *it);
    void (*seek_to_last)(iter_t *it);
    void (*seek)(iter_t *it, slice_t target);
    void (*next)(iter_t *it);
    void (*prev)(iter_t *it);
    slice_t (*key)(const iter_t *it);
    slice_t (*value)(const iter_t *it);
    int (*status)(const iter_t *it);
    void (*destroy)(iter_t *it);
    /* Optional (NULL: none). Stage `stage` (0, 1, 2, ...) of getting ready
     * for seek(t): start the memory loads that seek will wait on (prefetch
     * hints, or a block fetch it keeps), and return nonzero while a later
     * stage has more to do. The iterator's position is undefined until
     * the seek(t) that must follow, with the same t (same bytes at the same
     * address) and no other call on this iterator in between. A merge runs
     * stage s on every child before stage s + 1 on any, so the children's
     * cache misses overlap instead of queuing one behind another. */
    int (*seek_prepare)(iter_t *it, slice_t t, int stage);
    /* Optional (NULL: seek). seek(t) for an iterator that is valid, moving
     * forward and at an entry < t: it may start from where it is (a merge
     * moves only the children still behind t). */
    void (*seek_forward)(iter_t *it, slice_t t);
    /* Optional (NULL: next() until the user key changes). For iterators
     * of internal keys that are valid and moving forward, standing on an
     * entry whose user key is `user` (the caller's copy, so the callee need
     * not keep one): move to the first entry with another user key, i.e.
     * past that key's older versions (a memtable jumps a key's run of
     * versions at once). */
    void (*next_user_key)(iter_t *it, slice_t user);
    /* Optional (NULL: iter_seek_for_prev's seek and step back). Position
     * at the last entry <= t, moving backward: a merge positions each
     * child so, once, instead of a forward seek of every child followed by
     * a change of direction that seeks every child again. */
    void (*seek_for_prev)(iter_t *it, slice_t t);
} iter_ops_t;

struct iter {
    const iter_ops_t *ops;
};

static inline int iter_valid(const iter_t *it) { return it->ops->valid(it); }
static inline void iter_seek_to_first(iter_t *it) { it->ops->seek_to_first(it); }
static inline void iter_seek_to_last(iter_t *it) { it->ops->seek_to_last(it); }
static inline void iter_seek(iter_t *it, slice_t t) { it->ops->seek(it, t); }
static inline void iter_next(iter_t *it) { it->ops->next(it); }
static inline void iter_prev(iter_t *it) { it->ops->prev(it); }
static inline slice_t iter_key(const iter_t *it) { return it->ops->key(it); }
static inline slice_t iter_value(const iter_t *it) { return it->ops->value(it); }
static inline int iter_status(const iter_t *it) { return it->ops->status(it); }
static inline void iter_destroy(iter_t *it) { if (it) it->ops->destroy(it); }
static inline void iter_seek_forward(iter_t *it, slice_t t) {
    if (it->ops->seek_forward) it->ops->seek_forward(it, t);
    else it->ops->seek(it, t);
}

/* Comparator over keys, used by merging iterators and blocks. */
typedef int (*key_cmp_fn)(slice_t a, slice_t b);

/* Position at the last entry <= t (cmp: the iterator's key order). */
static inline void iter_seek_for_prev(iter_t *it, slice_t t, key_cmp_fn cmp) {
    if (it->ops->seek_for_prev) {
        it->ops->seek_for_prev(it, t);
        return;
    }
    iter_seek(it, t);
    if (iter_valid(it)) {
        if (cmp(iter_key(it), t) > 0) iter_prev(it);
    } else if (iter_status(it) == TDB_OK) { /* every entry is < t */
        iter_seek_to_last(it);
    }
}

/* An iterator that is always invalid with the given status. Never fails. */
iter_t *iter_empty(int status);

/* Merge n child iterators (ownership taken) into one ordered iterator.
 * Equal keys from different children are all returned, child order first.
 * Both directions are supported. Returns NULL only on allocation failure
 * (children are then destroyed). */
iter_t *iter_merge(iter_t **children, int n, key_cmp_fn cmp);
/* iter_merge(children, n, ikey_compare) with the comparison inlined (the
 * merge of a scan or a compaction over internal keys). */
iter_t *iter_merge_ikeys(iter_t **children, int n);

#ifdef __cplusplus
}
#endif
#endif

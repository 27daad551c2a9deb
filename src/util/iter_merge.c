/*
 * util/iter_merge: an ordered merge of n child iterators, both directions.
 *
 * Order. Positions are ordered by (key, child index): equal keys from
 * different children are all returned, the lower child index first when
 * moving forward and last when moving backward, so a backward scan is
 * exactly the reverse of a forward scan.
 *
 * Invariants (between calls, while the merge is valid)
 *  - `cur` is the child holding the current position.
 *  - FORWARD: every other valid child is at its first entry whose
 *    (key, index) is greater than the current one; `heap` is a min-heap of
 *    the valid children on (key, index), with heap[0] == cur.
 *  - REVERSE: every other valid child is at its last entry whose
 *    (key, index) is smaller than the current one; `heap` is a max-heap on
 *    (key, index), heap[0] == cur.
 *  - With n <= LINEAR_MAX the heap is not kept; the current child is found
 *    by a linear scan over all valid children (cheaper for tiny n).
 *  - `ok[i]` / `key[i]` cache child i's validity and key, reloaded right
 *    after every move of child i (a key slice stays valid until its
 *    iterator moves), so ordering children costs no call into them: that
 *    was a quarter of a cached 100-entry scan's profile.
 *  - Switching direction (next after prev, or prev after next) repositions
 *    every non-current child relative to the current key, as LevelDB's
 *    MergingIterator does, then rebuilds the heap.
 *  - A seek first runs the children's seek_prepare stages breadth-first
 *    (when at least two children have one), so each child's chain of
 *    dependent cache misses (index, cache slot, cache entry, block) runs
 *    alongside the others' rather than after them: a 3-table seek over a
 *    warm cache is mostly such misses.
 *  - seek_for_prev(t) positions each child at its last entry <= t (after
 *    the same breadth-first prepare as a seek: a child without its own
 *    seek_for_prev seeks t first) and starts in REVERSE.
 *  - seek_forward(t) from a forward position moves only the children
 *    still behind t (the others are, by the FORWARD invariant, already at
 *    their first entry >= t).
 *  - next_user_key (internal keys only) moves, one call each, only the
 *    children standing on the current user key; with n <= LINEAR_MAX it
 *    finds them by comparing user keys, then picks the current child once
 *    (a row with a version in a memtable and one in a table moves both
 *    children for one rebuild, not two).
 *  - `err` is the first error seen on a child that went invalid since the
 *    last seek, noted when the child's move is loaded (merge_load); while
 *    it is set the merge is invalid (data may be missing).
 *    status() reports the first failing child in child order.
 *
 * Ownership: the merge owns its children and destroys them. Not
 * thread-safe (one thread at a time), like every iterator.
 */
#include <stdlib.h>

#include "util/error.h"
#include "util/ikey.h"
#include "util/iter.h"

#define LINEAR_MAX 4

enum { DIR_FORWARD = 0, DIR_REVERSE = 1 };

typedef struct merge_iter {
    iter_t base;
    key_cmp_fn cmp;
    int ikeys; /* cmp is ikey_compare, called inline (iter_merge_ikeys) */
    int n;
    int cur;   /* current child or -1 */
    int dir;   /* DIR_FORWARD or DIR_REVERSE */
    int err;   /* first child error since the last seek (TDB_OK if none) */
    int hn;    /* heap size (heap mode only) */
    int *heap; /* child indices, n slots */
    iter_t **child;
    slice_t *key;      /* key[i]: child i's key while ok[i] */
    unsigned char *ok; /* ok[i]: child i is valid */
} merge_iter_t;

/* Reload the cached validity and key of child i after it moved; a child
 * that went invalid has its status noted now, once, rather than on every
 * later step (an exhausted child, e.g. an empty memtable, stays so). */
static inline void merge_load(merge_iter_t *m, int i) {
    iter_t *c = m->child[i];
    m->ok[i] = iter_valid(c) ? 1 : 0;
    if (m->ok[i]) m->key[i] = iter_key(c);
    else if (m->err == TDB_OK) m->err = iter_status(c);
}

/* Compare two keys by the merge's order. */
static inline int merge_cmp(const merge_iter_t *m, slice_t a, slice_t b) {
    return m->ikeys ? ikey_compare(a, b) : m->cmp(a, b);
}

/* Does child a come before child b in the current direction's heap order? */
static int merge_before(const merge_iter_t *m, int a, int b) {
    int c = merge_cmp(m, m->key[a], m->key[b]);
    if (m->dir == DIR_FORWARD) return c < 0 || (c == 0 && a < b);
    return c > 0 || (c == 0 && a > b);
}

/* Restore the heap property below slot k. */
static void merge_sift_down(merge_iter_t *m, int k) {
    int *h = m->heap;
    int x = h[k];
    for (;;) {
        int l = 2 * k + 1, best = l;
        if (l >= m->hn) break;
        if (l + 1 < m->hn && merge_before(m, h[l + 1], h[l])) best = l + 1;
        if (!merge_before(m, h[best], x)) break;
        h[k] = h[best];
        k = best;
    }
    h[k] = x;
}

/* Recompute the current child after all children were repositioned. */
static void merge_rebuild(merge_iter_t *m) {
    m->cur = -1;
    if (m->n <= LINEAR_MAX) {
        for (int i = 0; i < m->n; i++)
            if (m->ok[i] && (m->cur < 0 || merge_before(m, i, m->cur))) m->cur = i;
        return;
    }
    m->hn = 0;
    for (int i = 0; i < m->n; i++)
        if (m->ok[i]) m->heap[m->hn++] = i;
    for (int k = m->hn / 2 - 1; k >= 0; k--) merge_sift_down(m, k);
    if (m->hn > 0) m->cur = m->heap[0];
}

/* Recompute the current child after only the current child moved. */
static void merge_fix_current(merge_iter_t *m) {
    if (m->n <= LINEAR_MAX) {
        merge_rebuild(m);
        return;
    }
    if (!m->ok[m->heap[0]]) m->heap[0] = m->heap[--m->hn];
    if (m->hn > 0) merge_sift_down(m, 0);
    m->cur = m->hn > 0 ? m->heap[0] : -1;
}

/* Valid while a child holds the position and no child failed. */
static int merge_valid(const iter_t *it) {
    const merge_iter_t *m = (const merge_iter_t *)it;
    return m->cur >= 0 && m->err == TDB_OK;
}

/* Position every child at its first entry, then pick the smallest. */
static void merge_seek_to_first(iter_t *it) {
    merge_iter_t *m = (merge_iter_t *)it;
    m->err = TDB_OK;
    m->dir = DIR_FORWARD;
    for (int i = 0; i < m->n; i++) {
        iter_seek_to_first(m->child[i]);
        merge_load(m, i);
    }
    merge_rebuild(m);
}

/* Position every child at its last entry, then pick the largest. */
static void merge_seek_to_last(iter_t *it) {
    merge_iter_t *m = (merge_iter_t *)it;
    m->err = TDB_OK;
    m->dir = DIR_REVERSE;
    for (int i = 0; i < m->n; i++) {
        iter_seek_to_last(m->child[i]);
        merge_load(m, i);
    }
    merge_rebuild(m);
}

/* Run the children's seek_prepare stages for t, breadth-first; ok[] holds
 * "has another stage" meanwhile (the seek reloads it afterwards). */
static void merge_prepare(merge_iter_t *m, slice_t t) {
    int active = 0;
    for (int i = 0; i < m->n; i++) active += (m->ok[i] = m->child[i]->ops->seek_prepare != NULL);
    if (active < 2) return;
    for (int stage = 0; active; stage++) {
        active = 0;
        for (int i = 0; i < m->n; i++)
            if (m->ok[i]) active += (m->ok[i] = m->child[i]->ops->seek_prepare(m->child[i], t, stage) != 0);
    }
}

/* Position every child at its first entry >= t (FORWARD) or its last
 * entry <= t (REVERSE), then pick the current one. */
static void merge_position(merge_iter_t *m, slice_t t, int dir) {
    m->err = TDB_OK;
    m->dir = dir;
    merge_prepare(m, t);
    for (int i = 0; i < m->n; i++) {
        if (dir == DIR_FORWARD) iter_seek(m->child[i], t);
        else iter_seek_for_prev(m->child[i], t, m->cmp);
        merge_load(m, i);
    }
    merge_rebuild(m);
}

static void merge_seek(iter_t *it, slice_t t) { merge_position((merge_iter_t *)it, t, DIR_FORWARD); }

static void merge_seek_for_prev(iter_t *it, slice_t t) { merge_position((merge_iter_t *)it, t, DIR_REVERSE); }

/* seek(t) from a forward position before t: by the FORWARD invariant each
 * valid child is at its first entry after the current position, so one
 * already at >= t is at its first entry >= t, and an exhausted one has
 * none; only the children behind t move. A scan that skips a hot key's
 * versions (all in a memtable) leaves the tables' iterators where they are. */
static void merge_seek_forward(iter_t *it, slice_t t) {
    merge_iter_t *m = (merge_iter_t *)it;
    if (m->dir != DIR_FORWARD || !merge_valid(it)) {
        merge_seek(it, t);
        return;
    }
    for (int i = 0; i < m->n; i++) {
        if (!m->ok[i] || merge_cmp(m, m->key[i], t) >= 0) continue;
        iter_seek_forward(m->child[i], t);
        merge_load(m, i);
    }
    merge_rebuild(m);
}

/* Advance to the next (key, index) position. */
static void merge_next(iter_t *it) {
    merge_iter_t *m = (merge_iter_t *)it;
    if (!merge_valid(it)) return;
    int c = m->cur;
    iter_t *cc = m->child[c];
    if (m->dir == DIR_REVERSE) {
        /* Every other child sits before (key, c): move it to its first
         * position after (key, c). Children with a lower index must also
         * skip entries equal to key, which precede (key, c). */
        slice_t key = iter_key(cc);
        for (int i = 0; i < m->n; i++) {
            if (i == c) continue;
            iter_t *ch = m->child[i];
            iter_seek(ch, key);
            if (i < c)
                while (iter_valid(ch) && merge_cmp(m, iter_key(ch), key) == 0) iter_next(ch);
            merge_load(m, i);
        }
        iter_next(cc);
        merge_load(m, c);
        m->dir = DIR_FORWARD;
        merge_rebuild(m);
        return;
    }
    iter_next(cc);
    merge_load(m, c);
    merge_fix_current(m);
}

/* Move child c past its entries of user key u: its own next_user_key, or
 * next() while the user key is u. */
static void merge_child_past(merge_iter_t *m, int c, slice_t u) {
    iter_t *cc = m->child[c];
    if (cc->ops->next_user_key) {
        cc->ops->next_user_key(cc, u);
    } else {
        do {
            iter_next(cc);
        } while (iter_valid(cc) && slice_equal(ikey_user(iter_key(cc)), u));
    }
    merge_load(m, c);
}

/* Past every entry of user key u, the current one's (internal keys): only
 * the children standing on it move, each in one call, so a hot key's
 * versions in a memtable cost one jump instead of a step (and a heap
 * repair) per version. */
static void merge_next_user_key(iter_t *it, slice_t u) {
    merge_iter_t *m = (merge_iter_t *)it;
    if (!merge_valid(it)) return;
    if (m->dir != DIR_FORWARD) {
        do {
            merge_next(it);
        } while (merge_valid(it) && slice_equal(ikey_user(m->key[m->cur]), u));
        return;
    }
    if (m->n <= LINEAR_MAX) {
        /* Every child standing on u moves past it, then one rebuild. By the
         * FORWARD invariant no child is before u, and none is on u after. */
        int c = m->cur;
        for (int i = 0; i < m->n; i++)
            if (i == c || (m->ok[i] && slice_equal(ikey_user(m->key[i]), u))) merge_child_past(m, i, u);
        merge_rebuild(m);
        return;
    }
    do {
        merge_child_past(m, m->cur, u);
        merge_fix_current(m);
    } while (merge_valid(it) && slice_equal(ikey_user(m->key[m->cur]), u));
}

/* Step back to the previous (key, index) position. */
static void merge_prev(iter_t *it) {
    merge_iter_t *m = (merge_iter_t *)it;
    if (!merge_valid(it)) return;
    int c = m->cur;
    iter_t *cc = m->child[c];
    if (m->dir == DIR_FORWARD) {
        /* Every other child sits after (key, c): move it to its last
         * position before (key, c), which for lower-index children may be
         * an entry equal to key. */
        slice_t key = iter_key(cc);
        for (int i = 0; i < m->n; i++) {
            if (i == c) continue;
            iter_t *ch = m->child[i];
            iter_seek(ch, key);
            if (i < c)
                while (iter_valid(ch) && merge_cmp(m, iter_key(ch), key) == 0) iter_next(ch);
            if (iter_valid(ch)) iter_prev(ch);
            else if (iter_status(ch) == TDB_OK) iter_seek_to_last(ch);
            merge_load(m, i);
        }
        iter_prev(cc);
        merge_load(m, c);
        m->dir = DIR_REVERSE;
        merge_rebuild(m);
        return;
    }
    iter_prev(cc);
    merge_load(m, c);
    merge_fix_current(m);
}

/* Key of the current child. */
static slice_t merge_key(const iter_t *it) {
    const merge_iter_t *m = (const merge_iter_t *)it;
    return m->key[m->cur];
}

/* Value of the current child. */
static slice_t merge_value(const iter_t *it) {
    const merge_iter_t *m = (const merge_iter_t *)it;
    return iter_value(m->child[m->cur]);
}

/* First error among the children in child order, else TDB_OK. */
static int merge_status(const iter_t *it) {
    const merge_iter_t *m = (const merge_iter_t *)it;
    for (int i = 0; i < m->n; i++) {
        int s = iter_status(m->child[i]);
        if (s != TDB_OK) return s;
    }
    return m->err;
}

/* Destroy every child and the merge itself. */
static void merge_destroy(iter_t *it) {
    merge_iter_t *m = (merge_iter_t *)it;
    for (int i = 0; i < m->n; i++) iter_destroy(m->child[i]);
    free(m);
}

static const iter_ops_t g_merge_ops = {
    merge_valid, merge_seek_to_first, merge_seek_to_last, merge_seek,   merge_next,
    merge_prev,  merge_key,           merge_value,        merge_status, merge_destroy,
    NULL, /* seek_prepare: staged inside merge_seek */
    merge_seek_forward,
    merge_next_user_key,
    merge_seek_for_prev,
};

/* Build a merging iterator over n children (ownership taken). */
iter_t *iter_merge(iter_t **children, int n, key_cmp_fn cmp) {
    if (n <= 0) return iter_empty(TDB_OK);
    if (n == 1) return children[0];
    size_t sz = sizeof(merge_iter_t) + (size_t)n * (sizeof(iter_t *) + sizeof(slice_t) + sizeof(int) + 1);
    merge_iter_t *m = (merge_iter_t *)malloc(sz);
    if (!m) {
        for (int i = 0; i < n; i++) iter_destroy(children[i]);
        tdb_err(TDB_ERR_NOMEM, "merging iterator over %d children", n);
        return NULL;
    }
    m->base.ops = &g_merge_ops;
    m->cmp = cmp;
    m->ikeys = 0;
    m->n = n;
    m->cur = -1;
    m->dir = DIR_FORWARD;
    m->err = TDB_OK;
    m->hn = 0;
    m->child = (iter_t **)(m + 1);
    m->key = (slice_t *)(m->child + n);
    m->heap = (int *)(m->key + n);
    m->ok = (unsigned char *)(m->heap + n);
    for (int i = 0; i < n; i++) {
        m->child[i] = children[i];
        m->ok[i] = 0;
    }
    return &m->base;
}

/* iter_merge over internal keys (ikey_compare), the comparison inlined:
 * a scan compares at every step, and an indirect call per comparison was
 * a visible part of it. */
iter_t *iter_merge_ikeys(iter_t **children, int n) {
    iter_t *it = iter_merge(children, n, ikey_compare);
    if (it && it->ops == &g_merge_ops) ((merge_iter_t *)it)->ikeys = 1;
    return it;
}

/*
 * version/level_iter: a lazy concatenating iterator over one level >= 2 of a
 * version, whose files are disjoint and sorted, so concatenating their
 * iterators in file order yields internal-key order.
 *
 * Invariants
 *  - Holds a version reference for its lifetime, so the file list it walks
 *    never changes under it.
 *  - At most one table is open at a time (`cur`, file index `idx`); it is
 *    opened (version_file_reader: the pinned reader or the table cache)
 *    only when positioning reaches it.
 *  - While valid, `cur` is valid. When a table cannot be opened or a table
 *    iterator fails, the error is kept in `status` and the iterator is
 *    invalid until the next seek.
 */
#include <stdlib.h>

#include "util/error.h"
#include "util/ikey.h"
#include "version/version.h"

typedef struct level_iter {
    iter_t base;
    version_t *v;
    table_cache_t *tc;
    int level;
    int idx;     /* file index of cur, -1 if none */
    iter_t *cur; /* table iterator of file idx */
    int status;
} level_iter_t;

/* Drop the current table iterator. */
static void li_close(level_iter_t *li) {
    iter_destroy(li->cur);
    li->cur = NULL;
    li->idx = -1;
}

/* Make file i current (opening it); on failure records status, cur NULL. */
static void li_open(level_iter_t *li, int i) {
    if (li->cur && li->idx == i) return;
    li_close(li);
    sst_reader_t *r = NULL;
    int owned;
    int rc = version_file_reader(li->tc, version_file(li->v, li->level, i), &r, &owned);
    if (rc != TDB_OK) {
        li->status = rc;
        return;
    }
    li->cur = sst_reader_iter(r); /* the table iterator holds its own reference */
    if (owned) sst_reader_unref(r);
    if (!li->cur) {
        li->status = tdb_err(TDB_ERR_NOMEM, "table iterator");
        return;
    }
    li->idx = i;
}

/* While the current table is exhausted, move to the next file's first entry. */
static void li_skip_forward(level_iter_t *li) {
    int n = version_num_files(li->v, li->level);
    while (li->cur && !iter_valid(li->cur)) {
        int st = iter_status(li->cur), next = li->idx + 1;
        if (st != TDB_OK) li->status = st;
        if (st != TDB_OK || next >= n) {
            li_close(li);
            return;
        }
        li_open(li, next);
        if (li->cur) iter_seek_to_first(li->cur);
    }
}

/* While the current table is exhausted, move to the previous file's last entry. */
static void li_skip_backward(level_iter_t *li) {
    while (li->cur && !iter_valid(li->cur)) {
        int st = iter_status(li->cur), prev = li->idx - 1;
        if (st != TDB_OK) li->status = st;
        if (st != TDB_OK || prev < 0) {
            li_close(li);
            return;
        }
        li_open(li, prev);
        if (li->cur) iter_seek_to_last(li->cur);
    }
}

/* Valid while positioned in a table. */
static int li_valid(const iter_t *it) {
    const level_iter_t *li = (const level_iter_t *)it;
    return li->cur != NULL && iter_valid(li->cur);
}

/* First entry of the first file. */
static void li_seek_to_first(iter_t *it) {
    level_iter_t *li = (level_iter_t *)it;
    li->status = TDB_OK;
    li_close(li);
    if (version_num_files(li->v, li->level) == 0) return;
    li_open(li, 0);
    if (li->cur) iter_seek_to_first(li->cur);
    li_skip_forward(li);
}

/* Last entry of the last file. */
static void li_seek_to_last(iter_t *it) {
    level_iter_t *li = (level_iter_t *)it;
    li->status = TDB_OK;
    li_close(li);
    int n = version_num_files(li->v, li->level);
    if (n == 0) return;
    li_open(li, n - 1);
    if (li->cur) iter_seek_to_last(li->cur);
    li_skip_backward(li);
}

/* Index of the first file whose largest key >= target (num_files if none). */
static int li_find(const level_iter_t *li, slice_t target) {
    int lo = 0, hi = version_num_files(li->v, li->level);
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (ikey_compare(buf_slice(&version_file(li->v, li->level, mid)->largest), target) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* seek_prepare (contract in util/iter.h): stage 0 opens the file the seek
 * will start in; every stage is then the table iterator's. A failed open
 * is left to the seek, which retries it and reports the error. */
static int li_seek_prepare(iter_t *it, slice_t target, int stage) {
    level_iter_t *li = (level_iter_t *)it;
    if (stage == 0) {
        int i = li_find(li, target);
        if (i >= version_num_files(li->v, li->level)) return 0;
        li_open(li, i);
        li->status = TDB_OK;
    }
    iter_t *c = li->cur;
    return c && c->ops->seek_prepare ? c->ops->seek_prepare(c, target, stage) : 0;
}

/* First entry >= target: binary search the file whose largest key >= target. */
static void li_seek(iter_t *it, slice_t target) {
    level_iter_t *li = (level_iter_t *)it;
    li->status = TDB_OK;
    int lo = li_find(li, target);
    if (lo >= version_num_files(li->v, li->level)) {
        li_close(li);
        return;
    }
    li_open(li, lo);
    if (li->cur) iter_seek(li->cur, target);
    li_skip_forward(li);
}

/* Advance, crossing into the next file when needed. */
static void li_next(iter_t *it) {
    level_iter_t *li = (level_iter_t *)it;
    iter_next(li->cur);
    li_skip_forward(li);
}

/* Step back, crossing into the previous file when needed. */
static void li_prev(iter_t *it) {
    level_iter_t *li = (level_iter_t *)it;
    iter_prev(li->cur);
    li_skip_backward(li);
}

/* Current internal key. */
static slice_t li_key(const iter_t *it) { return iter_key(((const level_iter_t *)it)->cur); }

/* Current value. */
static slice_t li_value(const iter_t *it) { return iter_value(((const level_iter_t *)it)->cur); }

/* The error that made the iterator invalid, or the open table's status. */
static int li_status(const iter_t *it) {
    const level_iter_t *li = (const level_iter_t *)it;
    if (li->status != TDB_OK) return li->status;
    return li->cur ? iter_status(li->cur) : TDB_OK;
}

/* Free the iterator and its version reference. */
static void li_destroy(iter_t *it) {
    level_iter_t *li = (level_iter_t *)it;
    li_close(li);
    version_unref(li->v);
    free(li);
}

static const iter_ops_t level_iter_ops = {
    li_valid, li_seek_to_first, li_seek_to_last, li_seek,   li_next,
    li_prev,  li_key,           li_value,        li_status, li_destroy,
    li_seek_prepare,
    NULL, /* seek_forward */
    NULL, /* next_user_key */
    NULL, /* seek_for_prev: seek and step back */
};

/* Lazy concatenating iterator over `level` of v. */
iter_t *version_level_iter(version_t *v, table_cache_t *tc, int level) {
    level_iter_t *li = (level_iter_t *)calloc(1, sizeof *li);
    if (!li) return NULL;
    li->base.ops = &level_iter_ops;
    li->v = v;
    li->tc = tc;
    li->level = level;
    li->idx = -1;
    version_ref(v);
    return &li->base;
}

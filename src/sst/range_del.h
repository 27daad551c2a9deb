/*
 * sst/range_del: range tombstones. A range tombstone deletes every user key
 * in [start, end) (bytewise, start < end) written with a sequence below
 * its own. It is stored as the internal key (start, seq, KT_RANGE_DELETE)
 * with value `end` (memtable, WAL batch, the SST range-deletion block).
 *
 * This module holds what the SST reader and builder, compaction and the
 * db layer share:
 *  - range_del_t: a borrowed view of one tombstone;
 *  - rd_list_t: an owned, growable list (keys copied into chunks);
 *  - rd_frags_t: the tombstones "fragmented" into sorted, non-overlapping
 *    intervals, each with the (descending) sequences of the tombstones
 *    covering all of it, so "which tombstones cover key k" is one binary
 *    search;
 *  - rd_bound_*: the internal keys a tombstone contributes to a file's
 *    [smallest, largest] range.
 *
 * File bounds. A table's smallest/largest internal keys must cover the user
 * keys its tombstones cover (overlap checks in picking, level lookups and
 * the level shape all compare user keys inclusively). A tombstone [s, e)
 * contributes smallest (s, seq, KT_RANGE_DELETE) and largest:
 *  - (x, 0, KT_RANGE_DELETE) if e = x || 0x00 (x non-empty): then the
 *    tombstone covers x and nothing above, so the bound is exact (sequence
 *    0 is never written, so this sorts after every real version of x);
 *  - else (e, SEQ_MAX, KT_RANGE_DELETE), which sorts before every real
 *    version of e: the user-key range then includes e although no key e is
 *    covered. This over-approximation by one key is harmless: overlap checks
 *    only become conservative.
 * Compaction clips tombstones at output boundaries of the form x || 0x00
 * (x = the last user key of the previous output), so consecutive outputs
 * stay disjoint by user key.
 *
 * Invariants
 *  - Fragments are sorted by lo, non-overlapping (hi_i <= lo_{i+1}), non-
 *    empty (lo < hi), and each lists at least one sequence, strictly
 *    descending. An rd_frags_t is immutable once built (thread-safe reads).
 *  - rd_list_t owns its keys; views into it stay valid until rd_list_free
 *    (adding never moves existing keys; the array of views may move).
 */
#ifndef TDB_SST_RANGE_DEL_H
#define TDB_SST_RANGE_DEL_H

#include <stddef.h>
#include <stdint.h>

#include "util/slice.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct range_del {
    slice_t start, end; /* user keys, start < end */
    uint64_t seq;
} range_del_t;

/* ---- owned list ---- */
typedef struct rd_chunk rd_chunk_t;
typedef struct rd_list {
    range_del_t *v;
    size_t n, cap;
    rd_chunk_t *chunks;
} rd_list_t;

/* Append a copy of [start, end) @ seq. TDB_ERR_NOMEM. A zeroed list is empty. */
int rd_list_add(rd_list_t *l, slice_t start, slice_t end, uint64_t seq);
/* Free keys and the array; l becomes empty. */
void rd_list_free(rd_list_t *l);

/* Order by start ascending, then seq descending (the SST block order). */
void rd_sort_by_start(range_del_t *v, size_t n);
/* Merge pieces of one tombstone (equal seq) that overlap or touch, in
 * place; the result is sorted by start. Returns the new count. */
size_t rd_coalesce(range_del_t *v, size_t n);

/* ---- fragments ---- */
typedef struct rd_frags {
    size_t n;        /* fragments */
    slice_t *lo, *hi; /* fragment i = [lo[i], hi[i]) */
    size_t *off;     /* seqs of fragment i: seqs[off[i] .. off[i+1]) */
    uint64_t *seqs;  /* descending within a fragment */
    char *keys;      /* storage of the boundary keys */
} rd_frags_t;

/* Fragment the tombstones of v with seq <= max_seq (adjacent fragments with
 * equal sequences are merged). max_only: keep only the highest sequence per
 * fragment (enough for reads at one snapshot): O(n log n) time, O(n) space.
 * Else every covering sequence is kept, which nested tombstones can make
 * quadratic: max_total (0 = unlimited) bounds the sequences stored, beyond
 * it TDB_ERR_TOO_LARGE. A zeroed rd_frags_t is empty. On error f is empty. */
int rd_frags_build(rd_frags_t *f, const range_del_t *v, size_t n, uint64_t max_seq, int max_only,
                   size_t max_total);
void rd_frags_free(rd_frags_t *f);
/* Index of the fragment containing key, or -1. hint (may be NULL) is the
 * last answer: checked first (and its successor), then binary search. */
long rd_frags_find(const rd_frags_t *f, slice_t key, size_t *hint);
/* Highest sequence <= snap among tombstones covering key; 0 if none. */
uint64_t rd_frags_max_seq(const rd_frags_t *f, slice_t key, uint64_t snap, size_t *hint);
/* 1 if some tombstone with seq in (since, snap] overlaps the user-key range
 * [lo, hi] (NULL = unbounded), else 0. */
int rd_frags_overlap_newer(const rd_frags_t *f, const slice_t *lo, const slice_t *hi, uint64_t since,
                           uint64_t snap);

/* ---- file bounds ---- */
/* Append the smallest-bound internal key of a tombstone starting at start. */
int rd_bound_smallest(buf_t *out, slice_t start, uint64_t seq);
/* Append the largest-bound internal key of a tombstone ending at end (see
 * "File bounds" above). */
int rd_bound_largest(buf_t *out, slice_t end);
/* The smallest user key above x (x || 0x00) into out (cleared first). */
int rd_user_successor(buf_t *out, slice_t x);

#ifdef __cplusplus
}
#endif
#endif

/*
 * version/flush_runs: telling apart the key runs of a memtable, so that a
 * flush writes one table per run (rules in compaction.h, flush_run_cuts).
 *
 * Why. Writers that fill separate key ranges at once, each in key order (a
 * bulk load with one loader per warehouse), leave a memtable whose keys form
 * a few runs far apart. Written as one table, the flush spans every run and
 * the gaps between them, so its level-1 compaction must merge every
 * base-level file in those gaps. Written as one table per run, each table
 * covers only new keys, and level 1 moves into the base level's gaps as it is
 * (compaction.h, "Trivial moves").
 *
 * How. Adjacent user keys of one run share a longer prefix than the last key
 * of a run and the first of the next. So the borders are the adjacent pairs
 * with the shortest common prefix, if there are few of them. Keys in no
 * particular pattern (random writes) have many such pairs and are not cut;
 * a run too small to be worth a table of its own is not cut off either.
 * Runs written one after the other are cut too: a writer that went on from
 * one range to another may come back to the first (a loader between
 * tables), and its next keys would fall inside a table spanning both. Such
 * a flush counts as one level-1 run per table (version_l1_runs tells the
 * tables of one flush apart from other flushes only by sequences that
 * interleave), so level 1 is due sooner; but its tables seldom overlap
 * anything, and then level 1 moves them down without a rewrite.
 *
 * Invariants
 *  - The cuts are ascending user keys, each the first key of a run, so a
 *    table writer cutting before each of them writes key-disjoint tables.
 *  - One pass over the iterator; no allocation.
 */
#include <stdint.h>

#include "util/ikey.h"
#include "version/compaction.h"

/* A run cut off must hold this many entries. */
#define FLUSH_RUN_MIN_ENTRIES 1024

/* Length of the common prefix of a and b. */
static size_t common_prefix(slice_t a, slice_t b) {
    size_t lim = a.size < b.size ? a.size : b.size, l = 0;
    while (l < lim && a.data[l] == b.data[l]) l++;
    return l;
}

int flush_run_cuts(iter_t *it, slice_t cuts[FLUSH_MAX_RUNS - 1]) {
    uint64_t at[FLUSH_MAX_RUNS - 1]; /* entries before each cut */
    uint64_t entries = 0;
    size_t shortest = SIZE_MAX;
    int n = 0, too_many = 0;
    slice_t prev = {0};
    for (iter_seek_to_first(it); iter_valid(it); iter_next(it), entries++) {
        slice_t uk = ikey_user(iter_key(it));
        if (entries > 0) {
            size_t l = common_prefix(prev, uk);
            int same = l == prev.size && l == uk.size; /* another version of prev */
            if (!same && l < shortest) { /* a new shortest: every run so far is one */
                shortest = l;
                n = 0;
                too_many = 0;
            }
            if (!same && l == shortest) {
                if (n == FLUSH_MAX_RUNS - 1) {
                    too_many = 1;
                } else {
                    cuts[n] = uk;
                    at[n++] = entries;
                }
            }
        }
        prev = uk;
    }
    if (iter_status(it) != 0 || too_many) return 0;
    /* Every run, the last included, must be worth a table. */
    uint64_t begin = 0;
    for (int i = 0; i <= n; i++) {
        uint64_t end = i < n ? at[i] : entries;
        if (end - begin < FLUSH_RUN_MIN_ENTRIES) return 0;
        begin = end;
    }
    return n;
}

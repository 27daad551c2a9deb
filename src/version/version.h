/*
 * version: the set of SSTables that make up one column family at one point
 * in time, as an immutable, refcounted snapshot (a "version"), and the edits
 * that derive one version from another.
 *
 * Level shape. On-disk levels are 1..TDB_MAX_LEVELS-1 (level 0 is the
 * in-memory memtable queue and is always empty here).
 *  - Level 1 holds flushed files that may overlap each other; they are kept
 *    newest first (max_seq descending, then file number descending).
 *  - Levels >= 2 hold files with disjoint user-key ranges, sorted by
 *    smallest key. One user key's versions never span two files of a level.
 *  - For any user key, a version in level L is newer than every version of
 *    that key in a level > L (compaction moves data down only).
 *  - Range tombstones obey the same rule, with "version of k" read as "point
 *    entry at k or tombstone covering k": a file's [smallest, largest] covers
 *    its tombstones (sst/range_del.h), so a compaction that moves a
 *    tombstone down takes every next-level file it overlaps as an input,
 *    and a tombstone never lands below older data it must shadow or above
 *    newer data it must not. Level-1 files hold flushed memtables: the
 *    files of different flushes have disjoint sequence ranges, ordered like
 *    the files (newest first), and the files of one flush (cut at key
 *    runs, version/flush_runs.c) are disjoint by user key. Hence the
 *    level-1 files that may hold one user key are ordered newest first, and
 *    a lookup may stop at the first file (in search order) holding a point
 *    entry of the key or a tombstone covering it.
 *
 * Invariants
 *  - A version is immutable once version_apply/version_create returns it:
 *    its file lists never change, so readers use it without a lock while
 *    they hold a reference. The only mutable part is
 *    file_meta.being_compacted, touched only under the db mutex.
 *  - Refcounts (version and file_meta) are atomic. A version holds one
 *    reference on each of its files; a version_edit holds one on each file
 *    it adds. When a version's count reaches zero it drops its file refs.
 *  - A file that was ever part of a version remembers that version's
 *    file_obsolete_fn; when its last reference goes (no version and no edit
 *    holds it) the callback runs exactly once, on the thread dropping the
 *    reference, possibly without the db mutex held. Dropping the final
 *    version at close reports every file too: the callback must ignore
 *    reports while the database is closing. Files never installed in a
 *    version (outputs of a failed job) are not reported; their creator
 *    deletes them.
 *  - version_apply, compaction picking and being_compacted are used under
 *    the db mutex; version_get / version_add_iters need only a reference.
 *  - A file's pinned reader (file_meta.reader) is borrowed by lookups while
 *    they hold a reference to a version holding the file; it is unpinned
 *    before the obsolete callback runs, so the table is closed before it is
 *    deleted. The table cache a file pinned through outlives the file's
 *    metadata.
 */
#ifndef TDB_VERSION_VERSION_H
#define TDB_VERSION_VERSION_H

#include <stdint.h>

#include "sst/sst.h"
#include "tidesdb/tidesdb.h"
#include "util/iter.h"
#include "util/slice.h"
#include "version/table_cache.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Called when file `number` is no longer referenced by any version. */
typedef void (*file_obsolete_fn)(void *ctx, uint64_t number);

typedef struct file_meta {
    uint64_t number, file_size;
    buf_t smallest, largest; /* internal keys, owned */
    uint64_t min_seq, max_seq, num_entries, num_deletes;
    uint64_t num_range_deletes; /* range tombstones (0 for file_meta_create; set it after) */
    int refs;            /* touched only via file_meta_ref/unref (atomic) */
    int being_compacted; /* under the db mutex */
    /* Set when the file first enters a version (version_apply). */
    file_obsolete_fn obsolete_fn;
    void *obsolete_ctx;
    /* The table's reader, pinned by the first lookup that opens it
     * (table_cache_pin, within the cache's budget) and unpinned when f is
     * freed: later lookups use it without the table cache. Set once
     * (atomic); reader_tc is the cache it came from. */
    sst_reader_t *reader;
    table_cache_t *reader_tc;
} file_meta_t;

/* New file meta from a finished table's properties; refs = 1. NULL on OOM. */
file_meta_t *file_meta_from_props(uint64_t number, const sst_props_t *p);
/* New file meta from explicit fields (manifest decoding, tests); refs = 1. */
file_meta_t *file_meta_create(uint64_t number, uint64_t file_size, slice_t smallest, slice_t largest,
                              uint64_t min_seq, uint64_t max_seq, uint64_t num_entries,
                              uint64_t num_deletes);
void file_meta_ref(file_meta_t *f);
/* Do a's and b's user-key ranges share a key? */
int file_meta_overlaps(const file_meta_t *a, const file_meta_t *b);
/* Drop a reference; at zero frees f and, if it was ever in a version, calls
 * its obsolete callback. */
void file_meta_unref(file_meta_t *f);

typedef struct version version_t;

/* An empty version (refs 1) whose files will report to fn(ctx, number). */
version_t *version_create(file_obsolete_fn fn, void *ctx);
void version_ref(version_t *v);
/* At zero drops the version's file references (see file_meta_unref). */
void version_unref(version_t *v);
/* Files in `level` (0 for level 0 and out-of-range levels). */
int version_num_files(const version_t *v, int level);
/* i-th file of `level` in level order (borrowed; valid while v is). */
file_meta_t *version_file(const version_t *v, int level, int i);
uint64_t version_level_bytes(const version_t *v, int level);
/* Level-1 runs, about one per flush: groups of key-disjoint level-1 files
 * whose sequence ranges meet (the tables of one flush cut at key runs,
 * version/flush_runs.c); without such flushes, the level's file count.
 * Counted once, when the version is built. Level 1 is due by runs
 * (version/compaction.h, "Scores"). */
int version_l1_runs(const version_t *v);
/* Total files over all levels. */
int version_total_files(const version_t *v);
/* Give a freshly built, not yet shared version (and its files lacking one)
 * an obsolete callback. Used by manifest decoding. */
void version_set_obsolete_fn(version_t *v, file_obsolete_fn fn, void *ctx);

/* A change to a version: files added to and removed from levels. A zeroed
 * struct is an empty edit. */
typedef struct version_edit {
    int n_add, cap_add;
    struct {
        int level;
        file_meta_t *f;
    } *add;
    int n_del, cap_del;
    struct {
        int level;
        uint64_t number;
    } *del;
} version_edit_t;

/* Add f to level (1..TDB_MAX_LEVELS-1); takes a reference on f. */
int version_edit_add(version_edit_t *e, int level, file_meta_t *f);
int version_edit_del(version_edit_t *e, int level, uint64_t number);
/* Drop the references of added files and free the arrays (e stays valid,
 * empty). */
void version_edit_free(version_edit_t *e);

/* New version = base + edit (base unchanged); deletions apply first, so a
 * file may be deleted from one level and added to another. Level 1 kept
 * newest first, other levels sorted. Deleting a file the level lacks, adding
 * a number already present, or overlapping files at a level >= 2 ->
 * TDB_ERR_CORRUPTION (bug guard); bad level -> TDB_ERR_INVALID_ARG. */
int version_apply(const version_t *base, const version_edit_t *e, version_t **out);

/* Approximate entries (every version, tombstones included) with user key
 * in [lo, hi) (NULL: no bound): files inside the range count whole, files
 * across a bound are estimated from their block index (no block read). */
uint64_t version_approx_entries(version_t *v, table_cache_t *tc, const slice_t *lo, const slice_t *hi);
/* Point lookup through the levels: level-1 files newest first (skipping
 * files whose key range excludes the key; the bloom filter gates only the
 * point probe), then each deeper level by binary search. In each file the
 * newest point entry and the newest covering range tombstone (both with
 * seq <= snap_seq) are found; the first file with either wins, and the
 * newer of the two is the answer. Returns 1 (found: *type, *seq, *value
 * set; deletions are hits too, a covering tombstone as KT_RANGE_DELETE with
 * its sequence and an empty value), 0 absent, <0 error. */
int version_get(version_t *v, table_cache_t *tc, slice_t user_key, uint64_t snap_seq, unsigned *type,
                uint64_t *seq, buf_t *value);

/* Append iterators covering v to the growable array (*its, *n, *cap): one
 * per level-1 file (newest first), then one lazy concatenating iterator per
 * deeper non-empty level (opens files through tc only when reached; holds a
 * version reference). On error nothing is appended. */
int version_add_iters(version_t *v, table_cache_t *tc, iter_t ***its, int *n, int *cap);

/* Append copies of the range tombstones with seq <= max_seq of every file
 * of v that has some (file_meta.num_range_deletes > 0; opened through tc). */
int version_range_dels(version_t *v, table_cache_t *tc, uint64_t max_seq, rd_list_t *out);

/* Lazy concatenating iterator over one level >= 2 of v (holds a version
 * reference). NULL on OOM. */
iter_t *version_level_iter(version_t *v, table_cache_t *tc, int level);
/* The reader of f: its pinned reader (borrowed while the caller holds a
 * reference to f or to a version holding it; *owned 0), pinning one
 * through tc on first use, or past tc's pin budget a table cache
 * reference the caller sst_reader_unref()s (*owned 1). */
int version_file_reader(table_cache_t *tc, const file_meta_t *f, sst_reader_t **out, int *owned);

#ifdef __cplusplus
}
#endif
#endif

/*
 * memtable/skiplist: a lock-free concurrent skip list of memtable entries,
 * allocated entirely from an arena.
 *
 * Entries. A node's entry is an opaque byte string that must begin with a
 * varint32 length followed by that many bytes of internal key (util/ikey.h);
 * whatever follows (the memtable puts the value there) is the owner's.
 * Nodes are ordered by ikey_compare on that key. Keys must be unique: the
 * list never holds two entries with equal internal keys (the caller
 * guarantees it; equal keys would be inserted in an unspecified order).
 *
 * Node layout (one arena allocation): next[h-1] ... next[1] next[0]
 * prev run_end entry. A node is identified by its entry pointer; run_end
 * lives just before it at ((atomic pointer *)entry)[-1], prev at [-2] and
 * the level-i link at [-3 - i]. h is random (1 + geometric with
 * p = 1/SKIPLIST_BRANCHING), at most SKIPLIST_MAX_HEIGHT.
 *
 * Predecessor hints. prev is the node most recently linked just before
 * this one on level 0 (set by whichever of the two links came last), so
 * outside a race it is the node's level-0 predecessor. It is always a node
 * < this one (or the head): nodes are never removed, so a node that once
 * preceded it still does. A level-0 walk from it therefore finds the
 * exact predecessor, or the place of a key just below the node, in about
 * one step (skiplist_prev, skiplist_insert_before).
 *
 * Runs. The versions of one user key are adjacent (newest first), and a
 * hot key's run grows with every update. run_end is a node of the same
 * user key at or after the node: the node itself, or, when it was linked
 * in front of a node of its user key (a newer version), that node's
 * run_end. Nodes are never removed or reordered, so it never points
 * outside the run; a version linked behind the run's end later (a
 * concurrent writer with a lower sequence) only makes it stop short of the
 * last node. A reader skips a run in O(1): jump to run_end, step on.
 *
 * Thread-safety and memory ordering
 *  - Any number of threads may insert concurrently, and any number may read
 *    concurrently with them; no locks are taken.
 *  - Insert finds, top-down, the predecessor and successor on every level
 *    (the "splice"; a caller may keep one across inserts, see
 *    skiplist_splice_t: then only the levels that no longer bracket the
 *    key are re-found), then links the node bottom-up: at each level it
 *    stores the node's successor (relaxed), then publishes it with a CAS
 *    (release) on the predecessor's link; on a lost race it re-finds the predecessor at that
 *    level (starting from the old one, still smaller: nodes are never
 *    removed) and retries.
 *  - Readers follow links with acquire loads, so everything written into a
 *    node (entry bytes, lower links) before it was published is visible to
 *    any reader that reaches it. Because linking is bottom-up, a node
 *    reachable at level i is already in the level-0 list.
 *  - A reader sees some subset of the concurrent inserts, always in order.
 *  - The list (and every node) lives until its arena is destroyed; entry
 *    pointers stay valid that long. Nothing is ever removed.
 */
#ifndef TDB_MEMTABLE_SKIPLIST_H
#define TDB_MEMTABLE_SKIPLIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "memtable/arena.h"
#include "util/slice.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SKIPLIST_MAX_HEIGHT 12
#define SKIPLIST_BRANCHING 4

typedef struct skiplist skiplist_t;

/* Create an empty list inside the arena (freed with it). NULL on OOM. */
skiplist_t *skiplist_create(arena_t *arena);

/* Allocate a node of random height with entry_size bytes of entry storage.
 * Returns the entry pointer to fill in, and the height for
 * skiplist_insert(); NULL on OOM. Thread-safe. */
char *skiplist_alloc(skiplist_t *s, size_t entry_size, int *height);

/* Link a filled node into the list. Thread-safe, lock-free. */
void skiplist_insert(skiplist_t *s, char *entry, int height);

/* Link a filled node just before succ, a linked node known to be greater
 * than it with nothing in between but, at most, nodes linked
 * concurrently (e.g. succ is the newest version of the entry's user key),
 * by a level-0 walk from succ's predecessor hint instead of a descent.
 * Only a node of height 1 can be linked so (the upper levels need the
 * descent); returns false, linking nothing, for any other height or when
 * the hint does not precede the entry (then call skiplist_insert). Correct
 * whatever lies between, only slower. Thread-safe like skiplist_insert. */
bool skiplist_insert_before(skiplist_t *s, char *entry, int height, const char *succ);

/* A splice ("finger"): for every level, the nodes that bracketed the last
 * key inserted through it. Inserting keys in ascending order through one
 * splice re-finds only the levels below the lowest one that still
 * brackets the new key, so close keys share most of the descent (a run
 * of appends at the tail costs O(1) comparisons each). Owned by one
 * thread at a time; zero it (then choose `climb`) before first use; holds pointers into the list,
 * so it must not outlive it. Any key order is correct, only slower. */
typedef struct skiplist_splice {
    const skiplist_t *list; /* list the splice belongs to; NULL = unused */
    int height;             /* levels valid: prev/next[0 .. height] */
    int climb;              /* 1: when level 0 does not bracket the key,
                             * climb to the lowest level that does (keys
                             * come sorted); 0: then descend from the top
                             * (keys are often unrelated: at most two
                             * extra comparisons, with nodes likely in
                             * cache, before a plain descent) */
    char *prev[SKIPLIST_MAX_HEIGHT + 1];
    char *next[SKIPLIST_MAX_HEIGHT + 1];
} skiplist_splice_t;

/* skiplist_insert using and updating a splice. Thread-safe like insert
 * (the splice itself is not shared). */
void skiplist_insert_splice(skiplist_t *s, char *entry, int height, skiplist_splice_t *sp);

/* Link n filled nodes whose keys are strictly ascending (entries[i] from
 * skiplist_alloc with height heights[i]). Same thread-safety and result as
 * n skiplist_insert calls, faster: the run is cut into up to
 * SKIPLIST_LANES lanes of at least SKIPLIST_LANE_MIN entries, each with its
 * own splice, and the lanes' descents advance in turn one node visit at a
 * time with the next node prefetched, so their cache misses overlap. */
#define SKIPLIST_LANES 8
#define SKIPLIST_LANE_MIN 32
void skiplist_insert_sorted(skiplist_t *s, char *const *entries, const int *heights, size_t n);

/* Navigation; each returns an entry pointer or NULL. A target is an
 * internal key split into its user key and its trailer
 * (seq << 8 | type). */
const char *skiplist_first(const skiplist_t *s);
const char *skiplist_last(const skiplist_t *s);
const char *skiplist_next(const char *entry);
/* A node of entry's user key at or after entry, usually the last of its
 * run (see "Runs" above); entry itself when none is known. */
const char *skiplist_run_end(const char *entry);
/* Start loading a node about to be visited: its level-0 link and run-end
 * slot and its entry's first entry_bytes bytes (a guess, e.g. the size of
 * the entry visited now; at least its first, at most TDB_PREFETCH_ENTRY_MAX
 * of util/prefetch.h). A hint: nothing is read. */
void skiplist_prefetch(const char *entry, size_t entry_bytes);
/* First entry >= target. */
const char *skiplist_seek(const skiplist_t *s, slice_t user, uint64_t trailer);
/* Last entry < entry (a linked node), from its predecessor hint. */
const char *skiplist_prev(const skiplist_t *s, const char *entry);
/* Last entry < target. */
const char *skiplist_seek_before(const skiplist_t *s, slice_t user, uint64_t trailer);

/* Approximate number of entries whose user key is in [lo, hi) (NULL: no
 * bound), read from the upper levels: exact below 64 entries, otherwise
 * within a small factor (each level-i node stands for BRANCHING^i). */
uint64_t skiplist_approx_count(const skiplist_t *s, const slice_t *lo, const slice_t *hi);

/* The internal key at the start of an entry; *rest (optional) is set to the
 * first byte after it. */
slice_t skiplist_entry_key(const char *entry, const char **rest);
/* Decode a varint32 length-prefixed byte string at p (as the memtable
 * stores values after the key). */
slice_t skiplist_entry_value(const char *p);

#ifdef __cplusplus
}
#endif
#endif

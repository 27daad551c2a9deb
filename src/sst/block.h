/*
 * sst/block: the sorted, prefix-compressed block used for SST data and
 * index blocks.
 *
 * Format (uncompressed):
 *   entry*   : varint32 shared | varint32 non_shared | varint32 value_len |
 *              key bytes [shared, shared + non_shared) | value
 *   restarts : fixed32 offset[num_restarts] | fixed32 num_restarts
 *
 * Invariants
 *  - A builder emits at least one restart (offset 0), starts a restart every
 *    `restart_interval` entries, and an entry at a restart point has
 *    shared == 0. Keys are added in strictly increasing order of the
 *    comparator the block will be read with (the caller checks this).
 *  - The reader trusts nothing: num_restarts, restart offsets and every
 *    entry length are bounds-checked against the block; a violation makes
 *    the iterator invalid with status TDB_ERR_CORRUPTION. It never reads
 *    outside [block.data, block.data + block.size).
 *  - A block iterator does not own the block bytes; they must outlive it.
 *    Keys of up to BLOCK_ITER_INLINE_KEY bytes are decoded without heap
 *    allocation. One thread at a time.
 */
#ifndef TDB_SST_BLOCK_H
#define TDB_SST_BLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "util/iter.h"
#include "util/slice.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct block_builder {
    buf_t buf;       /* entries so far (then the restart array once finished) */
    buf_t restarts;  /* fixed32 restart offsets */
    buf_t last_key;
    int interval;
    int counter;     /* entries since the last restart */
    uint32_t num_restarts;
    uint64_t num_entries;
    int finished;
} block_builder_t;

/* Initialize an empty builder (restart_interval >= 1). */
void block_builder_init(block_builder_t *b, int restart_interval);
/* Forget all entries, keeping the allocated memory. */
void block_builder_reset(block_builder_t *b);
void block_builder_free(block_builder_t *b);
/* Append an entry; key must be > the previous key. */
int block_builder_add(block_builder_t *b, slice_t key, slice_t value);
/* Size of the block if finished now. */
size_t block_builder_size(const block_builder_t *b);
static inline int block_builder_empty(const block_builder_t *b) { return b->num_entries == 0; }
static inline slice_t block_builder_last_key(const block_builder_t *b) { return buf_slice(&b->last_key); }
/* Append the restart array; *out is valid until the next reset. */
int block_builder_finish(block_builder_t *b, slice_t *out);

#define BLOCK_ITER_INLINE_KEY 128

typedef struct block_iter {
    const char *data;
    uint32_t restarts;     /* offset of the restart array = end of entries */
    uint32_t num_restarts;
    key_cmp_fn cmp;
    uint32_t cur;          /* offset of the current entry; >= restarts: invalid */
    uint32_t next;         /* offset just past the current entry */
    uint32_t restart_idx;  /* restart region holding cur */
    int status;
    slice_t value;
    char *key;             /* key_small or heap */
    size_t key_size, key_cap;
    char key_small[BLOCK_ITER_INLINE_KEY];
} block_iter_t;

/* Prepare an iterator (over no block yet) ordering keys by cmp. */
void block_iter_init(block_iter_t *it, key_cmp_fn cmp);
/* Release heap memory held by the iterator. */
void block_iter_free(block_iter_t *it);
/* Point the iterator at a block (unpositioned). Checks the restart array
 * header: TDB_OK or TDB_ERR_CORRUPTION (also left in status). */
int block_iter_set(block_iter_t *it, slice_t block);
/* Detach from any block: invalid, status TDB_OK. */
void block_iter_clear(block_iter_t *it);

static inline int block_iter_valid(const block_iter_t *it) {
    return it->status == 0 && it->cur < it->restarts;
}
static inline slice_t block_iter_key(const block_iter_t *it) { return slice_make(it->key, it->key_size); }
static inline slice_t block_iter_value(const block_iter_t *it) { return it->value; }
static inline int block_iter_status(const block_iter_t *it) { return it->status; }
static inline size_t block_iter_num_restarts(const block_iter_t *it) { return it->num_restarts; }

void block_iter_seek_to_first(block_iter_t *it);
void block_iter_seek_to_last(block_iter_t *it);
/* First entry with key >= target. */
void block_iter_seek(block_iter_t *it, slice_t target);
/* Prefetch hints for a block_iter_seek(target) coming next, for callers
 * that interleave several seeks: stage 0 hints the restart keys the binary
 * search will read; stage 1 runs that search and hints the entries the
 * scan will read. Returns nonzero if a stage remains. Changes nothing. */
int block_iter_prefetch_seek(const block_iter_t *it, slice_t target, int stage);
void block_iter_next(block_iter_t *it);
void block_iter_prev(block_iter_t *it);

#ifdef __cplusplus
}
#endif
#endif

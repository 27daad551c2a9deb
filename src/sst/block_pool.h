/*
 * sst/block_pool: recycles the buffers of decoded blocks.
 *
 * A block read on a cache miss is allocated by the reading thread and, once
 * evicted, freed by whichever thread's insert evicted it. Through malloc
 * that is a cross-thread free (the owner arena's lock) and, as arenas shrink
 * and grow again, mprotect calls and page faults on every miss: at 10M keys
 * it was a fifth of a random-seek profile. Worse, inside a server the cached
 * blocks are long-lived small allocations scattered over every thread's
 * malloc arena, between the server's own large temporary buffers: freed
 * memory around them cannot go back to the system, and a MariaDB server
 * running TPC-C's consistency check four times grew by 370 MiB of which
 * 210 MiB was free-but-resident malloc memory (InnoDB's: flat after the
 * first run). So the pool carves buffers from slabs of its own, which no
 * other allocation shares.
 *
 * Invariants
 *  - Buffers come in size classes of POOL_CLASS_BYTES (512) up to
 *    POOL_MAX_BYTES; larger requests go straight to the allocator, rounded
 *    up to 64. Every buffer starts on a 64-byte boundary. (64-byte classes
 *    would charge a 4 KiB block 4.2 KiB instead of 4.5 KiB, but spread
 *    blocks over several classes, so an evicted buffer seldom fitted the
 *    next miss: a 10M-key sequential read fell from 5.4M to 3.9M entries/s.)
 *  - A buffer's capacity (returned by block_pool_get) is its class size, and
 *    block_pool_put must be given that same capacity.
 *  - Pooled buffers live in 1 MiB slabs (mmap, 1 MiB-aligned), one class per
 *    slab. A freed buffer stays in its slab for the next get of its class;
 *    a slab whose buffers are all free is unmapped unless fewer than
 *    POOL_KEEP_BYTES (8 MiB) of such empty slabs are kept. So the pool's
 *    memory is what is in use (the block cache's capacity and the blocks
 *    iterators hold), its classes' partly used slabs, and at most 8 MiB.
 *  - The pool is process-wide (shared by every database) and thread-safe:
 *    one mutex per class.
 *  - Under AddressSanitizer nothing is pooled (every buffer goes back to
 *    free, so a use after eviction is still caught); capacities are the
 *    same size classes.
 */
#ifndef TDB_SST_BLOCK_POOL_H
#define TDB_SST_BLOCK_POOL_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A buffer of at least n bytes (n > 0); *cap receives its capacity.
 * NULL when out of memory. */
void *block_pool_get(size_t n, size_t *cap);
/* Give back a buffer from block_pool_get with its capacity (NULL: no-op). */
void block_pool_put(void *p, size_t cap);

typedef struct block_pool_stats {
    size_t kept_bytes;  /* in free buffers now (slabs' buffers never handed out not counted) */
    size_t slab_bytes;  /* slabs mapped now */
    unsigned long long reused, allocated, freed; /* freed: buffers given back to the system */
} block_pool_stats_t;
void block_pool_stats(block_pool_stats_t *out);

#ifdef __cplusplus
}
#endif
#endif

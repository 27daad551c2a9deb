/*
 * memtable/arena: a concurrent bump allocator carved out of large blocks.
 *
 * Invariants
 *  - Memory handed out is never freed or moved until arena_destroy(); every
 *    pointer returned by arena_alloc() stays valid (and its bytes
 *    untouched by the arena) for the arena's whole life.
 *  - arena_alloc() is thread-safe and lock-free on its fast path (an atomic
 *    fetch-add on the current block's offset); a mutex is taken only to add
 *    a block. Results are 8-byte aligned. Allocations larger than a quarter
 *    of the block size get a dedicated block of their own.
 *  - Blocks grow geometrically from ARENA_MIN_BLOCK up to block_size, so a
 *    small or empty arena stays small.
 *  - arena_memory_usage() counts the bytes of every block reserved so far
 *    (monotonic); it may be read concurrently with allocations.
 *  - arena_destroy() must not race with any other call on the arena.
 */
#ifndef TDB_MEMTABLE_ARENA_H
#define TDB_MEMTABLE_ARENA_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ARENA_MIN_BLOCK 4096
/* Blocks of this total size (ARENA_HUGE_USABLE usable bytes) are aligned
 * to it and advised as transparent huge pages (2 MiB on x86-64). */
#define ARENA_HUGE_BLOCK ((size_t)2 << 20)
#define ARENA_HUGE_USABLE (ARENA_HUGE_BLOCK - 24)

typedef struct arena arena_t;

/* Create an arena whose blocks are at most block_size bytes (clamped to at
 * least ARENA_MIN_BLOCK). NULL on OOM. */
arena_t *arena_create(size_t block_size);
/* n bytes (n == 0 is treated as 1), 8-byte aligned; NULL on OOM.
 * Thread-safe. */
void *arena_alloc(arena_t *a, size_t n);
/* Bytes reserved in blocks so far. */
size_t arena_memory_usage(const arena_t *a);
/* Free every block. No other call may run concurrently. */
void arena_destroy(arena_t *a);
/* A zeroed, ARENA_HUGE_BLOCK-aligned mapping of ARENA_HUGE_BLOCK bytes
 * advised as a transparent huge page (one page fault instead of 512 when
 * the kernel grants it), NULL on failure; arena_unmap_huge frees it (NULL
 * is ignored). Also used outside arenas (the memtable's point index). */
void *arena_map_huge(void);
void arena_unmap_huge(void *p);

#ifdef __cplusplus
}
#endif
#endif

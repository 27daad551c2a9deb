/*
 * memtable/arena: concurrent bump allocation in blocks (see arena.h).
 *
 * Memory ordering: a new block's header is written, then published with a
 * release store to `cur`; allocators load `cur` with acquire, so they see
 * an initialised `used` and `size`. `used` itself only needs relaxed
 * fetch-adds: each caller gets a disjoint range [off, off + n). A failed
 * fetch-add (past the end) wastes the block's tail, never memory of
 * another caller. `blocks` and `next_size` are touched only under `mu`.
 */
#include "memtable/arena.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

typedef struct arena_block {
    struct arena_block *next; /* all blocks, for destroy (under mu) */
    size_t size;              /* usable bytes after the header */
    _Atomic size_t used;      /* bump offset; may exceed size once full */
} arena_block_t;

/* Blocks at least this large are mapped from the kernel and unmapped at
 * destroy, not taken from malloc: a memtable is freed by another thread
 * than the ones that filled it, and malloc would keep its freed blocks in
 * the filling threads' heaps (resident, and fragmented) instead of
 * returning them. */
#define ARENA_MAP_MIN ((size_t)128 << 10)

_Static_assert(sizeof(arena_block_t) % 8 == 0, "block data must be 8-aligned");
_Static_assert(sizeof(arena_block_t) + ARENA_HUGE_USABLE == ARENA_HUGE_BLOCK, "a huge block is one aligned huge page");

struct arena {
    _Atomic(arena_block_t *) cur; /* block being carved, NULL before first */
    _Atomic size_t usage;         /* bytes reserved in blocks */
    pthread_mutex_t mu;           /* guards blocks, next_size, block creation */
    arena_block_t *blocks;
    size_t next_size; /* size of the next shared block */
    size_t max_size;  /* block_size */
};

/* Create an empty arena; blocks are allocated on demand. */
arena_t *arena_create(size_t block_size) {
    arena_t *a = (arena_t *)malloc(sizeof *a);
    if (!a) return NULL;
    if (pthread_mutex_init(&a->mu, NULL) != 0) {
        free(a);
        return NULL;
    }
    if (block_size < ARENA_MIN_BLOCK) block_size = ARENA_MIN_BLOCK;
    block_size = (block_size + 7) & ~(size_t)7;
    atomic_init(&a->cur, NULL);
    atomic_init(&a->usage, 0);
    a->blocks = NULL;
    a->next_size = ARENA_MIN_BLOCK;
    a->max_size = block_size;
    return a;
}

/* A zeroed mapping of ARENA_HUGE_BLOCK bytes aligned to its size and
 * offered to the kernel for a transparent huge page (see arena.h). */
void *arena_map_huge(void) {
    /* Map twice the size and keep the aligned half. */
    char *p = (char *)mmap(NULL, 2 * ARENA_HUGE_BLOCK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return NULL;
    char *a = (char *)(((uintptr_t)p + ARENA_HUGE_BLOCK - 1) & ~(uintptr_t)(ARENA_HUGE_BLOCK - 1));
    if (a > p) munmap(p, (size_t)(a - p));
    if (a + ARENA_HUGE_BLOCK < p + 2 * ARENA_HUGE_BLOCK)
        munmap(a + ARENA_HUGE_BLOCK, (size_t)(p + 2 * ARENA_HUGE_BLOCK - (a + ARENA_HUGE_BLOCK)));
#ifdef MADV_HUGEPAGE
    (void)madvise(a, ARENA_HUGE_BLOCK, MADV_HUGEPAGE); /* a hint: failure is harmless */
#endif
    return a;
}

void arena_unmap_huge(void *p) {
    if (p) munmap(p, ARENA_HUGE_BLOCK);
}

/* Allocate a block of `size` usable bytes and link it (caller holds mu).
 * A block of exactly ARENA_HUGE_BLOCK bytes (header included) is aligned to
 * its size and offered to the kernel for a transparent huge page: a large
 * memtable's random inserts and seeks then miss the TLB far less. */
static arena_block_t *arena_new_block(arena_t *a, size_t size) {
    if (size > SIZE_MAX - sizeof(arena_block_t)) return NULL;
    arena_block_t *b = NULL;
    size_t total = sizeof(arena_block_t) + size;
    if (total == ARENA_HUGE_BLOCK) {
        b = (arena_block_t *)arena_map_huge();
    } else if (total >= ARENA_MAP_MIN) {
        void *p = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        b = p == MAP_FAILED ? NULL : (arena_block_t *)p;
    } else {
        b = (arena_block_t *)malloc(total);
    }
    if (!b) return NULL;
    b->size = size;
    atomic_init(&b->used, 0);
    b->next = a->blocks;
    a->blocks = b;
    atomic_fetch_add_explicit(&a->usage, sizeof(arena_block_t) + size, memory_order_relaxed);
    return b;
}

/* An allocation too large to share a block: give it a block of its own. */
static void *arena_alloc_large(arena_t *a, size_t n) {
    pthread_mutex_lock(&a->mu);
    arena_block_t *b = arena_new_block(a, n);
    pthread_mutex_unlock(&a->mu);
    if (!b) return NULL;
    atomic_store_explicit(&b->used, n, memory_order_relaxed);
    return (char *)(b + 1);
}

/* Bump-allocate n bytes, 8-aligned; adds a block when the current is full. */
void *arena_alloc(arena_t *a, size_t n) {
    if (n > SIZE_MAX - 8) return NULL;
    n = n ? (n + 7) & ~(size_t)7 : 8;
    if (n > a->max_size / 4) return arena_alloc_large(a, n);
    for (;;) {
        arena_block_t *b = atomic_load_explicit(&a->cur, memory_order_acquire);
        if (b) {
            size_t off = atomic_fetch_add_explicit(&b->used, n, memory_order_relaxed);
            if (off <= b->size && n <= b->size - off) return (char *)(b + 1) + off;
        }
        /* Full (or no block yet): the first thread to get here installs a
         * new block; the others find `cur` changed and retry. */
        pthread_mutex_lock(&a->mu);
        if (atomic_load_explicit(&a->cur, memory_order_relaxed) == b) {
            size_t size = a->next_size;
            while (size < n) size *= 2;
            arena_block_t *nb = arena_new_block(a, size);
            if (!nb) {
                pthread_mutex_unlock(&a->mu);
                return NULL;
            }
            if (a->next_size < a->max_size) {
                a->next_size *= 2;
                if (a->next_size > a->max_size) a->next_size = a->max_size;
            }
            atomic_store_explicit(&a->cur, nb, memory_order_release);
        }
        pthread_mutex_unlock(&a->mu);
    }
}

/* Bytes reserved in blocks (headers included). */
size_t arena_memory_usage(const arena_t *a) {
    return atomic_load_explicit(&((arena_t *)a)->usage, memory_order_relaxed);
}

/* Free every block and the arena. */
void arena_destroy(arena_t *a) {
    if (!a) return;
    arena_block_t *b = a->blocks;
    while (b) {
        arena_block_t *next = b->next;
        size_t total = sizeof(arena_block_t) + b->size;
        if (total >= ARENA_MAP_MIN) munmap(b, total);
        else free(b);
        b = next;
    }
    pthread_mutex_destroy(&a->mu);
    free(a);
}

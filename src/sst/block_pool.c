/*
 * sst/block_pool: size-classed free lists of decoded-block buffers
 * (invariants in block_pool.h).
 */
#include "sst/block_pool.h"

#include "util/mutex.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>

#define POOL_CLASS_BYTES 512u
#define POOL_MAX_BYTES (64u << 10)
#define POOL_CLASSES (POOL_MAX_BYTES / POOL_CLASS_BYTES)
#define POOL_KEEP_BYTES ((size_t)8 << 20)
#define POOL_ALIGN 64u /* buffers start on a cache line */

/* Under AddressSanitizer every buffer goes back to free(), so a use after
 * eviction is still caught. */
#if defined(__SANITIZE_ADDRESS__)
#define POOL_ENABLED 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define POOL_ENABLED 0
#endif
#endif
#ifndef POOL_ENABLED
#define POOL_ENABLED 1
#endif

typedef struct free_buf {
    struct free_buf *next;
} free_buf_t;

typedef struct pool_class {
    pthread_mutex_t mu;
    free_buf_t *head;
    char pad[64 - sizeof(pthread_mutex_t) % 64];
} pool_class_t;

static pool_class_t g_classes[POOL_CLASSES];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Atomic size_t g_kept;
static _Atomic unsigned long long g_reused, g_allocated, g_freed;

static void pool_init(void) {
    for (size_t i = 0; i < POOL_CLASSES; i++) tdb_mutex_init_short(&g_classes[i].mu);
}

/* Class index of a capacity (cap a multiple of POOL_CLASS_BYTES). */
static inline size_t class_of(size_t cap) { return cap / POOL_CLASS_BYTES - 1; }

void *block_pool_get(size_t n, size_t *cap) {
    if (n == 0) n = 1;
    size_t unit = n > POOL_MAX_BYTES ? POOL_ALIGN : POOL_CLASS_BYTES; /* beyond the classes: not pooled */
    size_t c = (n + unit - 1) / unit * unit;
    *cap = c;
    pthread_once(&g_once, pool_init);
    if (POOL_ENABLED && n <= POOL_MAX_BYTES && atomic_load_explicit(&g_kept, memory_order_relaxed) >= c) {
        pool_class_t *k = &g_classes[class_of(c)];
        pthread_mutex_lock(&k->mu);
        free_buf_t *b = k->head;
        if (b) k->head = b->next;
        pthread_mutex_unlock(&k->mu);
        if (b) {
            atomic_fetch_sub_explicit(&g_kept, c, memory_order_relaxed);
            atomic_fetch_add_explicit(&g_reused, 1, memory_order_relaxed);
            return b;
        }
    }
    atomic_fetch_add_explicit(&g_allocated, 1, memory_order_relaxed);
    return aligned_alloc(POOL_ALIGN, c);
}

void block_pool_put(void *p, size_t cap) {
    if (!p) return;
    bool keep = POOL_ENABLED && cap <= POOL_MAX_BYTES && cap % POOL_CLASS_BYTES == 0;
    /* Count it kept first, so a get never subtracts what was not added. */
    if (keep && atomic_fetch_add_explicit(&g_kept, cap, memory_order_relaxed) + cap > POOL_KEEP_BYTES) {
        atomic_fetch_sub_explicit(&g_kept, cap, memory_order_relaxed);
        keep = false;
    }
    if (!keep) {
        atomic_fetch_add_explicit(&g_freed, 1, memory_order_relaxed);
        free(p);
        return;
    }
    pool_class_t *k = &g_classes[class_of(cap)];
    pthread_once(&g_once, pool_init); /* a buffer from get: already done */
    free_buf_t *b = (free_buf_t *)p;
    pthread_mutex_lock(&k->mu);
    b->next = k->head;
    k->head = b;
    pthread_mutex_unlock(&k->mu);
}

void block_pool_stats(block_pool_stats_t *out) {
    out->kept_bytes = atomic_load_explicit(&g_kept, memory_order_relaxed);
    out->reused = atomic_load_explicit(&g_reused, memory_order_relaxed);
    out->allocated = atomic_load_explicit(&g_allocated, memory_order_relaxed);
    out->freed = atomic_load_explicit(&g_freed, memory_order_relaxed);
}

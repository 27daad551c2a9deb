/*
 * sst/block_pool: decoded-block buffers carved from slabs of their own
 * (invariants in block_pool.h).
 *
 * A slab is SLAB_BYTES of anonymous memory on a SLAB_BYTES boundary, so a
 * buffer finds its slab by masking its address. The slab's first
 * SLAB_HEADER bytes hold its header; buffers of one class follow. A class
 * keeps a list of its slabs that have a buffer to give (freed or never
 * carved); full slabs are on no list and rejoin it at the tail when a
 * buffer comes back, so gets drain the older, fuller slabs first.
 */
#include "sst/block_pool.h"

#include "util/mutex.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#define POOL_CLASS_BYTES 512u
#define POOL_MAX_BYTES (64u << 10)
#define POOL_CLASSES (POOL_MAX_BYTES / POOL_CLASS_BYTES)
#define POOL_KEEP_BYTES ((size_t)8 << 20) /* empty slabs kept mapped */
#define POOL_ALIGN 64u                    /* buffers start on a cache line */
#define SLAB_BYTES ((size_t)1 << 20)
#define SLAB_HEADER POOL_CLASS_BYTES

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

typedef struct slab {
    struct slab *prev, *next; /* on its class's list while it has a buffer to give */
    free_buf_t *free;         /* buffers given back */
    uint32_t cap;             /* every buffer's capacity: the class size */
    uint32_t total;           /* buffers that fit */
    uint32_t carved;          /* buffers handed out at least once */
    uint32_t live;            /* buffers handed out now */
    bool listed;
    bool idle; /* live == 0 and counted in g_idle_bytes */
} slab_t;

_Static_assert(sizeof(slab_t) <= SLAB_HEADER, "slab header must fit before the first buffer");

typedef struct pool_class {
    pthread_mutex_t mu;
    slab_t *head, *tail; /* slabs with a buffer to give */
    char pad[64 - (sizeof(pthread_mutex_t) + 2 * sizeof(void *)) % 64];
} pool_class_t;

static pool_class_t g_classes[POOL_CLASSES];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static _Atomic size_t g_kept, g_idle_bytes, g_slab_bytes;
static _Atomic unsigned long long g_reused, g_allocated, g_freed;

static void pool_init(void) {
    for (size_t i = 0; i < POOL_CLASSES; i++) tdb_mutex_init_short(&g_classes[i].mu);
}

/* Class index of a capacity (cap a multiple of POOL_CLASS_BYTES). */
static inline size_t class_of(size_t cap) { return cap / POOL_CLASS_BYTES - 1; }

static inline slab_t *slab_of(void *p) { return (slab_t *)((uintptr_t)p & ~(uintptr_t)(SLAB_BYTES - 1)); }

static void list_append(pool_class_t *k, slab_t *s) {
    s->prev = k->tail;
    s->next = NULL;
    if (k->tail) k->tail->next = s;
    else k->head = s;
    k->tail = s;
    s->listed = true;
}

static void list_remove(pool_class_t *k, slab_t *s) {
    if (s->prev) s->prev->next = s->next;
    else k->head = s->next;
    if (s->next) s->next->prev = s->prev;
    else k->tail = s->prev;
    s->prev = s->next = NULL;
    s->listed = false;
}

/* A new slab for buffers of capacity cap: SLAB_BYTES mapped on a SLAB_BYTES
 * boundary (twice the size mapped, the excess unmapped). NULL when out of
 * memory. */
static slab_t *slab_new(size_t cap) {
    char *m = (char *)mmap(NULL, 2 * SLAB_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    char *a = (char *)(((uintptr_t)m + SLAB_BYTES - 1) & ~(uintptr_t)(SLAB_BYTES - 1));
    if (a > m) munmap(m, (size_t)(a - m));
    if (a + SLAB_BYTES < m + 2 * SLAB_BYTES) munmap(a + SLAB_BYTES, (size_t)(m + 2 * SLAB_BYTES - (a + SLAB_BYTES)));
    slab_t *s = (slab_t *)a; /* fresh anonymous memory: zeroed */
    s->cap = (uint32_t)cap;
    s->total = (uint32_t)((SLAB_BYTES - SLAB_HEADER) / cap);
    atomic_fetch_add_explicit(&g_slab_bytes, SLAB_BYTES, memory_order_relaxed);
    return s;
}

static void slab_unmap(slab_t *s) {
    munmap(s, SLAB_BYTES);
    atomic_fetch_sub_explicit(&g_slab_bytes, SLAB_BYTES, memory_order_relaxed);
}

/* A buffer from the first listed slab of k (k->mu held, k->head set). */
static void *take(pool_class_t *k) {
    slab_t *s = k->head;
    void *p;
    if (s->free) {
        free_buf_t *b = s->free;
        s->free = b->next;
        p = b;
        atomic_fetch_sub_explicit(&g_kept, s->cap, memory_order_relaxed);
        atomic_fetch_add_explicit(&g_reused, 1, memory_order_relaxed);
    } else {
        p = (char *)s + SLAB_HEADER + (size_t)s->carved++ * s->cap;
        atomic_fetch_add_explicit(&g_allocated, 1, memory_order_relaxed);
    }
    if (s->idle) {
        s->idle = false;
        atomic_fetch_sub_explicit(&g_idle_bytes, SLAB_BYTES, memory_order_relaxed);
    }
    s->live++;
    if (!s->free && s->carved == s->total) list_remove(k, s);
    return p;
}

void *block_pool_get(size_t n, size_t *cap) {
    if (n == 0) n = 1;
    size_t unit = n > POOL_MAX_BYTES ? POOL_ALIGN : POOL_CLASS_BYTES; /* beyond the classes: not pooled */
    size_t c = (n + unit - 1) / unit * unit;
    *cap = c;
    if (!POOL_ENABLED || n > POOL_MAX_BYTES) {
        atomic_fetch_add_explicit(&g_allocated, 1, memory_order_relaxed);
        return aligned_alloc(POOL_ALIGN, c);
    }
    pthread_once(&g_once, pool_init);
    pool_class_t *k = &g_classes[class_of(c)];
    pthread_mutex_lock(&k->mu);
    if (!k->head) {
        pthread_mutex_unlock(&k->mu); /* map outside the lock */
        slab_t *s = slab_new(c);
        if (!s) return NULL;
        pthread_mutex_lock(&k->mu);
        list_append(k, s); /* behind any slab a buffer came back to meanwhile */
    }
    void *p = take(k);
    pthread_mutex_unlock(&k->mu);
    return p;
}

void block_pool_put(void *p, size_t cap) {
    if (!p) return;
    if (!POOL_ENABLED || cap > POOL_MAX_BYTES || cap % POOL_CLASS_BYTES != 0) {
        atomic_fetch_add_explicit(&g_freed, 1, memory_order_relaxed);
        free(p);
        return;
    }
    slab_t *s = slab_of(p), *gone = NULL;
    pool_class_t *k = &g_classes[class_of(cap)];
    pthread_mutex_lock(&k->mu);
    free_buf_t *b = (free_buf_t *)p;
    b->next = s->free;
    s->free = b;
    atomic_fetch_add_explicit(&g_kept, cap, memory_order_relaxed);
    if (!s->listed) list_append(k, s);
    if (--s->live == 0) {
        if (atomic_load_explicit(&g_idle_bytes, memory_order_relaxed) + SLAB_BYTES <= POOL_KEEP_BYTES) {
            s->idle = true;
            atomic_fetch_add_explicit(&g_idle_bytes, SLAB_BYTES, memory_order_relaxed);
        } else {
            list_remove(k, s);
            atomic_fetch_sub_explicit(&g_kept, (size_t)s->carved * s->cap, memory_order_relaxed);
            atomic_fetch_add_explicit(&g_freed, s->carved, memory_order_relaxed);
            gone = s;
        }
    }
    pthread_mutex_unlock(&k->mu);
    if (gone) slab_unmap(gone);
}

void block_pool_stats(block_pool_stats_t *out) {
    out->kept_bytes = atomic_load_explicit(&g_kept, memory_order_relaxed);
    out->slab_bytes = atomic_load_explicit(&g_slab_bytes, memory_order_relaxed);
    out->reused = atomic_load_explicit(&g_reused, memory_order_relaxed);
    out->allocated = atomic_load_explicit(&g_allocated, memory_order_relaxed);
    out->freed = atomic_load_explicit(&g_freed, memory_order_relaxed);
}

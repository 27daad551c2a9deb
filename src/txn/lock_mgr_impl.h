/*
 * txn/lock_mgr_impl.h: the lock manager's data, shared by its files
 * (lock_mgr.c: acquiring, waiting, releasing; lock_mgr_info.c: counters
 * and the list of waits). Private to them; locking rules in lock_mgr.h,
 * the data's owners in lock_mgr.c's header.
 */
#ifndef TDB_TXN_LOCK_MGR_IMPL_H
#define TDB_TXN_LOCK_MGR_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "txn/lock_mgr.h"

#define LM_STRIPE_BITS 6
#define LM_STRIPES (1u << LM_STRIPE_BITS)
#define LM_MIN_BUCKETS 16

typedef struct lk_head lk_head_t;

typedef struct lk_grant {
    lock_owner_t *owner;
    lk_head_t *head;
    struct lk_grant *prev, *next; /* the head's holders list */
    int excl;
    uint64_t rid; /* range locks: the owner's number for it (from 1) */
} lk_grant_t;

typedef struct lk_wait {
    lock_owner_t *owner;
    lk_head_t *head;              /* queued on; NULL when not queued (graph) */
    struct lk_wait *prev, *next;  /* queue links (graph + stripe) */
    lk_grant_t *upgrade;          /* held shared grant to make exclusive */
    lk_grant_t *fresh;            /* new grant to link when granted */
    int excl;                     /* mode asked */
    int pass;                     /* a writer waiting for a range lock to go */
    uint32_t pcf;                 /* pass: the key it is writing (caller's */
    slice_t pkey;                 /*   buffer, set before it queues) */
    int granted;                  /* set by the granter (stripe + owner mu) */
} lk_wait_t;

struct lk_head {
    lk_head_t *hnext; /* bucket chain; for a range head, the range list */
    lk_head_t *rprev; /* range heads: previous in the range list */
    uint64_t hash;
    uint32_t cf_id;
    size_t klen;
    /* Range heads (range = 1): rb holds lo (klen bytes) then hi (hilen
     * bytes), replaced when the range is narrowed (under rs.mu); key[] is
     * empty. The one holder is the owner of the range lock. */
    int range, hi_inf, hi_incl;
    size_t hilen;
    char *rb;
    lk_grant_t *holders;
    size_t nholders;
    int nexcl;              /* exclusive holders: 0 or 1 (then nholders == 1) */
    lk_wait_t *qfirst, *qlast;
    char key[];
};

typedef struct lk_stripe {
    pthread_mutex_t mu;
    lk_head_t **buckets;
    size_t nbuckets; /* power of two */
    size_t count;
} __attribute__((aligned(64))) lk_stripe_t;

typedef struct lk_rec {
    lk_grant_t *g;
    int upgrade; /* 0: g was created (new lock); 1: g was upgraded */
} lk_rec_t;

struct lock_mgr {
    lk_stripe_t stripes[LM_STRIPES];
    /* Range locks: a list of range heads (ranges) under rs.mu (rs is used
     * as the stripe of every range head); nranges counts them, read
     * without a lock on the write path (see lock_acquire). */
    lk_stripe_t rs;
    lk_head_t *ranges;
    _Atomic size_t nranges;
    _Atomic uint64_t range_locks, range_waits;
    pthread_mutex_t graph_mu;
    /* Under graph_mu: DFS epoch and stack. */
    uint64_t epoch;
    lock_owner_t **stack;
    size_t stack_cap;
    _Atomic uint64_t acquired, waits, deadlocks, timeouts, cancelled, held;
    _Atomic uint64_t wait_us, wait_max_us; /* time queued (every wait, however it ended) */
    _Atomic long owners;
    /* Under graph_mu: the wait hook (lock_mgr_set_wait_hook). */
    tdb_lock_wait_hook_fn hook;
    void *hook_ctx;
};

struct lock_owner {
    lock_mgr_t *m;
    uint64_t txn_id;
    pthread_mutex_t mu; /* guards cancel, wait.granted; cv's mutex */
    pthread_cond_t cv;
    int cancel;
    lk_wait_t wait;
    uint64_t visit; /* DFS epoch (graph_mu) */
    _Atomic(void *) user; /* the embedder's pointer, for the wait hook */
    /* Owner thread only. */
    uint64_t next_rid; /* range locks taken so far */
    lk_rec_t *log;
    size_t nlog, caplog;
    size_t nheld;
};

#define STAT_ADD(m, f, d) atomic_fetch_add_explicit(&(m)->f, (d), memory_order_relaxed)

#endif

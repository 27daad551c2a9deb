/*
 * txn/lock_mgr: row locks with FIFO queues and wait-for-graph deadlock
 * detection (invariants, lock order and wake-up rules in lock_mgr.h).
 *
 * Data
 *  - lk_head_t: one per locked (cf_id, key): holders list, FIFO queue of
 *    lk_wait_t (embedded in owners). Guarded by its stripe mutex, and also
 *    by the graph mutex while its queue is non-empty.
 *  - lk_grant_t: one owner's hold on one head (malloc'd by the requester
 *    before it can be granted, so hand-off never allocates).
 *  - lock_owner_t: the acquisition log (owner thread only), the embedded
 *    wait entry, and mutex/cond/cancel for waking.
 * Statistics are relaxed atomics: counters only, they order nothing.
 */
#include "txn/lock_mgr.h"
#include "txn/lock_mgr_impl.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "util/checksum.h"
#include "util/error.h"


/* ------------------------------------------------------------------ */
/* Manager and stripes                                                 */
/* ------------------------------------------------------------------ */

/* Create a manager with LM_STRIPES empty stripes. */
lock_mgr_t *lock_mgr_create(void) {
    lock_mgr_t *m = (lock_mgr_t *)aligned_alloc(64, (sizeof(lock_mgr_t) + 63) & ~(size_t)63);
    if (!m) return NULL;
    memset(m, 0, sizeof *m);
    unsigned i = 0;
    for (; i < LM_STRIPES; i++) {
        lk_stripe_t *s = &m->stripes[i];
        s->buckets = (lk_head_t **)calloc(LM_MIN_BUCKETS, sizeof *s->buckets);
        if (!s->buckets) goto fail;
        if (pthread_mutex_init(&s->mu, NULL) != 0) {
            free(s->buckets);
            goto fail;
        }
        s->nbuckets = LM_MIN_BUCKETS;
    }
    if (pthread_mutex_init(&m->rs.mu, NULL) != 0) goto fail;
    if (pthread_mutex_init(&m->graph_mu, NULL) != 0) {
        pthread_mutex_destroy(&m->rs.mu);
        goto fail;
    }
    atomic_init(&m->nranges, 0);
    atomic_init(&m->range_locks, 0);
    atomic_init(&m->range_waits, 0);
    atomic_init(&m->acquired, 0);
    atomic_init(&m->waits, 0);
    atomic_init(&m->wait_us, 0);
    atomic_init(&m->wait_max_us, 0);
    atomic_init(&m->deadlocks, 0);
    atomic_init(&m->timeouts, 0);
    atomic_init(&m->cancelled, 0);
    atomic_init(&m->held, 0);
    atomic_init(&m->owners, 0);
    return m;
fail:
    while (i-- > 0) {
        pthread_mutex_destroy(&m->stripes[i].mu);
        free(m->stripes[i].buckets);
    }
    free(m);
    return NULL;
}

/* Free the manager and any (leaked) heads. */
void lock_mgr_destroy(lock_mgr_t *m) {
    if (!m) return;
    for (unsigned i = 0; i < LM_STRIPES; i++) {
        lk_stripe_t *s = &m->stripes[i];
        for (size_t b = 0; b < s->nbuckets; b++) {
            lk_head_t *h = s->buckets[b];
            while (h) {
                lk_head_t *n = h->hnext;
                free(h);
                h = n;
            }
        }
        free(s->buckets);
        pthread_mutex_destroy(&s->mu);
    }
    while (m->ranges) {
        lk_head_t *n = m->ranges->hnext;
        free(m->ranges->rb);
        free(m->ranges);
        m->ranges = n;
    }
    pthread_mutex_destroy(&m->rs.mu);
    pthread_mutex_destroy(&m->graph_mu);
    free(m->stack);
    free(m);
}

/* Hash of (cf_id, key). */
static uint64_t lk_hash(uint32_t cf_id, slice_t key) {
    return tdb_hash64(key.data, key.size, 0x9e3779b97f4a7c15ull ^ ((uint64_t)cf_id * 0xff51afd7ed558ccdull));
}

/* The stripe of a hash (top bits; buckets use the low bits). */
static lk_stripe_t *lk_stripe(lock_mgr_t *m, uint64_t hash) { return &m->stripes[hash >> (64 - LM_STRIPE_BITS)]; }

/* Find the head of (cf_id, key) in s (caller holds s->mu), or NULL. */
static lk_head_t *lk_find(lk_stripe_t *s, uint64_t hash, uint32_t cf_id, slice_t key) {
    for (lk_head_t *h = s->buckets[hash & (s->nbuckets - 1)]; h; h = h->hnext) {
        if (h->hash == hash && h->cf_id == cf_id && h->klen == key.size &&
            (key.size == 0 || memcmp(h->key, key.data, key.size) == 0))
            return h;
    }
    return NULL;
}

/* Double s's bucket array when it is loaded; failure just keeps chains
 * longer. Caller holds s->mu. */
static void lk_maybe_grow(lk_stripe_t *s) {
    if (s->count <= s->nbuckets * 2) return;
    size_t nb = s->nbuckets * 2;
    lk_head_t **nbk = (lk_head_t **)calloc(nb, sizeof *nbk);
    if (!nbk) return;
    for (size_t b = 0; b < s->nbuckets; b++) {
        lk_head_t *h = s->buckets[b];
        while (h) {
            lk_head_t *n = h->hnext;
            size_t i = h->hash & (nb - 1);
            h->hnext = nbk[i];
            nbk[i] = h;
            h = n;
        }
    }
    free(s->buckets);
    s->buckets = nbk;
    s->nbuckets = nb;
}

/* Create and insert an empty head (caller holds s->mu); NULL on OOM. */
static lk_head_t *lk_head_new(lk_stripe_t *s, uint64_t hash, uint32_t cf_id, slice_t key) {
    lk_head_t *h = (lk_head_t *)malloc(sizeof *h + key.size);
    if (!h) return NULL;
    memset(h, 0, sizeof *h);
    h->hash = hash;
    h->cf_id = cf_id;
    h->klen = key.size;
    if (key.size) memcpy(h->key, key.data, key.size);
    size_t i = hash & (s->nbuckets - 1);
    h->hnext = s->buckets[i];
    s->buckets[i] = h;
    s->count++;
    lk_maybe_grow(s);
    return h;
}

/* The stripe whose mutex guards h. */
static lk_stripe_t *lk_head_stripe(lock_mgr_t *m, const lk_head_t *h) {
    return h->range ? &m->rs : lk_stripe(m, h->hash);
}

/* Unlink and free h if it has no holders and no waiters (caller holds the
 * mutex of its stripe, lk_head_stripe). */
static void lk_head_maybe_free(lock_mgr_t *m, lk_stripe_t *s, lk_head_t *h) {
    if (h->holders || h->qfirst) return;
    if (h->range) {
        if (h->rprev) h->rprev->hnext = h->hnext;
        else m->ranges = h->hnext;
        if (h->hnext) h->hnext->rprev = h->rprev;
        atomic_fetch_sub_explicit(&m->nranges, 1, memory_order_relaxed);
        free(h->rb);
        free(h);
        return;
    }
    lk_head_t **pp = &s->buckets[h->hash & (s->nbuckets - 1)];
    while (*pp != h) pp = &(*pp)->hnext;
    *pp = h->hnext;
    s->count--;
    free(h);
}

/* ------------------------------------------------------------------ */
/* Holders and queue (caller holds the stripe mutex; plus the graph     */
/* mutex whenever the head's queue is or becomes non-empty)             */
/* ------------------------------------------------------------------ */

/* The grant of owner o on h, or NULL. */
static lk_grant_t *lk_holder_of(const lk_head_t *h, const lock_owner_t *o) {
    for (lk_grant_t *g = h->holders; g; g = g->next)
        if (g->owner == o) return g;
    return NULL;
}

/* Link grant g (owner, mode already set) into h's holders. */
static void lk_holder_add(lk_head_t *h, lk_grant_t *g) {
    g->head = h;
    g->prev = NULL;
    g->next = h->holders;
    if (h->holders) h->holders->prev = g;
    h->holders = g;
    h->nholders++;
    if (g->excl) h->nexcl++;
}

/* Unlink grant g from its head's holders. */
static void lk_holder_remove(lk_head_t *h, lk_grant_t *g) {
    if (g->prev) g->prev->next = g->next;
    else h->holders = g->next;
    if (g->next) g->next->prev = g->prev;
    h->nholders--;
    if (g->excl) h->nexcl--;
}

/* Append w to h's queue, or put it at the front (upgrades). */
static void lk_enqueue(lk_head_t *h, lk_wait_t *w, int front) {
    w->head = h;
    w->granted = 0;
    if (front) {
        w->prev = NULL;
        w->next = h->qfirst;
        if (h->qfirst) h->qfirst->prev = w;
        else h->qlast = w;
        h->qfirst = w;
    } else {
        w->next = NULL;
        w->prev = h->qlast;
        if (h->qlast) h->qlast->next = w;
        else h->qfirst = w;
        h->qlast = w;
    }
}

/* Remove w from its head's queue. */
static void lk_dequeue(lk_head_t *h, lk_wait_t *w) {
    if (w->prev) w->prev->next = w->next;
    else h->qfirst = w->next;
    if (w->next) w->next->prev = w->prev;
    else h->qlast = w->prev;
    w->prev = w->next = NULL;
    w->head = NULL;
}

/* Hand-off: grant the queue's longest grantable prefix, in FIFO order, and
 * wake those waiters. Caller holds stripe + graph mutex. */
static void lk_grant_waiters(lock_mgr_t *m, lk_head_t *h) {
    lk_wait_t *w;
    while ((w = h->qfirst) != NULL) {
        if (w->pass) {
            /* A range head: its waiters pass together once it is released. */
            if (h->nholders) break;
        } else if (w->upgrade) {
            if (h->nholders != 1) break; /* the one holder is w's owner */
            w->upgrade->excl = 1;
            h->nexcl = 1;
        } else if (w->excl) {
            if (h->nholders) break;
            w->fresh->excl = 1;
            lk_holder_add(h, w->fresh);
            STAT_ADD(m, held, 1);
        } else {
            if (h->nexcl) break;
            w->fresh->excl = 0;
            lk_holder_add(h, w->fresh);
            STAT_ADD(m, held, 1);
        }
        lk_dequeue(h, w);
        lock_owner_t *o = w->owner;
        pthread_mutex_lock(&o->mu);
        w->granted = 1;
        pthread_cond_signal(&o->cv);
        pthread_mutex_unlock(&o->mu);
    }
}

/* ------------------------------------------------------------------ */
/* Deadlock detection (caller holds the graph mutex)                   */
/* ------------------------------------------------------------------ */

/* Push o on the DFS stack; TDB_ERR_NOMEM if it cannot grow. */
static int lk_push(lock_mgr_t *m, size_t *n, lock_owner_t *o) {
    if (*n == m->stack_cap) {
        size_t cap = m->stack_cap ? m->stack_cap * 2 : 64;
        lock_owner_t **s = (lock_owner_t **)realloc(m->stack, cap * sizeof *s);
        if (!s) return TDB_ERR_NOMEM;
        m->stack = s;
        m->stack_cap = cap;
    }
    m->stack[(*n)++] = o;
    return TDB_OK;
}

/* Visit successor y of the DFS from r: 1 if y == r (cycle), push y if it is
 * unvisited and itself waiting. */
static int lk_visit(lock_mgr_t *m, size_t *n, lock_owner_t *r, lock_owner_t *y) {
    if (y == r) return 1;
    if (y->visit == m->epoch) return 0;
    y->visit = m->epoch;
    if (y->wait.head && lk_push(m, n, y) != TDB_OK) return TDB_ERR_NOMEM;
    return 0;
}

/* 1 if the queued requester r can reach itself in the wait-for graph
 * (edges in lock_mgr.h), 0 if not, TDB_ERR_NOMEM. */
static int lk_would_deadlock(lock_mgr_t *m, lock_owner_t *r) {
    size_t n = 0;
    m->epoch++;
    if (lk_push(m, &n, r) != TDB_OK) return TDB_ERR_NOMEM;
    while (n > 0) {
        lock_owner_t *x = m->stack[--n];
        lk_wait_t *w = &x->wait;
        int rc;
        if (w->prev) {
            if ((rc = lk_visit(m, &n, r, w->prev->owner)) != 0) return rc;
        } else {
            for (lk_grant_t *g = w->head->holders; g; g = g->next) {
                if (g->owner == x) continue;
                if ((rc = lk_visit(m, &n, r, g->owner)) != 0) return rc;
            }
        }
    }
    return 0;
}

/* ------------------------------------------------------------------ */
/* Owners                                                              */
/* ------------------------------------------------------------------ */

/* Create an owner with an empty log. */
lock_owner_t *lock_owner_create(lock_mgr_t *m, uint64_t txn_id) {
    lock_owner_t *o = (lock_owner_t *)calloc(1, sizeof *o);
    if (!o) return NULL;
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca) != 0) goto fail;
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    int crc = pthread_cond_init(&o->cv, &ca);
    pthread_condattr_destroy(&ca);
    if (crc != 0) goto fail;
    if (pthread_mutex_init(&o->mu, NULL) != 0) {
        pthread_cond_destroy(&o->cv);
        goto fail;
    }
    o->m = m;
    o->txn_id = txn_id;
    o->wait.owner = o;
    atomic_fetch_add_explicit(&m->owners, 1, memory_order_relaxed);
    return o;
fail:
    free(o);
    return NULL;
}

/* Release everything, then free the owner. */
void lock_owner_destroy(lock_owner_t *o) {
    if (!o) return;
    lock_release_all(o);
    atomic_fetch_sub_explicit(&o->m->owners, 1, memory_order_relaxed);
    free(o->log);
    pthread_cond_destroy(&o->cv);
    pthread_mutex_destroy(&o->mu);
    free(o);
}

/* The owner's transaction id. */
uint64_t lock_owner_txn_id(const lock_owner_t *o) { return o->txn_id; }

/* Holding nothing, the owner is in no head: no other thread reads txn_id
 * until the owner's next acquire publishes it under a stripe mutex. */
void lock_owner_set_txn_id(lock_owner_t *o, uint64_t txn_id) { o->txn_id = txn_id; }

void lock_owner_set_user(lock_owner_t *o, void *user) {
    atomic_store_explicit(&o->user, user, memory_order_relaxed);
}

void lock_mgr_set_wait_hook(lock_mgr_t *m, tdb_lock_wait_hook_fn fn, void *ctx) {
    pthread_mutex_lock(&m->graph_mu);
    m->hook = fn;
    m->hook_ctx = ctx;
    pthread_mutex_unlock(&m->graph_mu);
}

/* Tell the hook about every owner w waits behind on h (caller holds h's
 * stripe mutex, so the holders and the queue ahead of w are fixed). */
static void lk_report_blockers(lock_owner_t *o, lk_head_t *h, lk_wait_t *w, tdb_lock_wait_hook_fn fn, void *ctx) {
    tdb_lock_block_t b;
    b.waiter_txn_id = o->txn_id;
    b.waiter_user = atomic_load_explicit(&o->user, memory_order_relaxed);
    b.blocker_holds = 1;
    for (lk_grant_t *g = h->holders; g; g = g->next) {
        if (g->owner == o) continue;
        b.blocker_txn_id = g->owner->txn_id;
        b.blocker_user = atomic_load_explicit(&g->owner->user, memory_order_relaxed);
        fn(ctx, &b);
    }
    if (w->pass) return; /* a range's waiters all pass together: only its owner blocks */
    b.blocker_holds = 0;
    for (lk_wait_t *a = w->prev; a; a = a->prev) {
        if (a->upgrade) continue; /* a holder upgrading: reported above */
        b.blocker_txn_id = a->owner->txn_id;
        b.blocker_user = atomic_load_explicit(&a->owner->user, memory_order_relaxed);
        fn(ctx, &b);
    }
}

/* Length of the acquisition log. */
size_t lock_owner_count(const lock_owner_t *o) { return o->nlog; }

/* Distinct locks held. */
size_t lock_owner_held(const lock_owner_t *o) { return o->nheld; }

/* Make room for one more log record (before any state change). */
static int lk_log_reserve(lock_owner_t *o) {
    if (o->nlog < o->caplog) return TDB_OK;
    size_t cap = o->caplog ? o->caplog * 2 : 16;
    lk_rec_t *l = (lk_rec_t *)realloc(o->log, cap * sizeof *l);
    if (!l) return tdb_err(TDB_ERR_NOMEM, "lock owner log (%zu records)", cap);
    o->log = l;
    o->caplog = cap;
    return TDB_OK;
}

/* Append a record (room reserved). */
static void lk_log(lock_owner_t *o, lk_grant_t *g, int upgrade) {
    o->log[o->nlog].g = g;
    o->log[o->nlog].upgrade = upgrade;
    o->nlog++;
    if (!upgrade) o->nheld++;
}

/* CLOCK_MONOTONIC now; a time in microseconds. */
static struct timespec lk_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts;
}
static uint64_t lk_us(struct timespec ts) { return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u; }

/* Add one wait's length to the totals and the longest. */
static void lk_note_wait(lock_mgr_t *m, uint64_t us) {
    STAT_ADD(m, wait_us, us);
    uint64_t cur = atomic_load_explicit(&m->wait_max_us, memory_order_relaxed);
    while (us > cur && !atomic_compare_exchange_weak_explicit(&m->wait_max_us, &cur, us, memory_order_relaxed,
                                                              memory_order_relaxed)) {
    }
}

/* Absolute CLOCK_MONOTONIC deadline timeout_us after ts. */
static struct timespec lk_deadline(struct timespec ts, int64_t timeout_us) {
    int64_t sec = timeout_us / 1000000, nsec = (timeout_us % 1000000) * 1000;
    ts.tv_sec += (time_t)sec;
    ts.tv_nsec += (long)nsec;
    if (ts.tv_nsec >= 1000000000L) {
        ts.tv_sec++;
        ts.tv_nsec -= 1000000000L;
    }
    return ts;
}

/* ------------------------------------------------------------------ */
/* Acquire                                                             */
/* ------------------------------------------------------------------ */

/* Slow path: enqueue (after the deadlock check) and wait. Called with the
 * stripe mutex held; returns with it released. mine: held shared grant to
 * upgrade, or NULL. */
static int lk_wait_for(lock_owner_t *o, lk_stripe_t *s, lk_head_t *h, lk_grant_t *mine, int excl, int pass,
                       int64_t timeout_us) {
    lock_mgr_t *m = o->m;
    lk_wait_t *w = &o->wait;
    int rc = TDB_OK;
    if (timeout_us == 0) {
        pthread_mutex_unlock(&s->mu);
        STAT_ADD(m, timeouts, 1);
        return tdb_err(TDB_ERR_TIMEOUT, "lock busy (txn %llu, try once)", (unsigned long long)o->txn_id);
    }
    /* A cancel that arrived while not waiting aborts this wait. */
    pthread_mutex_lock(&o->mu);
    int cancelled = o->cancel;
    o->cancel = 0;
    pthread_mutex_unlock(&o->mu);
    if (cancelled) {
        pthread_mutex_unlock(&s->mu);
        STAT_ADD(m, cancelled, 1);
        return tdb_err(TDB_ERR_ABORTED, "lock wait cancelled (txn %llu)", (unsigned long long)o->txn_id);
    }
    w->upgrade = mine;
    w->excl = excl;
    w->pass = pass;
    w->fresh = NULL;
    if (!mine && !pass) {
        w->fresh = (lk_grant_t *)calloc(1, sizeof *w->fresh);
        if (!w->fresh) {
            pthread_mutex_unlock(&s->mu);
            return tdb_err(TDB_ERR_NOMEM, "lock grant");
        }
        w->fresh->owner = o;
    }

    pthread_mutex_lock(&m->graph_mu);
    lk_enqueue(h, w, mine != NULL);
    int dl = lk_would_deadlock(m, o);
    if (dl != 0) {
        lk_dequeue(h, w);
        lk_grant_waiters(m, h); /* unchanged state: grants nothing; kept for safety */
        pthread_mutex_unlock(&m->graph_mu);
        pthread_mutex_unlock(&s->mu);
        free(w->fresh);
        w->fresh = NULL;
        if (dl < 0) return tdb_err(TDB_ERR_NOMEM, "deadlock detection stack");
        STAT_ADD(m, deadlocks, 1);
        return tdb_err(TDB_ERR_DEADLOCK, "lock wait would deadlock (txn %llu is the victim)",
                       (unsigned long long)o->txn_id);
    }
    tdb_lock_wait_hook_fn hook = m->hook;
    void *hook_ctx = m->hook_ctx;
    pthread_mutex_unlock(&m->graph_mu);
    if (hook) lk_report_blockers(o, h, w, hook, hook_ctx); /* stripe mutex only */
    pthread_mutex_unlock(&s->mu);
    STAT_ADD(m, waits, 1);
    if (pass) STAT_ADD(m, range_waits, 1);

    struct timespec deadline;
    const struct timespec t0 = lk_now(); /* the wait's start, and its deadline's */
    if (timeout_us > 0) deadline = lk_deadline(t0, timeout_us);
    int granted, timed_out = 0;
    pthread_mutex_lock(&o->mu);
    while (!w->granted && !o->cancel && !timed_out) {
        if (timeout_us > 0) timed_out = pthread_cond_timedwait(&o->cv, &o->mu, &deadline) == ETIMEDOUT;
        else pthread_cond_wait(&o->cv, &o->mu);
    }
    granted = w->granted;
    cancelled = !granted && o->cancel;
    if (cancelled) o->cancel = 0;
    pthread_mutex_unlock(&o->mu);
    lk_note_wait(m, lk_us(lk_now()) - lk_us(t0));

    if (!granted) {
        /* Leave the queue, unless a grant raced with the timeout/cancel. */
        pthread_mutex_lock(&s->mu);
        if (w->granted) { /* written under s->mu, so this read is ordered */
            granted = 1;
            if (cancelled) {
                pthread_mutex_lock(&o->mu);
                o->cancel = 1; /* not honoured: stays pending */
                pthread_mutex_unlock(&o->mu);
            }
        } else {
            pthread_mutex_lock(&m->graph_mu);
            lk_dequeue(h, w);
            lk_grant_waiters(m, h);
            pthread_mutex_unlock(&m->graph_mu);
            lk_head_maybe_free(m, s, h);
        }
        pthread_mutex_unlock(&s->mu);
    }
    if (granted && pass) return TDB_OK;
    if (granted) {
        lk_log(o, mine ? mine : w->fresh, mine != NULL);
        w->fresh = NULL;
        STAT_ADD(m, acquired, 1);
        return TDB_OK;
    }
    free(w->fresh);
    w->fresh = NULL;
    if (cancelled) {
        STAT_ADD(m, cancelled, 1);
        rc = tdb_err(TDB_ERR_ABORTED, "lock wait cancelled (txn %llu)", (unsigned long long)o->txn_id);
    } else {
        STAT_ADD(m, timeouts, 1);
        rc = tdb_err(TDB_ERR_TIMEOUT, "lock wait timed out after %lld us (txn %llu)", (long long)timeout_us,
                     (unsigned long long)o->txn_id);
    }
    return rc;
}

/* Lock (cf_id, key) shared or exclusive: fast paths under the stripe mutex,
 * else queue and wait (see lock_mgr.h). Range locks are not looked at. */
static int lk_acquire_key(lock_owner_t *o, uint32_t cf_id, slice_t key, int exclusive, int64_t timeout_us) {
    lock_mgr_t *m = o->m;
    int rc;
    exclusive = exclusive != 0;
    /* Re-entry of the key this owner locked last, in a mode it covers (an
     * insert's duplicate check, then its write): no hash, no stripe mutex.
     * The owner's grant pins the head, whose key never changes, and the
     * grant's mode changes only by this owner, which is running, not
     * waiting. */
    if (o->nlog > 0) {
        const lk_grant_t *g = o->log[o->nlog - 1].g;
        const lk_head_t *h = g->head;
        if ((g->excl || !exclusive) && !h->range && h->cf_id == cf_id && h->klen == key.size &&
            (key.size == 0 || memcmp(h->key, key.data, key.size) == 0)) {
            STAT_ADD(m, acquired, 1);
            return TDB_OK;
        }
    }
    if ((rc = lk_log_reserve(o)) != TDB_OK) return rc;
    uint64_t hash = lk_hash(cf_id, key);
    lk_stripe_t *s = lk_stripe(m, hash);
    pthread_mutex_lock(&s->mu);
    lk_head_t *h = lk_find(s, hash, cf_id, key);
    if (!h) {
        h = lk_head_new(s, hash, cf_id, key);
        if (!h) {
            pthread_mutex_unlock(&s->mu);
            return tdb_err(TDB_ERR_NOMEM, "lock head");
        }
    }
    lk_grant_t *mine = lk_holder_of(h, o);
    if (mine) {
        if (!exclusive || mine->excl) { /* re-entrant: already covered */
            pthread_mutex_unlock(&s->mu);
            STAT_ADD(m, acquired, 1);
            return TDB_OK;
        }
        if (h->nholders == 1) { /* sole holder: upgrade at once */
            int contended = h->qfirst != NULL;
            if (contended) pthread_mutex_lock(&m->graph_mu);
            mine->excl = 1;
            h->nexcl = 1;
            if (contended) pthread_mutex_unlock(&m->graph_mu);
            pthread_mutex_unlock(&s->mu);
            lk_log(o, mine, 1);
            STAT_ADD(m, acquired, 1);
            return TDB_OK;
        }
        return lk_wait_for(o, s, h, mine, 1, 0, timeout_us);
    }
    if (!h->qfirst && (exclusive ? h->nholders == 0 : h->nexcl == 0)) {
        lk_grant_t *g = (lk_grant_t *)calloc(1, sizeof *g);
        if (!g) {
            lk_head_maybe_free(m, s, h);
            pthread_mutex_unlock(&s->mu);
            return tdb_err(TDB_ERR_NOMEM, "lock grant");
        }
        g->owner = o;
        g->excl = exclusive;
        lk_holder_add(h, g); /* queue empty: no graph mutex needed */
        pthread_mutex_unlock(&s->mu);
        lk_log(o, g, 0);
        STAT_ADD(m, held, 1);
        STAT_ADD(m, acquired, 1);
        return TDB_OK;
    }
    return lk_wait_for(o, s, h, NULL, exclusive, 0, timeout_us);
}

/* Compare byte strings a and b (shorter prefix first). */
static int lk_cmp(const char *a, size_t al, const char *b, size_t bl) {
    size_t n = al < bl ? al : bl;
    int c = n ? memcmp(a, b, n) : 0;
    return c ? c : al < bl ? -1 : al > bl ? 1 : 0;
}

/* Whether range head h covers (cf_id, key). */
static int lk_range_covers(const lk_head_t *h, uint32_t cf_id, slice_t key) {
    if (h->cf_id != cf_id || lk_cmp(key.data, key.size, h->rb, h->klen) < 0) return 0;
    if (h->hi_inf) return 1;
    int c = lk_cmp(key.data, key.size, h->rb + h->klen, h->hilen);
    return c < 0 || (c == 0 && h->hi_incl);
}

/* A writer of (cf_id, key), already holding its exclusive key lock: wait
 * until no other owner's range lock covers the key. Each conflicting range
 * is waited for like a lock head (its one holder is the range's owner), so
 * deadlock detection, timeouts and cancellation apply; after each wait the
 * ranges are looked at again. */
static int lk_range_check(lock_owner_t *o, uint32_t cf_id, slice_t key, int64_t timeout_us) {
    lock_mgr_t *m = o->m;
    for (;;) {
        pthread_mutex_lock(&m->rs.mu);
        lk_head_t *h = m->ranges;
        for (; h; h = h->hnext)
            if (h->holders && h->holders->owner != o && lk_range_covers(h, cf_id, key)) break;
        if (!h) {
            pthread_mutex_unlock(&m->rs.mu);
            return TDB_OK;
        }
        o->wait.pcf = cf_id;
        o->wait.pkey = key;
        int rc = lk_wait_for(o, &m->rs, h, NULL, 1, 1, timeout_us);
        if (rc != TDB_OK) return rc;
    }
}

/* Key lock, then (exclusive only) the range locks of others (the order
 * and why it loses no race: lock_mgr.h). One relaxed load while no range
 * exists. A failed range wait gives the new key lock back. */
int lock_acquire(lock_owner_t *o, uint32_t cf_id, slice_t key, int exclusive, int64_t timeout_us) {
    size_t mark = o->nlog;
    int rc = lk_acquire_key(o, cf_id, key, exclusive, timeout_us);
    if (rc != TDB_OK || !exclusive || atomic_load_explicit(&o->m->nranges, memory_order_relaxed) == 0) return rc;
    if (o->nlog == mark) return TDB_OK; /* held exclusive already: checked then */
    rc = lk_range_check(o, cf_id, key, timeout_us);
    if (rc != TDB_OK) lock_release_since(o, mark);
    return rc;
}

/* Whether key head h, held exclusive by an owner other than o, lies inside
 * range r and is not the key its holder is trying to write while held up
 * by a range of o (it wrote nothing yet and will look at o's ranges again;
 * waiting for it would deadlock a locking re-read of a range, which InnoDB
 * does not). Caller holds h's stripe mutex; the wait is read under graph. */
static int lk_blocks_range(lock_mgr_t *m, const lk_head_t *h, const lk_head_t *r, const lock_owner_t *o) {
    if (h->nexcl == 0 || h->holders->owner == o) return 0;
    if (!lk_range_covers(r, h->cf_id, slice_make(h->key, h->klen))) return 0;
    pthread_mutex_lock(&m->graph_mu);
    const lk_wait_t *w = &h->holders->owner->wait;
    int held_up = w->head && w->pass && w->head->holders && w->head->holders->owner == o && w->pcf == h->cf_id &&
                  w->pkey.size == h->klen && (h->klen == 0 || memcmp(w->pkey.data, h->key, h->klen) == 0);
    pthread_mutex_unlock(&m->graph_mu);
    return !held_up;
}

/* Lock a key range: publish the range head first (later writers see it and
 * wait), then wait for every exclusive key lock already held inside the
 * range by another owner (a shared lock on that key, queued like any
 * request, so FIFO, deadlock detection and timeouts apply; it is kept, as
 * a lock on a key of the locked range). */
int lock_acquire_range(lock_owner_t *o, uint32_t cf_id, slice_t lo, const slice_t *hi, int hi_inclusive,
                       int exclusive, int64_t timeout_us, uint64_t *rid) {
    lock_mgr_t *m = o->m;
    int rc;
    if ((rc = lk_log_reserve(o)) != TDB_OK) return rc;
    size_t hilen = hi ? hi->size : 0;
    lk_head_t *h = (lk_head_t *)calloc(1, sizeof *h);
    lk_grant_t *g = (lk_grant_t *)calloc(1, sizeof *g);
    char *rb = (char *)malloc(lo.size + hilen + 1);
    if (!h || !g || !rb) {
        free(h);
        free(g);
        free(rb);
        return tdb_err(TDB_ERR_NOMEM, "range lock");
    }
    h->range = 1;
    h->cf_id = cf_id;
    h->rb = rb;
    h->klen = lo.size;
    if (lo.size) memcpy(rb, lo.data, lo.size);
    h->hi_inf = hi == NULL;
    h->hi_incl = hi_inclusive != 0;
    h->hilen = hilen;
    if (hilen) memcpy(rb + lo.size, hi->data, hilen);
    g->owner = o;
    g->excl = exclusive != 0;
    size_t mark = o->nlog;
    pthread_mutex_lock(&m->rs.mu);
    h->hnext = m->ranges;
    if (m->ranges) m->ranges->rprev = h;
    m->ranges = h;
    lk_holder_add(h, g);
    atomic_fetch_add_explicit(&m->nranges, 1, memory_order_relaxed);
    pthread_mutex_unlock(&m->rs.mu);
    lk_log(o, g, 0);
    g->rid = ++o->next_rid;
    if (rid) *rid = g->rid;
    STAT_ADD(m, held, 1);
    STAT_ADD(m, range_locks, 1);

    char *kbuf = NULL;
    size_t kcap = 0;
    for (unsigned i = 0; i < LM_STRIPES; i++) {
        lk_stripe_t *s = &m->stripes[i];
    again:
        pthread_mutex_lock(&s->mu);
        for (size_t b = 0; b < s->nbuckets; b++) {
            for (lk_head_t *k = s->buckets[b]; k; k = k->hnext) {
                if (!lk_blocks_range(m, k, h, o)) continue;
                uint32_t kcf = k->cf_id;
                size_t kl = k->klen;
                if (kl > kcap) {
                    char *nb = (char *)realloc(kbuf, kl);
                    if (!nb) {
                        pthread_mutex_unlock(&s->mu);
                        rc = tdb_err(TDB_ERR_NOMEM, "range lock");
                        goto fail;
                    }
                    kbuf = nb;
                    kcap = kl;
                }
                if (kl) memcpy(kbuf, k->key, kl);
                pthread_mutex_unlock(&s->mu);
                if ((rc = lk_acquire_key(o, kcf, slice_make(kbuf, kl), 0, timeout_us)) != TDB_OK) goto fail;
                goto again;
            }
        }
        pthread_mutex_unlock(&s->mu);
    }
    free(kbuf);
    return TDB_OK;
fail:
    free(kbuf);
    lock_release_since(o, mark);
    return rc;
}

/* Narrow the owner's range lock rid to its intersection with [lo, hi] and
 * let its waiting writers look again (each re-checks every range). */
int lock_narrow_range(lock_owner_t *o, uint64_t rid, const slice_t *lo, const slice_t *hi, int hi_inclusive) {
    lock_mgr_t *m = o->m;
    lk_grant_t *g = NULL;
    for (size_t i = o->nlog; i-- > 0 && !g;)
        if (!o->log[i].upgrade && o->log[i].g->rid == rid && o->log[i].g->head->range) g = o->log[i].g;
    if (!g || rid == 0) return TDB_OK;
    lk_head_t *h = g->head;
    pthread_mutex_lock(&m->rs.mu);
    const char *nlo = h->rb, *nhi = h->rb + h->klen;
    size_t nlol = h->klen, nhil = h->hilen;
    int ninf = h->hi_inf, nincl = h->hi_incl;
    if (lo && lk_cmp(lo->data, lo->size, nlo, nlol) > 0) {
        nlo = lo->data;
        nlol = lo->size;
    }
    if (hi) {
        int c = ninf ? -1 : lk_cmp(hi->data, hi->size, nhi, nhil);
        if (c < 0 || (c == 0 && !hi_inclusive)) {
            nhi = hi->data;
            nhil = hi->size;
            ninf = 0;
            nincl = hi_inclusive != 0;
        }
    }
    char *rb = (char *)malloc(nlol + nhil + 1);
    if (!rb) {
        pthread_mutex_unlock(&m->rs.mu);
        return tdb_err(TDB_ERR_NOMEM, "range lock");
    }
    if (nlol) memcpy(rb, nlo, nlol);
    if (nhil && !ninf) memcpy(rb + nlol, nhi, nhil);
    free(h->rb);
    h->rb = rb;
    h->klen = nlol;
    h->hilen = ninf ? 0 : nhil;
    h->hi_inf = ninf;
    h->hi_incl = nincl;
    if (h->qfirst) { /* every waiter passes and looks again */
        pthread_mutex_lock(&m->graph_mu);
        for (lk_wait_t *w; (w = h->qfirst) != NULL;) {
            lk_dequeue(h, w);
            pthread_mutex_lock(&w->owner->mu);
            w->granted = 1;
            pthread_cond_signal(&w->owner->cv);
            pthread_mutex_unlock(&w->owner->mu);
        }
        pthread_mutex_unlock(&m->graph_mu);
    }
    pthread_mutex_unlock(&m->rs.mu);
    return TDB_OK;
}

/* ------------------------------------------------------------------ */
/* Release                                                             */
/* ------------------------------------------------------------------ */

/* Drop grant g (release) or make it shared (downgrade), then hand off. */
static void lk_release_grant(lock_owner_t *o, lk_grant_t *g, int downgrade) {
    lock_mgr_t *m = o->m;
    lk_head_t *h = g->head;
    lk_stripe_t *s = lk_head_stripe(m, h);
    pthread_mutex_lock(&s->mu);
    int contended = h->qfirst != NULL;
    if (contended) pthread_mutex_lock(&m->graph_mu);
    if (downgrade) {
        if (g->excl) {
            g->excl = 0;
            h->nexcl--;
        }
    } else {
        lk_holder_remove(h, g);
    }
    if (contended) {
        lk_grant_waiters(m, h);
        pthread_mutex_unlock(&m->graph_mu);
    }
    if (!downgrade) lk_head_maybe_free(m, s, h);
    pthread_mutex_unlock(&s->mu);
    if (!downgrade) {
        free(g);
        o->nheld--;
        atomic_fetch_sub_explicit(&m->held, 1, memory_order_relaxed);
    }
}

/* Pop log records down to mark: release new locks, downgrade upgrades. */
void lock_release_since(lock_owner_t *o, size_t mark) {
    while (o->nlog > mark) {
        lk_rec_t r = o->log[--o->nlog];
        lk_release_grant(o, r.g, r.upgrade);
    }
}

/* Release every lock (log order reversed). */
void lock_release_all(lock_owner_t *o) { lock_release_since(o, 0); }

/* Flag the owner's wait as cancelled and wake it. */
void lock_cancel_wait(lock_owner_t *o) {
    pthread_mutex_lock(&o->mu);
    o->cancel = 1;
    pthread_cond_signal(&o->cv);
    pthread_mutex_unlock(&o->mu);
}

void lock_clear_cancel(lock_owner_t *o) {
    pthread_mutex_lock(&o->mu);
    o->cancel = 0;
    pthread_mutex_unlock(&o->mu);
}

/*
 * txn/lock_mgr_info: what the lock manager reports about itself: its
 * counters and the current waits, who waits for whom (data in
 * lock_mgr_impl.h; each stripe's heads are read under its mutex, the
 * range list under rs.mu, as lock_mgr.h's lock order allows).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "txn/lock_mgr.h"
#include "txn/lock_mgr_impl.h"
#include "util/error.h"

/* Snapshot the counters. */
void lock_mgr_stats(lock_mgr_t *m, lock_stats_t *out) {
    out->acquired = atomic_load_explicit(&m->acquired, memory_order_relaxed);
    out->waits = atomic_load_explicit(&m->waits, memory_order_relaxed);
    out->wait_us = atomic_load_explicit(&m->wait_us, memory_order_relaxed);
    out->wait_max_us = atomic_load_explicit(&m->wait_max_us, memory_order_relaxed);
    out->deadlocks = atomic_load_explicit(&m->deadlocks, memory_order_relaxed);
    out->timeouts = atomic_load_explicit(&m->timeouts, memory_order_relaxed);
    out->cancelled = atomic_load_explicit(&m->cancelled, memory_order_relaxed);
    out->held = atomic_load_explicit(&m->held, memory_order_relaxed);
    out->range_locks = atomic_load_explicit(&m->range_locks, memory_order_relaxed);
    out->range_waits = atomic_load_explicit(&m->range_waits, memory_order_relaxed);
    out->ranges = atomic_load_explicit(&m->nranges, memory_order_relaxed);
}

/* Append one pair, growing the array. */
static int waits_push(lock_wait_info_t **arr, size_t *n, size_t *cap, const lk_head_t *h, const lk_wait_t *w,
                      const lk_grant_t *g) {
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 16;
        lock_wait_info_t *a = (lock_wait_info_t *)realloc(*arr, nc * sizeof *a);
        if (!a) return tdb_err(TDB_ERR_NOMEM, "lock wait list");
        *arr = a;
        *cap = nc;
    }
    lock_wait_info_t *e = &(*arr)[*n];
    size_t all = h->klen + (h->range ? h->hilen : 0);
    e->key = (char *)malloc(all ? all : 1);
    if (!e->key) return tdb_err(TDB_ERR_NOMEM, "lock wait key");
    if (all) memcpy(e->key, h->range ? h->rb : h->key, all);
    e->klen = h->klen;
    e->range = h->range;
    e->hi = h->range && !h->hi_inf ? e->key + h->klen : NULL;
    e->hilen = h->range ? h->hilen : 0;
    e->hi_inclusive = h->range && h->hi_incl;
    e->cf_id = h->cf_id;
    e->waiter_txn_id = w->owner->txn_id;
    e->holder_txn_id = g->owner->txn_id;
    e->waiter_excl = w->excl;
    e->holder_excl = g->excl;
    (*n)++;
    return TDB_OK;
}

int lock_mgr_list_waits(lock_mgr_t *m, lock_wait_info_t **out, size_t *n) {
    lock_wait_info_t *arr = NULL;
    size_t cnt = 0, cap = 0;
    int rc = TDB_OK;
    for (unsigned s = 0; s < LM_STRIPES && rc == TDB_OK; s++) {
        lk_stripe_t *st = &m->stripes[s];
        pthread_mutex_lock(&st->mu);
        for (size_t b = 0; b < st->nbuckets && rc == TDB_OK; b++)
            for (lk_head_t *h = st->buckets[b]; h && rc == TDB_OK; h = h->hnext)
                for (lk_wait_t *w = h->qfirst; w && rc == TDB_OK; w = w->next)
                    for (lk_grant_t *g = h->holders; g && rc == TDB_OK; g = g->next)
                        if (g->owner != w->owner) rc = waits_push(&arr, &cnt, &cap, h, w, g);
        pthread_mutex_unlock(&st->mu);
    }
    if (rc == TDB_OK) { /* range locks: writers waiting for them to go */
        pthread_mutex_lock(&m->rs.mu);
        for (lk_head_t *h = m->ranges; h && rc == TDB_OK; h = h->hnext)
            for (lk_wait_t *w = h->qfirst; w && rc == TDB_OK; w = w->next)
                for (lk_grant_t *g = h->holders; g && rc == TDB_OK; g = g->next)
                    if (g->owner != w->owner) rc = waits_push(&arr, &cnt, &cap, h, w, g);
        pthread_mutex_unlock(&m->rs.mu);
    }
    if (rc != TDB_OK) {
        lock_wait_info_free(arr, cnt);
        return rc;
    }
    *out = arr;
    *n = cnt;
    return TDB_OK;
}

void lock_wait_info_free(lock_wait_info_t *w, size_t n) {
    for (size_t i = 0; i < n; i++) free(w[i].key);
    free(w);
}

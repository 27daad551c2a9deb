/*
 * ops: the operation kinds of tdb_stress. To add one, write an op_fn and
 * add a row to stress_op_kinds[] (name, default weight, function,
 * exclusive); --weights can then select it.
 *
 * Writes (put, delete, batch, txn) go through write_op(): lock the keys'
 * stripes, record the in-flight write in the oracle (phase PREPARE), mark
 * every key pending, phase ISSUED, perform, and on acknowledgement phase
 * ACKED, store the new states, phase NONE. A key's next generation is one
 * more than the largest it ever had (acknowledged or dropped), so value
 * bytes are never reused.
 *
 * Reads are checked against the oracle window (window_allows): the state
 * loaded just before the read began and just after it ended bound what the
 * read may see.
 */
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "stress.h"

typedef struct wentry {
    uint32_t cf, key;
    int put;
    uint32_t gen;  /* new generation */
    uint64_t oldw; /* state word before */
} wentry_t;

/* ---------------------------------------------------------------- locks */

/* Sorted distinct stripes of keys; returns their count. */
static int stripes_of(const uint32_t *keys, int n, uint32_t *out) {
    int m = 0;
    for (int i = 0; i < n; i++) {
        uint32_t st = keys[i] % STRESS_NSTRIPES;
        int j = m;
        while (j > 0 && out[j - 1] > st) j--;
        if (j > 0 && out[j - 1] == st) continue;
        memmove(out + j + 1, out + j, (size_t)(m - j) * sizeof *out);
        out[j] = st;
        m++;
    }
    return m;
}

/* Lock the stripes of keys in ascending order. */
void stress_lock_keys(stress_t *s, const uint32_t *keys, int n) {
    uint32_t st[STRESS_MAX_BATCH + 8];
    int m = stripes_of(keys, n, st);
    for (int i = 0; i < m; i++) pthread_mutex_lock(&s->stripes[st[i]]);
}

/* Unlock what stress_lock_keys locked. */
void stress_unlock_keys(stress_t *s, const uint32_t *keys, int n) {
    uint32_t st[STRESS_MAX_BATCH + 8];
    int m = stripes_of(keys, n, st);
    for (int i = m; i-- > 0;) pthread_mutex_unlock(&s->stripes[st[i]]);
}

/* --------------------------------------------------------------- checks */

/* May a read see (present, gen) given the oracle words before (w0) and after (w1)? */
int window_allows(uint64_t w0, uint64_t w1, int present, uint32_t gen) {
    uint32_t g0 = st_gen(w0), g1 = st_gen(w1);
    if (present) {
        if (gen == g0 && st_exists(w0)) return 1;
        if (gen == g1 && st_exists(w1)) return 1;
        if (gen > g0 && gen < g1) return 1; /* an acknowledged put in between */
        if (st_pending(w0) && st_pexists(w0) && gen == st_pgen(w0)) return 1;
        if (st_pending(w1) && st_pexists(w1) && gen == st_pgen(w1)) return 1;
        return 0;
    }
    if (!st_exists(w0) || !st_exists(w1)) return 1;
    if (g1 > g0 + 1) return 1; /* some write in between may have been a delete */
    if (st_pending(w0) && !st_pexists(w0)) return 1;
    if (st_pending(w1) && !st_pexists(w1)) return 1;
    return 0;
}

/* Is rc an error the injected faults can explain? */
static int fault_explains(stress_t *s, int rc) {
    return s->fe && (rc == TDB_ERR_IO || rc == TDB_ERR_READ_ONLY || rc == TDB_ERR_NO_SPACE);
}

/* A read failed with rc: tolerated (returns 1) only under injected faults. */
static int read_error(thread_ctx_t *t, int rc, const char *what) {
    if (fault_explains(t->s, rc) && rc == TDB_ERR_IO) {
        t->errors_tolerated++;
        __atomic_fetch_add(&t->s->faults_seen, 1, __ATOMIC_RELAXED);
        return 1;
    }
    stress_die(t->s, what, rc);
    return 0;
}

/* A write or maintenance call failed with rc: under injected faults the
 * database is recovered (reopened and verified) before going on. */
static void write_error(thread_ctx_t *t, int rc, const char *what) {
    if (fault_explains(t->s, rc)) {
        t->errors_tolerated++;
        __atomic_fetch_add(&t->s->faults_seen, 1, __ATOMIC_RELAXED);
        __atomic_store_n(&t->s->need_recover, 1, __ATOMIC_RELEASE);
        return;
    }
    stress_die(t->s, what, rc);
}

/* Check one observed read of (cf, key) against the window [w0, w1]. */
static void check_read(thread_ctx_t *t, const char *what, uint32_t cf, uint32_t key, uint64_t w0, uint64_t w1,
                       int present, const void *v, size_t vl) {
    uint32_t gen = 0;
    const char *why = NULL;
    if (present && stress_value_check(cf, key, v, vl, t->s->o.max_value, &gen, &why) != 0) {
        stress_fail(t->s, "%s: cf%u key %u: %s (%zu bytes)", what, cf, key, why, vl);
        return;
    }
    if (!window_allows(w0, w1, present, gen))
        stress_fail(t->s,
                    "%s: cf%u key %u: read %s gen %u; oracle before: %s gen %u%s, after: %s gen %u%s",
                    what, cf, key, present ? "present" : "absent", gen, st_exists(w0) ? "present" : "absent",
                    st_gen(w0), st_pending(w0) ? " (+pending)" : "", st_exists(w1) ? "present" : "absent", st_gen(w1),
                    st_pending(w1) ? " (+pending)" : "");
    t->reads_verified++;
}

/* --------------------------------------------------------------- writes */

typedef int (*perform_fn)(thread_ctx_t *t, wentry_t *e, int n, void *arg);
#define PERFORM_ROLLED_BACK 1

/* The write protocol described at the top of the file. */
static void write_op(thread_ctx_t *t, wentry_t *e, int n, perform_fn perform, void *arg, const char *what) {
    stress_t *s = t->s;
    oracle_thread_t *rec = t->rec;
    uint32_t keys[STRESS_MAX_BATCH] = {0};
    for (int i = 0; i < n; i++) keys[i] = e[i].key;
    stress_lock_keys(s, keys, n);
    for (int i = 0; i < n; i++) {
        uint64_t w = oracle_load(&s->orc, e[i].cf, e[i].key);
        if (st_pending(w)) goto out; /* a failed write awaits recovery */
        uint32_t top = st_gen(w) > st_pgen(w) ? st_gen(w) : st_pgen(w);
        if (top >= ST_GEN_MASK) {
            stress_fail(s, "cf%u key %u: generation space exhausted", e[i].cf, e[i].key);
            goto out;
        }
        e[i].gen = top + 1;
        e[i].oldw = w;
    }
    rec->nent = (uint32_t)n;
    for (int i = 0; i < n; i++) {
        rec->ent[i].cf = e[i].cf;
        rec->ent[i].key = e[i].key;
    }
    __atomic_store_n(&rec->phase, PHASE_PREPARE, __ATOMIC_RELEASE);
    for (int i = 0; i < n; i++) oracle_store(&s->orc, e[i].cf, e[i].key, st_with_pending(e[i].oldw, e[i].gen, e[i].put));
    __atomic_store_n(&rec->phase, PHASE_ISSUED, __ATOMIC_RELEASE);
    int rc = perform(t, e, n, arg);
    if (rc == TDB_OK) {
        __atomic_store_n(&rec->phase, PHASE_ACKED, __ATOMIC_RELEASE);
        for (int i = 0; i < n; i++) oracle_store(&s->orc, e[i].cf, e[i].key, st_make(e[i].gen, e[i].put));
        __atomic_store_n(&rec->phase, PHASE_NONE, __ATOMIC_RELEASE);
        t->writes++;
        __atomic_store_n(&rec->writes_acked, t->writes, __ATOMIC_RELAXED);
    } else if (rc == PERFORM_ROLLED_BACK) {
        __atomic_store_n(&rec->phase, PHASE_PREPARE, __ATOMIC_RELEASE);
        for (int i = 0; i < n; i++) oracle_store(&s->orc, e[i].cf, e[i].key, e[i].oldw);
        __atomic_store_n(&rec->phase, PHASE_NONE, __ATOMIC_RELEASE);
    } else {
        write_error(t, rc, what); /* pending stays: resolved by the recovery check */
    }
out:
    stress_unlock_keys(s, keys, n);
}

/* n distinct random (family, key) pairs; families from [0, ncf). */
static int pick_entries(thread_ctx_t *t, wentry_t *e, int n, int ncf, double put_share) {
    stress_t *s = t->s;
    int m = 0;
    for (int tries = 0; m < n && tries < n * 4; tries++) {
        uint32_t cf = (uint32_t)rng_uniform(&t->rng, (uint64_t)ncf);
        uint32_t key = (uint32_t)rng_uniform(&t->rng, s->o.keys);
        int dup = 0;
        for (int i = 0; i < m; i++) dup |= e[i].cf == cf && e[i].key == key;
        if (dup) continue;
        e[m].cf = cf;
        e[m].key = key;
        e[m].put = rng_double(&t->rng) < put_share;
        m++;
    }
    return m;
}

/* Build the value of an entry into the thread scratch; returns its length. */
static size_t entry_value(thread_ctx_t *t, const wentry_t *e) {
    size_t len = stress_value_len(e->cf, e->key, e->gen, t->s->o.max_value);
    stress_value(e->cf, e->key, e->gen, t->s->o.max_value, t->vbuf, len);
    return len;
}

/* tdb_put / tdb_delete of one entry. */
static int perform_single(thread_ctx_t *t, wentry_t *e, int n, void *arg) {
    (void)n;
    (void)arg;
    char kb[STRESS_KEY_MAX];
    size_t kl = stress_key(e->key, kb);
    if (!e->put) return tdb_delete(t->s->db, t->s->cf[e->cf], kb, kl);
    size_t vl = entry_value(t, e);
    return tdb_put(t->s->db, t->s->cf[e->cf], kb, kl, t->vbuf, vl, 0);
}

/* One tdb_write of a batch of every entry. */
static int perform_batch(thread_ctx_t *t, wentry_t *e, int n, void *arg) {
    (void)arg;
    tdb_batch_t *b = NULL;
    int rc = tdb_batch_create(&b);
    for (int i = 0; i < n && rc == TDB_OK; i++) {
        char kb[STRESS_KEY_MAX];
        size_t kl = stress_key(e[i].key, kb);
        if (e[i].put) {
            size_t vl = entry_value(t, &e[i]);
            rc = tdb_batch_put(b, t->s->cf[e[i].cf], kb, kl, t->vbuf, vl, 0);
        } else {
            rc = tdb_batch_delete(b, t->s->cf[e[i].cf], kb, kl);
        }
    }
    if (rc == TDB_OK) rc = tdb_write(t->s->db, b);
    tdb_batch_destroy(b);
    return rc;
}

/* A transaction writing every entry, reading its own writes back; now and
 * then a doomed extra write undone through a savepoint, or a rollback. */
static int perform_txn(thread_ctx_t *t, wentry_t *e, int n, void *arg) {
    (void)arg;
    stress_t *s = t->s;
    tdb_txn_options_t to;
    tdb_txn_options_default(&to);
    static const int isos[] = {TDB_ISO_READ_COMMITTED, TDB_ISO_REPEATABLE_READ, TDB_ISO_SNAPSHOT,
                               TDB_ISO_SERIALIZABLE};
    to.isolation = isos[rng_uniform(&t->rng, 4)];
    to.pessimistic = (int)rng_uniform(&t->rng, 2);
    tdb_txn_t *x = NULL;
    int rc = tdb_txn_begin(s->db, &to, &x);
    if (rc != TDB_OK) return rc;
    int use_savepoint = n > 1 && rng_uniform(&t->rng, 4) == 0;
    for (int i = 0; i < n && rc == TDB_OK; i++) {
        char kb[STRESS_KEY_MAX];
        size_t kl = stress_key(e[i].key, kb);
        if (use_savepoint && i == n - 1) {
            /* Write the last key with a doomed value first, then undo it. */
            rc = tdb_txn_savepoint(x, "sp");
            if (rc == TDB_OK) rc = tdb_txn_delete(x, s->cf[e[i].cf], kb, kl);
            if (rc == TDB_OK) rc = tdb_txn_rollback_to_savepoint(x, "sp");
            if (rc != TDB_OK) break;
        }
        if (e[i].put) {
            size_t vl = entry_value(t, &e[i]);
            rc = tdb_txn_put(x, s->cf[e[i].cf], kb, kl, t->vbuf, vl, 0);
        } else {
            rc = tdb_txn_delete(x, s->cf[e[i].cf], kb, kl);
        }
        if (rc != TDB_OK) break;
        /* Read your own write. */
        void *v = NULL;
        size_t vl = 0;
        int g = tdb_txn_get(x, s->cf[e[i].cf], kb, kl, &v, &vl);
        if (g != TDB_OK && g != TDB_ERR_NOT_FOUND) {
            rc = g;
            break;
        }
        uint64_t nw = st_make(e[i].gen, e[i].put);
        check_read(t, "txn read-own-write", e[i].cf, e[i].key, nw, nw, g == TDB_OK, v, vl);
        tdb_free(v);
    }
    if (rc == TDB_OK && rng_uniform(&t->rng, 10) == 0) {
        rc = tdb_txn_rollback(x);
        tdb_txn_free(x);
        return rc == TDB_OK ? PERFORM_ROLLED_BACK : rc;
    }
    char detail[256] = "";
    uint64_t started0[STRESS_MAX_CFS], ended0[STRESS_MAX_CFS];
    for (int c = 0; c < s->o.cfs; c++) {
        ended0[c] = __atomic_load_n(&s->range_ended[c], __ATOMIC_ACQUIRE);
        started0[c] = __atomic_load_n(&s->range_started[c], __ATOMIC_ACQUIRE);
    }
    if (rc == TDB_OK) rc = tdb_txn_commit(x);
    if (rc != TDB_OK) {
        snprintf(detail, sizeof detail, "%s", tdb_last_error());
        tdb_txn_rollback(x);
    }
    tdb_txn_free(x);
    if (rc == TDB_ERR_CONFLICT) {
        /* Tolerated only if a range delete on one of its families ran
         * during the commit (see stress.h, range_started). */
        for (int i = 0; i < n; i++) {
            uint32_t c = e[i].cf;
            if (started0[c] != ended0[c] || __atomic_load_n(&s->range_started[c], __ATOMIC_ACQUIRE) != started0[c]) {
                __atomic_fetch_add(&s->spurious_conflicts, 1, __ATOMIC_RELAXED);
                return PERFORM_ROLLED_BACK;
            }
        }
        char keys[512];
        size_t m = 0;
        keys[0] = '\0';
        for (int i = 0; i < n && m < sizeof keys - 32; i++)
            m += (size_t)snprintf(keys + m, sizeof keys - m, " cf%u/%u%s", e[i].cf, e[i].key, e[i].put ? "" : "(del)");
        stress_fail(s, "transaction conflict (isolation %d, %s%s) on keys no other writer could touch:%s: %s",
                    to.isolation, to.pessimistic ? "pessimistic" : "optimistic", use_savepoint ? ", savepoint" : "",
                    keys, detail);
    }
    return rc;
}

/* Single put. */
static int op_put(thread_ctx_t *t) {
    wentry_t e;
    if (pick_entries(t, &e, 1, t->s->o.cfs, 1.0) == 1) write_op(t, &e, 1, perform_single, NULL, "tdb_put");
    return 0;
}

/* Single delete. */
static int op_delete(thread_ctx_t *t) {
    wentry_t e;
    if (pick_entries(t, &e, 1, t->s->o.cfs, 0.0) == 1) write_op(t, &e, 1, perform_single, NULL, "tdb_delete");
    return 0;
}

/* A batch of 2..16 puts and deletes across families. */
static int op_batch(thread_ctx_t *t) {
    wentry_t e[STRESS_MAX_BATCH];
    int n = pick_entries(t, e, 2 + (int)rng_uniform(&t->rng, 15), t->s->o.cfs, 0.75);
    write_op(t, e, n, perform_batch, NULL, "tdb_write");
    return 0;
}

/* A transaction of 1..6 writes across families. */
static int op_txn(thread_ctx_t *t) {
    wentry_t e[STRESS_MAX_BATCH];
    int n = pick_entries(t, e, 1 + (int)rng_uniform(&t->rng, 6), t->s->o.cfs, 0.7);
    write_op(t, e, n, perform_txn, NULL, "tdb_txn_commit");
    return 0;
}

/* A range delete over entries e[0..n) (consecutive keys of one family),
 * then puts of the entries marked put: later writes in the same batch are
 * not affected by the range. Without puts, half the time tdb_delete_range. */
static int perform_range(thread_ctx_t *t, wentry_t *e, int n, void *arg) {
    (void)arg;
    stress_t *s = t->s;
    char lo[STRESS_KEY_MAX], hi[STRESS_KEY_MAX];
    size_t ll = stress_key(e[0].key, lo), hl = stress_key(e[n - 1].key + 1, hi);
    int puts = 0;
    for (int i = 0; i < n; i++) puts += e[i].put;
    if (!puts && rng_uniform(&t->rng, 2)) return tdb_delete_range(s->db, s->cf[e[0].cf], lo, ll, hi, hl);
    tdb_batch_t *b = NULL;
    int rc = tdb_batch_create(&b);
    if (rc == TDB_OK) rc = tdb_batch_delete_range(b, s->cf[e[0].cf], lo, ll, hi, hl);
    for (int i = 0; i < n && rc == TDB_OK; i++) {
        if (!e[i].put) continue;
        char kb[STRESS_KEY_MAX];
        size_t kl = stress_key(e[i].key, kb);
        size_t vl = entry_value(t, &e[i]);
        rc = tdb_batch_put(b, s->cf[e[i].cf], kb, kl, t->vbuf, vl, 0);
    }
    if (rc == TDB_OK) rc = tdb_write(s->db, b);
    tdb_batch_destroy(b);
    return rc;
}

/* Range delete of 1..16 consecutive keys of one family, sometimes with
 * some of them written again later in the same batch. */
static int op_range_delete(thread_ctx_t *t) {
    stress_t *s = t->s;
    wentry_t e[STRESS_MAX_BATCH];
    uint32_t len = 1 + (uint32_t)rng_uniform(&t->rng, 16);
    if (len >= s->o.keys) len = s->o.keys - 1;
    if (len == 0) return 0;
    uint32_t k0 = (uint32_t)rng_uniform(&t->rng, s->o.keys - len); /* k0 + len < keys: the end key exists */
    uint32_t cf = (uint32_t)rng_uniform(&t->rng, (uint64_t)s->o.cfs);
    int reput = rng_uniform(&t->rng, 3) == 0;
    for (uint32_t i = 0; i < len; i++) {
        e[i].cf = cf;
        e[i].key = k0 + i;
        e[i].put = reput && rng_uniform(&t->rng, 4) == 0;
    }
    __atomic_fetch_add(&s->range_started[cf], 1, __ATOMIC_ACQ_REL);
    write_op(t, e, (int)len, perform_range, NULL, "range delete");
    __atomic_fetch_add(&s->range_ended[cf], 1, __ATOMIC_ACQ_REL);
    return 0;
}

/* tdb_sync: makes acknowledged writes durable whatever the sync mode. */
static int op_sync(thread_ctx_t *t) {
    int rc = tdb_sync(t->s->db);
    if (rc != TDB_OK) write_error(t, rc, "tdb_sync");
    return 0;
}

/* ---------------------------------------------------------------- reads */

/* Point read of a random key. */
static int op_get(thread_ctx_t *t) {
    stress_t *s = t->s;
    uint32_t cf = (uint32_t)rng_uniform(&t->rng, (uint64_t)s->o.cfs);
    uint32_t key = (uint32_t)rng_uniform(&t->rng, s->o.keys);
    char kb[STRESS_KEY_MAX];
    size_t kl = stress_key(key, kb);
    void *v = NULL;
    size_t vl = 0;
    uint64_t w0 = oracle_load(&s->orc, cf, key);
    int rc = tdb_get(s->db, s->cf[cf], NULL, kb, kl, &v, &vl);
    uint64_t w1 = oracle_load(&s->orc, cf, key);
    if (rc != TDB_OK && rc != TDB_ERR_NOT_FOUND) return read_error(t, rc, "tdb_get"), 0;
    check_read(t, "get", cf, key, w0, w1, rc == TDB_OK, v, vl);
    tdb_free(v);
    return 0;
}

#define SPAN_MAX 64

/* Walk an iterator over a window of up to SPAN_MAX keys from a random
 * start, forward or backward, checking every key returned and every key
 * skipped; snap (may be NULL) is the view, w0/w1 the oracle window. */
static void check_span(thread_ctx_t *t, const char *what, tdb_iter_t *it, uint32_t cf, uint32_t lo, uint32_t hi,
                       int backward, const uint64_t *w0, const uint64_t *w1) {
    stress_t *s = t->s;
    char kb[STRESS_KEY_MAX];
    if (backward) {
        if (hi == s->o.keys && rng_uniform(&t->rng, 2)) tdb_iter_seek_to_last(it);
        else tdb_iter_seek_for_prev(it, kb, stress_key(hi - 1, kb));
    } else {
        if (lo == 0 && rng_uniform(&t->rng, 2)) tdb_iter_seek_to_first(it);
        else tdb_iter_seek(it, kb, stress_key(lo, kb));
    }
    int64_t expect = backward ? (int64_t)hi - 1 : (int64_t)lo;
    int64_t last_idx = -1;
    int steps = 0;
    while (tdb_iter_valid(it)) {
        size_t kl, vl;
        const char *k = (const char *)tdb_iter_key(it, &kl);
        const void *v = tdb_iter_value(it, &vl);
        int64_t idx = stress_key_parse(k, kl, s->o.keys);
        if (idx < 0) {
            stress_fail(s, "%s: cf%u: iterator returned a key this tool never wrote", what, cf);
            return;
        }
        if (backward ? idx > expect : idx < expect) {
            stress_fail(s, "%s: cf%u: iterator out of order: key %lld where >= %lld expected", what, cf,
                        (long long)idx, (long long)expect);
            return;
        }
        if (backward ? idx < (int64_t)lo : idx >= (int64_t)hi) break;
        for (int64_t j = expect; backward ? j > idx : j < idx; backward ? j-- : j++)
            if (!window_allows(w0[j - lo], w1[j - lo], 0, 0))
                stress_fail(s, "%s: cf%u: iterator skipped key %lld which is present (gen %u)", what, cf,
                            (long long)j, st_gen(w0[j - lo]));
        check_read(t, what, cf, (uint32_t)idx, w0[idx - lo], w1[idx - lo], 1, v, vl);
        expect = backward ? idx - 1 : idx + 1;
        last_idx = idx;
        steps++;
        /* Now and then turn around once and check we get the previous key. */
        if (steps == 3 && rng_uniform(&t->rng, 4) == 0) {
            backward ? tdb_iter_next(it) : tdb_iter_prev(it);
            if (tdb_iter_valid(it)) {
                k = (const char *)tdb_iter_key(it, &kl);
                int64_t back = stress_key_parse(k, kl, s->o.keys);
                if (backward ? back <= last_idx : back >= last_idx)
                    stress_fail(s, "%s: cf%u: direction change from key %lld went to %lld", what, cf,
                                (long long)last_idx, (long long)back);
            } else if (tdb_iter_status(it) == TDB_OK) {
                stress_fail(s, "%s: cf%u: direction change from key %lld ended the iterator", what, cf,
                            (long long)last_idx);
            }
            /* Re-position on the last checked key. */
            tdb_iter_seek(it, kb, stress_key((uint32_t)last_idx, kb));
            if (!tdb_iter_valid(it)) break;
            k = (const char *)tdb_iter_key(it, &kl);
            if (stress_key_parse(k, kl, s->o.keys) != last_idx)
                stress_fail(s, "%s: cf%u: seek back to key %lld landed elsewhere", what, cf, (long long)last_idx);
        }
        backward ? tdb_iter_prev(it) : tdb_iter_next(it);
    }
    int rc = tdb_iter_status(it);
    if (rc != TDB_OK) {
        read_error(t, rc, "iterator");
        return;
    }
    for (int64_t j = expect; backward ? j >= (int64_t)lo : j < (int64_t)hi; backward ? j-- : j++)
        if (!window_allows(w0[j - lo], w1[j - lo], 0, 0))
            stress_fail(s, "%s: cf%u: iterator missed key %lld which is present (gen %u)", what, cf, (long long)j,
                        st_gen(w0[j - lo]));
}

/* Range scan through a fresh iterator. */
static int op_iter(thread_ctx_t *t) {
    stress_t *s = t->s;
    uint32_t cf = (uint32_t)rng_uniform(&t->rng, (uint64_t)s->o.cfs);
    uint32_t span = 1 + (uint32_t)rng_uniform(&t->rng, SPAN_MAX);
    if (span > s->o.keys) span = s->o.keys;
    uint32_t lo = (uint32_t)rng_uniform(&t->rng, s->o.keys - span + 1), hi = lo + span;
    uint64_t w0[SPAN_MAX], w1[SPAN_MAX];
    for (uint32_t i = 0; i < span; i++) w0[i] = oracle_load(&s->orc, cf, lo + i);
    tdb_iter_t *it = NULL;
    int rc = tdb_iter_create(s->db, s->cf[cf], NULL, &it);
    for (uint32_t i = 0; i < span; i++) w1[i] = oracle_load(&s->orc, cf, lo + i);
    if (rc != TDB_OK) return read_error(t, rc, "tdb_iter_create"), 0;
    check_span(t, "iterator", it, cf, lo, hi, (int)rng_uniform(&t->rng, 2), w0, w1);
    tdb_iter_destroy(it);
    return 0;
}

/* Reads through a snapshot after other threads had time to write: they
 * must see the snapshot's moment, and repeat identically. */
static int op_snapshot(thread_ctx_t *t) {
    stress_t *s = t->s;
    uint32_t cf = (uint32_t)rng_uniform(&t->rng, (uint64_t)s->o.cfs);
    uint32_t span = 1 + (uint32_t)rng_uniform(&t->rng, 16);
    if (span > s->o.keys) span = s->o.keys;
    uint32_t lo = (uint32_t)rng_uniform(&t->rng, s->o.keys - span + 1), hi = lo + span;
    uint64_t w0[SPAN_MAX], w1[SPAN_MAX];
    for (uint32_t i = 0; i < span; i++) w0[i] = oracle_load(&s->orc, cf, lo + i);
    tdb_snapshot_t *snap = tdb_snapshot_create(s->db);
    for (uint32_t i = 0; i < span; i++) w1[i] = oracle_load(&s->orc, cf, lo + i);
    if (!snap) return stress_die(s, "tdb_snapshot_create", TDB_ERR_NOMEM), 0;
    for (int i = 0; i < 20; i++) sched_yield(); /* let writers move on */
    for (uint32_t i = 0; i < span; i++) {
        char kb[STRESS_KEY_MAX];
        size_t kl = stress_key(lo + i, kb);
        void *v1 = NULL, *v2 = NULL;
        size_t l1 = 0, l2 = 0;
        int r1 = tdb_get(s->db, s->cf[cf], snap, kb, kl, &v1, &l1);
        int r2 = tdb_get(s->db, s->cf[cf], snap, kb, kl, &v2, &l2);
        if ((r1 != TDB_OK && r1 != TDB_ERR_NOT_FOUND) || (r2 != TDB_OK && r2 != TDB_ERR_NOT_FOUND)) {
            tdb_free(v1);
            tdb_free(v2);
            read_error(t, r1 != TDB_OK && r1 != TDB_ERR_NOT_FOUND ? r1 : r2, "tdb_get(snapshot)");
            break;
        }
        check_read(t, "snapshot get", cf, lo + i, w0[i], w1[i], r1 == TDB_OK, v1, l1);
        if (r1 != r2 || l1 != l2 || (r1 == TDB_OK && memcmp(v1, v2, l1) != 0))
            stress_fail(s, "snapshot get: cf%u key %u: two reads through one snapshot differ", cf, lo + i);
        tdb_free(v1);
        tdb_free(v2);
    }
    tdb_iter_t *it = NULL;
    int rc = tdb_iter_create(s->db, s->cf[cf], snap, &it);
    if (rc == TDB_OK) {
        check_span(t, "snapshot iterator", it, cf, lo, hi, (int)rng_uniform(&t->rng, 2), w0, w1);
        tdb_iter_destroy(it);
    } else {
        read_error(t, rc, "tdb_iter_create(snapshot)");
    }
    tdb_snapshot_release(s->db, snap);
    return 0;
}

/* ---------------------------------------------------------- maintenance */

/* Flush one family or all. */
static int op_flush(thread_ctx_t *t) {
    stress_t *s = t->s;
    int all = rng_uniform(&t->rng, 3) == 0;
    int rc = tdb_flush(s->db, all ? NULL : s->cf[rng_uniform(&t->rng, (uint64_t)s->o.cfs)]);
    if (rc != TDB_OK) write_error(t, rc, "tdb_flush");
    return 0;
}

/* Full compaction of one family. */
static int op_compact(thread_ctx_t *t) {
    stress_t *s = t->s;
    int rc = tdb_compact(s->db, s->cf[rng_uniform(&t->rng, (uint64_t)s->o.cfs)]);
    if (rc != TDB_OK) write_error(t, rc, "tdb_compact");
    return 0;
}

/* Close and reopen the database, then verify all of it (exclusive). */
static int op_reopen(thread_ctx_t *t) {
    stress_reopen(t->s, "reopen");
    return 0;
}

const op_kind_t stress_op_kinds[] = {
    {"put", 25, op_put, 0},
    {"delete", 8, op_delete, 0},
    {"batch", 14, op_batch, 0},
    {"txn", 6, op_txn, 0},
    {"range_delete", 2, op_range_delete, 0},
    {"sync", 0.2, op_sync, 0},
    {"get", 22, op_get, 0},
    {"iter", 10, op_iter, 0},
    {"snapshot", 5, op_snapshot, 0},
    {"flush", 0.3, op_flush, 0},
    {"compact", 0.05, op_compact, 0},
    {"reopen", 0.02, op_reopen, 1},
};
const int stress_num_op_kinds = (int)(sizeof stress_op_kinds / sizeof stress_op_kinds[0]);

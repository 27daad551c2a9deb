/*
 * verify: the whole database against the oracle, at startup (after a crash
 * or a clean exit), after every reopen, and at the end of a run.
 *
 * Rules (docs/design/reliability.md):
 *  1. A key without a pending write must read exactly as its last
 *     acknowledged state (value generation, or absent).
 *  2. A key with a pending write may read as the acknowledged state or as
 *     the pending one; nothing else.
 *  3. Each thread's in-flight write is all-or-nothing, by its phase:
 *     PREPARE (not yet issued): nothing of it may be visible; ISSUED: all
 *     its keys show the new state or all the old one (batch atomicity,
 *     across families); ACKED (acknowledged, oracle update interrupted):
 *     all of it must be visible.
 *  4. Forward and backward full scans of every family return exactly the
 *     keys the point reads found, in order, with the same values.
 * Then the oracle is resolved to what the database holds: pending states
 * become the acknowledged state (if visible) or are dropped; a dropped
 * write's generation stays reserved (kept as a floor in the pending field
 * with the pending bit clear) so no later write reuses its value bytes.
 * kill -9 keeps the OS page cache, so these rules hold for every sync mode;
 * what a power loss may additionally lose is tested by tests/fault_test.cc.
 */
#include <stdlib.h>
#include <string.h>

#include "stress.h"

/* Read one key: 1 present (gen set), 0 absent; fails the run on errors. */
static int read_key(stress_t *s, uint32_t cf, uint32_t key, uint32_t *gen, const char *when) {
    char kb[STRESS_KEY_MAX];
    size_t kl = stress_key(key, kb);
    void *v = NULL;
    size_t vl = 0;
    int rc = tdb_get(s->db, s->cf[cf], NULL, kb, kl, &v, &vl);
    if (rc == TDB_ERR_NOT_FOUND) return 0;
    if (rc != TDB_OK) {
        stress_fail(s, "%s: read of cf%u key %u failed: %s: %s", when, cf, key, tdb_strerror(rc), tdb_last_error());
        return 0;
    }
    const char *why = NULL;
    if (stress_value_check(cf, key, v, vl, s->o.max_value, gen, &why) != 0)
        stress_fail(s, "%s: cf%u key %u: %s (%zu bytes)", when, cf, key, why, vl);
    tdb_free(v);
    return 1;
}

/* Resolved state of a key: the pending one if observed (obs == 1). */
static uint64_t resolved(uint64_t w, uint8_t obs) {
    if (st_pending(w) && obs == 1) return st_make(st_pgen(w), st_pexists(w));
    return st_make(st_gen(w), st_exists(w));
}

/* One full scan of a family in one direction against the resolved states. */
static void scan_family(stress_t *s, uint32_t cf, const uint8_t *obs, int backward, const char *when) {
    uint32_t nkeys = (uint32_t)s->orc.h->nkeys;
    tdb_iter_t *it = NULL;
    int rc = tdb_iter_create(s->db, s->cf[cf], NULL, &it);
    if (rc != TDB_OK) {
        stress_die(s, "tdb_iter_create", rc);
        return;
    }
    int64_t expect = backward ? (int64_t)nkeys - 1 : 0; /* next index not yet accounted for */
    if (backward) tdb_iter_seek_to_last(it);
    else tdb_iter_seek_to_first(it);
    for (; tdb_iter_valid(it) && !stress_should_stop(s); backward ? tdb_iter_prev(it) : tdb_iter_next(it)) {
        size_t kl, vl;
        const char *k = (const char *)tdb_iter_key(it, &kl);
        const void *v = tdb_iter_value(it, &vl);
        int64_t idx = stress_key_parse(k, kl, nkeys);
        if (idx < 0) {
            stress_fail(s, "%s: scan of cf%u returned a key this tool never wrote (%zu bytes)", when, cf, kl);
            break;
        }
        if (backward ? idx > expect : idx < expect) {
            stress_fail(s, "%s: %s scan of cf%u out of order at key %lld", when, backward ? "backward" : "forward",
                        cf, (long long)idx);
            break;
        }
        for (int64_t j = expect; backward ? j > idx : j < idx; backward ? j-- : j++) {
            uint64_t w = resolved(oracle_load(&s->orc, cf, (uint32_t)j), obs[(uint64_t)cf * nkeys + (uint64_t)j]);
            if (st_exists(w))
                stress_fail(s, "%s: %s scan of cf%u skipped key %lld (present, gen %u)", when,
                            backward ? "backward" : "forward", cf, (long long)j, st_gen(w));
        }
        uint64_t w = resolved(oracle_load(&s->orc, cf, (uint32_t)idx), obs[(uint64_t)cf * nkeys + (uint64_t)idx]);
        uint32_t gen = 0;
        const char *why = NULL;
        if (stress_value_check(cf, (uint32_t)idx, v, vl, s->o.max_value, &gen, &why) != 0)
            stress_fail(s, "%s: scan of cf%u key %lld: %s", when, cf, (long long)idx, why);
        else if (!st_exists(w) || gen != st_gen(w))
            stress_fail(s, "%s: scan of cf%u key %lld shows gen %u, point read found %s gen %u", when, cf,
                        (long long)idx, gen, st_exists(w) ? "present" : "absent", st_gen(w));
        expect = backward ? idx - 1 : idx + 1;
    }
    rc = tdb_iter_status(it);
    if (rc != TDB_OK) stress_fail(s, "%s: scan of cf%u failed: %s: %s", when, cf, tdb_strerror(rc), tdb_last_error());
    for (int64_t j = expect; backward ? j >= 0 : j < (int64_t)nkeys; backward ? j-- : j++) {
        uint64_t w = resolved(oracle_load(&s->orc, cf, (uint32_t)j), obs[(uint64_t)cf * nkeys + (uint64_t)j]);
        if (st_exists(w))
            stress_fail(s, "%s: %s scan of cf%u ended before key %lld (present, gen %u)", when,
                        backward ? "backward" : "forward", cf, (long long)j, st_gen(w));
    }
    tdb_iter_destroy(it);
}

/* Verify every key and scan against the oracle, then resolve it (rules above). */
uint64_t stress_verify_all(stress_t *s, const char *when) {
    oracle_t *o = &s->orc;
    uint32_t ncf = o->h->ncf, nkeys = (uint32_t)o->h->nkeys;
    uint8_t *obs = (uint8_t *)calloc((size_t)ncf * nkeys, 1); /* 0 old, 1 new, 2 same */
    if (!obs) {
        stress_die(s, "verify: out of memory", TDB_ERR_NOMEM);
        return 0;
    }
    uint64_t verified = 0, pending = 0, went_new = 0, went_old = 0;
    uint64_t t0 = stress_now_us();
    /* Rules 1 and 2: point reads. */
    for (uint32_t cf = 0; cf < ncf && !stress_should_stop(s); cf++) {
        for (uint32_t key = 0; key < nkeys && !stress_should_stop(s); key++) {
            uint64_t w = oracle_load(o, cf, key);
            uint32_t gen = 0;
            int present = read_key(s, cf, key, &gen, when);
            int cur_ok = present == st_exists(w) && (!present || gen == st_gen(w));
            uint8_t *ob = &obs[(uint64_t)cf * nkeys + key];
            if (!st_pending(w)) {
                if (!cur_ok)
                    stress_fail(s, "%s: cf%u key %u: expected %s gen %u, found %s gen %u (acknowledged write %s)",
                                when, cf, key, st_exists(w) ? "present" : "absent", st_gen(w),
                                present ? "present" : "absent", gen, present ? "lost or resurrected" : "lost");
                continue;
            }
            pending++;
            int new_ok = present == st_pexists(w) && (!present || gen == st_pgen(w));
            if (cur_ok && new_ok) *ob = 2;
            else if (new_ok) *ob = 1;
            else if (cur_ok) *ob = 0;
            else
                stress_fail(s, "%s: cf%u key %u: found %s gen %u, expected gen %u (%s) or in-flight gen %u (%s)", when,
                            cf, key, present ? "present" : "absent", gen, st_gen(w), st_exists(w) ? "present" : "absent",
                            st_pgen(w), st_pexists(w) ? "put" : "delete");
        }
    }
    verified = (uint64_t)ncf * nkeys;
    /* Rule 3: in-flight writes are all-or-nothing by phase. */
    for (int t = 0; t < STRESS_MAX_THREADS; t++) {
        oracle_thread_t *r = &o->h->threads[t];
        if (r->phase == PHASE_NONE) continue;
        int saw_old = 0, saw_new = 0;
        for (uint32_t i = 0; i < r->nent && i < STRESS_MAX_BATCH; i++) {
            uint32_t cf = r->ent[i].cf, key = r->ent[i].key;
            if (cf >= ncf || key >= nkeys || !st_pending(oracle_load(o, cf, key))) continue;
            uint8_t ob = obs[(uint64_t)cf * nkeys + key];
            saw_old += ob == 0;
            saw_new += ob == 1;
        }
        if (r->phase == PHASE_PREPARE && saw_new)
            stress_fail(s, "%s: thread %d: a write that was never issued is visible (%d keys)", when, t, saw_new);
        if (r->phase == PHASE_ISSUED && saw_new && saw_old)
            stress_fail(s, "%s: thread %d: in-flight batch partially recovered: %d keys new, %d old (not atomic)",
                        when, t, saw_new, saw_old);
        if (r->phase == PHASE_ACKED && saw_old)
            stress_fail(s, "%s: thread %d: acknowledged batch lost on %d keys", when, t, saw_old);
    }
    /* Rule 4: scans agree with point reads. */
    for (uint32_t cf = 0; cf < ncf && !stress_should_stop(s); cf++) {
        scan_family(s, cf, obs, 0, when);
        scan_family(s, cf, obs, 1, when);
    }
    if (stress_should_stop(s)) {
        free(obs);
        return 0;
    }
    /* Resolve. */
    for (uint32_t cf = 0; cf < ncf; cf++) {
        for (uint32_t key = 0; key < nkeys; key++) {
            uint64_t w = oracle_load(o, cf, key);
            if (!st_pending(w)) continue;
            uint8_t ob = obs[(uint64_t)cf * nkeys + key];
            uint64_t nw = resolved(w, ob);
            if (ob == 1) {
                went_new++;
            } else {
                went_old++;
                uint32_t floor = st_pgen(w) > st_gen(w) ? st_pgen(w) : st_gen(w);
                nw |= (uint64_t)floor << 32; /* reserve the dropped generation */
            }
            oracle_store(o, cf, key, nw);
        }
    }
    for (int t = 0; t < STRESS_MAX_THREADS; t++) {
        o->h->threads[t].phase = PHASE_NONE;
        o->h->threads[t].nent = 0;
    }
    o->h->total_keys_verified += verified;
    oracle_sync(o);
    free(obs);
    printf("STRESS_VERIFY when=%s keys=%llu pending=%llu resolved_new=%llu resolved_old=%llu ms=%llu\n", when,
           (unsigned long long)verified, (unsigned long long)pending, (unsigned long long)went_new,
           (unsigned long long)went_old, (unsigned long long)((stress_now_us() - t0) / 1000));
    fflush(stdout);
    return verified;
}

/*
 * shim.h: the C side of the Go binding (included by the cgo preambles).
 *
 * Why a shim
 *  - tdb_last_error() is thread-local, and a goroutine may move to another
 *    OS thread between two cgo calls. So each fallible call goes through a
 *    wrapper that runs the call and, on failure, copies the detail
 *    (strdup) in the same C call; Go frees the copy. The result comes back
 *    by value (tdbgo_rc), so no Go variable escapes to the heap per call.
 *  - One cgo call per iterator step: tdbgo_iter_move moves and reports
 *    validity, key and value at once (four calls otherwise).
 *  - No Go pointer is kept by C: every buffer passed in is copied by the
 *    library before the call returns (keys, values, seek targets, names).
 */
#ifndef TIDESDB_GO_SHIM_H
#define TIDESDB_GO_SHIM_H

#include <stdlib.h>
#include <string.h>

#include <tidesdb/tidesdb.h>

typedef struct {
    int   rc;
    char *detail; /* malloc'd copy of tdb_last_error(), or NULL */
} tdbgo_rc;

/* Wrap a return code; keep the detail of a failure unless quiet (a plain
 * "not found" of a lookup sets no detail, so the thread's is stale). */
static inline tdbgo_rc tdbgo_wrap(int rc, int quiet_not_found)
{
    tdbgo_rc r = {rc, NULL};
    if (rc != TDB_OK && !(quiet_not_found && rc == TDB_ERR_NOT_FOUND)) {
        const char *d = tdb_last_error();
        if (d && *d)
            r.detail = strdup(d);
    }
    return r;
}

#define TDBGO_CALL(expr) return tdbgo_wrap((expr), 0)

static inline tdbgo_rc tdbgo_open(const char *path, const tdb_config_t *cfg, tdb_t **out) { TDBGO_CALL(tdb_open(path, cfg, out)); }
static inline tdbgo_rc tdbgo_close(tdb_t *db) { TDBGO_CALL(tdb_close(db)); }
static inline tdbgo_rc tdbgo_create_cf(tdb_t *db, const char *name, const tdb_cf_config_t *cfg, tdb_cf_t **out) { TDBGO_CALL(tdb_create_cf(db, name, cfg, out)); }
static inline tdbgo_rc tdbgo_drop_cf(tdb_t *db, const char *name) { TDBGO_CALL(tdb_drop_cf(db, name)); }
static inline tdbgo_rc tdbgo_get_cf(tdb_t *db, const char *name, tdb_cf_t **out) { TDBGO_CALL(tdb_get_cf(db, name, out)); }
static inline tdbgo_rc tdbgo_list_cfs(tdb_t *db, char ***names, size_t *count) { TDBGO_CALL(tdb_list_cfs(db, names, count)); }
static inline tdbgo_rc tdbgo_cf_get_config(const tdb_cf_t *cf, tdb_cf_config_t *out) { TDBGO_CALL(tdb_cf_get_config(cf, out)); }

static inline tdbgo_rc tdbgo_batch_create(tdb_batch_t **out) { TDBGO_CALL(tdb_batch_create(out)); }
static inline tdbgo_rc tdbgo_batch_put(tdb_batch_t *b, tdb_cf_t *cf, const void *k, size_t kl, const void *v, size_t vl, int64_t ttl) { TDBGO_CALL(tdb_batch_put(b, cf, k, kl, v, vl, ttl)); }
static inline tdbgo_rc tdbgo_batch_delete(tdb_batch_t *b, tdb_cf_t *cf, const void *k, size_t kl) { TDBGO_CALL(tdb_batch_delete(b, cf, k, kl)); }
static inline tdbgo_rc tdbgo_batch_delete_range(tdb_batch_t *b, tdb_cf_t *cf, const void *s, size_t sl, const void *e, size_t el) { TDBGO_CALL(tdb_batch_delete_range(b, cf, s, sl, e, el)); }
static inline tdbgo_rc tdbgo_batch_single_delete(tdb_batch_t *b, tdb_cf_t *cf, const void *k, size_t kl) { TDBGO_CALL(tdb_batch_single_delete(b, cf, k, kl)); }
static inline tdbgo_rc tdbgo_write(tdb_t *db, tdb_batch_t *b, int64_t stall_timeout_ms, int has_opts)
{
    tdb_write_options_t o;
    tdb_write_options_default(&o);
    o.stall_timeout_ms = stall_timeout_ms;
    TDBGO_CALL(tdb_write_opt(db, b, has_opts ? &o : NULL));
}
static inline tdbgo_rc tdbgo_put(tdb_t *db, tdb_cf_t *cf, const void *k, size_t kl, const void *v, size_t vl, int64_t ttl) { TDBGO_CALL(tdb_put(db, cf, k, kl, v, vl, ttl)); }
static inline tdbgo_rc tdbgo_delete(tdb_t *db, tdb_cf_t *cf, const void *k, size_t kl) { TDBGO_CALL(tdb_delete(db, cf, k, kl)); }
static inline tdbgo_rc tdbgo_delete_range(tdb_t *db, tdb_cf_t *cf, const void *s, size_t sl, const void *e, size_t el) { TDBGO_CALL(tdb_delete_range(db, cf, s, sl, e, el)); }
static inline tdbgo_rc tdbgo_single_delete(tdb_t *db, tdb_cf_t *cf, const void *k, size_t kl) { TDBGO_CALL(tdb_single_delete(db, cf, k, kl)); }
static inline tdbgo_rc tdbgo_sync(tdb_t *db) { TDBGO_CALL(tdb_sync(db)); }

/* A lookup: the value is a malloc'd copy the caller frees with tdb_free. */
typedef struct {
    int    rc;
    char  *detail;
    void  *val;
    size_t vlen;
} tdbgo_val;

static inline tdbgo_val tdbgo_val_of(int rc, void *val, size_t vlen)
{
    tdbgo_rc r = tdbgo_wrap(rc, 1);
    tdbgo_val v = {r.rc, r.detail, val, vlen};
    return v;
}
static inline tdbgo_val tdbgo_get(tdb_t *db, tdb_cf_t *cf, const tdb_snapshot_t *snap, const void *k, size_t kl)
{
    void *val = NULL;
    size_t vlen = 0;
    int rc = tdb_get(db, cf, snap, k, kl, &val, &vlen);
    return tdbgo_val_of(rc, val, vlen);
}
/* tdbgo_get into the caller's buffer of cap bytes when the value fits:
 * then val is NULL and the C copy is already freed (one cgo call instead
 * of two); else val is the C copy, as tdbgo_get. */
static inline tdbgo_val tdbgo_get_into(tdb_t *db, tdb_cf_t *cf, const tdb_snapshot_t *snap, const void *k,
                                       size_t kl, void *buf, size_t cap)
{
    void *val = NULL;
    size_t vlen = 0;
    int rc = tdb_get(db, cf, snap, k, kl, &val, &vlen);
    if (rc == TDB_OK && vlen <= cap) {
        if (vlen)
            memcpy(buf, val, vlen);
        tdb_free(val);
        val = NULL;
    }
    return tdbgo_val_of(rc, val, vlen);
}
static inline tdbgo_val tdbgo_txn_get(tdb_txn_t *t, tdb_cf_t *cf, const void *k, size_t kl, int for_update, int exclusive)
{
    void *val = NULL;
    size_t vlen = 0;
    int rc = for_update ? tdb_txn_get_for_update(t, cf, k, kl, exclusive, &val, &vlen)
                        : tdb_txn_get(t, cf, k, kl, &val, &vlen);
    return tdbgo_val_of(rc, val, vlen);
}

static inline tdbgo_rc tdbgo_approximate_count(tdb_t *db, tdb_cf_t *cf, const void *lo, size_t lol, const void *hi, size_t hil, uint64_t *count) { TDBGO_CALL(tdb_approximate_count(db, cf, lo, lol, hi, hil, count)); }

/* Iterators. */
static inline tdbgo_rc tdbgo_iter_create(tdb_t *db, tdb_cf_t *cf, const tdb_snapshot_t *snap, tdb_iter_t **out) { TDBGO_CALL(tdb_iter_create(db, cf, snap, out)); }
static inline tdbgo_rc tdbgo_txn_iter_create(tdb_txn_t *t, tdb_cf_t *cf, tdb_iter_t **out) { TDBGO_CALL(tdb_txn_iter_create(t, cf, out)); }

enum {
    TDBGO_FIRST = 0,
    TDBGO_LAST = 1,
    TDBGO_SEEK = 2,
    TDBGO_SEEK_FOR_PREV = 3,
    TDBGO_NEXT = 4,
    TDBGO_PREV = 5,
};

/* The position after a move: valid, key and value (valid until the next
 * move), or the iterator's status when it is not valid. */
typedef struct {
    int         valid;
    int         rc;
    char       *detail;
    const void *key;
    size_t      klen;
    const void *val;
    size_t      vlen;
} tdbgo_pos;

static inline tdbgo_pos tdbgo_iter_move(tdb_iter_t *it, int op, const void *k, size_t kl)
{
    switch (op) {
    case TDBGO_FIRST: tdb_iter_seek_to_first(it); break;
    case TDBGO_LAST: tdb_iter_seek_to_last(it); break;
    case TDBGO_SEEK: tdb_iter_seek(it, k, kl); break;
    case TDBGO_SEEK_FOR_PREV: tdb_iter_seek_for_prev(it, k, kl); break;
    case TDBGO_NEXT: tdb_iter_next(it); break;
    default: tdb_iter_prev(it); break;
    }
    tdbgo_pos p = {0, TDB_OK, NULL, NULL, 0, NULL, 0};
    p.valid = tdb_iter_valid(it);
    if (p.valid) {
        p.key = tdb_iter_key(it, &p.klen);
        p.val = tdb_iter_value(it, &p.vlen);
    } else {
        tdbgo_rc r = tdbgo_wrap(tdb_iter_status(it), 0);
        p.rc = r.rc;
        p.detail = r.detail;
    }
    return p;
}

/* Bytewise order of two keys. */
static inline int tdbgo_cmp(const void *a, size_t al, const void *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    return c ? c : (al < bl ? -1 : al > bl);
}

/* A batch of entries for the range-over-func iterators. */
typedef struct {
    int    n;     /* entries copied into buf                              */
    size_t used;  /* bytes of buf used                                    */
    size_t need;  /* n == 0: bytes the current entry needs (buf too small) */
    int    more;  /* the iterator is on a further entry within the bound  */
    int    rc;    /* the iterator's status when it ended                  */
    char  *detail;
} tdbgo_fill;

/* Copy entries into buf from the iterator's current (valid) entry on,
 * stepping forward (dir > 0) or backward after each, until max entries,
 * a full buf, the bound (forward: a key >= bound; backward: a key <
 * bound; has_bound 0: none) or the end. Each entry is laid out as a
 * 4-byte key length, a 4-byte value length (native order), the key, the
 * value. The iterator is left on the first entry not taken (more = 1) or
 * past the range. One cgo call for many entries. */
static inline tdbgo_fill tdbgo_iter_fill(tdb_iter_t *it, int dir, const void *bound, size_t blen,
                                         int has_bound, void *buf, size_t cap, int max)
{
    tdbgo_fill f = {0, 0, 0, 0, TDB_OK, NULL};
    char *out = (char *)buf;
    while (tdb_iter_valid(it)) {
        size_t kl, vl;
        const void *k = tdb_iter_key(it, &kl);
        if (has_bound && (dir > 0 ? tdbgo_cmp(k, kl, bound, blen) >= 0 : tdbgo_cmp(k, kl, bound, blen) < 0))
            return f; /* past the bound: more = 0 */
        const void *v = tdb_iter_value(it, &vl);
        size_t need = 8 + kl + vl;
        if (f.n == max || f.used + need > cap) {
            if (f.n == 0)
                f.need = need;
            f.more = 1;
            return f;
        }
        uint32_t l[2] = {(uint32_t)kl, (uint32_t)vl};
        memcpy(out + f.used, l, 8);
        memcpy(out + f.used + 8, k, kl);
        memcpy(out + f.used + 8 + kl, v, vl);
        f.used += need;
        f.n++;
        if (dir > 0)
            tdb_iter_next(it);
        else
            tdb_iter_prev(it);
    }
    tdbgo_rc r = tdbgo_wrap(tdb_iter_status(it), 0);
    f.rc = r.rc;
    f.detail = r.detail;
    return f;
}

/* Transactions. */
static inline tdbgo_rc tdbgo_txn_begin(tdb_t *db, const tdb_txn_options_t *o, tdb_txn_t **out) { TDBGO_CALL(tdb_txn_begin(db, o, out)); }
static inline tdbgo_rc tdbgo_txn_reset(tdb_txn_t *t, const tdb_txn_options_t *o) { TDBGO_CALL(tdb_txn_reset(t, o)); }
static inline tdbgo_rc tdbgo_txn_put(tdb_txn_t *t, tdb_cf_t *cf, const void *k, size_t kl, const void *v, size_t vl, int64_t ttl) { TDBGO_CALL(tdb_txn_put(t, cf, k, kl, v, vl, ttl)); }
static inline tdbgo_rc tdbgo_txn_delete(tdb_txn_t *t, tdb_cf_t *cf, const void *k, size_t kl) { TDBGO_CALL(tdb_txn_delete(t, cf, k, kl)); }
static inline tdbgo_rc tdbgo_txn_single_delete(tdb_txn_t *t, tdb_cf_t *cf, const void *k, size_t kl) { TDBGO_CALL(tdb_txn_single_delete(t, cf, k, kl)); }
static inline tdbgo_rc tdbgo_txn_commit(tdb_txn_t *t) { TDBGO_CALL(tdb_txn_commit(t)); }
static inline tdbgo_rc tdbgo_txn_rollback(tdb_txn_t *t) { TDBGO_CALL(tdb_txn_rollback(t)); }
static inline tdbgo_rc tdbgo_txn_set_lock_timeout(tdb_txn_t *t, int64_t ms) { TDBGO_CALL(tdb_txn_set_lock_timeout(t, ms)); }
static inline tdbgo_rc tdbgo_txn_savepoint(tdb_txn_t *t, const char *n) { TDBGO_CALL(tdb_txn_savepoint(t, n)); }
static inline tdbgo_rc tdbgo_txn_rollback_to_savepoint(tdb_txn_t *t, const char *n) { TDBGO_CALL(tdb_txn_rollback_to_savepoint(t, n)); }
static inline tdbgo_rc tdbgo_txn_release_savepoint(tdb_txn_t *t, const char *n) { TDBGO_CALL(tdb_txn_release_savepoint(t, n)); }
static inline tdbgo_rc tdbgo_txn_prepare(tdb_txn_t *t, const void *x, size_t xl, int durable) { TDBGO_CALL(tdb_txn_prepare(t, x, xl, durable)); }
static inline tdbgo_rc tdbgo_commit_prepared(tdb_t *db, const void *x, size_t xl) { TDBGO_CALL(tdb_commit_prepared(db, x, xl)); }
static inline tdbgo_rc tdbgo_rollback_prepared(tdb_t *db, const void *x, size_t xl) { TDBGO_CALL(tdb_rollback_prepared(db, x, xl)); }

/* The prepared transactions' xids, gathered in C (no callback into Go):
 * a malloc'd array of malloc'd copies, freed with tdbgo_xids_free. */
typedef struct {
    size_t  n, cap;
    void  **xid;
    size_t *len;
    int     nomem;
} tdbgo_xids;

static int tdbgo_xid_add(void *ctx, const void *xid, size_t len)
{
    tdbgo_xids *x = (tdbgo_xids *)ctx;
    if (x->n == x->cap) {
        size_t cap = x->cap ? 2 * x->cap : 8;
        void **p = (void **)realloc(x->xid, cap * sizeof *p);
        if (!p) { x->nomem = 1; return 1; }
        x->xid = p;
        size_t *l = (size_t *)realloc(x->len, cap * sizeof *l);
        if (!l) { x->nomem = 1; return 1; }
        x->len = l;
        x->cap = cap;
    }
    void *c = malloc(len ? len : 1);
    if (!c) { x->nomem = 1; return 1; }
    memcpy(c, xid, len);
    x->xid[x->n] = c;
    x->len[x->n] = len;
    x->n++;
    return 0;
}
static inline void tdbgo_xids_free(tdbgo_xids *x)
{
    for (size_t i = 0; i < x->n; i++)
        free(x->xid[i]);
    free(x->xid);
    free(x->len);
}
static inline tdbgo_rc tdbgo_recover_prepared(tdb_t *db, tdbgo_xids *x)
{
    int rc = tdb_recover_prepared(db, tdbgo_xid_add, x);
    if (rc >= 0 && x->nomem) rc = TDB_ERR_NOMEM;
    if (rc > 0) rc = TDB_OK;
    TDBGO_CALL(rc);
}
static inline void *tdbgo_xid_at(const tdbgo_xids *x, size_t i) { return x->xid[i]; }
static inline size_t tdbgo_xid_len(const tdbgo_xids *x, size_t i) { return x->len[i]; }

/* Maintenance. */
static inline tdbgo_rc tdbgo_flush(tdb_t *db, tdb_cf_t *cf) { TDBGO_CALL(tdb_flush(db, cf)); }
static inline tdbgo_rc tdbgo_compact(tdb_t *db, tdb_cf_t *cf) { TDBGO_CALL(tdb_compact(db, cf)); }
static inline tdbgo_rc tdbgo_wait_idle(tdb_t *db) { TDBGO_CALL(tdb_wait_idle(db)); }
static inline tdbgo_rc tdbgo_pause_background(tdb_t *db) { TDBGO_CALL(tdb_pause_background(db)); }
static inline tdbgo_rc tdbgo_continue_background(tdb_t *db) { TDBGO_CALL(tdb_continue_background(db)); }
static inline tdbgo_rc tdbgo_checkpoint(tdb_t *db, const char *dir, uint64_t *seq) { TDBGO_CALL(tdb_checkpoint(db, dir, seq)); }
static inline tdbgo_rc tdbgo_get_stats(tdb_t *db, tdb_cf_t *cf, tdb_stats_t *out) { TDBGO_CALL(tdb_get_stats(db, cf, out)); }

/* Snapshots: tdb_snapshot_create reports failure as NULL only. */
static inline tdb_snapshot_t *tdbgo_snapshot_create(tdb_t *db, char **detail)
{
    tdb_snapshot_t *s = tdb_snapshot_create(db);
    if (!s) {
        const char *d = tdb_last_error();
        *detail = d && *d ? strdup(d) : NULL;
    }
    return s;
}

#endif

/*
 * txn: multi-version transactions on top of the db layer.
 *
 * Invariants
 *  1. A transaction's writes live only in its private write buffer (wbuf)
 *     until commit, which turns them into one batch (one WAL record): a
 *     commit is atomic across column families, also after a crash.
 *  2. Reads at REPEATABLE_READ and stronger use a snapshot registered with
 *     the database at begin, so compaction keeps every version they can see
 *     until the transaction ends.
 *  3. Conflict checks run in the write leader (db_write_bounded's fn) after
 *     every earlier commit is applied and before this commit gets sequence
 *     numbers: "changed after my snapshot" means a committed entry of the
 *     key with a sequence above snap_seq, or a write of an earlier member of
 *     the same commit group. Commit order is the serialization order.
 *  4. A finished transaction (committed, rolled back, failed) accepts only
 *     reset and free; everything else returns TDB_ERR_INVALID_ARG. A commit
 *     refused by back-pressure (TDB_ERR_BUSY from the write path, which
 *     returns it only before validation and before anything is numbered or
 *     written) does not finish it: it stays active for a retry.
 *  5. Row locks (pessimistic) are taken before the buffered write and held
 *     until the transaction ends or rolls back past the savepoint that
 *     preceded them; under release_before_sync a commit that syncs ends
 *     them once its writes are visible, while its WAL fsync runs (the
 *     write leader calls release_locks_visible; db_impl.h invariant 2b).
 *  6. Two-phase commit: tdb_txn_prepare validates like a commit and logs the
 *     writes as a PREPARED record (db_prepare); from then on the transaction
 *     is PREPARED: it keeps its locks (its snapshot, reads and write buffer
 *     are released: the db's registry holds the writes) and accepts only
 *     commit and rollback (resolved by xid through the db), or free, which
 *     leaves it prepared in the db. Keys of prepared transactions conflict
 *     with the writes, locking reads and commit-time checks of others.
 * One transaction is used by one thread at a time; tdb_txn_cancel_wait is
 * the only call allowed from another thread.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_txn.h"
#include "txn/lock_mgr.h"
#include "txn/wbuf.h"
#include "util/coding.h"
#include "util/error.h"

enum { TXN_ACTIVE, TXN_COMMITTED, TXN_ROLLED_BACK, TXN_FAILED, TXN_PREPARED };

typedef struct txn_range {
    uint32_t cf_id;
    tdb_cf_t *cf;
    buf_t lo, hi;
    bool lo_inf, hi_inf, empty;
} txn_range_t;

typedef struct savepoint {
    char *name;
    uint64_t wb_mark;
    size_t lock_mark;
} savepoint_t;

struct tdb_txn {
    tdb_t *db;
    tdb_txn_options_t opts;
    int state;
    uint64_t id;
    tdb_snapshot_t *snap;
    uint64_t snap_seq;
    wbuf_t *wb;
    lock_owner_t *locks;
    tdb_cf_t **cfs; /* families written, for building the commit batch */
    int ncfs, capcfs;
    buf_t reads;    /* tracked reads: fixed32 cf id, lenprefixed key */
    txn_range_t **ranges;
    int nranges, capranges;
    savepoint_t *sps;
    int nsps, capsps;
    int open_iters;
    tdb_batch_t *batch; /* commit batch, reused across runs */
    buf_t xid;          /* PREPARED: its xid */
    bool preparing;     /* in tdb_txn_prepare: written keys are checked at every level */
    void *user;         /* tdb_txn_set_user, for the lock-wait hook */
    uint64_t writes;    /* writes and savepoints in this run (tdb_txn_unlock_since) */
};

void tdb_txn_options_default(tdb_txn_options_t *o) {
    memset(o, 0, sizeof *o);
    o->isolation = TDB_ISO_SNAPSHOT;
    o->lock_timeout_ms = 5000;
}

/* Does this level read from a snapshot taken at begin? */
static bool uses_snapshot(const tdb_txn_t *t) { return t->opts.isolation >= TDB_ISO_REPEATABLE_READ; }
/* Are buffered writes checked for write-write conflicts at commit? */
static bool checks_writes(const tdb_txn_t *t) { return t->opts.isolation >= TDB_ISO_SNAPSHOT && !t->opts.pessimistic; }
static bool serializable(const tdb_txn_t *t) { return t->opts.isolation == TDB_ISO_SERIALIZABLE; }

/* Check a transaction is usable for reads or writes. */
static int check_active(const tdb_txn_t *t) {
    if (!t) return tdb_err(TDB_ERR_INVALID_ARG, "transaction handle is NULL");
    if (t->state == TXN_ACTIVE) return TDB_OK;
    if (t->state == TXN_PREPARED)
        return tdb_err(TDB_ERR_INVALID_ARG, "transaction is prepared: only commit or rollback are allowed");
    static const char *names[] = {"active", "committed", "rolled back", "failed"};
    return tdb_err(TDB_ERR_INVALID_ARG, "transaction is %s: reset or free it", names[t->state]);
}

/* Release everything the transaction holds for its current run. */
static void txn_end(tdb_txn_t *t, int state) {
    if (t->locks) lock_release_all(t->locks);
    if (t->snap) tdb_snapshot_release(t->db, t->snap);
    t->snap = NULL;
    if (t->wb) wbuf_clear(t->wb);
    buf_clear(&t->reads);
    for (int i = 0; i < t->nranges; i++) {
        buf_free(&t->ranges[i]->lo);
        buf_free(&t->ranges[i]->hi);
        free(t->ranges[i]);
    }
    t->nranges = 0;
    for (int i = 0; i < t->nsps; i++) free(t->sps[i].name);
    t->nsps = 0;
    t->ncfs = 0;
    t->state = state;
}

static void free_lock_mgr(void *m) { lock_mgr_destroy((lock_mgr_t *)m); }

static void txn_lock_counts(void *m, tdb_stats_t *out) {
    lock_stats_t s;
    lock_mgr_stats((lock_mgr_t *)m, &s);
    out->lock_waits = s.waits;
    out->lock_wait_micros = s.wait_us;
    out->lock_wait_max_micros = s.wait_max_us;
    out->lock_deadlocks = s.deadlocks;
    out->lock_timeouts = s.timeouts;
}

/* Create a lock manager for the db's slot. */
static void *new_lock_mgr(void) { return lock_mgr_create(); }

/* The database's lock manager, created on first use. */
static lock_mgr_t *txn_lock_mgr(tdb_t *db) {
    return (lock_mgr_t *)db_lock_mgr(db, new_lock_mgr, free_lock_mgr, txn_lock_counts);
}

/* Start a run of the transaction with the given options. */
static int txn_start(tdb_txn_t *t, const tdb_txn_options_t *opts) {
    tdb_txn_options_t o;
    if (opts) o = *opts;
    else tdb_txn_options_default(&o);
    if (o.isolation < TDB_ISO_READ_UNCOMMITTED || o.isolation > TDB_ISO_SERIALIZABLE)
        return tdb_err(TDB_ERR_INVALID_ARG, "unknown isolation level %d", o.isolation);
    if (o.lock_timeout_ms < 0) return tdb_err(TDB_ERR_INVALID_ARG, "negative lock timeout");
    if (o.max_bytes == 0) o.max_bytes = db_memory_budget(t->db) / 4;
    t->opts = o;
    t->id = db_next_txn_id(t->db);
    t->writes = 0;
    if (o.pessimistic && !t->locks) {
        lock_mgr_t *m = txn_lock_mgr(t->db);
        if (!m) return tdb_err(TDB_ERR_NOMEM, "lock manager");
        t->locks = lock_owner_create(m, t->id);
        if (!t->locks) return tdb_err(TDB_ERR_NOMEM, "lock owner");
        lock_owner_set_user(t->locks, t->user);
    } else if (t->locks) {
        lock_owner_set_txn_id(t->locks, t->id); /* reused by reset: holds nothing */
        lock_clear_cancel(t->locks);            /* meant for the run that ended */
    }
    if (uses_snapshot(t)) {
        t->snap = tdb_snapshot_create(t->db);
        if (!t->snap) return tdb_err(TDB_ERR_NOMEM, "snapshot");
        t->snap_seq = tdb_snapshot_sequence(t->snap);
    } else {
        t->snap_seq = db_visible_seq(t->db);
    }
    t->state = TXN_ACTIVE;
    return TDB_OK;
}

int tdb_txn_begin(tdb_t *db, const tdb_txn_options_t *opts, tdb_txn_t **out) {
    if (!db || !out) return tdb_err(TDB_ERR_INVALID_ARG, "tdb_txn_begin: NULL argument");
    tdb_txn_t *t = (tdb_txn_t *)calloc(1, sizeof *t);
    if (!t) return tdb_err(TDB_ERR_NOMEM, "transaction");
    t->db = db;
    int rc = txn_start(t, opts); /* the write buffer is created on first write */
    if (rc != TDB_OK) {
        t->state = TXN_FAILED;
        tdb_txn_free(t);
        return rc;
    }
    *out = t;
    return TDB_OK;
}

int tdb_txn_reset(tdb_txn_t *t, const tdb_txn_options_t *opts) {
    if (!t) return tdb_err(TDB_ERR_INVALID_ARG, "transaction handle is NULL");
    if (t->open_iters) return tdb_err(TDB_ERR_INVALID_ARG, "destroy the transaction's iterators first");
    if (t->state == TXN_PREPARED)
        return tdb_err(TDB_ERR_INVALID_ARG, "transaction is prepared: commit or roll it back first");
    if (t->state == TXN_ACTIVE) txn_end(t, TXN_ROLLED_BACK);
    if (t->locks && !(opts && opts->pessimistic)) {
        lock_owner_destroy(t->locks);
        t->locks = NULL;
    }
    return txn_start(t, opts);
}

void tdb_txn_free(tdb_txn_t *t) {
    if (!t) return;
    if (t->state == TXN_PREPARED) { /* it stays prepared, resolvable by xid (invariant 6) */
        db_prepared_detach(t->db, buf_slice(&t->xid));
        txn_end(t, TXN_ROLLED_BACK);
    }
    if (t->state == TXN_ACTIVE || t->snap) txn_end(t, TXN_ROLLED_BACK);
    if (t->locks) lock_owner_destroy(t->locks);
    if (t->wb) wbuf_destroy(t->wb);
    tdb_batch_destroy(t->batch);
    buf_free(&t->xid);
    buf_free(&t->reads);
    free(t->ranges);
    free(t->sps);
    free(t->cfs);
    free(t);
}

int tdb_txn_set_lock_timeout(tdb_txn_t *t, int64_t ms) {
    if (!t) return tdb_err(TDB_ERR_INVALID_ARG, "NULL transaction");
    if (ms < 0) return tdb_err(TDB_ERR_INVALID_ARG, "negative lock timeout");
    t->opts.lock_timeout_ms = ms;
    return TDB_OK;
}

void tdb_txn_cancel_wait(tdb_txn_t *t) {
    if (t && t->locks) lock_cancel_wait(t->locks);
}

uint64_t tdb_txn_snapshot_sequence(const tdb_txn_t *t) { return t ? t->snap_seq : 0; }

int tdb_set_lock_wait_hook(tdb_t *db, tdb_lock_wait_hook_fn fn, void *ctx) {
    if (!db) return tdb_err(TDB_ERR_INVALID_ARG, "tdb_set_lock_wait_hook: NULL database");
    lock_mgr_t *m = txn_lock_mgr(db);
    if (!m) return tdb_err(TDB_ERR_NOMEM, "lock manager");
    lock_mgr_set_wait_hook(m, fn, fn ? ctx : NULL);
    return TDB_OK;
}

void tdb_txn_set_user(tdb_txn_t *t, void *user) {
    if (!t) return;
    t->user = user;
    if (t->locks) lock_owner_set_user(t->locks, user);
}

void *tdb_txn_user(const tdb_txn_t *t) { return t ? t->user : NULL; }

uint64_t tdb_txn_id(const tdb_txn_t *t) { return t ? t->id : 0; }

int tdb_list_lock_waits(tdb_t *db, tdb_lock_wait_fn fn, void *ctx) {
    if (!db || !fn) return tdb_err(TDB_ERR_INVALID_ARG, "tdb_list_lock_waits: NULL argument");
    lock_mgr_t *m = txn_lock_mgr(db);
    if (!m) return tdb_err(TDB_ERR_NOMEM, "lock manager");
    lock_wait_info_t *w = NULL;
    size_t n = 0;
    TDB_RET(lock_mgr_list_waits(m, &w, &n));
    int reported = 0;
    for (size_t i = 0; i < n; i++) {
        char name[256];
        if (db_cf_name_of(db, w[i].cf_id, name, sizeof name) != TDB_OK) continue; /* dropped meanwhile */
        tdb_lock_wait_t e = {w[i].waiter_txn_id, w[i].holder_txn_id, name, w[i].key,
                             w[i].klen, w[i].waiter_excl, w[i].holder_excl,
                             w[i].range, w[i].hi, w[i].hilen, w[i].hi_inclusive};
        reported++;
        if (fn(ctx, &e)) break;
    }
    lock_wait_info_free(w, n);
    return reported;
}

/* Remember a family the transaction writes. */
static int note_cf(tdb_txn_t *t, tdb_cf_t *cf) {
    for (int i = 0; i < t->ncfs; i++)
        if (t->cfs[i] == cf) return TDB_OK;
    if (t->ncfs == t->capcfs) {
        int n = t->capcfs ? t->capcfs * 2 : 4;
        tdb_cf_t **p = (tdb_cf_t **)realloc(t->cfs, (size_t)n * sizeof *p);
        if (!p) return tdb_err(TDB_ERR_NOMEM, "transaction");
        t->cfs = p;
        t->capcfs = n;
    }
    t->cfs[t->ncfs++] = cf;
    return TDB_OK;
}

/* Record a read for commit-time validation. */
static int track_read(tdb_txn_t *t, tdb_cf_t *cf, slice_t key) {
    TDB_RET(put_fixed32(&t->reads, db_cf_id(cf)));
    return put_lenprefixed(&t->reads, key);
}

/* Pessimistic: lock the key; at SNAPSHOT and above, fail if it changed
 * after the snapshot (the lock came too late to protect it). */
static int lock_key(tdb_txn_t *t, tdb_cf_t *cf, slice_t key, int exclusive) {
    int64_t us = t->opts.lock_timeout_ms * 1000;
    TDB_RET(lock_acquire(t->locks, db_cf_id(cf), key, exclusive, us));
    if (db_prepared_has_key(t->db, db_cf_id(cf), key))
        return tdb_err(TDB_ERR_CONFLICT, "the key is written by a prepared transaction (not yet committed)");
    if (t->opts.isolation >= TDB_ISO_SNAPSHOT) {
        int r = db_changed_since(t->db, cf, key, t->snap_seq);
        if (r < 0) return r;
        if (r == 1) return tdb_err(TDB_ERR_CONFLICT, "key changed after the transaction's snapshot");
    }
    return TDB_OK;
}

/* Buffer one write. */
static int txn_write(tdb_txn_t *t, tdb_cf_t *cf, unsigned type, const void *key, size_t klen, const void *val,
                     size_t vlen, int64_t ttl) {
    int rc = check_active(t);
    if (rc != TDB_OK) return rc;
    TRY(db_check_cf(t->db, cf));
    if (t->opts.read_only) RAISE(TDB_ERR_INVALID_ARG, "write in a read-only transaction");
    if (!key || klen == 0) RAISE(TDB_ERR_INVALID_ARG, "empty key");
    if (klen > TDB_MAX_KEY_SIZE) RAISE(TDB_ERR_TOO_LARGE, "key of %zu bytes exceeds %u", klen, TDB_MAX_KEY_SIZE);
    if (vlen > TDB_MAX_VALUE_SIZE) RAISE(TDB_ERR_TOO_LARGE, "value of %zu bytes exceeds %u", vlen, TDB_MAX_VALUE_SIZE);
    if (vlen && !val) RAISE(TDB_ERR_INVALID_ARG, "value is NULL with length %zu", vlen);
    if (ttl < 0) RAISE(TDB_ERR_INVALID_ARG, "negative ttl");
    if (!t->wb && !(t->wb = wbuf_create())) RAISE(TDB_ERR_NOMEM, "write buffer");
    if (wbuf_bytes(t->wb) + klen + vlen > t->opts.max_bytes)
        RAISE(TDB_ERR_TOO_LARGE, "transaction exceeds its %zu-byte budget", t->opts.max_bytes);
    slice_t k = slice_make(key, klen);
    t->writes++; /* counted from the lock on: an unlock may not undo it */
    if (t->locks) TRY(lock_key(t, cf, k, 1));
    TRY(note_cf(t, cf));
    if (type == KT_PUT && ttl > 0) {
        buf_t v = {0};
        rc = put_fixed64(&v, (uint64_t)(db_now_unix() + ttl));
        if (rc == TDB_OK) rc = buf_append(&v, val, vlen);
        if (rc == TDB_OK) rc = wbuf_put(t->wb, db_cf_id(cf), k, KT_PUT_TTL, buf_slice(&v));
        buf_free(&v);
        return rc;
    }
    return wbuf_put(t->wb, db_cf_id(cf), k, type, slice_make(val, vlen));
err:
    return rc;
}

int tdb_txn_put(tdb_txn_t *t, tdb_cf_t *cf, const void *key, size_t klen, const void *val, size_t vlen,
                int64_t ttl_seconds) {
    return txn_write(t, cf, KT_PUT, key, klen, val, vlen, ttl_seconds);
}

int tdb_txn_delete(tdb_txn_t *t, tdb_cf_t *cf, const void *key, size_t klen) {
    return txn_write(t, cf, KT_DELETE, key, klen, NULL, 0, 0);
}

/* Buffered like a delete; committed as KT_SINGLE_DELETE (docs/design/deletes.md). */
int tdb_txn_single_delete(tdb_txn_t *t, tdb_cf_t *cf, const void *key, size_t klen) {
    return txn_write(t, cf, KT_SINGLE_DELETE, key, klen, NULL, 0, 0);
}

/* Read through the transaction; `latest` reads committed data (locking reads). */
static int txn_read(tdb_txn_t *t, tdb_cf_t *cf, slice_t key, bool latest, void **val, size_t *vlen) {
    unsigned type;
    slice_t raw, v;
    if (t->wb && wbuf_get(t->wb, db_cf_id(cf), key, &type, &raw)) {
        if (!kt_is_value(type) || !db_value_live(type, raw, db_now_unix(), &v)) return TDB_ERR_NOT_FOUND;
        char *p = (char *)malloc(v.size ? v.size : 1);
        if (!p) return tdb_err(TDB_ERR_NOMEM, "value");
        if (v.size) memcpy(p, v.data, v.size);
        *val = p;
        *vlen = v.size;
        return TDB_OK;
    }
    const tdb_snapshot_t *s = (latest || !uses_snapshot(t)) ? NULL : t->snap;
    return tdb_get(t->db, cf, s, key.data, key.size, val, vlen);
}

int tdb_txn_get(tdb_txn_t *t, tdb_cf_t *cf, const void *key, size_t klen, void **val, size_t *vlen) {
    int rc = check_active(t);
    if (rc != TDB_OK) return rc;
    if ((rc = db_check_cf(t->db, cf)) != TDB_OK) return rc;
    if (!key || klen == 0 || !val || !vlen) return tdb_err(TDB_ERR_INVALID_ARG, "tdb_txn_get: bad argument");
    slice_t k = slice_make(key, klen);
    if (serializable(t) && !t->opts.read_only && t->locks && (rc = lock_key(t, cf, k, 0)) != TDB_OK) return rc;
    rc = txn_read(t, cf, k, false, val, vlen);
    if ((rc == TDB_OK || rc == TDB_ERR_NOT_FOUND) && serializable(t) && !t->locks) {
        int r = track_read(t, cf, k);
        if (r != TDB_OK) {
            if (rc == TDB_OK) tdb_free(*val);
            return r;
        }
    }
    return rc;
}

int tdb_txn_get_for_update(tdb_txn_t *t, tdb_cf_t *cf, const void *key, size_t klen, int exclusive, void **val,
                           size_t *vlen) {
    int rc = check_active(t);
    if (rc != TDB_OK) return rc;
    if ((rc = db_check_cf(t->db, cf)) != TDB_OK) return rc;
    if (!key || klen == 0 || !val || !vlen) return tdb_err(TDB_ERR_INVALID_ARG, "tdb_txn_get_for_update: bad argument");
    slice_t k = slice_make(key, klen);
    if (t->locks) {
        if ((rc = lock_key(t, cf, k, exclusive)) != TDB_OK) return rc;
        /* Locking reads of the weaker levels see the latest committed row. */
        return txn_read(t, cf, k, t->opts.isolation < TDB_ISO_SNAPSHOT, val, vlen);
    }
    rc = txn_read(t, cf, k, false, val, vlen);
    if ((rc == TDB_OK || rc == TDB_ERR_NOT_FOUND) && t->opts.isolation >= TDB_ISO_SNAPSHOT) {
        int r = track_read(t, cf, k);
        if (r != TDB_OK) {
            if (rc == TDB_OK) tdb_free(*val);
            return r;
        }
    }
    return rc;
}

tdb_lock_mark_t tdb_txn_lock_mark(const tdb_txn_t *t) {
    tdb_lock_mark_t m = {0, 0, 0};
    if (!t) return m;
    m.locks = t->locks ? lock_owner_count(t->locks) : 0;
    m.writes = t->writes;
    m.run = t->id;
    return m;
}

int tdb_txn_unlock_since(tdb_txn_t *t, const tdb_lock_mark_t *mark) {
    TDB_RET(check_active(t));
    if (!mark) return tdb_err(TDB_ERR_INVALID_ARG, "tdb_txn_unlock_since: NULL mark");
    if (mark->run != t->id) return tdb_err(TDB_ERR_INVALID_ARG, "lock mark of another transaction");
    if (t->opts.isolation > TDB_ISO_READ_COMMITTED)
        return tdb_err(TDB_ERR_INVALID_ARG, "read locks are kept above READ COMMITTED");
    if (t->writes != mark->writes)
        return tdb_err(TDB_ERR_INVALID_ARG, "the transaction wrote or made a savepoint after the lock mark");
    if (!t->locks) return TDB_OK;
    if (mark->locks > lock_owner_count(t->locks))
        return tdb_err(TDB_ERR_INVALID_ARG, "lock mark past the locks held (rolled back past it)");
    lock_release_since(t->locks, mark->locks);
    return TDB_OK;
}

int tdb_txn_lock_range(tdb_txn_t *t, tdb_cf_t *cf, const void *lo, size_t lolen, const void *hi, size_t hilen,
                       int flags, uint64_t *range_id) {
    int rc = check_active(t);
    if (rc != TDB_OK) return rc;
    if ((rc = db_check_cf(t->db, cf)) != TDB_OK) return rc;
    if (!t->locks) return tdb_err(TDB_ERR_INVALID_ARG, "range locks need a pessimistic transaction");
    if ((lolen && !lo) || (hilen && !hi) || (flags & ~(TDB_RANGE_EXCLUSIVE | TDB_RANGE_HI_INCLUSIVE)))
        return tdb_err(TDB_ERR_INVALID_ARG, "tdb_txn_lock_range: bad argument");
    slice_t h = slice_make(hi, hilen);
    return lock_acquire_range(t->locks, db_cf_id(cf), slice_make(lo, lolen), hi ? &h : NULL,
                              (flags & TDB_RANGE_HI_INCLUSIVE) != 0, (flags & TDB_RANGE_EXCLUSIVE) != 0,
                              t->opts.lock_timeout_ms * 1000, range_id);
}

int tdb_txn_narrow_range(tdb_txn_t *t, uint64_t range_id, const void *lo, size_t lolen, const void *hi, size_t hilen,
                         int flags) {
    int rc = check_active(t);
    if (rc != TDB_OK) return rc;
    if (!t->locks) return tdb_err(TDB_ERR_INVALID_ARG, "range locks need a pessimistic transaction");
    if ((lolen && !lo) || (hilen && !hi) || (flags & ~TDB_RANGE_HI_INCLUSIVE))
        return tdb_err(TDB_ERR_INVALID_ARG, "tdb_txn_narrow_range: bad argument");
    slice_t l = slice_make(lo, lolen), h = slice_make(hi, hilen);
    return lock_narrow_range(t->locks, range_id, lo ? &l : NULL, hi ? &h : NULL, (flags & TDB_RANGE_HI_INCLUSIVE) != 0);
}

/* SERIALIZABLE scans: widen the iterator's range record to cover what it read. */
static void range_observe(void *ctx, const slice_t *key, int dir) {
    txn_range_t *r = (txn_range_t *)ctx;
    if (dir == 0) return;
    if (!key) {
        if (dir > 0) r->hi_inf = true;
        else r->lo_inf = true;
        return;
    }
    if (r->empty) {
        buf_append(&r->lo, key->data, key->size);
        buf_append(&r->hi, key->data, key->size);
        r->empty = false;
        return;
    }
    if (!r->lo_inf && slice_compare(*key, buf_slice(&r->lo)) < 0) {
        buf_clear(&r->lo);
        buf_append(&r->lo, key->data, key->size);
    }
    if (!r->hi_inf && slice_compare(*key, buf_slice(&r->hi)) > 0) {
        buf_clear(&r->hi);
        buf_append(&r->hi, key->data, key->size);
    }
}

/* A transaction iterator went away. */
static void iter_closed(void *ctx) { ((tdb_txn_t *)ctx)->open_iters--; }

int tdb_txn_iter_create(tdb_txn_t *t, tdb_cf_t *cf, tdb_iter_t **out) {
    int rc = check_active(t);
    if (rc != TDB_OK) return rc;
    if ((rc = db_check_cf(t->db, cf)) != TDB_OK) return rc;
    if (!out) return tdb_err(TDB_ERR_INVALID_ARG, "tdb_txn_iter_create: out is NULL");
    txn_range_t *r = NULL;
    if (serializable(t)) {
        if (t->nranges == t->capranges) {
            int n = t->capranges ? t->capranges * 2 : 4;
            txn_range_t **p = (txn_range_t **)realloc(t->ranges, (size_t)n * sizeof *p);
            if (!p) return tdb_err(TDB_ERR_NOMEM, "transaction");
            t->ranges = p;
            t->capranges = n;
        }
        r = (txn_range_t *)calloc(1, sizeof *r);
        if (!r) return tdb_err(TDB_ERR_NOMEM, "transaction");
        r->cf = cf;
        r->cf_id = db_cf_id(cf);
        r->empty = true;
        t->ranges[t->nranges++] = r;
    }
    if (!t->wb && !(t->wb = wbuf_create())) return tdb_err(TDB_ERR_NOMEM, "write buffer");
    iter_t *overlay = wbuf_iter(t->wb, db_cf_id(cf));
    if (!overlay) return tdb_err(TDB_ERR_NOMEM, "transaction iterator");
    uint64_t seq = uses_snapshot(t) ? t->snap_seq : db_visible_seq(t->db);
    rc = db_iter_create(t->db, cf, seq, overlay, out);
    if (rc != TDB_OK) return rc;
    if (r) db_iter_set_observer(*out, range_observe, r);
    db_iter_set_destroy_hook(*out, iter_closed, t);
    t->open_iters++;
    return TDB_OK;
}

typedef struct build_ctx {
    tdb_txn_t *t;
    tdb_batch_t *b;
} build_ctx_t;

/* Find the written family with this id. */
static tdb_cf_t *txn_cf(const tdb_txn_t *t, uint32_t id) {
    for (int i = 0; i < t->ncfs; i++)
        if (db_cf_id(t->cfs[i]) == id) return t->cfs[i];
    return NULL;
}

static int build_entry(void *ctx, uint32_t cf_id, slice_t key, unsigned type, slice_t value) {
    build_ctx_t *c = (build_ctx_t *)ctx;
    tdb_cf_t *cf = txn_cf(c->t, cf_id);
    if (!cf) return tdb_err(TDB_ERR_INVALID_ARG, "write to an unknown column family");
    return batch_add_raw(c->b, cf, type, key, value);
}

typedef struct validate_ctx {
    tdb_txn_t *t;
    const group_keys_t *earlier;
    bool prepared; /* some transaction is prepared: check its keys (db_prepared_any, read once) */
} validate_ctx_t;

/* Has (cf, key) changed after the snapshot (or in the commit group)? */
static int key_changed(validate_ctx_t *v, tdb_cf_t *cf, uint32_t cf_id, slice_t key) {
    if (group_keys_has(v->earlier, cf_id, key)) return 1;
    return db_changed_since(v->t->db, cf, key, v->t->snap_seq);
}

static int check_written(void *ctx, uint32_t cf_id, slice_t key, unsigned type, slice_t value) {
    (void)type;
    (void)value;
    validate_ctx_t *v = (validate_ctx_t *)ctx;
    if (v->prepared && db_prepared_has_key(v->t->db, cf_id, key))
        return tdb_err(TDB_ERR_CONFLICT, "a key is written by a prepared transaction (not yet committed)");
    if (!checks_writes(v->t)) { /* a prepare still must not share a key with one in its group */
        if (v->t->preparing && group_keys_has(v->earlier, cf_id, key))
            return tdb_err(TDB_ERR_CONFLICT, "a key is written by an earlier member of the commit group");
        return TDB_OK;
    }
    int r = key_changed(v, txn_cf(v->t, cf_id), cf_id, key);
    if (r < 0) return r;
    return r ? tdb_err(TDB_ERR_CONFLICT, "write-write conflict: a key was committed after the snapshot") : TDB_OK;
}

/* The commit-time check (see invariant 3). */
static int validate(void *ctx, tdb_t *db, const group_keys_t *earlier) {
    tdb_txn_t *t = (tdb_txn_t *)ctx;
    validate_ctx_t v = {t, earlier, db_prepared_any(t->db) != 0};
    int rc = TDB_OK;
    (void)db;
    if ((checks_writes(t) || t->preparing || v.prepared) && t->wb) {
        rc = wbuf_foreach(t->wb, check_written, &v);
        if (rc != TDB_OK) return rc;
    }
    const char *p = t->reads.data, *end = t->reads.data + t->reads.size;
    while (p < end) {
        uint32_t cf_id = dec_fixed32(p);
        slice_t key;
        p = dec_lenprefixed(p + 4, end, &key);
        if (!p) return tdb_err(TDB_ERR_CORRUPTION, "transaction read set");
        tdb_cf_t *cf = cf_by_id(t->db, cf_id);
        if (!cf || db_cf_dropped(cf)) continue;
        if (v.prepared && db_prepared_has_key(t->db, cf_id, key))
            return tdb_err(TDB_ERR_CONFLICT, "a key this transaction read is written by a prepared transaction");
        int r = key_changed(&v, cf, cf_id, key);
        if (r < 0) return r;
        if (r) return tdb_err(TDB_ERR_CONFLICT, "a key this transaction read was committed after its snapshot");
    }
    for (int i = 0; i < t->nranges; i++) {
        txn_range_t *r = t->ranges[i];
        if (r->empty && !r->lo_inf && !r->hi_inf) continue;
        if (db_cf_dropped(r->cf)) continue;
        /* Writes of earlier group members are not yet visible to a range
         * check: be conservative. */
        if (earlier && earlier->n) return tdb_err(TDB_ERR_CONFLICT, "a range this transaction read may have changed");
        /* Prepared writes are not in the data yet: be conservative too. */
        if (v.prepared)
            return tdb_err(TDB_ERR_CONFLICT, "a range this transaction read may hold a prepared transaction's writes");
        slice_t lo = buf_slice(&r->lo), hi = buf_slice(&r->hi);
        int c = db_range_changed(t->db, r->cf, r->lo_inf ? NULL : &lo, r->hi_inf ? NULL : &hi, t->snap_seq);
        if (c < 0) return c;
        if (c) return tdb_err(TDB_ERR_CONFLICT, "a range this transaction read changed after its snapshot");
    }
    return TDB_OK;
}

/* Build the commit batch from the write buffer. */
static int build_batch(tdb_txn_t *t) {
    if (!t->batch) TDB_RET(tdb_batch_create(&t->batch));
    else tdb_batch_clear(t->batch);
    if (!t->wb) return TDB_OK;
    build_ctx_t c = {t, t->batch};
    return wbuf_foreach(t->wb, build_entry, &c);
}

/* Does the commit (or prepare) need the leader's check (invariant 3)? */
static bool needs_validation(tdb_txn_t *t) {
    return checks_writes(t) || t->reads.size || t->nranges || db_prepared_any(t->db);
}

void tdb_commit_options_default(tdb_commit_options_t *o) { memset(o, 0, sizeof *o); }

int tdb_txn_commit_opt(tdb_txn_t *t, const tdb_commit_options_t *opts) {
    bool no_sync = opts && opts->no_sync;
    if (t && t->state == TXN_PREPARED) {
        int rc = db_commit_prepared(t->db, buf_slice(&t->xid), true, no_sync);
        if (rc == TDB_OK) txn_end(t, TXN_COMMITTED); /* else still prepared: retry or roll back */
        return rc;
    }
    if (no_sync)
        return tdb_err(TDB_ERR_INVALID_ARG, "no_sync commits only a prepared transaction (a lost marker leaves it "
                                            "prepared; an unprepared commit would be lost)");
    return tdb_txn_commit(t);
}

/* The commit is visible, its fsync not yet done (invariant 5): a lock
 * waiter may go on. Run by the write leader while t's thread is parked. */
static void release_locks_visible(void *ctx) {
    tdb_txn_t *t = (tdb_txn_t *)ctx;
    if (t->locks) lock_release_all(t->locks);
}

int tdb_txn_commit(tdb_txn_t *t) {
    if (t && t->state == TXN_PREPARED) return tdb_txn_commit_opt(t, NULL);
    int rc = check_active(t);
    if (rc != TDB_OK) return rc;
    if (t->open_iters) return tdb_err(TDB_ERR_INVALID_ARG, "destroy the transaction's iterators first");
    bool check_reads = t->reads.size || t->nranges;
    if (!t->wb || wbuf_count(t->wb) == 0) {
        /* Read-only: validation needs no commit slot; a conservative answer
         * (a concurrent commit seen as a change) only costs a retry. */
        if (check_reads) rc = validate(t, t->db, NULL);
        txn_end(t, rc == TDB_OK ? TXN_COMMITTED : TXN_FAILED);
        return rc;
    }
    rc = build_batch(t);
    if (rc == TDB_OK)
        rc = db_write_bounded(t->db, t->batch, needs_validation(t) ? validate : NULL, release_locks_visible, t,
                              t->opts.stall_timeout_ms);
    if (rc == TDB_ERR_BUSY) return rc; /* back-pressure: still active, retry or roll back (invariant 4) */
    txn_end(t, rc == TDB_OK ? TXN_COMMITTED : TXN_FAILED);
    return rc;
}

int tdb_txn_prepare(tdb_txn_t *t, const void *xid, size_t xid_len, int durable) {
    TDB_RET(check_active(t));
    if (t->open_iters) return tdb_err(TDB_ERR_INVALID_ARG, "destroy the transaction's iterators first");
    if (!xid || xid_len == 0) return tdb_err(TDB_ERR_INVALID_ARG, "tdb_txn_prepare: empty xid");
    buf_clear(&t->xid);
    TDB_RET(buf_append(&t->xid, xid, xid_len));
    int rc = build_batch(t);
    t->preparing = true; /* validated always: no two prepared transactions share a key */
    if (rc == TDB_OK)
        rc = db_prepare(t->db, t->batch, buf_slice(&t->xid), durable != 0, validate, t, t->opts.stall_timeout_ms);
    t->preparing = false;
    /* Refused before anything was queued (xid taken or malformed) or by
     * back-pressure: still active. */
    if (rc == TDB_ERR_BUSY || rc == TDB_ERR_EXISTS || rc == TDB_ERR_INVALID_ARG) return rc;
    if (rc != TDB_OK) {
        txn_end(t, TXN_FAILED);
        return rc;
    }
    /* Prepared: keep the locks, drop the rest (the db holds the writes). */
    lock_owner_t *locks = t->locks;
    t->locks = NULL;
    txn_end(t, TXN_PREPARED);
    t->locks = locks;
    return TDB_OK;
}

int tdb_txn_rollback(tdb_txn_t *t) {
    if (t && t->state == TXN_PREPARED) {
        TDB_RET(db_rollback_prepared(t->db, buf_slice(&t->xid), true));
        txn_end(t, TXN_ROLLED_BACK);
        return TDB_OK;
    }
    TDB_RET(check_active(t));
    if (t->open_iters) return tdb_err(TDB_ERR_INVALID_ARG, "destroy the transaction's iterators first");
    txn_end(t, TXN_ROLLED_BACK);
    return TDB_OK;
}

/* Index of the newest savepoint with this name, or -1. */
static int find_sp(const tdb_txn_t *t, const char *name) {
    for (int i = t->nsps - 1; i >= 0; i--)
        if (strcmp(t->sps[i].name, name) == 0) return i;
    return -1;
}

int tdb_txn_savepoint(tdb_txn_t *t, const char *name) {
    TDB_RET(check_active(t));
    if (!name || !*name) return tdb_err(TDB_ERR_INVALID_ARG, "empty savepoint name");
    if (!t->wb && !(t->wb = wbuf_create())) return tdb_err(TDB_ERR_NOMEM, "write buffer");
    int old = find_sp(t, name);
    savepoint_t *sp;
    if (old >= 0 && old == t->nsps - 1) {
        sp = &t->sps[old]; /* the newest set again (a statement's): moved in place */
    } else {
        if (old >= 0) { /* SQL: a new savepoint replaces one of the same name */
            free(t->sps[old].name);
            memmove(t->sps + old, t->sps + old + 1, (size_t)(t->nsps - old - 1) * sizeof *t->sps);
            t->nsps--;
        }
        if (t->nsps == t->capsps) {
            int n = t->capsps ? t->capsps * 2 : 4;
            savepoint_t *p = (savepoint_t *)realloc(t->sps, (size_t)n * sizeof *p);
            if (!p) return tdb_err(TDB_ERR_NOMEM, "savepoint");
            t->sps = p;
            t->capsps = n;
        }
        sp = &t->sps[t->nsps];
        if (!(sp->name = strdup(name))) return tdb_err(TDB_ERR_NOMEM, "savepoint");
        t->nsps++;
    }
    sp->wb_mark = wbuf_mark(t->wb);
    sp->lock_mark = t->locks ? lock_owner_count(t->locks) : 0;
    t->writes++; /* no tdb_txn_unlock_since across it */
    return TDB_OK;
}

int tdb_txn_rollback_to_savepoint(tdb_txn_t *t, const char *name) {
    int rc = check_active(t);
    if (rc != TDB_OK) return rc;
    if (!name) return tdb_err(TDB_ERR_INVALID_ARG, "NULL savepoint name");
    int i = find_sp(t, name);
    if (i < 0) return tdb_err(TDB_ERR_NOT_FOUND, "no savepoint named '%s'", name);
    if ((rc = wbuf_rollback_to(t->wb, t->sps[i].wb_mark)) != TDB_OK) return rc;
    if (t->locks) lock_release_since(t->locks, t->sps[i].lock_mark);
    for (int k = i + 1; k < t->nsps; k++) free(t->sps[k].name);
    t->nsps = i + 1; /* the savepoint itself stays, as in SQL */
    return TDB_OK;
}

int tdb_txn_release_savepoint(tdb_txn_t *t, const char *name) {
    TDB_RET(check_active(t));
    if (!name) return tdb_err(TDB_ERR_INVALID_ARG, "NULL savepoint name");
    int i = find_sp(t, name);
    if (i < 0) return tdb_err(TDB_ERR_NOT_FOUND, "no savepoint named '%s'", name);
    for (int k = i; k < t->nsps; k++) free(t->sps[k].name);
    t->nsps = i;
    return TDB_OK;
}

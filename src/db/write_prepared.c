/*
 * db/write_prepared: the write side of two-phase commit (docs/design/txn.md,
 * "Two-phase commit"): a prepare is a writer of the queue whose record is
 * logged but neither numbered nor applied; the commit of a prepared
 * transaction is a writer whose batch holds the prepared entries (numbered
 * and applied like any batch) and whose WAL record is a small COMMIT marker
 * (synced per the families' sync modes, or left for the next WAL sync:
 * tdb_commit_options_t.no_sync);
 * a rollback appends a ROLLBACK marker under wal_mu. The registry of
 * prepared transactions and its invariants are in db/prepared.c.
 */
#include <stdlib.h>
#include <string.h>

#include "db/db_impl.h"

/* Queue w (set up by the caller) and wait for its group (takes mu). */
static int queue_write(tdb_t *db, writer_t *w) {
    pthread_cond_init(&w->cv, NULL);
    pthread_mutex_lock(&db->mu);
    db_group_write(db, w); /* returns without mu */
    pthread_cond_destroy(&w->cv);
    if (w->stall_expired)
        return tdb_err(TDB_ERR_BUSY, "prepare stalled by back-pressure: nothing was written, retry later");
    return w->rc;
}

int db_prepare(tdb_t *db, tdb_batch_t *b, slice_t xid, bool durable, writer_validate_fn fn, void *ctx,
               int64_t stall_timeout_ms) {
    if (!xid.data || xid.size == 0 || xid.size > BATCH_MAX_XID)
        return tdb_err(TDB_ERR_INVALID_ARG, "xid of %zu bytes (1..%d)", xid.size, BATCH_MAX_XID);
    writer_t w;
    memset(&w, 0, sizeof w);
    tdb_cf_t **cfs;
    int ncfs = batch_cfs(b, &cfs);
    for (int i = 0; i < ncfs; i++) {
        TDB_RET(db_check_cf(db, cfs[i]));
        int mode = db_cf_sync_mode(db, cfs[i]);
        w.sync |= mode == TDB_SYNC_FULL;
        w.interval |= mode == TDB_SYNC_INTERVAL;
    }
    prepared_t *p;
    TDB_RET(db_prepared_reserve(db, xid, b, w.sync, &p));
    w.sync |= durable;
    w.batch = b;
    w.validate = fn;
    w.vctx = ctx;
    w.prepared = p;
    if (stall_timeout_ms == 0) stall_timeout_ms = db->cfg.write_stall_timeout_ms;
    if (stall_timeout_ms > 0) w.stall_deadline = db->env->now_micros(db->env) + (uint64_t)stall_timeout_ms * 1000u;
    int rc = queue_write(db, &w);
    b->wal_marker = NULL;
    b->wal_only = false;
    if (rc != TDB_OK) db_prepared_unreserve(db, p); /* not logged: the leader left it reserved */
    return rc;
}

typedef struct rebuild_ctx {
    tdb_t *db;
    tdb_batch_t *b;
} rebuild_ctx_t;

/* Add one prepared entry to the commit batch (mu held: family lookup). */
static int rebuild_entry(void *ctx, uint64_t seq, const batch_entry_t *e) {
    (void)seq;
    rebuild_ctx_t *c = (rebuild_ctx_t *)ctx;
    tdb_cf_t *cf = cf_by_id(c->db, e->cf_id);
    if (!cf || atomic_load(&cf->dropped))
        return tdb_err(TDB_ERR_CLOSED, "column family %u of the prepared transaction was dropped: roll it back",
                       e->cf_id);
    return batch_add_raw(c->b, cf, e->type, e->key, e->value);
}

int db_commit_prepared(tdb_t *db, slice_t xid, bool attached, bool no_sync) {
    prepared_t *p;
    TDB_RET(db_prepared_begin_resolve(db, xid, attached, &p));
    int rc = TDB_OK;
    buf_t rep = {0}, marker = {0};
    tdb_batch_t *b = NULL;
    writer_t w;
    memset(&w, 0, sizeof w);
    TRY(tdb_batch_create(&b));
    TRY(db_prepared_rep(p, 1, &rep));
    rebuild_ctx_t c = {db, b};
    pthread_mutex_lock(&db->mu);
    rc = batch_iterate(buf_slice(&rep), rebuild_entry, &c);
    pthread_mutex_unlock(&db->mu);
    if (rc != TDB_OK) goto err;
    TRY(batch_txn_marker(&marker, BATCH_TXN_COMMIT, xid, b));
    tdb_cf_t **cfs;
    int ncfs = batch_cfs(b, &cfs);
    for (int i = 0; i < ncfs; i++) {
        int mode = db_cf_sync_mode(db, cfs[i]);
        w.sync |= mode == TDB_SYNC_FULL;
        w.interval |= mode == TDB_SYNC_INTERVAL;
    }
    if (no_sync) { /* durable at the next WAL sync; until then a crash leaves it prepared */
        w.sync = false;
        w.interval = true; /* wal_dirty: an interval-sync thread, if any, takes it */
    }
    b->wal_marker = &marker;
    w.batch = b;
    w.prepared = p; /* the leader ends the entry once the marker is logged */
    rc = queue_write(db, &w);
    if (rc == TDB_OK) p = NULL;
err:
    if (p) db_prepared_end_resolve(db, p);
    tdb_batch_destroy(b);
    buf_free(&rep);
    buf_free(&marker);
    return rc;
}

int db_rollback_prepared(tdb_t *db, slice_t xid, bool attached) {
    prepared_t *p;
    TDB_RET(db_prepared_begin_resolve(db, xid, attached, &p));
    int rc = TDB_OK;
    bool nospace = false;
    buf_t marker = {0};
    TRY(batch_txn_marker(&marker, BATCH_TXN_ROLLBACK, xid, NULL));
    pthread_mutex_lock(&db->mu);
    rc = db->bg_error != TDB_OK ? tdb_err(TDB_ERR_READ_ONLY, "database is in an error state") : TDB_OK;
    if (rc == TDB_OK && db->wal_nospace) rc = tdb_err(TDB_ERR_NO_SPACE, "disk full: the rollback was not logged");
    pthread_mutex_unlock(&db->mu);
    if (rc != TDB_OK) goto err;
    /* Under wal_mu, so no rotation relogs the prepare after the marker
     * (db/prepared.c, invariant 3); the log's sequence state stays. */
    pthread_mutex_lock(&db->wal_mu);
    slice_t rec = slice_make(marker.data + BATCH_WAL_SPARE - 2, marker.size - BATCH_WAL_SPARE + 2);
    bool full = db_prepared_full_sync(p);
    rc = db_wal_append_locked(db, &rec, 1, full, !full, &nospace);
    if (rc == TDB_OK) {
        db_prepared_remove(db, p);
        p = NULL;
    }
    pthread_mutex_unlock(&db->wal_mu);
    if (rc != TDB_OK) {
        pthread_mutex_lock(&db->mu);
        if (nospace) {
            db->wal_nospace = true;
            atomic_store(&db->direct_ok, false);
        } else {
            db_set_bg_error_locked(db, rc);
        }
        pthread_mutex_unlock(&db->mu);
    }
err:
    if (p) db_prepared_end_resolve(db, p);
    buf_free(&marker);
    return rc;
}

/* ---- public: resolving after a restart (include/tidesdb/tidesdb.h) ---- */

int tdb_recover_prepared(tdb_t *db, tdb_prepared_fn fn, void *ctx) {
    if (!db) return tdb_err(TDB_ERR_INVALID_ARG, "database handle is NULL");
    buf_t list = {0};
    int n = 0;
    int rc = db_prepared_list(db, &list, &n);
    const char *q = list.data, *end = list.data + list.size;
    for (int i = 0; rc == TDB_OK && i < n && fn; i++) {
        slice_t xid;
        q = dec_lenprefixed(q, end, &xid);
        if (fn(ctx, xid.data, xid.size) != 0) break;
    }
    buf_free(&list);
    return rc == TDB_OK ? n : rc;
}

int tdb_commit_prepared(tdb_t *db, const void *xid, size_t xid_len) {
    if (!db || !xid || !xid_len) return tdb_err(TDB_ERR_INVALID_ARG, "tdb_commit_prepared: NULL argument");
    return db_commit_prepared(db, slice_make(xid, xid_len), false, false);
}

int tdb_rollback_prepared(tdb_t *db, const void *xid, size_t xid_len) {
    if (!db || !xid || !xid_len) return tdb_err(TDB_ERR_INVALID_ARG, "tdb_rollback_prepared: NULL argument");
    return db_rollback_prepared(db, slice_make(xid, xid_len), false);
}

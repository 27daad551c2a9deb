/*
 * db/write: the public write API. Two lanes (invariants 2 and 2a,
 * db_impl.h): a batch that needs no fsync, no validation and no
 * back-pressure takes the direct lane (db/write_direct.c); every other
 * writer, and a direct writer turned away, queues for group commit
 * (db/write_group.c), whose leader applies back-pressure
 * (db/write_stall.c), rotates the WAL and switches memtables
 * (db/switch.c) and inserts into the memtables (db/write_apply.c).
 */
#include <string.h>

#include "db/db_impl.h"

/* Time since an arbitrary origin, microseconds. */
static uint64_t now_us(tdb_t *db) { return db->env->now_micros(db->env); }

/* Commit b through the direct lane when it may take it, else through the
 * writer queue (validation fn, back-pressure bound: db_impl.h). */
int db_write_bounded(tdb_t *db, tdb_batch_t *b, writer_validate_fn fn, writer_visible_fn visible, void *ctx,
                     int64_t stall_timeout_ms) {
    if (!db || !b) return tdb_err(TDB_ERR_INVALID_ARG, "tdb_write: NULL argument");
    if (tdb_batch_count(b) == 0) return TDB_OK;
    tdb_cf_t **cfs;
    int ncfs = batch_cfs(b, &cfs);
    writer_t w;
    memset(&w, 0, sizeof w);
    w.batch = b;
    w.validate = fn;
    w.visible = visible;
    w.vctx = ctx;
    for (int i = 0; i < ncfs; i++) {
        TDB_RET(db_check_cf(db, cfs[i]));
        int mode = db_cf_sync_mode(db, cfs[i]);
        w.sync |= mode == TDB_SYNC_FULL;
        w.interval |= mode == TDB_SYNC_INTERVAL;
    }
    if (!fn && !w.sync) {
        bool queued;
        int rc = db_write_direct(db, b, cfs, ncfs, w.interval, &queued);
        if (!queued) return rc;
    }
    if (stall_timeout_ms == 0) stall_timeout_ms = db->cfg.write_stall_timeout_ms;
    uint64_t start = 0; /* read the clock only for a bounded write: hot path */
    if (stall_timeout_ms > 0) {
        start = now_us(db);
        w.stall_deadline = start + (uint64_t)stall_timeout_ms * 1000u;
    }
    pthread_cond_init(&w.cv, NULL);
    pthread_mutex_lock(&db->mu);
    db_group_write(db, &w); /* returns without mu */
    pthread_cond_destroy(&w.cv);
    if (w.stall_expired) {
        pthread_mutex_lock(&db->mu);
        bool paused = db->bg_paused > 0;
        pthread_mutex_unlock(&db->mu);
        return tdb_err(TDB_ERR_BUSY, "write stalled by back-pressure for %llu ms (stall timeout %lld ms): "
                                     "flush/compaction is behind%s; nothing was written, retry later",
                       (unsigned long long)((now_us(db) - start) / 1000u), (long long)stall_timeout_ms,
                       paused ? " (background work is paused)" : "");
    }
    return w.rc;
}

int tdb_write(tdb_t *db, tdb_batch_t *b) { return db_write_bounded(db, b, NULL, NULL, NULL, 0); }

void tdb_write_options_default(tdb_write_options_t *o) { memset(o, 0, sizeof *o); }

int tdb_write_opt(tdb_t *db, tdb_batch_t *b, const tdb_write_options_t *opts) {
    return db_write_bounded(db, b, NULL, NULL, NULL, opts ? opts->stall_timeout_ms : 0);
}

int tdb_sync(tdb_t *db) {
    if (!db) return tdb_err(TDB_ERR_INVALID_ARG, "database handle is NULL");
    int rc = TDB_OK;
    pthread_mutex_lock(&db->mu);
    if (db_wal_failed_full_locked(db)) { /* relog first, as the next write would (db/switch.c) */
        writer_t ex;
        db_enter_exclusive(db, &ex);
        if (db_wal_failed_full_locked(db)) rc = db_resume_wal_after_nospace(db);
        db_exit_exclusive(db, &ex);
    }
    pthread_mutex_unlock(&db->mu);
    if (rc != TDB_OK) return rc;
    pthread_mutex_lock(&db->wal_mu);
    rc = db->wal ? wal_writer_sync(db->wal) : TDB_OK;
    if (db->wal) atomic_fetch_add(&db->ctr.wal_syncs, 1);
    if (rc == TDB_OK) atomic_store(&db->wal_dirty, false);
    bool full = rc == TDB_ERR_NO_SPACE && wal_writer_error(db->wal) == TDB_ERR_NO_SPACE;
    wal_writer_t *synced = db->wal;
    pthread_mutex_unlock(&db->wal_mu);
    if (rc != TDB_OK) {
        pthread_mutex_lock(&db->mu);
        if (full) { /* (a relog that replaced `synced` meanwhile holds mu: db->wal != synced) */
            char detail[512];
            snprintf(detail, sizeof detail, "%s", tdb_last_error());
            if (db->wal == synced) db->wal_nospace = true; /* not sticky: the next write leader relogs (db/switch.c) */
            atomic_store(&db->direct_ok, false);
            rc = tdb_err(TDB_ERR_NO_SPACE, "disk full: WAL sync out of space; writes are refused until space is "
                                           "freed, then resume by themselves (%s)", detail);
        } else {
            db_set_bg_error_locked(db, rc); /* a failed fsync is sticky */
        }
        pthread_mutex_unlock(&db->mu);
    }
    return rc;
}

/* Single writes (tdb_put, tdb_delete, ...) build a one-entry batch in the
 * caller's stack frame: no allocation (the batch object, its buffer and its
 * growth used to be three or four malloc calls and frees per put) unless
 * the entry is larger than the stack buffer, and then one of its size. */
#define SINGLE_STACK_BYTES 512

/* Write b if rc is TDB_OK, then release its storage. */
static int single_end(tdb_t *db, tdb_batch_t *b, const char *stack, int rc) {
    if (rc == TDB_OK) rc = tdb_write(db, b);
    batch_release_single(b, stack);
    return rc;
}

int tdb_put(tdb_t *db, tdb_cf_t *cf, const void *key, size_t klen, const void *val, size_t vlen, int64_t ttl) {
    char stack[SINGLE_STACK_BYTES];
    tdb_cf_t *cf1[1];
    tdb_batch_t b;
    int rc = batch_init_single(&b, stack, sizeof stack, cf1, klen, vlen);
    if (rc == TDB_OK) rc = tdb_batch_put(&b, cf, key, klen, val, vlen, ttl);
    return single_end(db, &b, stack, rc);
}

int tdb_delete(tdb_t *db, tdb_cf_t *cf, const void *key, size_t klen) {
    char stack[SINGLE_STACK_BYTES];
    tdb_cf_t *cf1[1];
    tdb_batch_t b;
    int rc = batch_init_single(&b, stack, sizeof stack, cf1, klen, 0);
    if (rc == TDB_OK) rc = tdb_batch_delete(&b, cf, key, klen);
    return single_end(db, &b, stack, rc);
}

int tdb_delete_range(tdb_t *db, tdb_cf_t *cf, const void *start, size_t slen, const void *end, size_t elen) {
    char stack[SINGLE_STACK_BYTES];
    tdb_cf_t *cf1[1];
    tdb_batch_t b;
    int rc = batch_init_single(&b, stack, sizeof stack, cf1, slen, elen);
    if (rc == TDB_OK) rc = tdb_batch_delete_range(&b, cf, start, slen, end, elen);
    return single_end(db, &b, stack, rc);
}

int tdb_single_delete(tdb_t *db, tdb_cf_t *cf, const void *key, size_t klen) {
    char stack[SINGLE_STACK_BYTES];
    tdb_cf_t *cf1[1];
    tdb_batch_t b;
    int rc = batch_init_single(&b, stack, sizeof stack, cf1, klen, 0);
    if (rc == TDB_OK) rc = tdb_batch_single_delete(&b, cf, key, klen);
    return single_end(db, &b, stack, rc);
}

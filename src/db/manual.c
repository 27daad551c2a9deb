/*
 * db/manual: flush and compaction on request (tdb_flush, tdb_compact).
 * Above the write path: a flush enters as an exclusive writer
 * (db/write_group.c) to rotate the WAL and switch the memtables
 * (db/switch.c), then waits for the background flushes (db/bg.c), or runs
 * them in its own thread while background work is paused.
 */
#include "db/db_impl.h"

int tdb_flush(tdb_t *db, tdb_cf_t *only) {
    int rc = TDB_OK;
    if (!db) return tdb_err(TDB_ERR_INVALID_ARG, "database handle is NULL");
    if (only && (rc = db_check_cf(db, only)) != TDB_OK) return rc;
    writer_t ex;
    pthread_mutex_lock(&db->mu);
    db_enter_exclusive(db, &ex);
    uint64_t nospace = db->nospace_flushes;
    db->nospace_retry_at = 0; /* an explicit flush retries one that ran out of space now */
    bool rotated = false;
    for (uint32_t i = 0; i < db->ncf_slots && rc == TDB_OK && db->bg_error == TDB_OK; i++) {
        tdb_cf_t *cf = db->cfs[i];
        if (!cf || atomic_load(&cf->dropped) || (only && cf != only)) continue;
        if (memtable_num_entries(cf->mem.mem) == 0) continue;
        if (!rotated) {
            rc = db_rotate_wal(db);
            rotated = true;
        }
        if (rc == TDB_OK) rc = db_switch_memtable(db, cf);
    }
    db_exit_exclusive(db, &ex);
    for (;;) {
        if (rc == TDB_OK && db->bg_error != TDB_OK) rc = tdb_err(TDB_ERR_READ_ONLY, "background error: %s", tdb_strerror(db->bg_error));
        if (rc == TDB_OK && db->nospace_flushes != nospace)
            rc = tdb_err(TDB_ERR_NO_SPACE, "flush out of space: the memtable stays queued and is flushed once "
                                           "space is freed");
        if (rc != TDB_OK || db->shutting_down) break;
        bool pending = false, flushed = false;
        for (uint32_t i = 0; i < db->ncf_slots; i++) {
            tdb_cf_t *cf = db->cfs[i];
            if (cf && !atomic_load(&cf->dropped) && (!only || cf == only) && (cf->nimm || cf->flushing)) pending = true;
            if (pending && db->bg_paused && !flushed && cf && !atomic_load(&cf->dropped) && (!only || cf == only) &&
                cf->nimm && !cf->flushing) { /* paused: flush in this thread */
                cf->flushing = true;
                db->bg_flush_running++;
                db_flush_oldest(db, cf);
                db->bg_flush_running--;
                flushed = true;
            }
        }
        if (!pending) break;
        if (flushed) continue;
        db_maybe_schedule(db);
        pthread_cond_wait(&db->done_cv, &db->mu);
    }
    pthread_mutex_unlock(&db->mu);
    return rc;
}

int tdb_compact_range(tdb_t *db, tdb_cf_t *cf, const void *lo, size_t lolen, const void *hi, size_t hilen) {
    if (!db || !cf) return tdb_err(TDB_ERR_INVALID_ARG, "tdb_compact_range: NULL database or family");
    if ((lolen && !lo) || (hilen && !hi)) return tdb_err(TDB_ERR_INVALID_ARG, "tdb_compact_range: NULL bound with a length");
    slice_t l = slice_make(lo, lolen), h = slice_make(hi, hilen);
    const slice_t *lp = lo ? &l : NULL, *hp = hi ? &h : NULL;
    if (lp && hp && slice_compare(l, h) > 0) return tdb_err(TDB_ERR_INVALID_ARG, "tdb_compact_range: lo > hi");
    int rc = tdb_flush(db, cf);
    if (rc != TDB_OK) return rc;
    return db_compact_cf_range(db, cf, lp, hp);
}

int tdb_compact(tdb_t *db, tdb_cf_t *only) {
    int rc = tdb_flush(db, only);
    if (rc != TDB_OK) return rc;
    if (only) return db_compact_cf(db, only);
    pthread_mutex_lock(&db->mu);
    uint32_t n = db->ncf_slots;
    pthread_mutex_unlock(&db->mu);
    for (uint32_t i = 0; i < n && rc == TDB_OK; i++) {
        pthread_mutex_lock(&db->mu);
        tdb_cf_t *cf = i < db->ncf_slots ? db->cfs[i] : NULL;
        bool live = cf && !atomic_load(&cf->dropped);
        pthread_mutex_unlock(&db->mu);
        if (live) rc = db_compact_cf(db, cf);
    }
    return rc;
}

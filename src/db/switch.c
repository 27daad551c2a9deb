/*
 * db/switch: the write path's transitions of the WAL and the memtables
 * (invariant 3, db_impl.h): rotation of the WAL (the old one sealed and
 * synced before the new one exists), continuing in a fresh WAL after an
 * append ran out of space, moving a family's active memtable to its
 * immutable queue, and the locked WAL append both lanes use.
 * Called by the write leader (db/write_group.c, db/write_stall.c), the
 * direct lane (db/write_direct.c), maintenance (tdb_flush) and open.
 */
#include <stdlib.h>
#include <string.h>

#include "db/db_impl.h"

/* Make the current WAL durable, then switch to a new WAL file (mu held, by
 * the write leader or during open). The old file is complete and synced
 * before the new one exists, so only the newest WAL can have a torn tail. */
int db_rotate_wal(tdb_t *db) {
    int rc = TDB_OK;
    char path[4096];
    wal_writer_t *nw = NULL;
    uint64_t number = 0;
    pthread_mutex_lock(&db->wal_mu);
    if (db->wal) {
        rc = wal_writer_seal(db->wal); /* cut to its records and synced: complete (wal.h) */
        if (rc != TDB_OK) {
            db_log(db, TDB_LOG_ERROR, "WAL sync at rotation failed: %s", tdb_last_error());
            db_set_bg_error_locked(db, rc);
            pthread_mutex_unlock(&db->wal_mu);
            return rc;
        }
    }
    pthread_mutex_unlock(&db->wal_mu);
    number = db->next_file_number++;
    db_wal_name(path, sizeof path, db->path, number);
    TRY(wal_writer_open(db->env, path, &nw));
    TRY(db->env->sync_dir(db->env, db->path));
    pthread_mutex_lock(&db->wal_mu);
    wal_writer_t *old = db->wal;
    db->wal = nw;
    db->wal_number = number;
    db->wal_expected_seq = 0;
    atomic_store(&db->wal_dirty, false);
    rc = db_prepared_relog_locked(db); /* the new log holds every unresolved prepare (db/prepared.c) */
    pthread_mutex_unlock(&db->wal_mu);
    if (old) wal_writer_close(old, 0);
    if (rc != TDB_OK) {
        db_log(db, TDB_LOG_ERROR, "relog of prepared transactions failed: %s", tdb_last_error());
        db_set_bg_error_locked(db, rc);
        return rc;
    }
    db->wal_nospace = false;
    return TDB_OK;
err:
    if (nw) {
        wal_writer_close(nw, 0);
        db->env->remove(db->env, path);
    }
    return rc;
}

/* The last WAL append ran out of space (its partial record was cut off
 * right then, wal.h; the writer takes no more appends): continue in a fresh
 * log before the next group (mu held, as leader). A log with records is
 * rotated; a log without any is recreated empty under the same number, so
 * writes retried while the disk stays full do not pile up log files. On
 * failure the state stays and the next write tries again. */
int db_resume_wal_after_nospace(tdb_t *db) {
    if (wal_writer_size(db->wal) > 0) return db_rotate_wal(db);
    char path[4096];
    wal_writer_t *nw = NULL;
    db_wal_name(path, sizeof path, db->path, db->wal_number);
    TDB_RET(wal_writer_open(db->env, path, &nw));
    pthread_mutex_lock(&db->wal_mu);
    wal_writer_t *old = db->wal;
    db->wal = nw;
    db->wal_expected_seq = 0;
    atomic_store(&db->wal_dirty, false);
    int rc = db_prepared_relog_locked(db);
    pthread_mutex_unlock(&db->wal_mu);
    wal_writer_close(old, 0);
    if (rc != TDB_OK) {
        db_set_bg_error_locked(db, rc);
        return rc;
    }
    db->wal_nospace = false;
    return TDB_OK;
}

/* Move cf's active memtable to the immutable queue (mu held, as leader). */
int db_switch_memtable(tdb_t *db, tdb_cf_t *cf) {
    int rc = TDB_OK;
    memtable_t *fresh = memtable_create();
    if (!fresh) return tdb_err(TDB_ERR_NOMEM, "memtable");
    if (cf->nimm == cf->cap_imm) {
        int n = cf->cap_imm ? cf->cap_imm * 2 : 4;
        mem_slot_t *p = (mem_slot_t *)realloc(cf->imm, (size_t)n * sizeof *p);
        if (!p) RAISE(TDB_ERR_NOMEM, "immutable memtable queue");
        cf->imm = p;
        cf->cap_imm = n;
    }
    cf->imm[cf->nimm++] = cf->mem;
    cf->mem.mem = fresh;
    cf->mem.log_number = db->wal_number;
    fresh = NULL;
    TRY(cf_install_sv(cf));
    db_maybe_schedule(db);
    return TDB_OK;
err:
    if (fresh) memtable_unref(fresh);
    return rc;
}

/* Append records to the WAL, then fsync if `sync` (wal_mu held). On
 * running out of space the partial record is cut off at once and *nospace
 * set: nothing was written, and the next leader continues in a new log
 * (invariant 7). The same for an fsync out of space when only these
 * records were unsynced (wal_writer_sync_group cut them off). Any other
 * failure leaves the WAL state unknown: the caller makes it sticky.
 * Returns the error to report, worded. */
int db_wal_append_locked(tdb_t *db, const slice_t *payloads, int n, bool sync, bool dirty, bool *nospace) {
    uint64_t before = wal_writer_size(db->wal);
    int rc = wal_writer_add(db->wal, payloads, n);
    *nospace = rc == TDB_ERR_NO_SPACE;
    if (rc == TDB_OK && sync) {
        rc = wal_writer_sync_group(db->wal, before);
        if (rc == TDB_ERR_NO_SPACE) { /* cut off and sealed: not sticky */
            char detail[512];
            snprintf(detail, sizeof detail, "%s", tdb_last_error());
            *nospace = true;
            db_log(db, TDB_LOG_WARN, "WAL sync out of space, write refused: %s", detail);
            return tdb_err(TDB_ERR_NO_SPACE, "disk full: the write was not applied; writes resume once space is "
                                             "freed (%s)", detail);
        }
    }
    if (rc == TDB_OK && dirty && !sync) atomic_store(&db->wal_dirty, true);
    atomic_fetch_add(&db->ctr.wal_bytes, wal_writer_size(db->wal) - before);
    if (*nospace) {
        char detail[512];
        snprintf(detail, sizeof detail, "%s", tdb_last_error());
        rc = wal_writer_sync(db->wal); /* cut the partial record off now (wal.h) */
        if (rc != TDB_OK) {            /* could not cut it: sticky like any failed sync */
            *nospace = false;
            db_log(db, TDB_LOG_ERROR, "WAL truncation after running out of space failed: %s", tdb_last_error());
            return rc;
        }
        db_log(db, TDB_LOG_WARN, "WAL append out of space, write refused: %s", detail);
        return tdb_err(TDB_ERR_NO_SPACE, "disk full: the write was not applied; writes resume once space is "
                                         "freed (%s)", detail);
    }
    if (rc != TDB_OK) db_log(db, TDB_LOG_ERROR, "WAL write failed: %s", tdb_last_error());
    return rc;
}

/*
 * db/switch: the write path's transitions of the WAL and the memtables
 * (invariant 3, db_impl.h): rotation of the WAL (the old one sealed and
 * synced before the new one exists), continuing in a fresh WAL after an
 * append ran out of space, moving a family's active memtable to its
 * immutable queue, the locked WAL append both lanes use, and the relog
 * that replaces a WAL whose fsync ran out of space.
 * Called by the write leader (db/write_group.c, db/write_stall.c), the
 * direct lane (db/write_direct.c), maintenance (tdb_flush) and open.
 */
#include <stdlib.h>
#include <string.h>

#include "db/db_impl.h"

/* ---- Relog: a new WAL rewritten from the memtables ----
 *
 * A WAL whose fsync ran out of space while NONE/INTERVAL writes were
 * acknowledged but unsynced is in an unknown state on disk (the failed
 * fsync may have dropped its dirty pages), and cutting it would drop
 * acknowledged writes. The memtables hold the truth: every acknowledged
 * write is in one (the write gate is closed, so all are applied), and every
 * older write is in a table named by the MANIFEST. So the log is replaced
 * by a new one holding the memtables' contents:
 *
 *   1. N = a new file number; write N.log: a RELOG_HEAD record, then for
 *      every family and each of its memtables (oldest first) a RELOG_GEN
 *      record naming the memtable's log_number, then its entries in
 *      sequence order with their own sequence numbers (consecutive ones
 *      share a record), then the unresolved prepares, then RELOG_GEN(N),
 *      which completes the relog;
 *   2. sync it (and, the first time, the directory);
 *   3. it becomes the current WAL (new writes follow); older WAL files are
 *      deleted. Recovery replays nothing below the newest complete relog,
 *      so a crash before or during the deletions replays N alone; a relog
 *      without its closing RELOG_GEN(N) (a crash while writing it) is not
 *      replayed at all (db/open.c).
 *
 * A crash before step 2 completes replays the old logs: the broken WAL
 * loses at most its unsynced suffix (a prefix of the acknowledged writes,
 * as NONE and INTERVAL promise). After it, N holds every acknowledged
 * write. Memtable slots keep their log numbers: the RELOG_GEN records let
 * recovery skip a generation its family flushed after the relog, exactly
 * as it skips a whole WAL older than the family's log_number. Entries are
 * written per family in sequence order, so a recovered memtable flushed
 * half-way holds older sequences than the rest (level-1 tables stay
 * newest-first). If the disk is still full, the new file is removed and
 * the write fails with NO_SPACE; the next write tries again. */

/* One memtable entry of a relog. */
typedef struct relog_item {
    uint64_t seq;
    unsigned type;
    slice_t key, value;
} relog_item_t;

static int cmp_item_seq(const void *a, const void *b) {
    uint64_t x = ((const relog_item_t *)a)->seq, y = ((const relog_item_t *)b)->seq;
    return x < y ? -1 : x > y;
}

/* A relog record carries at most about this many bytes of entries, and
 * records go to the log in appends of about this many bytes. */
#define RELOG_RECORD_BYTES (1u << 20)

/* Records of a relog on their way to the new log: many per append. */
typedef struct relog_out {
    wal_writer_t *w;
    buf_t data;   /* the payloads, back to back */
    size_t *ends; /* end offset of each payload in data */
    slice_t *v;   /* scratch for wal_writer_add */
    int n, cap;
} relog_out_t;

/* Hand the queued records to the log as one append. */
static int relog_flush(relog_out_t *o) {
    for (int i = 0; i < o->n; i++) {
        size_t start = i ? o->ends[i - 1] : 0;
        o->v[i] = slice_make(o->data.data + start, o->ends[i] - start);
    }
    int rc = o->n ? wal_writer_add(o->w, o->v, o->n) : TDB_OK;
    buf_clear(&o->data);
    o->n = 0;
    return rc;
}

/* Queue a copy of one record; an append once about RELOG_RECORD_BYTES
 * are queued. */
static int relog_put(relog_out_t *o, const buf_t *rec) {
    if (o->n == o->cap) {
        int nc = o->cap ? o->cap * 2 : 256;
        size_t *e = (size_t *)realloc(o->ends, (size_t)nc * sizeof *e);
        if (e) o->ends = e;
        slice_t *v = e ? (slice_t *)realloc(o->v, (size_t)nc * sizeof *v) : NULL;
        if (!v) return tdb_err(TDB_ERR_NOMEM, "relog of %d records", nc);
        o->v = v;
        o->cap = nc;
    }
    TDB_RET(buf_append(&o->data, rec->data, rec->size));
    o->ends[o->n++] = o->data.size;
    return o->data.size >= RELOG_RECORD_BYTES ? relog_flush(o) : TDB_OK;
}

/* Queue memtable m of family cf_id in sequence order, runs of consecutive
 * sequences as one record each. */
static int relog_memtable(relog_out_t *o, uint32_t cf_id, memtable_t *m, uint64_t *expected, buf_t *entries,
                          buf_t *rec) {
    int rc = TDB_OK;
    size_t n = 0, cap = (size_t)memtable_num_entries(m) + 16;
    relog_item_t *v = (relog_item_t *)malloc(cap * sizeof *v);
    iter_t *it = memtable_iter(m);
    if (!v) RAISE(TDB_ERR_NOMEM, "relog of %zu memtable entries", cap);
    for (iter_seek_to_first(it); iter_valid(it); iter_next(it)) {
        if (n == cap) {
            relog_item_t *p = (relog_item_t *)realloc(v, cap * 2 * sizeof *v);
            if (!p) RAISE(TDB_ERR_NOMEM, "relog of %zu memtable entries", cap * 2);
            v = p;
            cap *= 2;
        }
        slice_t ik = iter_key(it);
        v[n].seq = ikey_seq(ik);
        v[n].type = ikey_type(ik);
        v[n].key = ikey_user(ik);
        v[n].value = iter_value(it);
        n++;
    }
    TRY(iter_status(it));
    qsort(v, n, sizeof *v, cmp_item_seq);
    uint64_t first = 0;
    uint32_t count = 0;
    buf_clear(entries);
    for (size_t i = 0;; i++) {
        if (count && (i == n || v[i].seq != first + count || entries->size >= RELOG_RECORD_BYTES)) {
            TRY(batch_wal_record(rec, expected, first, count, buf_slice(entries)));
            TRY(relog_put(o, rec));
            buf_clear(entries);
            count = 0;
        }
        if (i == n) break;
        if (!count) first = v[i].seq;
        TRY(batch_put_entry(entries, v[i].type, cf_id, v[i].key, v[i].value));
        count++;
    }
err:
    iter_destroy(it);
    free(v);
    return rc;
}

/* Replace the broken WAL by a new one written from the memtables (mu held,
 * as leader or exclusive writer: no insert runs). On failure nothing
 * changed: NO_SPACE keeps wal_nospace set (the next write retries); any
 * other error is sticky. */
static int db_relog_wal(tdb_t *db) {
    int rc = TDB_OK;
    char path[4096];
    wal_writer_t *nw = NULL;
    buf_t entries = {0}, rec = {0};
    relog_out_t out;
    memset(&out, 0, sizeof out);
    uint64_t expected = 0, mems = 0;
    uint64_t number = db->next_file_number++;
    db_wal_name(path, sizeof path, db->path, number);
    TRY(wal_writer_open(db->env, path, &nw));
    out.w = nw;
    TRY(batch_relog_marker(&rec, BATCH_RELOG_HEAD, number));
    TRY(relog_put(&out, &rec));
    for (uint32_t i = 0; i < db->ncf_slots; i++) {
        tdb_cf_t *cf = db->cfs[i];
        if (!cf || atomic_load(&cf->dropped)) continue;
        for (int k = 0; k <= cf->nimm; k++) {
            mem_slot_t *slot = k < cf->nimm ? &cf->imm[k] : &cf->mem;
            if (memtable_num_entries(slot->mem) == 0) continue;
            TRY(batch_relog_marker(&rec, BATCH_RELOG_GEN, slot->log_number));
            TRY(relog_put(&out, &rec));
            TRY(relog_memtable(&out, cf->id, slot->mem, &expected, &entries, &rec));
            mems++;
        }
    }
    TRY(relog_flush(&out));
    TRY(db_prepared_relog_locked(db, nw));
    TRY(batch_relog_marker(&rec, BATCH_RELOG_GEN, number)); /* complete */
    TRY(relog_put(&out, &rec));
    TRY(relog_flush(&out));
    TRY(wal_writer_sync(nw));
    atomic_fetch_add(&db->ctr.wal_syncs, 1);
    pthread_mutex_lock(&db->wal_mu);
    wal_writer_t *old = db->wal;
    uint64_t old_number = db->wal_number;
    db->wal = nw;
    db->wal_number = number;
    db->wal_expected_seq = expected;
    atomic_store(&db->wal_dirty, false);
    pthread_mutex_unlock(&db->wal_mu);
    nw = NULL;
    wal_writer_close(old, 0);
    db_delete_wals_below(db, number);
    db->wal_nospace = false;
    db_log(db, TDB_LOG_WARN, "WAL %llu replaced by WAL %llu, relogged from %llu memtable(s) after running out of "
           "space; writes resume", (unsigned long long)old_number, (unsigned long long)number,
           (unsigned long long)mems);
err:
    if (nw) {
        char detail[512];
        snprintf(detail, sizeof detail, "%s", tdb_last_error());
        wal_writer_close(nw, 0);
        db->env->remove(db->env, path);
        if (rc == TDB_ERR_NO_SPACE) {
            db->wal_nospace = true;
            db_log(db, TDB_LOG_WARN, "WAL relog out of space, writes refused: %s", detail);
            rc = tdb_err(TDB_ERR_NO_SPACE, "disk full: writes are refused until space is freed, then resume by "
                         "themselves; nothing acknowledged is lost (%s)", detail);
        } else {
            db_log(db, TDB_LOG_ERROR, "WAL relog failed: %s", detail);
            db_set_bg_error_locked(db, rc);
            tdb_err(rc, "%s", detail);
        }
    }
    buf_free(&entries);
    buf_free(&rec);
    buf_free(&out.data);
    free(out.ends);
    free(out.v);
    return rc;
}

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
        atomic_fetch_add(&db->ctr.wal_syncs, 1);
        if (rc == TDB_ERR_NO_SPACE && wal_writer_error(db->wal) == TDB_ERR_NO_SPACE) {
            /* The fsync ran out of space: the new log is written from the
             * memtables instead (above). */
            pthread_mutex_unlock(&db->wal_mu);
            return db_relog_wal(db);
        }
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
    rc = db_prepared_relog_locked(db, db->wal); /* the new log holds every unresolved prepare (db/prepared.c) */
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
    if (wal_writer_error(db->wal) == TDB_ERR_NO_SPACE) return db_relog_wal(db); /* its fsync failed */
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
    int rc = db_prepared_relog_locked(db, db->wal);
    pthread_mutex_unlock(&db->wal_mu);
    wal_writer_close(old, 0);
    if (rc != TDB_OK) {
        db_set_bg_error_locked(db, rc);
        return rc;
    }
    db->wal_nospace = false;
    return TDB_OK;
}

/* The current WAL's fsync ran out of space, so it needs a relog before it
 * can be synced again (mu held; a torn log, cut and synced, needs none). */
bool db_wal_failed_full_locked(tdb_t *db) {
    if (!db->wal_nospace || db->bg_error != TDB_OK || !db->wal) return false;
    pthread_mutex_lock(&db->wal_mu);
    bool failed = wal_writer_error(db->wal) == TDB_ERR_NO_SPACE;
    pthread_mutex_unlock(&db->wal_mu);
    return failed;
}

/* Move cf's active memtable to the immutable queue (mu held, as leader). */
int db_switch_memtable(tdb_t *db, tdb_cf_t *cf) {
    int rc = TDB_OK;
    memtable_t *fresh = memtable_create_sized(db_write_buffer_limit(db, cf));
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
    db->switch_seq = atomic_load_explicit(&db->last_seq, memory_order_relaxed);
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
 * records were unsynced (wal_writer_sync_group cut them off). An fsync out
 * of space with acknowledged records unsynced (or the cut's fsync out of
 * space) leaves the writer failed with NO_SPACE: *nospace too, and the
 * next leader relogs the memtables into a new log (db_relog_wal); these
 * records are not acknowledged, not applied and not in that new log. Any
 * other failure leaves the WAL state unknown: the caller makes it sticky.
 * Returns the error to report, worded. */
int db_wal_append_locked(tdb_t *db, const slice_t *payloads, int n, bool sync, bool dirty, bool *nospace) {
    uint64_t before = wal_writer_size(db->wal);
    int rc = wal_writer_add(db->wal, payloads, n);
    *nospace = rc == TDB_ERR_NO_SPACE;
    if (rc == TDB_OK && sync) {
        rc = wal_writer_sync_group(db->wal, before);
        atomic_fetch_add(&db->ctr.wal_syncs, 1);
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
        if (rc == TDB_ERR_NO_SPACE && wal_writer_error(db->wal) == TDB_ERR_NO_SPACE) {
            /* The cut's fsync ran out of space, now or before this append
             * (a failed writer refuses appends): the next leader relogs. */
            db_log(db, TDB_LOG_WARN, "WAL sync out of space, write refused: %s", tdb_last_error());
            return tdb_err(TDB_ERR_NO_SPACE, "disk full: the write was not applied; writes resume once space is "
                                             "freed (%s)", detail);
        }
        if (rc != TDB_OK) { /* could not cut it: sticky like any failed sync */
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

int db_wal_sync_locked(tdb_t *db) {
    int rc = wal_writer_sync(db->wal); /* not sync_group: the group cannot be cut off */
    atomic_fetch_add(&db->ctr.wal_syncs, 1);
    if (rc != TDB_OK) db_log(db, TDB_LOG_ERROR, "WAL sync after a visible group failed: %s", tdb_last_error());
    return rc;
}

/*
 * db/write_direct: the direct lane (invariant 2a, db_impl.h). A batch that
 * needs no fsync (NONE/INTERVAL families), no validation and no
 * back-pressure is numbered and appended to the WAL by its own thread under
 * wal_mu (a few microseconds), inserted into the memtables concurrently
 * with other direct writers, and published in sequence order (db/direct.c:
 * the gate, tickets, waits). No queue, no hand-off between threads.
 */
#include "db/db_impl.h"
#include "db/direct.h"

/* Memtable bytes charged per entry beyond its batch bytes (node links,
 * lengths, key trailer), for direct_room. */
#define DIRECT_ENTRY_OVERHEAD 64

/* Write b through the direct lane (see the top of the file). Sets *queued and returns
 * TDB_OK without doing anything when the batch must take the writer queue
 * instead: gate closed, back-pressure or memory to check, a family full
 * or dropped. Otherwise the write is done (or failed) here. */
int db_write_direct(tdb_t *db, tdb_batch_t *b, tdb_cf_t **cfs, int ncfs, bool interval, bool *queued) {
    int rc = TDB_OK;
    bool nospace = false;
    *queued = true;
    if (!direct_enter(db)) return TDB_OK;
    if (!atomic_load(&db->direct_ok)) goto out;
    /* In flight with the gate open: no memtable switches until we leave. */
    for (int i = 0; i < ncfs; i++) {
        tdb_cf_t *cf = cfs[i];
        if (atomic_load(&cf->dropped) || memtable_memory_usage(cf->mem.mem) >= db_write_buffer_limit(db, cf)) goto out;
    }
    slice_t rep = batch_rep(b);
    uint64_t n = tdb_batch_count(b);
    int64_t charge = (int64_t)rep.size + (int64_t)n * DIRECT_ENTRY_OVERHEAD;
    pthread_mutex_lock(&db->wal_mu);
    if (db->direct_room < charge || !direct_ticket_room(db)) {
        pthread_mutex_unlock(&db->wal_mu);
        goto out;
    }
    *queued = false;
    uint64_t first = atomic_load(&db->last_seq) + 1, ticket = 0;
    batch_set_seq(b, first);
    slice_t payload = batch_wal_payload(b, &db->wal_expected_seq);
    rc = db_wal_append_locked(db, &payload, 1, false, interval, &nospace);
    if (rc == TDB_OK) {
        atomic_store(&db->last_seq, first + n - 1);
        db->direct_room -= charge;
        ticket = direct_ticket_take(db, first + n - 1); /* ticket order = sequence order */
    }
    pthread_mutex_unlock(&db->wal_mu);
    if (rc != TDB_OK) {
        atomic_store(&db->direct_ok, false); /* the next leader looks at the WAL first */
        goto out;
    }
    rc = db_apply_batch_direct(db, rep);
    /* Published in sequence order, by whichever writer completes the run
     * up to ours; returns once ours is visible. After a failed insert the
     * range is published all the same, so later writers are not stuck; the
     * error below is sticky and refuses further writes. */
    direct_publish(db, ticket, first + n - 1);
    if (rc == TDB_OK) atomic_fetch_add(&db->ctr.user_bytes, batch_user_bytes(b));
    else atomic_store(&db->direct_ok, false);
out:
    direct_leave(db);
    if (rc != TDB_OK) { /* out of the gate: mu may be taken now */
        pthread_mutex_lock(&db->mu);
        if (nospace) db->wal_nospace = true;
        else db_set_bg_error_locked(db, rc);
        pthread_mutex_unlock(&db->mu);
    }
    return rc;
}

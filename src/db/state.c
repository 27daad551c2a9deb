/*
 * db/state: what every concern of the database touches, below all of them
 * (docs/design/conventions.md, the order of src/db): the sticky error
 * (invariant 7, db_impl.h) and the wake-ups of background workers and
 * waiters, file numbers, the snapshot list table writers need, and the
 * deletion of obsolete tables and WAL files (invariants 4 and 6).
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db/db_impl.h"

/* Next file number (takes mu). */
uint64_t db_new_file_number(void *ctx) {
    tdb_t *db = (tdb_t *)ctx;
    pthread_mutex_lock(&db->mu);
    uint64_t n = db->next_file_number++;
    pthread_mutex_unlock(&db->mu);
    return n;
}

/* A table left every version: drop it from the caches and delete it. */
void db_file_obsolete(void *ctx, uint64_t number) {
    tdb_t *db = (tdb_t *)ctx;
    if (atomic_load(&db->keep_files)) return;
    char path[4096];
    table_cache_evict(db->table_cache, number);
    sst_file_name(path, sizeof path, db->path, number);
    db->env->remove(db->env, path);
}

/* Copy the live snapshot list (mu held). */
int db_snapshot_list(tdb_t *db, uint64_t **out, int *n) {
    *out = NULL;
    *n = db->nsnap;
    if (!db->nsnap) return TDB_OK;
    *out = (uint64_t *)malloc((size_t)db->nsnap * sizeof **out);
    if (!*out) return tdb_err(TDB_ERR_NOMEM, "snapshot list");
    memcpy(*out, db->snapshots, (size_t)db->nsnap * sizeof **out);
    return TDB_OK;
}

/* Oldest WAL any family still needs (mu held). */
static uint64_t min_needed_wal(tdb_t *db) {
    uint64_t min = db->wal_number;
    for (uint32_t i = 0; i < db->ncf_slots; i++) {
        tdb_cf_t *cf = db->cfs[i];
        if (!cf || atomic_load(&cf->dropped)) continue;
        uint64_t need = db->wal_number;
        if (cf->nimm > 0) need = cf->imm[0].log_number;
        else if (cf->mem.mem && memtable_num_entries(cf->mem.mem) > 0) need = cf->mem.log_number;
        if (need < min) min = need;
    }
    return min;
}

/* Delete the WAL files no family needs any more (mu held, after the
 * manifest recording the families' log numbers is durable). */
void db_delete_obsolete_wals(tdb_t *db) { db_delete_wals_below(db, min_needed_wal(db)); }

void db_delete_wals_below(tdb_t *db, uint64_t min) {
    char **names = NULL;
    size_t n = 0;
    if (db->env->list_dir(db->env, db->path, &names, &n) != TDB_OK) return;
    for (size_t i = 0; i < n; i++) {
        uint64_t num;
        if (db_parse_file_name(names[i], "log", &num) && num < min) {
            char path[4096];
            db_wal_name(path, sizeof path, db->path, num);
            db->env->remove(db->env, path);
        }
    }
    env_free_list(names, n);
}

/* Enter the sticky error state (mu held) and wake everyone waiting for
 * background progress (stalled writers, tdb_flush, tdb_wait_idle), so they
 * return the error instead of waiting forever. */
void db_set_bg_error_locked(tdb_t *db, int rc) {
    if (db->bg_error == TDB_OK) db->bg_error = rc;
    atomic_store(&db->direct_ok, false); /* writes go through the leader, which refuses them */
    pthread_cond_broadcast(&db->done_cv);
    pthread_cond_broadcast(&db->bg_cv);
}

/* Wait on cv (mu held) for at most us microseconds. */
void db_cond_wait_us(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t us) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t ns = (uint64_t)ts.tv_nsec + us * 1000u;
    ts.tv_sec += (time_t)(ns / 1000000000u);
    ts.tv_nsec = (long)(ns % 1000000000u);
    pthread_cond_timedwait(cv, mu, &ts);
}

/* Wake the background workers: work may be available (mu held). */
void db_maybe_schedule(tdb_t *db) { pthread_cond_broadcast(&db->bg_cv); }

/* ---- what the transaction layer reads (db/db_txn.h) ---- */

/* The newest sequence readers may see. */
uint64_t db_visible_seq(tdb_t *db) { return atomic_load(&db->visible_seq); }

/* A new transaction id (from 1). */
uint64_t db_next_txn_id(tdb_t *db) { return atomic_fetch_add(&db->next_txn_id, 1) + 1; }

/* The resolved memory budget, bytes. */
size_t db_memory_budget(tdb_t *db) { return db->mem_budget; }

/* The lock manager, created on first use (takes mu). */
void *db_lock_mgr(tdb_t *db, void *(*create)(void), void (*free_fn)(void *), db_lock_counts_fn counts) {
    pthread_mutex_lock(&db->mu);
    if (!db->lock_mgr) {
        db->lock_mgr = create();
        db->lock_mgr_free = free_fn;
        db->lock_mgr_counts = counts;
    }
    void *m = db->lock_mgr;
    pthread_mutex_unlock(&db->mu);
    return m;
}

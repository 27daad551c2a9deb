/*
 * db/bg: background work. flush_threads workers write immutable memtables
 * to level 1 (per family oldest first, one at a time); compaction_threads
 * workers run the compactions the policy picks. Several compactions of one
 * family may run at once: each family's registry (cf->compactions, under
 * mu) admits only compactions with disjoint inputs and disjoint output
 * ranges (version/compaction.h), and cf->compacting counts them (manual
 * ones included). Trivial moves install a metadata-only edit.
 * Both install results through the manifest (see db_impl.h, invariant 6).
 * A failure is sticky: bg_error is set and writes are refused; except out
 * of space, which discards the job's output and retries it after a backoff
 * (db_impl.h, invariant 7). The WAL fsync thread of INTERVAL-mode
 * families (db_sync_thread) runs here too.
 */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "db/db_impl.h"

/* Delete the outputs of a job whose family was dropped meanwhile. */
static void discard_outputs(tdb_t *db, version_edit_t *e) {
    for (int i = 0; i < e->n_add; i++) {
        char path[4096];
        sst_file_name(path, sizeof path, db->path, e->add[i].f->number);
        db->env->remove(db->env, path);
    }
}

/* Common table-writer settings for a family. */
static void writer_ctx(tdb_t *db, tdb_cf_t *cf, table_write_ctx_t *ctx, uint64_t target) {
    memset(ctx, 0, sizeof *ctx);
    ctx->env = db->env;
    ctx->dbdir = db->path;
    ctx->sst = db_sst_options(cf);
    ctx->target_file_size = target;
    ctx->new_file_number = db_new_file_number;
    ctx->ctx = db;
    ctx->now_unix = db_now_unix();
}

/* Write memtable m as level-1 tables (recovery; no snapshots exist). */
int db_write_level1(tdb_t *db, tdb_cf_t *cf, memtable_t *m, version_edit_t *edit) {
    table_write_ctx_t ctx;
    writer_ctx(db, cf, &ctx, UINT64_MAX);
    iter_t *it = memtable_iter(m);
    if (!it) return tdb_err(TDB_ERR_NOMEM, "memtable iterator");
    int rc = table_write_from_iter(it, &ctx, 1, edit);
    iter_destroy(it);
    atomic_fetch_add(&db->ctr.flush_bytes, ctx.bytes_written);
    return rc;
}

/* Install edit on cf's current version (manifest_mu and mu held); *prev
 * keeps a reference to the version it replaced, for undo_edit. */
static int install_edit(tdb_cf_t *cf, version_edit_t *edit, version_t **prev) {
    version_t *nv = NULL;
    TDB_RET(version_apply(cf->current, edit, &nv));
    *prev = cf->current;
    cf->current = nv;
    return TDB_OK;
}

/* Put back the version install_edit replaced, because the MANIFEST naming
 * the new one could not be written for lack of space (mu held). Nothing
 * but cf->current saw the new version, so dropping it frees only the job's
 * outputs, which the caller discards. */
static void undo_edit(tdb_cf_t *cf, version_t *prev) {
    version_t *nv = cf->current;
    cf->current = prev;
    version_unref(nv);
}

/* Record a background failure (mu held). */
static void set_bg_error(tdb_t *db, int rc, const char *what) {
    db_log(db, TDB_LOG_ERROR, "%s failed: %s (%s)", what, tdb_strerror(rc), tdb_last_error());
    db_set_bg_error_locked(db, rc);
}

#define NOSPACE_BACKOFF_MIN_US 10000u
#define NOSPACE_BACKOFF_MAX_US 1000000u

/* A flush or compaction ran out of space (mu held): its output is already
 * discarded; background work pauses for a growing backoff, then retries. */
static void note_no_space(tdb_t *db, const char *what, bool flush) {
    db_log(db, TDB_LOG_WARN, "%s out of space, retried later: %s", what, tdb_last_error());
    uint64_t b = db->nospace_backoff ? db->nospace_backoff * 2 : NOSPACE_BACKOFF_MIN_US;
    db->nospace_backoff = b > NOSPACE_BACKOFF_MAX_US ? NOSPACE_BACKOFF_MAX_US : b;
    db->nospace_retry_at = db->env->now_micros(db->env) + db->nospace_backoff;
    db->bg_nospace = true;
    db->nospace_events++;
    if (flush) db->nospace_flushes++;
}

/* A flush or compaction succeeded: space is back (mu held). */
static void note_space_ok(tdb_t *db) {
    db->bg_nospace = false;
    db->nospace_backoff = 0;
    db->nospace_retry_at = 0;
}

/* Write the MANIFEST of a flush of cf's oldest immutable memtable, whose
 * version is installed: cf's log_number moves past that memtable's WAL
 * (mu held). On NO_SPACE the old log_number is back (the caller undoes
 * the version). */
static int flush_write_manifest(tdb_t *db, tdb_cf_t *cf) {
    uint64_t prev_log = cf->log_number;
    cf->log_number = cf->nimm > 1 ? cf->imm[1].log_number : cf->mem.log_number;
    int rc = db_write_manifest_locked(db);
    if (rc == TDB_ERR_NO_SPACE) cf->log_number = prev_log;
    return rc;
}

/* Flush cf's oldest immutable memtable (mu held on entry and exit;
 * cf->flushing set by the caller). */
void db_flush_oldest(tdb_t *db, tdb_cf_t *cf) {
    mem_slot_t slot = cf->imm[0];
    memtable_ref(slot.mem);
    uint64_t *snaps = NULL;
    int nsnaps = 0, rc = db_snapshot_list(db, &snaps, &nsnaps);
    pthread_mutex_unlock(&db->mu);

    version_edit_t edit;
    memset(&edit, 0, sizeof edit);
    version_t *prev = NULL;
    table_write_ctx_t ctx;
    writer_ctx(db, cf, &ctx, UINT64_MAX);
    ctx.snapshots = snaps;
    ctx.nsnapshots = nsnaps;
    slice_t cuts[FLUSH_MAX_RUNS - 1]; /* borrowed from slot.mem */
    if (rc == TDB_OK) {
        iter_t *it = memtable_iter(slot.mem);
        if (it) {
            /* One table per key run (version/flush_runs.c). */
            ctx.ncut = flush_run_cuts(it, cuts);
            ctx.cut_keys = cuts;
            ctx.cut_every = 1;
        }
        rc = it ? table_write_from_iter(it, &ctx, 1, &edit) : tdb_err(TDB_ERR_NOMEM, "memtable iterator");
        iter_destroy(it);
    }

    pthread_mutex_lock(&db->manifest_mu);
    pthread_mutex_lock(&db->mu);
    if (atomic_load(&cf->dropped)) {
        discard_outputs(db, &edit);
    } else if (rc != TDB_OK) {
        discard_outputs(db, &edit);
        if (rc == TDB_ERR_NO_SPACE) note_no_space(db, "flush", true); /* the memtable stays queued */
        else set_bg_error(db, rc, "flush");
    } else if ((rc = install_edit(cf, &edit, &prev)) != TDB_OK) {
        discard_outputs(db, &edit);
        set_bg_error(db, rc, "flush install");
    } else if ((rc = flush_write_manifest(db, cf)) == TDB_ERR_NO_SPACE) {
        /* The old MANIFEST stays: so does the memtable, queued as before,
         * and the flush is retried like one whose table ran out of space. */
        undo_edit(cf, prev);
        prev = NULL;
        discard_outputs(db, &edit);
        note_no_space(db, "flush (manifest)", true);
    } else {
        memtable_unref(cf->imm[0].mem);
        memmove(cf->imm, cf->imm + 1, (size_t)(cf->nimm - 1) * sizeof *cf->imm);
        cf->nimm--;
        if (cf_install_sv(cf) != TDB_OK) set_bg_error(db, TDB_ERR_NOMEM, "superversion");
        if (rc == TDB_OK) db_delete_obsolete_wals(db);
        if (rc == TDB_OK) note_space_ok(db);
        atomic_fetch_add(&db->ctr.flush_bytes, ctx.bytes_written);
        atomic_fetch_add(&db->ctr.flushes, 1);
        /* Level 1 grew: the next write leader re-checks back-pressure
         * before direct writes go on (db/write_stall.c). */
        atomic_store(&db->direct_ok, false);
        db_log(db, TDB_LOG_DEBUG, "flushed memtable of '%s': %d table(s), %llu bytes", cf->name, edit.n_add,
               (unsigned long long)ctx.bytes_written);
    }
    pthread_mutex_unlock(&db->manifest_mu);
    version_unref(prev); /* after the new superversion: see invariant 6 */
    version_edit_free(&edit);
    memtable_unref(slot.mem);
    free(snaps);
    cf->flushing = false;
    pthread_cond_broadcast(&db->done_cv);
    pthread_cond_broadcast(&db->bg_cv);
}

/* Run compaction c of cf, picked with cf->compactions (mu held on entry and
 * exit; cf->compacting counts it and is decremented here). */
static int run_compaction(tdb_t *db, tdb_cf_t *cf, compaction_t *c) {
    version_t *base = cf->current;
    version_ref(base);
    compaction_opts_t o = db_compaction_opts(cf);
    uint64_t *snaps = NULL;
    slice_t *cuts = NULL; /* borrowed from base's metas */
    int nsnaps = 0, ncuts = 0, rc = db_snapshot_list(db, &snaps, &nsnaps);
    if (rc == TDB_OK && !c->trivial_move) rc = compaction_cut_keys(c, base, &cuts, &ncuts);
    pthread_mutex_unlock(&db->mu);

    version_edit_t edit;
    memset(&edit, 0, sizeof edit);
    version_t *prev = NULL;
    table_write_ctx_t ctx;
    writer_ctx(db, cf, &ctx, o.target_file_size);
    ctx.snapshots = snaps;
    ctx.nsnapshots = nsnaps;
    ctx.cut_keys = cuts;
    ctx.ncut = ncuts;
    ctx.bottommost = c->bottommost;
    /* A trivial move's edit re-adds live input files: never discard them. */
    const bool move = c->trivial_move != 0;
    if (rc == TDB_OK) rc = move ? compaction_move(c, &edit) : compaction_run(c, db->table_cache, &ctx, &edit);

    pthread_mutex_lock(&db->manifest_mu);
    pthread_mutex_lock(&db->mu);
    if (atomic_load(&cf->dropped)) {
        if (!move) discard_outputs(db, &edit);
    } else if (rc != TDB_OK) {
        if (!move) discard_outputs(db, &edit);
        if (rc == TDB_ERR_NO_SPACE) note_no_space(db, "compaction", false); /* inputs stay */
        else set_bg_error(db, rc, "compaction");
    } else if ((rc = install_edit(cf, &edit, &prev)) != TDB_OK) {
        if (!move) discard_outputs(db, &edit);
        set_bg_error(db, rc, "compaction install");
    } else if ((rc = db_write_manifest_locked(db)) == TDB_ERR_NO_SPACE) {
        /* The old MANIFEST stays, listing the inputs: so does the old
         * version; retried later like a compaction out of space. */
        undo_edit(cf, prev);
        prev = NULL;
        if (!move) discard_outputs(db, &edit);
        note_no_space(db, "compaction (manifest)", false);
    } else {
        if (cf_install_sv(cf) != TDB_OK) set_bg_error(db, TDB_ERR_NOMEM, "superversion");
        if (rc == TDB_OK && !move) note_space_ok(db);
        if (move) {
            uint64_t bytes = 0;
            for (int i = 0; i < c->nin[0]; i++) bytes += c->in[0][i]->file_size;
            db_log(db, TDB_LOG_DEBUG, "trivial move '%s' L%d->L%d: %d file(s), %llu bytes", cf->name, c->level,
                   c->output_level, c->nin[0], (unsigned long long)bytes);
        } else {
            atomic_fetch_add(&db->ctr.compact_read, ctx.bytes_read);
            atomic_fetch_add(&db->ctr.compact_written, ctx.bytes_written);
            atomic_fetch_add(&db->ctr.compactions, 1);
            db_log(db, TDB_LOG_DEBUG, "compacted '%s' L%d->L%d: %d+%d -> %d file(s), %llu bytes read, %llu written",
                   cf->name, c->level, c->output_level, c->nin[0], c->nin[1], edit.n_add,
                   (unsigned long long)ctx.bytes_read, (unsigned long long)ctx.bytes_written);
        }
    }
    pthread_mutex_unlock(&db->manifest_mu);
    version_unref(prev); /* after the new superversion: see invariant 6 */
    compaction_release(cf->compactions, c);
    version_edit_free(&edit);
    version_unref(base);
    free(snaps);
    free(cuts);
    cf->compacting--;
    pthread_cond_broadcast(&db->done_cv);
    pthread_cond_broadcast(&db->bg_cv);
    return rc;
}

/* Find a family with a memtable to flush and flush it (mu held). */
static bool do_flush_work(tdb_t *db, uint32_t *rr) {
    for (uint32_t k = 0; k < db->ncf_slots; k++) {
        tdb_cf_t *cf = db->cfs[(*rr + k) % db->ncf_slots];
        if (!cf || atomic_load(&cf->dropped) || cf->flushing || cf->nimm == 0) continue;
        *rr = (*rr + k + 1) % db->ncf_slots;
        cf->flushing = true;
        db->bg_flush_running++;
        db_flush_oldest(db, cf);
        db->bg_flush_running--;
        return true;
    }
    return false;
}

/* Find a family with a compaction that can run next to those in progress
 * and run it (mu held). At most compaction_threads run this at once. */
static bool do_compaction_work(tdb_t *db, uint32_t *rr) {
    for (uint32_t k = 0; k < db->ncf_slots; k++) {
        tdb_cf_t *cf = db->cfs[(*rr + k) % db->ncf_slots];
        if (!cf || atomic_load(&cf->dropped)) continue;
        compaction_opts_t o = db_compaction_opts(cf);
        compaction_t *c = compaction_pick(cf->current, &o, cf->compactions);
        if (!c) continue;
        *rr = (*rr + k + 1) % db->ncf_slots;
        /* A level-1 merge removes what scans stepped over: count anew. A
         * trivial move does not (it moves a file without tombstones, first
         * and alone), so the count stays for the merge that follows. */
        if (c->level == 1 && !c->trivial_move) atomic_store_explicit(&cf->dead_stepped, 0, memory_order_relaxed);
        cf->compacting++;
        db->bg_compact_running++;
        db_log(db, TDB_LOG_DEBUG, "picked '%s' L%d->L%d%s: score %.2f, %d running", cf->name, c->level,
               c->output_level, c->trivial_move ? " (move)" : "", c->score, cf->compacting);
        db_maybe_schedule(db); /* an idle worker may find a disjoint one */
        run_compaction(db, cf, c);
        db->bg_compact_running--;
        return true;
    }
    return false;
}

/* Wait on bg_cv for at most us microseconds (mu held). */
static void wait_us(tdb_t *db, uint64_t us) { db_cond_wait_us(&db->bg_cv, &db->mu, us); }

typedef struct worker_arg {
    tdb_t *db;
    bool flusher;
} worker_arg_t;

/* Worker loop: take work of its kind until shutdown. */
static void *worker_main(void *p) {
    worker_arg_t a = *(worker_arg_t *)p;
    free(p);
    tdb_t *db = a.db;
    uint32_t rr = 0;
    pthread_mutex_lock(&db->mu);
    while (!db->shutting_down) {
        bool did = false;
        uint64_t now = db->nospace_retry_at ? db->env->now_micros(db->env) : 0;
        if (now && now < db->nospace_retry_at) { /* out of space: back off, then retry */
            wait_us(db, db->nospace_retry_at - now);
            continue;
        }
        if (db->bg_error == TDB_OK && db->ncf_slots && !db->bg_paused)
            did = a.flusher ? do_flush_work(db, &rr) : do_compaction_work(db, &rr);
        if (!did && !db->shutting_down) pthread_cond_wait(&db->bg_cv, &db->mu);
    }
    pthread_mutex_unlock(&db->mu);
    return NULL;
}

int db_start_background(tdb_t *db) {
    int n = db->cfg.flush_threads + db->cfg.compaction_threads;
    db->threads = (pthread_t *)calloc((size_t)n, sizeof *db->threads);
    if (!db->threads) return tdb_err(TDB_ERR_NOMEM, "threads");
    for (int i = 0; i < n; i++) {
        worker_arg_t *a = (worker_arg_t *)malloc(sizeof *a);
        if (!a) return tdb_err(TDB_ERR_NOMEM, "threads");
        a->db = db;
        a->flusher = i < db->cfg.flush_threads;
        if (pthread_create(&db->threads[i], NULL, worker_main, a) != 0) {
            free(a);
            return tdb_err(TDB_ERR_IO, "cannot start background thread");
        }
        /* Named here, not by the thread, so the names are set once open returns (top, perf, gdb). */
        (void)pthread_setname_np(db->threads[i], i < db->cfg.flush_threads ? "tdb-flush" : "tdb-compact");
        db->nthreads++;
    }
    if (pthread_create(&db->sync_thread, NULL, db_sync_thread, db) != 0)
        return tdb_err(TDB_ERR_IO, "cannot start sync thread");
    (void)pthread_setname_np(db->sync_thread, "tdb-wal-sync");
    db->sync_thread_started = true;
    return TDB_OK;
}

void db_stop_background(tdb_t *db) {
    pthread_mutex_lock(&db->mu);
    db->shutting_down = true;
    pthread_cond_broadcast(&db->bg_cv);
    pthread_cond_broadcast(&db->done_cv);
    pthread_mutex_unlock(&db->mu);
    for (int i = 0; i < db->nthreads; i++) pthread_join(db->threads[i], NULL);
    db->nthreads = 0;
    if (db->sync_thread_started) pthread_join(db->sync_thread, NULL);
    db->sync_thread_started = false;
}

/* Is there queued or running background work, or a compaction to pick? (mu held) */
static bool busy(tdb_t *db, tdb_cf_t *only) {
    if (db->bg_flush_running || db->bg_compact_running) return true;
    for (uint32_t i = 0; i < db->ncf_slots; i++) {
        tdb_cf_t *cf = db->cfs[i];
        if (!cf || atomic_load(&cf->dropped) || (only && cf != only)) continue;
        if (cf->nimm || cf->flushing || cf->compacting) return true;
        compaction_opts_t o = db_compaction_opts(cf);
        compaction_t *c = compaction_pick(cf->current, &o, cf->compactions);
        if (c) {
            compaction_release(cf->compactions, c);
            return true;
        }
    }
    return false;
}

/* TDB_ERR_BUSY if background work is paused (mu held): waiting for it
 * would last until tdb_continue_background. */
static int check_not_paused(tdb_t *db, const char *what) {
    if (!db->bg_paused) return TDB_OK;
    return tdb_err(TDB_ERR_BUSY, "%s: background work is paused (tdb_pause_background)", what);
}

int tdb_pause_background(tdb_t *db) {
    if (!db) return tdb_err(TDB_ERR_INVALID_ARG, "database handle is NULL");
    pthread_mutex_lock(&db->mu);
    db->bg_paused++;
    while (db->bg_flush_running || db->bg_compact_running) pthread_cond_wait(&db->done_cv, &db->mu);
    pthread_mutex_unlock(&db->mu);
    db_log(db, TDB_LOG_INFO, "background work paused");
    return TDB_OK;
}

int tdb_continue_background(tdb_t *db) {
    if (!db) return tdb_err(TDB_ERR_INVALID_ARG, "database handle is NULL");
    pthread_mutex_lock(&db->mu);
    if (!db->bg_paused) {
        pthread_mutex_unlock(&db->mu);
        return tdb_err(TDB_ERR_INVALID_ARG, "tdb_continue_background without tdb_pause_background");
    }
    if (--db->bg_paused == 0) {
        db_maybe_schedule(db);
        pthread_cond_broadcast(&db->done_cv); /* stalled writers re-check at once */
    }
    pthread_mutex_unlock(&db->mu);
    db_log(db, TDB_LOG_INFO, "background work continued");
    return TDB_OK;
}

int tdb_wait_idle(tdb_t *db) {
    if (!db) return tdb_err(TDB_ERR_INVALID_ARG, "database handle is NULL");
    pthread_mutex_lock(&db->mu);
    int prc = check_not_paused(db, "tdb_wait_idle");
    if (prc != TDB_OK) {
        pthread_mutex_unlock(&db->mu);
        return prc;
    }
    uint64_t events = db->nospace_events;
    bool nospace = false;
    db->settling++; /* the tree's idle shape: no level-1 batching */
    while (db->bg_error == TDB_OK && !db->shutting_down && busy(db, NULL)) {
        if ((nospace = db->nospace_events != events)) break; /* would wait as long as the disk is full */
        db_maybe_schedule(db);
        pthread_cond_wait(&db->done_cv, &db->mu);
    }
    db->settling--;
    int rc = db->bg_error;
    pthread_mutex_unlock(&db->mu);
    if (rc == TDB_OK && nospace)
        return tdb_err(TDB_ERR_NO_SPACE, "background work out of space; it is retried once space is freed");
    return rc == TDB_OK ? TDB_OK : tdb_err(TDB_ERR_READ_ONLY, "background error: %s", tdb_strerror(rc));
}

/* Deepest level of cf holding files (mu held). */
static int last_level(tdb_cf_t *cf) {
    for (int l = TDB_MAX_LEVELS - 1; l >= 1; l--)
        if (version_num_files(cf->current, l)) return l;
    return 0;
}

/* Compact one family down to its last non-empty level, in this thread:
 * level 1 into the base level, then each level wholly into the next.
 * Background compactions of the family may run alongside (the registry
 * keeps them disjoint); a level whose pick is blocked by one is retried
 * once a compaction finishes. */
int db_compact_cf_range(tdb_t *db, tdb_cf_t *cf, const slice_t *lo, const slice_t *hi) {
    int rc = TDB_OK;
    pthread_mutex_lock(&db->mu);
    for (int level = 1; level < TDB_MAX_LEVELS - 1 && rc == TDB_OK; level++) {
        if (db->shutting_down || atomic_load(&cf->dropped)) break;
        if (db->bg_error != TDB_OK) {
            rc = tdb_err(TDB_ERR_READ_ONLY, "background error: %s", tdb_strerror(db->bg_error));
            break;
        }
        int last = last_level(cf);
        if (last == 0 || (level > 1 && level >= last)) break; /* nothing below: the range is down */
        compaction_opts_t o = db_compaction_opts(cf);
        int busy;
        compaction_t *c = compaction_pick_range(cf->current, level, lo, hi, &o, cf->compactions, &busy);
        if (!c) {
            if (busy && cf->compacting) { /* an input is being compacted: wait, retry the level */
                pthread_cond_wait(&db->done_cv, &db->mu);
                level--;
            }
            continue;
        }
        cf->compacting++;
        db->bg_compact_running++;
        rc = run_compaction(db, cf, c);
        db->bg_compact_running--;
    }
    pthread_mutex_unlock(&db->mu);
    return rc;
}

/* The whole family: every level's files, level by level. */
int db_compact_cf(tdb_t *db, tdb_cf_t *cf) { return db_compact_cf_range(db, cf, NULL, NULL); }

/* Background fsync of the WAL for families in TDB_SYNC_INTERVAL mode. */
void *db_sync_thread(void *arg) {
    tdb_t *db = (tdb_t *)arg;
    pthread_mutex_lock(&db->mu);
    while (!db->shutting_down) {
        uint64_t interval = db->min_sync_interval_us ? db->min_sync_interval_us : 100000;
        if (interval > 100000) interval = 100000;
        db_cond_wait_us(&db->bg_cv, &db->mu, interval);
        if (db->shutting_down) break;
        pthread_mutex_unlock(&db->mu);
        pthread_mutex_lock(&db->wal_mu);
        int rc = TDB_OK;
        if (db->wal && atomic_exchange(&db->wal_dirty, false)) {
            rc = wal_writer_sync(db->wal);
            atomic_fetch_add(&db->ctr.wal_syncs, 1);
        }
        bool full = rc == TDB_ERR_NO_SPACE && wal_writer_error(db->wal) == TDB_ERR_NO_SPACE;
        wal_writer_t *synced = db->wal;
        pthread_mutex_unlock(&db->wal_mu);
        pthread_mutex_lock(&db->mu);
        if (full && db->wal != synced) {
            /* a relog replaced that log meanwhile (WAL swaps hold mu too) */
        } else if (full) {
            /* Not sticky: the next write leader relogs the memtables into a
             * new WAL (db/switch.c); writes get NO_SPACE until it can. */
            db_log(db, TDB_LOG_WARN, "interval WAL sync out of space: %s", tdb_last_error());
            db->wal_nospace = true;
            atomic_store(&db->direct_ok, false);
        } else if (rc != TDB_OK && db->bg_error == TDB_OK) {
            db_log(db, TDB_LOG_ERROR, "interval WAL sync failed: %s", tdb_last_error());
            db_set_bg_error_locked(db, rc);
        }
    }
    pthread_mutex_unlock(&db->mu);
    return NULL;
}

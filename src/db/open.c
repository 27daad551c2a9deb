/*
 * db/open: open, crash recovery and close.
 *
 * Recovery: read the manifest (the durable set of tables and, per family,
 * the oldest WAL with unflushed data), replay every WAL from the oldest any
 * family needs, in order, into fresh memtables (skipping records of dropped
 * families and of families that had already flushed them), write the
 * recovered memtables as level-1 tables, start a new WAL, persist the
 * manifest, and only then delete the replayed WALs and any orphan files
 * (tables of a flush or compaction that never reached the manifest).
 * A torn tail on the newest WAL is the expected result of a crash and is
 * dropped; a damaged record anywhere else fails the open with CORRUPTION.
 * A relog (a WAL rewritten from the memtables after an fsync ran out of
 * space, db/switch.c) holds every write of the WALs below it: replay starts
 * at the newest complete one; one cut short by a crash is not replayed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/testing.h"
#include "db/db_impl.h"
#include "db/direct.h"
#include "sst/sst.h"
#include "util/mutex.h"
#include "util/sysmem.h"
#include <unistd.h>

static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

/* Flush any recovered memtable that outgrew its buffer into `edits[id]`. */
static int flush_recovered(tdb_t *db, version_edit_t *edits, bool force) {
    for (uint32_t i = 0; i < db->ncf_slots; i++) {
        tdb_cf_t *cf = db->cfs[i];
        if (!cf || memtable_num_entries(cf->mem.mem) == 0) continue;
        if (!force && memtable_memory_usage(cf->mem.mem) < cf->cfg.write_buffer_size) continue;
        TDB_RET(db_write_level1(db, cf, cf->mem.mem, &edits[i]));
        memtable_t *fresh = memtable_create_sized(db_write_buffer_limit(db, cf));
        if (!fresh) return tdb_err(TDB_ERR_NOMEM, "memtable");
        memtable_unref(cf->mem.mem);
        cf->mem.mem = fresh;
    }
    return TDB_OK;
}

/* Replay a transaction record (db/prepared.c): a prepare is listed, not
 * applied; a commit marker applies the prepared entries with its sequence
 * numbers; a rollback marker drops them. Returns 1 or an error. */
static int replay_txn_record(tdb_t *db, const batch_txn_rec_t *tr, slice_t rec, uint64_t number, buf_t *rep) {
    if (tr->kind == BATCH_TXN_PREPARE) {
        TDB_RET(db_prepared_recovered(db, tr, rec));
        return 1;
    }
    prepared_t *p = db_prepared_find(db, tr->xid);
    if (!p) return tdb_err(TDB_ERR_CORRUPTION, "%s marker of a transaction this log never prepared",
                           tr->kind == BATCH_TXN_COMMIT ? "commit" : "rollback");
    if (tr->kind == BATCH_TXN_COMMIT) {
        if (tr->count != db_prepared_count_entries(p))
            return tdb_err(TDB_ERR_CORRUPTION, "commit marker of %u entries for a prepare of %u", tr->count,
                           db_prepared_count_entries(p));
        TDB_RET(db_prepared_rep(p, tr->seq, rep));
        TDB_RET(db_apply_batch(db, buf_slice(rep), number));
        if (tr->count && tr->seq + tr->count - 1 > atomic_load(&db->last_seq))
            atomic_store(&db->last_seq, tr->seq + tr->count - 1);
    }
    db_prepared_remove(db, p);
    return 1;
}

/* Replay one WAL file into the memtables. */
static int replay_wal(tdb_t *db, uint64_t number, bool newest, bool fixed_header, version_edit_t *edits) {
    char path[4096];
    wal_reader_t *r = NULL;
    int rc = TDB_OK;
    db_wal_name(path, sizeof path, db->path, number);
    buf_t rep = {0};
    TRY(wal_reader_open(db->env, path, &r));
    uint64_t records = 0, expected = 0;
    uint64_t gen = number; /* memtable generation of the records that follow */
    for (;;) {
        slice_t rec;
        rc = wal_reader_next(r, &rec);
        if (rc == TDB_ERR_NOT_FOUND) {
            rc = TDB_OK;
            break;
        }
        if (rc != TDB_OK) goto err;
        if (!fixed_header) { /* a transaction record (two-phase commit)? */
            batch_txn_rec_t tr;
            rc = batch_txn_record(rec, &expected, &tr);
            if (rc == 1 && tr.kind >= BATCH_RELOG_HEAD) { /* a relog's generation (db/switch.c) */
                if (tr.kind == BATCH_RELOG_GEN) gen = tr.number;
            } else if (rc == 1) {
                rc = replay_txn_record(db, &tr, rec, gen, &rep);
            }
            if (rc < 0) {
                rc = tdb_err(rc, "%s: record %llu: %s", path, (unsigned long long)records, tdb_last_error());
                goto err;
            }
            if (rc == 1) {
                records++;
                TRY(flush_recovered(db, edits, false));
                continue;
            }
        }
        rc = fixed_header ? batch_from_wal_fixed(rec, &rep) : batch_from_wal(rec, &expected, &rep);
        uint32_t count = batch_count_raw(buf_slice(&rep));
        uint64_t seq = rc == TDB_OK ? dec_fixed64(rep.data) : 0;
        if (rc == TDB_OK) rc = db_apply_batch(db, buf_slice(&rep), gen);
        if (rc != TDB_OK) {
            rc = tdb_err(rc, "%s: record %llu: %s", path, (unsigned long long)records, tdb_last_error());
            goto err;
        }
        if (count && seq + count - 1 > atomic_load(&db->last_seq)) atomic_store(&db->last_seq, seq + count - 1);
        records++;
        TRY(flush_recovered(db, edits, false));
    }
    if (wal_reader_torn_tail(r)) {
        if (!newest)
            RAISE(TDB_ERR_CORRUPTION, "%s: damaged record at offset %llu in a WAL that was complete", path,
                  (unsigned long long)wal_reader_valid_end(r));
        db_log(db, TDB_LOG_WARN, "%s: torn tail after offset %llu dropped (crash during write)", path,
               (unsigned long long)wal_reader_valid_end(r));
    }
    db_log(db, TDB_LOG_INFO, "replayed %s: %llu records", path, (unsigned long long)records);
err:
    buf_free(&rep);
    wal_reader_close(r);
    return rc;
}

/* What WAL `number` is: 0 a plain log, 1 a complete relog (its first
 * record RELOG_HEAD, its relog closed by RELOG_GEN(number): it holds every
 * write the logs below it hold, db/switch.c), 2 an incomplete relog (it
 * ends, or its tail is torn, before that record: a crash while it was
 * written; never replayed); or the reader's error. */
static int relog_state(tdb_t *db, uint64_t number) {
    char path[4096];
    wal_reader_t *r = NULL;
    db_wal_name(path, sizeof path, db->path, number);
    int rc = wal_reader_open(db->env, path, &r), state = 0;
    if (rc != TDB_OK) return rc;
    uint64_t expected = 0;
    for (bool first = true;; first = false) {
        slice_t rec;
        batch_txn_rec_t tr;
        rc = wal_reader_next(r, &rec);
        if (rc == TDB_ERR_NOT_FOUND) { /* its end, or a torn tail (crash) */
            rc = TDB_OK;
            break;
        }
        if (rc != TDB_OK) break; /* damage in the middle, or I/O: the open fails */
        int kind = batch_txn_record(rec, &expected, &tr) == 1 ? tr.kind : 0;
        if (first && kind != BATCH_RELOG_HEAD) break;
        state = 2;
        if (kind == BATCH_RELOG_GEN && tr.number == number) {
            state = 1;
            break;
        }
    }
    wal_reader_close(r);
    return rc == TDB_OK ? state : rc;
}

/* Delete orphan tables, temp files and replayed WALs (after the manifest). */
static void delete_orphans(tdb_t *db) {
    char **names = NULL;
    size_t n = 0;
    if (db->env->list_dir(db->env, db->path, &names, &n) != TDB_OK) return;
    for (size_t i = 0; i < n; i++) {
        uint64_t num;
        bool drop = false;
        if (db_parse_file_name(names[i], "sst", &num)) {
            drop = true;
            for (uint32_t c = 0; c < db->ncf_slots && drop; c++) {
                tdb_cf_t *cf = db->cfs[c];
                if (!cf || !cf->current) continue;
                for (int l = 1; l < TDB_MAX_LEVELS && drop; l++)
                    for (int f = 0; f < version_num_files(cf->current, l); f++)
                        if (version_file(cf->current, l, f)->number == num) drop = false;
            }
        } else if (db_parse_file_name(names[i], "log", &num)) {
            drop = num < db->wal_number;
        } else {
            size_t len = strlen(names[i]);
            drop = len > 4 && strcmp(names[i] + len - 4, ".tmp") == 0;
        }
        if (drop) {
            char path[4096];
            snprintf(path, sizeof path, "%s/%s", db->path, names[i]);
            db_log(db, TDB_LOG_INFO, "removing obsolete file %s", names[i]);
            db->env->remove(db->env, path);
        }
    }
    env_free_list(names, n);
}

/* Write the MANIFEST snapshot now (takes manifest_mu and mu). */
static int write_manifest(tdb_t *db) {
    pthread_mutex_lock(&db->manifest_mu);
    pthread_mutex_lock(&db->mu);
    int rc = db_write_manifest_locked(db);
    pthread_mutex_unlock(&db->mu);
    pthread_mutex_unlock(&db->manifest_mu);
    return rc;
}

int db_recover(tdb_t *db, bool *created) {
    manifest_t m;
    int rc = TDB_OK;
    char **names = NULL;
    size_t nnames = 0;
    uint64_t *wals = NULL;
    size_t nwals = 0;
    version_edit_t *edits = NULL;
    memset(&m, 0, sizeof m);
    *created = false;

    TRY(db->env->list_dir(db->env, db->path, &names, &nnames));
    uint64_t max_file = 0;
    wals = (uint64_t *)calloc(nnames + 1, sizeof *wals);
    if (!wals) RAISE(TDB_ERR_NOMEM, "recovery");
    for (size_t i = 0; i < nnames; i++) {
        uint64_t num;
        if (db_parse_file_name(names[i], "log", &num)) wals[nwals++] = num;
        else if (!db_parse_file_name(names[i], "sst", &num)) continue;
        if (num > max_file) max_file = num;
    }
    qsort(wals, nwals, sizeof *wals, cmp_u64);

    rc = manifest_read(db->env, db->path, &m, db_file_obsolete, db);
    if (rc == TDB_ERR_NOT_FOUND) {
        if (nwals || max_file)
            RAISE(TDB_ERR_CORRUPTION, "%s: MANIFEST is missing but data files exist", db->path);
        if (!db->cfg.create_if_missing) RAISE(TDB_ERR_NOT_FOUND, "%s: no database (create_if_missing is off)", db->path);
        rc = TDB_OK;
        *created = true;
        version_t *v = version_create(db_file_obsolete, db);
        if (!v) RAISE(TDB_ERR_NOMEM, "version");
        db->next_file_number = 1;
        db->next_cf_id = 1;
        rc = db_add_cf(db, 0, TDB_DEFAULT_CF, &db->cfg.default_cf, v, 0, NULL);
        version_unref(v);
        if (rc != TDB_OK) goto err;
    } else if (rc != TDB_OK) {
        goto err;
    } else {
        if (db->cfg.error_if_exists) RAISE(TDB_ERR_EXISTS, "%s: database exists (error_if_exists is on)", db->path);
        db->next_file_number = m.next_file_number > max_file + 1 ? m.next_file_number : max_file + 1;
        db->next_cf_id = m.next_cf_id;
        atomic_store(&db->last_seq, m.last_sequence);
        for (int i = 0; i < m.ncf; i++) {
            manifest_cf_t *mc = &m.cfs[i];
            bool is_default = strcmp(mc->name, TDB_DEFAULT_CF) == 0;
            TRY(db_add_cf(db, mc->id, mc->name, is_default ? &db->cfg.default_cf : &mc->config, mc->version,
                          mc->log_number, NULL));
            if (mc->id >= db->next_cf_id) db->next_cf_id = mc->id + 1;
        }
        if (!cf_by_id(db, 0)) RAISE(TDB_ERR_CORRUPTION, "%s: MANIFEST lacks the default column family", db->path);
    }

    /* Replay the WALs some family still needs, oldest first. */
    uint64_t min_log = UINT64_MAX;
    for (uint32_t i = 0; i < db->ncf_slots; i++)
        if (db->cfs[i] && db->cfs[i]->log_number < min_log) min_log = db->cfs[i]->log_number;
    edits = (version_edit_t *)calloc(db->ncf_slots ? db->ncf_slots : 1, sizeof *edits);
    if (!edits) RAISE(TDB_ERR_NOMEM, "recovery");
    size_t first = 0;
    while (first < nwals && wals[first] < min_log) first++;
    /* A database last written with manifest format <= 2 has WAL records
     * with the fixed batch header (version/manifest.h). */
    bool fixed_header = !*created && m.format < 3;
    /* The newest complete relog holds every write of the logs below it:
     * replay from it; an incomplete relog is not replayed (deleted below,
     * with the replayed logs). Older formats have no relogs. */
    for (size_t i = nwals; !fixed_header && i-- > first;) {
        int st = relog_state(db, wals[i]);
        if (st < 0) {
            rc = st;
            goto err;
        }
        if (st == 2) {
            db_log(db, TDB_LOG_WARN, "WAL %llu: incomplete relog (crash while writing it) ignored",
                   (unsigned long long)wals[i]);
            memmove(wals + i, wals + i + 1, (nwals - i - 1) * sizeof *wals);
            nwals--;
        } else if (st == 1) {
            first = i;
            break;
        }
    }
    for (size_t i = first; i < nwals; i++) TRY(replay_wal(db, wals[i], i + 1 == nwals, fixed_header, edits));
    TRY(flush_recovered(db, edits, true));
    for (uint32_t i = 0; i < db->ncf_slots; i++) {
        tdb_cf_t *cf = db->cfs[i];
        if (!cf || edits[i].n_add == 0) continue;
        version_t *nv = NULL;
        TRY(version_apply(cf->current, &edits[i], &nv));
        version_unref(cf->current);
        cf->current = nv;
    }
    atomic_store(&db->visible_seq, atomic_load(&db->last_seq));

    /* A new database exists once its MANIFEST does: write it before the
     * first WAL (naming that WAL as every family's log), so a crash during
     * creation leaves no data file without a MANIFEST. */
    if (*created) {
        for (uint32_t i = 0; i < db->ncf_slots; i++)
            if (db->cfs[i]) db->cfs[i]->log_number = db->next_file_number;
        rc = write_manifest(db);
        if (rc != TDB_OK) goto err;
    }
    /* New WAL, then the manifest that no longer needs the old ones. */
    TRY(db_rotate_wal(db));
    for (uint32_t i = 0; i < db->ncf_slots; i++) {
        tdb_cf_t *cf = db->cfs[i];
        if (!cf) continue;
        cf->log_number = cf->mem.log_number = db->wal_number;
        TRY(cf_install_sv(cf));
    }
    rc = write_manifest(db);
    if (rc != TDB_OK) goto err;
    delete_orphans(db);
err:
    for (uint32_t i = 0; edits && i < db->ncf_slots; i++) {
        if (rc != TDB_OK) {
            for (int k = 0; k < edits[i].n_add; k++) {
                char path[4096];
                sst_file_name(path, sizeof path, db->path, edits[i].add[k].f->number);
                db->env->remove(db->env, path);
            }
        }
        version_edit_free(&edits[i]);
    }
    free(edits);
    manifest_free(&m);
    env_free_list(names, nnames);
    free(wals);
    return rc;
}

/* Free everything of a (possibly half-opened) database; keeps all files. */
static void db_destroy(tdb_t *db) {
    atomic_store(&db->keep_files, true);
    db_stop_background(db);
    if (db->wal) wal_writer_close(db->wal, 1);
    db_prepared_close(db); /* unresolved prepares stay in the WAL for the next open */
    for (uint32_t i = 0; i < db->ncf_slots; i++) cf_free(db->cfs[i]);
    free(db->cfs);
    free(db->threads);
    free(db->snapshots);
    if (db->table_cache) table_cache_destroy(db->table_cache);
    if (db->block_cache) lru_cache_destroy(db->block_cache);
    if (db->lock_mgr) db->lock_mgr_free(db->lock_mgr);
    if (db->lock) db->env->unlock_file(db->env, db->lock);
    if (db->log) fclose(db->log);
    pthread_mutex_destroy(&db->manifest_mu);
    pthread_mutex_destroy(&db->mu);
    pthread_mutex_destroy(&db->wal_mu);
    direct_close(db);
    pthread_cond_destroy(&db->bg_cv);
    pthread_cond_destroy(&db->done_cv);
    free(db->path);
    free(db);
}

int tdb_open(const char *path, const tdb_config_t *cfg, tdb_t **out) {
    return tdb_open_env(path, cfg, env_posix(), out);
}

int tdb_bg_error(tdb_t *db) {
    pthread_mutex_lock(&db->mu);
    int rc = db->bg_error;
    pthread_mutex_unlock(&db->mu);
    return rc;
}

/* Sync the directory holding path (after creating path in it). */
static int sync_parent_dir(env_t *env, const char *path) {
    char dir[4096];
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') n--; /* "a/b/" names b */
    while (n > 0 && path[n - 1] != '/') n--;
    while (n > 1 && path[n - 1] == '/') n--;
    if (n == 0) snprintf(dir, sizeof dir, ".");
    else if (n >= sizeof dir) return tdb_err(TDB_ERR_INVALID_ARG, "%s: path too long", path);
    else snprintf(dir, sizeof dir, "%.*s", (int)n, path);
    return env->sync_dir(env, dir);
}

int tdb_open_env(const char *path, const tdb_config_t *cfg, env_t *env, tdb_t **out) {
    int rc = TDB_OK;
    tdb_t *db = NULL;
    bool created = false;
    if (!path || !*path || !out || !env) return tdb_err(TDB_ERR_INVALID_ARG, "tdb_open: path or out is NULL");
    tdb_config_t c;
    if (cfg) c = *cfg;
    else tdb_config_default(&c);
    TRY(db_validate_config(&c));
    db = (tdb_t *)calloc(1, sizeof *db);
    if (!db) RAISE(TDB_ERR_NOMEM, "database");
    db->cfg = c;
    db->env = env;
    atomic_init(&db->keep_files, true);
    pthread_mutex_init(&db->manifest_mu, NULL);
    pthread_mutex_init(&db->mu, NULL);
    /* Held for short sections by direct writers: adaptive. */
    tdb_mutex_init_short(&db->wal_mu);
    pthread_cond_init(&db->bg_cv, NULL);
    pthread_cond_init(&db->done_cv, NULL);
    if (!(db->path = strdup(path))) RAISE(TDB_ERR_NOMEM, "database");
    TRY(direct_open(db));
    TRY(db_prepared_open(db));
    if (!db->env->exists(db->env, path)) {
        if (!c.create_if_missing) RAISE(TDB_ERR_NOT_FOUND, "%s does not exist (create_if_missing is off)", path);
        TRY(db->env->mkdir(db->env, path));
        TRY(sync_parent_dir(db->env, path)); /* the new directory's entry is durable */
    }
    char lockpath[4096];
    snprintf(lockpath, sizeof lockpath, "%s/LOCK", path);
    TRY(db->env->lock_file(db->env, lockpath, &db->lock));
    if (c.log_level != TDB_LOG_NONE) {
        char logpath[4096];
        snprintf(logpath, sizeof logpath, "%s/LOG", path);
        db->log = fopen(logpath, "a");
    }
    db->block_cache = lru_cache_create(c.block_cache_size, 4, sst_block_cache_deleter, NULL);
    if (!db->block_cache) RAISE(TDB_ERR_NOMEM, "block cache");
    db->table_cache = table_cache_create(db->env, path, c.max_open_sstables, db->block_cache);
    if (!db->table_cache) RAISE(TDB_ERR_NOMEM, "table cache");
    table_cache_set_map_reads(db->table_cache, c.mmap_reads);
    if (c.max_memory_usage) {
        db->mem_budget = c.max_memory_usage;
    } else { /* half of what the process may use: RAM or its cgroup's limit */
        uint64_t avail = sysmem_limit();
        db->mem_budget = avail ? (size_t)(avail / 2) : (size_t)1 << 30;
    }
    /* The block cache may take at most half of the budget; memtables get
     * what the cache leaves (at least a quarter). */
    if (c.block_cache_size > db->mem_budget / 2) {
        lru_cache_set_capacity(db->block_cache, db->mem_budget / 2);
        db->cfg.block_cache_size = db->mem_budget / 2;
    }
    db->memtable_budget = db->mem_budget - db->cfg.block_cache_size;
    if (db->memtable_budget < db->mem_budget / 4) db->memtable_budget = db->mem_budget / 4;
    db->min_sync_interval_us = c.default_cf.sync_interval_us;
    TRY(db_recover(db, &created));
    for (uint32_t i = 0; i < db->ncf_slots; i++)
        if (db->cfs[i] && db->cfs[i]->cfg.sync_mode == TDB_SYNC_INTERVAL &&
            db->cfs[i]->cfg.sync_interval_us < db->min_sync_interval_us)
            db->min_sync_interval_us = db->cfs[i]->cfg.sync_interval_us;
    atomic_store(&db->keep_files, false);
    TRY(db_start_background(db));
    db_log(db, TDB_LOG_INFO, "opened %s (%s), last sequence %llu", path, created ? "created" : "recovered",
           (unsigned long long)atomic_load(&db->last_seq));
    *out = db;
    return TDB_OK;
err:
    if (db) {
        char saved[512];
        snprintf(saved, sizeof saved, "%s", tdb_last_error());
        db_destroy(db);
        tdb_err(rc, "%s", saved);
    }
    return rc;
}

int tdb_close(tdb_t *db) {
    if (!db) return tdb_err(TDB_ERR_INVALID_ARG, "database handle is NULL");
    db_log(db, TDB_LOG_INFO, "closing %s", db->path);
    /* A WAL left out of space is synced (relogged, db/switch.c) now if
     * space is back: the close's own sync of a failed log cannot. */
    pthread_mutex_lock(&db->mu);
    bool full = db_wal_failed_full_locked(db);
    pthread_mutex_unlock(&db->mu);
    int sync_rc = full ? tdb_sync(db) : TDB_OK;
    char detail[512] = "";
    if (sync_rc != TDB_OK) snprintf(detail, sizeof detail, "%s", tdb_last_error());
    /* Background jobs may still set bg_error until they are stopped. */
    db_stop_background(db);
    int rc = tdb_bg_error(db);
    db_destroy(db);
    if (rc != TDB_OK) return tdb_err(rc, "database closed after a background error");
    if (sync_rc != TDB_OK)
        return tdb_err(sync_rc, "database closed, but its WAL could not be synced (%s): writes acknowledged since "
                                "the last sync are in the log, replayed by the next open, not yet durable", detail);
    return TDB_OK;
}

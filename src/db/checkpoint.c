/*
 * db/checkpoint: tdb_checkpoint, a consistent, openable copy of a live
 * database in another directory (docs/design/db.md, "Checkpoints").
 *
 * Invariants
 *  1. The copy is the database at one sequence S. It is captured with mu
 *     held as an exclusive writer (db/write_group.c): every numbered write
 *     is then in the WAL and visible, and nothing appends. Captured: the
 *     families' versions and log numbers (db_build_manifest, versions
 *     referenced), S = last_seq, the WAL's number and its length in
 *     complete records.
 *  2. Nothing captured disappears before it is copied. A table is deleted
 *     only when the last version holding it goes (version.md, "Lifetimes"),
 *     and the captured manifest holds its versions until the end. WAL files
 *     are deleted under mu (db/state.c): the ones recovery of the copy
 *     needs (from the oldest family log number to the active one) are
 *     opened before mu is released, and an open file stays readable after
 *     a flush removes its name.
 *  3. Tables are immutable once in a version: they are hard-linked, or
 *     copied where the filesystem cannot link (EXDEV). WAL files are
 *     copied, the active one up to the captured length only, so replay of
 *     the copy stops exactly at S. The copy's MANIFEST is the captured one
 *     with last_sequence S: it names exactly the tables linked or copied.
 *  4. All of it is built in "<dir>.checkpoint-tmp", locked through its LOCK
 *     file (one checkpoint per target at a time, across processes). Every
 *     copied file is synced, then the directory, then the MANIFEST is
 *     written (atomically, last), then the directory is renamed to <dir> and
 *     its parent synced. So an interrupted checkpoint leaves no <dir> (or
 *     the empty one the caller made), and the staging directory opens only
 *     once its MANIFEST is there, complete; before, opening it fails (no
 *     database, or "MANIFEST is missing but data files exist"). The next
 *     checkpoint to <dir> clears that leftover.
 *  5. A failure removes what the checkpoint wrote and leaves the source
 *     untouched: no sticky error, no file of its directory changed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db/db_impl.h"

#define STAGING_SUFFIX ".checkpoint-tmp"
#define COPY_CHUNK (1u << 20)
#define PATH_CAP 8192 /* a path of ckpt_t plus a file name */

/* A WAL file the copy needs, open for reading (invariant 2). */
typedef struct ckpt_wal {
    uint64_t number;
    uint64_t limit; /* bytes to copy: the captured length of the active WAL */
    env_file_t *f;
} ckpt_wal_t;

typedef struct ckpt {
    char target[4096], staging[4096], parent[4096];
    manifest_t m;
    uint64_t wal_number, wal_size;
    ckpt_wal_t *wals;
    size_t nwals;
    env_lock_t *lock;                    /* <staging>/LOCK: one checkpoint per target at a time */
    bool made, renamed;                  /* staging ours (locked, cleared); renamed to target */
    uint64_t linked, copied, wal_bytes;  /* files linked / copied, WAL bytes copied */
} ckpt_t;

/* Fill the target, staging and parent paths from dir (trailing '/' dropped). */
static int ckpt_paths(ckpt_t *c, const char *dir) {
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/') n--;
    if (n + sizeof STAGING_SUFFIX > sizeof c->staging)
        return tdb_err(TDB_ERR_INVALID_ARG, "checkpoint directory %s: path too long", dir);
    memcpy(c->target, dir, n);
    c->target[n] = '\0';
    memcpy(c->staging, dir, n);
    memcpy(c->staging + n, STAGING_SUFFIX, sizeof STAGING_SUFFIX);
    size_t p = n;
    while (p > 0 && c->target[p - 1] != '/') p--;
    while (p > 1 && c->target[p - 1] == '/') p--;
    if (p == 0) snprintf(c->parent, sizeof c->parent, ".");
    else snprintf(c->parent, sizeof c->parent, "%.*s", (int)p, c->target);
    return TDB_OK;
}

/* 1 if name is a file a checkpoint writes into its staging directory, or
 * that an attempt to open that directory as a database leaves (LOCK, LOG). */
static int ckpt_file_name(const char *name) {
    uint64_t num;
    return db_parse_file_name(name, "sst", &num) || db_parse_file_name(name, "log", &num) ||
           strcmp(name, MANIFEST_NAME) == 0 || strcmp(name, MANIFEST_NAME ".tmp") == 0 || strcmp(name, "LOCK") == 0 ||
           strcmp(name, "LOG") == 0;
}

/* Remove the files in dir (a checkpoint's own), then dir itself. */
static int remove_dir(env_t *env, const char *dir) {
    char **names = NULL;
    size_t n = 0;
    int rc = TDB_OK;
    TDB_RET(env->list_dir(env, dir, &names, &n));
    for (size_t i = 0; i < n; i++) {
        char path[PATH_CAP];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        TDB_TRET(env->remove(env, path));
    }
    TDB_TRET(env->sync_dir(env, dir)); /* removals done before the directory goes */
    if (rc == TDB_OK) rc = env->rmdir(env, dir);
    env_free_list(names, n);
    return rc;
}

/* The target must not exist, or be an empty directory. */
static int ckpt_check_target(env_t *env, const ckpt_t *c) {
    if (env->exists(env, c->target)) {
        char **names = NULL;
        size_t n = 0;
        if (env->list_dir(env, c->target, &names, &n) != TDB_OK)
            return tdb_err(TDB_ERR_EXISTS, "checkpoint target %s exists and is not a directory (%s)", c->target,
                           tdb_last_error());
        env_free_list(names, n);
        if (n) return tdb_err(TDB_ERR_EXISTS, "checkpoint target %s exists and is not empty (%zu entries)", c->target, n);
    }
    return TDB_OK;
}

/* Create and lock the staging directory (TDB_ERR_LOCKED while another
 * checkpoint into the same target runs, in any process), and clear what an
 * interrupted checkpoint left in it; refused (TDB_ERR_EXISTS, nothing
 * removed) if it holds anything a checkpoint does not write. */
static int ckpt_claim(env_t *env, ckpt_t *c) {
    char path[PATH_CAP], **names = NULL;
    size_t n = 0;
    int rc = env->mkdir(env, c->staging);
    if (rc != TDB_OK) return tdb_err(rc, "checkpoint %s: cannot create %s: %s", c->target, c->staging, tdb_last_error());
    snprintf(path, sizeof path, "%s/LOCK", c->staging);
    rc = env->lock_file(env, path, &c->lock);
    if (rc == TDB_ERR_LOCKED) return tdb_err(rc, "checkpoint %s: another checkpoint into it is running", c->target);
    if (rc != TDB_OK) { /* the staging directory went: renamed to the target by another checkpoint? */
        int filled = ckpt_check_target(env, c);
        return filled != TDB_OK ? filled : rc;
    }
    TDB_RET(env->list_dir(env, c->staging, &names, &n));
    for (size_t i = 0; i < n; i++)
        if (!ckpt_file_name(names[i]))
            RAISE(TDB_ERR_EXISTS, "%s holds %s, which no checkpoint wrote: remove it by hand", c->staging, names[i]);
    c->made = true;
    for (size_t i = 0; i < n; i++) {
        if (strcmp(names[i], "LOCK") == 0) continue;
        snprintf(path, sizeof path, "%s/%s", c->staging, names[i]);
        TRY(env->remove(env, path));
    }
err:
    env_free_list(names, n);
    return rc;
}

/* Open the WAL files numbered from the oldest family log number up to the
 * active one (mu held: no WAL is deleted meanwhile). */
static int open_wals(tdb_t *db, ckpt_t *c) {
    char **names = NULL;
    size_t n = 0;
    int rc = TDB_OK;
    uint64_t min_log = c->wal_number;
    for (int i = 0; i < c->m.ncf; i++)
        if (c->m.cfs[i].log_number < min_log) min_log = c->m.cfs[i].log_number;
    TRY(db->env->list_dir(db->env, db->path, &names, &n));
    c->wals = (ckpt_wal_t *)calloc(n ? n : 1, sizeof *c->wals);
    if (!c->wals) RAISE(TDB_ERR_NOMEM, "checkpoint");
    for (size_t i = 0; i < n; i++) {
        uint64_t num;
        if (!db_parse_file_name(names[i], "log", &num) || num < min_log || num > c->wal_number) continue;
        char path[4096];
        db_wal_name(path, sizeof path, db->path, num);
        ckpt_wal_t *w = &c->wals[c->nwals];
        w->number = num;
        w->limit = num == c->wal_number ? c->wal_size : UINT64_MAX;
        TRY(db->env->open_readable(db->env, path, &w->f));
        c->nwals++;
    }
err:
    env_free_list(names, n);
    return rc;
}

/* Capture the state at one sequence (invariant 1) and open its WALs. */
static int ckpt_capture(tdb_t *db, ckpt_t *c) {
    writer_t ex;
    pthread_mutex_lock(&db->mu);
    db_enter_exclusive(db, &ex);
    int rc = db_build_manifest(db, &c->m); /* last_sequence: S */
    if (rc == TDB_OK) {
        pthread_mutex_lock(&db->wal_mu);
        c->wal_number = db->wal_number;
        c->wal_size = wal_writer_size(db->wal);
        pthread_mutex_unlock(&db->wal_mu);
    }
    db_exit_exclusive(db, &ex); /* writers go on; mu still keeps the WALs */
    if (rc == TDB_OK) rc = open_wals(db, c);
    pthread_mutex_unlock(&db->mu);
    return rc;
}

/* Copy the first `limit` bytes of the open file src (all of it if shorter)
 * into the new file `to`, and sync it. */
static int copy_file(env_t *env, env_file_t *src, const char *from, const char *to, uint64_t limit, uint64_t *bytes) {
    int rc = TDB_OK;
    env_file_t *out = NULL;
    uint64_t size = 0;
    char *buf = (char *)malloc(COPY_CHUNK);
    if (!buf) RAISE(TDB_ERR_NOMEM, "checkpoint copy of %s", from);
    TRY(env_fsize(src, &size));
    if (limit != UINT64_MAX && size < limit)
        RAISE(TDB_ERR_CORRUPTION, "%s: %llu bytes, shorter than the %llu captured", from, (unsigned long long)size,
              (unsigned long long)limit);
    if (limit < size) size = limit;
    TRY(env->open_writable(env, to, &out));
    for (uint64_t off = 0; off < size;) {
        size_t chunk = size - off < COPY_CHUNK ? (size_t)(size - off) : COPY_CHUNK;
        TRY(env_read_exact(src, off, buf, chunk, from));
        TRY(env_append(out, buf, chunk));
        off += chunk;
    }
    TRY(env_sync(out));
    *bytes += size;
err:
    if (out) TDB_TRET(env_close(out));
    free(buf);
    return rc;
}

/* Hard-link (or, where the filesystem cannot, copy) every table of the
 * captured versions into the staging directory. */
static int link_tables(tdb_t *db, ckpt_t *c) {
    env_t *env = db->env;
    bool can_link = env->link != NULL;
    uint64_t bytes = 0;
    for (int i = 0; i < c->m.ncf; i++) {
        version_t *v = c->m.cfs[i].version;
        for (int l = 1; l < TDB_MAX_LEVELS; l++)
            for (int k = 0; k < version_num_files(v, l); k++) {
                const file_meta_t *f = version_file(v, l, k);
                char from[4096], to[4096];
                sst_file_name(from, sizeof from, db->path, f->number);
                sst_file_name(to, sizeof to, c->staging, f->number);
                if (can_link) {
                    int rc = env->link(env, from, to);
                    if (rc == TDB_OK) {
                        c->linked++;
                        continue;
                    }
                    if (rc != TDB_ERR_NOT_SUPPORTED) return rc;
                    db_log(db, TDB_LOG_INFO, "checkpoint: tables are copied (%s)", tdb_last_error());
                    can_link = false;
                }
                env_file_t *src = NULL;
                TDB_RET(env->open_readable(env, from, &src));
                int rc = copy_file(env, src, from, to, f->file_size, &bytes);
                env_close(src);
                TDB_RET(rc);
                c->copied++;
            }
    }
    return TDB_OK;
}

/* Copy the WAL files the copy replays (the active one up to S). */
static int copy_wals(tdb_t *db, ckpt_t *c) {
    for (size_t i = 0; i < c->nwals; i++) {
        char from[4096], to[4096];
        db_wal_name(from, sizeof from, db->path, c->wals[i].number);
        db_wal_name(to, sizeof to, c->staging, c->wals[i].number);
        TDB_RET(copy_file(db->env, c->wals[i].f, from, to, c->wals[i].limit, &c->wal_bytes));
    }
    return TDB_OK;
}

/* Release what the checkpoint holds (versions, open WALs, the lock). */
static void ckpt_free(env_t *env, ckpt_t *c) {
    if (c->lock) env->unlock_file(env, c->lock);
    for (size_t i = 0; i < c->nwals; i++) env_close(c->wals[i].f);
    free(c->wals);
    manifest_free(&c->m);
}

int tdb_checkpoint(tdb_t *db, const char *dir, uint64_t *seq) {
    int rc = TDB_OK;
    ckpt_t *c = NULL;
    if (seq) *seq = 0;
    if (!db || !dir || !*dir) return tdb_err(TDB_ERR_INVALID_ARG, "tdb_checkpoint: database or directory is NULL");
    env_t *env = db->env;
    c = (ckpt_t *)calloc(1, sizeof *c);
    if (!c) return tdb_err(TDB_ERR_NOMEM, "checkpoint");
    TRY(ckpt_paths(c, dir));
    TRY(ckpt_check_target(env, c));
    TRY(ckpt_claim(env, c));
    TRY(ckpt_capture(db, c));
    TRY(link_tables(db, c));
    TRY(copy_wals(db, c));
    TRY(env->sync_dir(env, c->staging)); /* every data file's entry, before the MANIFEST names them */
    TRY(manifest_write(env, c->staging, &c->m));
    rc = env->rename(env, c->staging, c->target);
    if (rc != TDB_OK) {
        int filled = ckpt_check_target(env, c); /* a target filled meanwhile: say so */
        if (filled != TDB_OK) rc = filled;
        goto err;
    }
    c->renamed = true;
    TRY(env->sync_dir(env, c->parent));
    if (seq) *seq = c->m.last_sequence;
    db_log(db, TDB_LOG_INFO, "checkpoint %s at sequence %llu: %llu tables linked, %llu copied, %zu WAL files (%llu bytes)",
           c->target, (unsigned long long)c->m.last_sequence, (unsigned long long)c->linked,
           (unsigned long long)c->copied, c->nwals, (unsigned long long)c->wal_bytes);
err:
    if (rc != TDB_OK && c->made) { /* remove the partial checkpoint, keep the first error's detail */
        char detail[512];
        snprintf(detail, sizeof detail, "%s", tdb_last_error());
        if (remove_dir(env, c->renamed ? c->target : c->staging) != TDB_OK)
            db_log(db, TDB_LOG_WARN, "checkpoint: could not remove %s: %s", c->renamed ? c->target : c->staging,
                   tdb_last_error());
        db_log(db, TDB_LOG_WARN, "checkpoint %s failed: %s", c->target, detail);
        tdb_err(rc, "checkpoint %s: %s", c->target, detail);
    }
    ckpt_free(env, c);
    free(c);
    return rc;
}

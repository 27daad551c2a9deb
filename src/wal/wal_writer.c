/*
 * wal/wal_writer: appends group commits to a log file. Format and
 * invariants: wal/wal.h.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/checksum.h"
#include "util/coding.h"
#include "util/error.h"
#include "wal/wal.h"

/* A group buffer larger than this is released after use instead of kept. */
#define WAL_KEEP_BUF (4u << 20)

struct wal_writer {
    env_t *env;
    env_file_t *file;
    char *path;
    uint64_t size;   /* bytes of complete records in the file */
    uint64_t synced; /* bytes the last successful sync made durable */
    buf_t group;     /* encoding scratch for one group, reused */
    int failed;      /* sticky I/O error code, 0 while healthy */
    int cut_pending; /* bytes past size (a partial record after TDB_ERR_NO_SPACE, or
                      * preallocated space) go at the next sync */
    int sealed;      /* cut back to its records: complete, no more appends */
    int dir_synced;  /* parent directory synced once */
};

/* Create a new log file (truncating). */
int wal_writer_open(env_t *env, const char *path, wal_writer_t **out) {
    int rc = TDB_OK;
    if (!out) return tdb_err(TDB_ERR_INVALID_ARG, "wal_writer_open: NULL out");
    *out = NULL;
    if (!env || !path) return tdb_err(TDB_ERR_INVALID_ARG, "wal_writer_open: NULL env or path");
    wal_writer_t *w = (wal_writer_t *)calloc(1, sizeof *w);
    if (!w || !(w->path = strdup(path))) RAISE(TDB_ERR_NOMEM, "wal %s: out of memory", path);
    w->env = env;
    TRY(env_open_log(env, path, &w->file));
    *out = w;
    return TDB_OK;
err:
    if (w) free(w->path);
    free(w);
    return rc;
}

/* Re-raise the writer's sticky failure. */
static int writer_failed(const wal_writer_t *w) {
    return tdb_err(w->failed, "wal %s: writer failed earlier (%s); start a new log", w->path,
                   tdb_strerror(w->failed));
}

/* Append n records as one append call. */
int wal_writer_add(wal_writer_t *w, const slice_t *payloads, int n) {
    int rc = TDB_OK;
    if (!w || n < 0 || (n > 0 && !payloads)) return tdb_err(TDB_ERR_INVALID_ARG, "wal_writer_add: bad arguments");
    if (w->failed) return writer_failed(w);
    if (w->cut_pending || w->sealed)
        return tdb_err(TDB_ERR_NO_SPACE, "wal %s: an earlier append ran out of space; start a new log", w->path);
    if (n == 0) return TDB_OK;

    size_t total = 0;
    for (int i = 0; i < n; i++) {
        size_t len = payloads[i].size;
        if (len > WAL_MAX_PAYLOAD)
            return tdb_err(TDB_ERR_TOO_LARGE, "wal %s: record %d of %zu bytes exceeds the %u byte limit", w->path, i,
                           len, WAL_MAX_PAYLOAD);
        if (len > 0 && !payloads[i].data)
            return tdb_err(TDB_ERR_INVALID_ARG, "wal %s: record %d has NULL data", w->path, i);
        if (total > SIZE_MAX - WAL_HEADER_SIZE - len)
            return tdb_err(TDB_ERR_TOO_LARGE, "wal %s: group of %d records too large", w->path, n);
        total += WAL_HEADER_SIZE + len;
    }

    buf_clear(&w->group);
    TRY(buf_reserve(&w->group, total));
    for (int i = 0; i < n; i++) {
        const slice_t *p = &payloads[i];
        char *h = w->group.data + w->group.size;
        enc_fixed32(h + 4, (uint32_t)p->size);
        enc_fixed32(h, tdb_checksum2(h + 4, 4, p->size ? p->data : "", p->size));
        w->group.size += WAL_HEADER_SIZE;
        if (p->size) memcpy(w->group.data + w->group.size, p->data, p->size);
        w->group.size += p->size;
    }

    rc = env_append(w->file, w->group.data, w->group.size);
    if (rc != TDB_OK) {
        /* Part of the group may be in the file: a torn tail. Out of space
         * is not an I/O failure: sync cuts the tail off (wal.h). */
        if (rc == TDB_ERR_NO_SPACE) w->cut_pending = 1;
        else w->failed = rc;
        goto err;
    }
    w->size += w->group.size;
err:
    if (w->group.cap > WAL_KEEP_BUF) buf_free(&w->group);
    else buf_clear(&w->group);
    return rc;
}

/* Directory part of path ("." if none), malloc'd. */
static char *parent_dir(const char *path) {
    const char *slash = strrchr(path, '/');
    if (!slash) return strdup(".");
    if (slash == path) return strdup("/");
    size_t n = (size_t)(slash - path);
    char *d = (char *)malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, path, n);
    d[n] = '\0';
    return d;
}

/* fdatasync the file; the first time also sync its directory entry. */
int wal_writer_sync(wal_writer_t *w) {
    int rc = TDB_OK;
    char *dir = NULL;
    if (!w) return tdb_err(TDB_ERR_INVALID_ARG, "wal_writer_sync: NULL writer");
    if (w->failed) return writer_failed(w);
    if (w->cut_pending) { /* cut what follows the complete records */
        rc = w->env->truncate(w->env, w->path, w->size);
        if (rc != TDB_OK) {
            w->failed = rc;
            return rc;
        }
        w->cut_pending = 0;
        w->sealed = 1;
    }
    rc = env_sync(w->file);
    if (rc != TDB_OK) {
        w->failed = rc;
        return rc;
    }
    w->synced = w->size;
    if (!w->dir_synced) {
        dir = parent_dir(w->path);
        if (!dir) return tdb_err(TDB_ERR_NOMEM, "wal %s: out of memory", w->path);
        rc = w->env->sync_dir(w->env, dir);
        free(dir);
        if (rc != TDB_OK) {
            w->failed = rc;
            return rc;
        }
        w->dir_synced = 1;
    }
    return TDB_OK;
}

/* Sync after a group appended at `start`; an fsync out of space with only
 * that group unsynced cuts the group off instead of failing (wal.h). */
int wal_writer_sync_group(wal_writer_t *w, uint64_t start) {
    if (!w) return tdb_err(TDB_ERR_INVALID_ARG, "wal_writer_sync_group: NULL writer");
    int only_group = !w->failed && !w->cut_pending && !w->sealed && w->synced == start && start <= w->size;
    int rc = wal_writer_sync(w);
    if (rc != TDB_ERR_NO_SPACE || !only_group) return rc;
    char detail[512];
    snprintf(detail, sizeof detail, "%s", tdb_last_error());
    /* Bytes below start were durable before this sync; past it lies only
     * the group the caller will not acknowledge: cut it, sync the cut. */
    w->failed = 0;
    w->size = start;
    w->cut_pending = 1;
    TDB_RET(wal_writer_sync(w)); /* failed for good if this fails too */
    return tdb_err(TDB_ERR_NO_SPACE, "wal %s: sync out of space (%s); the unsynced group was cut off", w->path,
                   detail);
}

/* Cut to the complete records, then sync; no appends after. */
int wal_writer_seal(wal_writer_t *w) {
    if (!w) return tdb_err(TDB_ERR_INVALID_ARG, "wal_writer_seal: NULL writer");
    if (w->sealed && !w->failed) return TDB_OK; /* already cut and synced */
    w->cut_pending = 1; /* the sync cuts and seals */
    return wal_writer_sync(w);
}

/* The writer's sticky failure (0 while healthy). */
int wal_writer_error(const wal_writer_t *w) { return w ? w->failed : TDB_ERR_INVALID_ARG; }

/* Bytes of complete records written so far. */
uint64_t wal_writer_size(const wal_writer_t *w) { return w ? w->size : 0; }

/* Optionally sync, then close and free. */
int wal_writer_close(wal_writer_t *w, int sync) {
    if (!w) return TDB_OK;
    int rc = TDB_OK;
    if (sync) rc = wal_writer_sync(w);
    if (rc == TDB_OK) {
        rc = env_close(w->file);
    } else {
        /* Report the sync failure, not a later close failure. */
        char detail[512];
        snprintf(detail, sizeof detail, "%s", tdb_last_error());
        env_close(w->file);
        tdb_err(rc, "%s", detail);
    }
    buf_free(&w->group);
    free(w->path);
    free(w);
    return rc;
}

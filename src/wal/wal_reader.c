/*
 * wal/wal_reader: streams records back out of a log file and classifies
 * damage as a torn tail or as corruption in the middle. Format and
 * invariants: wal/wal.h.
 *
 * The reader keeps a window buf = file bytes [buf_off, buf_off + buf_len).
 * ensure() slides it forward (keeping the overlap) and grows it only to the
 * size of a record already proven to fit in the file.
 */
#include <stdlib.h>
#include <string.h>

#include "util/checksum.h"
#include "util/coding.h"
#include "util/error.h"
#include "wal/wal.h"

struct wal_reader {
    env_t *env;
    env_file_t *file;
    char *path;
    uint64_t file_size; /* measured at open; nothing past it is read */

    char *buf;          /* window of the file, see above */
    size_t cap;
    uint64_t buf_off;
    size_t buf_len;

    uint64_t pos;       /* offset of the next record */
    uint64_t valid_end; /* just past the last intact record returned */
    int torn;           /* ended at a torn tail */
    int status;         /* 0 while reading, then the sticky final code */
    uint64_t bad_off;   /* damaged record (status CORRUPTION or torn) */
    uint64_t intact_off;/* intact record found after it (CORRUPTION) */
    const char *why;    /* what was wrong with the damaged record */
};

/* Open a log for reading up to its current size. */
int wal_reader_open(env_t *env, const char *path, wal_reader_t **out) {
    int rc = TDB_OK;
    if (!out) return tdb_err(TDB_ERR_INVALID_ARG, "wal_reader_open: NULL out");
    *out = NULL;
    if (!env || !path) return tdb_err(TDB_ERR_INVALID_ARG, "wal_reader_open: NULL env or path");
    wal_reader_t *r = (wal_reader_t *)calloc(1, sizeof *r);
    if (!r || !(r->path = strdup(path))) RAISE(TDB_ERR_NOMEM, "wal %s: out of memory", path);
    r->env = env;
    TRY(env->open_readable(env, path, &r->file));
    TRY(env_fsize(r->file, &r->file_size));
    *out = r;
    return TDB_OK;
err:
    if (r) {
        env_close(r->file);
        free(r->path);
    }
    free(r);
    return rc;
}

/* Load the window so that it starts at off and holds at least n bytes. */
static int window_load(wal_reader_t *r, uint64_t off, size_t n) {
    uint64_t rest = r->file_size - off; /* >= n: callers checked */
    size_t want = n > WAL_READ_CHUNK ? n : (rest < WAL_READ_CHUNK ? (size_t)rest : WAL_READ_CHUNK);
    size_t keep = 0;
    if (off >= r->buf_off && off - r->buf_off < r->buf_len) {
        keep = r->buf_len - (size_t)(off - r->buf_off);
        memmove(r->buf, r->buf + (off - r->buf_off), keep);
    }
    r->buf_off = off;
    r->buf_len = keep;
    int grow = r->cap < want;
    int shrink = r->cap > 4 * (size_t)WAL_READ_CHUNK && want <= WAL_READ_CHUNK;
    if (grow || shrink) {
        char *nb = (char *)realloc(r->buf, want);
        if (nb) {
            r->buf = nb;
            r->cap = want;
        } else if (grow) {
            return tdb_err(TDB_ERR_NOMEM, "wal %s: cannot allocate %zu bytes for a record at offset %llu", r->path,
                           want, (unsigned long long)off);
        }
    }
    int rc = env_read_exact(r->file, off + keep, r->buf + keep, want - keep, r->path);
    if (rc != TDB_OK) {
        r->buf_len = 0;
        return rc;
    }
    r->buf_len = want;
    return TDB_OK;
}

/* Point *p at file bytes [off, off+n); requires off + n <= file_size. */
static inline int ensure(wal_reader_t *r, uint64_t off, size_t n, const char **p) {
    if (!(off >= r->buf_off && off - r->buf_off <= r->buf_len && n <= r->buf_len - (size_t)(off - r->buf_off))) {
        int rc = window_load(r, off, n);
        if (rc != TDB_OK) return rc;
    }
    *p = r->buf + (off - r->buf_off);
    return TDB_OK;
}

/* 1 if an intact record starts at s, 0 if not, or a negative error. */
static int intact_at(wal_reader_t *r, uint64_t s) {
    const char *p;
    int rc = ensure(r, s, WAL_HEADER_SIZE, &p);
    if (rc != TDB_OK) return rc;
    uint32_t len = dec_fixed32(p + 4);
    if (len > WAL_MAX_PAYLOAD || len > r->file_size - s - WAL_HEADER_SIZE) return 0;
    uint32_t crc = dec_fixed32(p);
    rc = ensure(r, s, WAL_HEADER_SIZE + (size_t)len, &p);
    if (rc != TDB_OK) return rc;
    return tdb_checksum2(p + 4, 4, p + WAL_HEADER_SIZE, len) == crc;
}

/* Raise the reader's final status again (next() after the end). */
static int reraise(const wal_reader_t *r) {
    unsigned long long bad = (unsigned long long)r->bad_off;
    switch (r->status) {
    case TDB_ERR_NOT_FOUND:
        if (r->torn)
            return tdb_err(TDB_ERR_NOT_FOUND, "wal %s: torn tail at offset %llu (%s)", r->path, bad, r->why);
        return tdb_err(TDB_ERR_NOT_FOUND, "wal %s: end of log at offset %llu", r->path,
                       (unsigned long long)r->valid_end);
    case TDB_ERR_CORRUPTION:
        return tdb_err(TDB_ERR_CORRUPTION, "wal %s: damaged record at offset %llu (%s); intact record follows at offset %llu",
                       r->path, bad, r->why, (unsigned long long)r->intact_off);
    default:
        return tdb_err(r->status, "wal %s: reader failed earlier (%s)", r->path, tdb_strerror(r->status));
    }
}

/* Classify the damaged record at off: corruption if any intact record
 * starts after it, else torn tail. */
static int bad_record(wal_reader_t *r, uint64_t off, const char *why) {
    r->bad_off = off;
    r->why = why;
    for (uint64_t s = off + 1; s <= r->file_size && r->file_size - s >= WAL_HEADER_SIZE; s++) {
        int rc = intact_at(r, s);
        if (rc < 0) {
            r->status = rc; /* detail already raised */
            return rc;
        }
        if (rc == 1) {
            r->intact_off = s;
            r->status = TDB_ERR_CORRUPTION;
            return reraise(r);
        }
    }
    r->torn = 1;
    r->status = TDB_ERR_NOT_FOUND;
    return reraise(r);
}

/* Next record, or the end (clean, torn) or corruption. */
int wal_reader_next(wal_reader_t *r, slice_t *payload) {
    if (!r || !payload) return tdb_err(TDB_ERR_INVALID_ARG, "wal_reader_next: NULL argument");
    *payload = slice_make(NULL, 0);
    if (r->status) return reraise(r);

    uint64_t off = r->pos, rest = r->file_size - off;
    const char *p;
    int rc;
    if (rest == 0) {
        r->status = TDB_ERR_NOT_FOUND;
        return reraise(r);
    }
    if (rest < WAL_HEADER_SIZE) return bad_record(r, off, "incomplete header");
    if ((rc = ensure(r, off, WAL_HEADER_SIZE, &p)) != TDB_OK) goto fail;
    uint32_t crc = dec_fixed32(p);
    uint32_t len = dec_fixed32(p + 4);
    if (len > WAL_MAX_PAYLOAD) return bad_record(r, off, "length field over 1 GiB");
    if (len > rest - WAL_HEADER_SIZE) return bad_record(r, off, "record runs past end of file");
    if ((rc = ensure(r, off, WAL_HEADER_SIZE + (size_t)len, &p)) != TDB_OK) goto fail;
    if (tdb_checksum2(p + 4, 4, p + WAL_HEADER_SIZE, len) != crc) return bad_record(r, off, "checksum mismatch");
    *payload = slice_make(p + WAL_HEADER_SIZE, len);
    r->pos = off + WAL_HEADER_SIZE + len;
    r->valid_end = r->pos;
    return TDB_OK;
fail:
    r->status = rc;
    return rc;
}

/* Offset just past the last intact record returned. */
uint64_t wal_reader_valid_end(const wal_reader_t *r) { return r ? r->valid_end : 0; }

/* 1 if reading ended at a torn tail. */
int wal_reader_torn_tail(const wal_reader_t *r) { return r ? r->torn : 0; }

/* Close the file and free the reader. */
void wal_reader_close(wal_reader_t *r) {
    if (!r) return;
    env_close(r->file);
    free(r->buf);
    free(r->path);
    free(r);
}

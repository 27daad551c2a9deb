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

/* Scan tuning (see the recovery rule in wal.h). */
#define WAL_SCAN_SMALL      (64u << 10)  /* candidates up to this are always checked */
#define WAL_SCAN_BUDGET_MIN (1u << 30)   /* bytes pass 3 may checksum, at least */

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
    int unverified;     /* scan left candidates unchecked (budget) */
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
        TDB_RET(window_load(r, off, n));
    }
    *p = r->buf + (off - r->buf_off);
    return TDB_OK;
}

/* Could a record of length len start at p (it fits in the file)? */
static inline int plausible(const wal_reader_t *r, uint64_t p, uint32_t len) {
    return len <= WAL_MAX_PAYLOAD && len <= r->file_size - p - WAL_HEADER_SIZE;
}

/* 1 if the plausible record at s (length len) checksums correctly, 0 if
 * not, or a negative error. */
static int verify_at(wal_reader_t *r, uint64_t s, uint32_t len) {
    const char *p;
    TDB_RET(ensure(r, s, WAL_HEADER_SIZE + (size_t)len, &p));
    return tdb_checksum2(p + 4, 4, p + WAL_HEADER_SIZE, len) == dec_fixed32(p);
}

/* Raise the reader's final status again (next() after the end). */
static int reraise(const wal_reader_t *r) {
    unsigned long long bad = (unsigned long long)r->bad_off;
    switch (r->status) {
    case TDB_ERR_NOT_FOUND:
        if (r->torn && r->unverified)
            return tdb_err(TDB_ERR_NOT_FOUND,
                           "wal %s: torn tail at offset %llu (%s; some large candidate records were past the "
                           "recovery scan budget and not verified)",
                           r->path, bad, r->why);
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

/* Is x in v[0..n), sorted descending? */
static int in_desc(const uint64_t *v, size_t n, uint64_t x) {
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (v[mid] == x) return 1;
        if (v[mid] > x) lo = mid + 1;
        else hi = mid;
    }
    return 0;
}

/* One backward sweep over candidate offsets (off, end - 8]: collects, in
 * ascending order, every plausible large candidate (length over
 * WAL_SCAN_SMALL) whose chain of plausible large headers ends exactly at end
 * of file, and counts the other plausible large candidates in *deferred.
 * A chain through a small record is not followed: the scan checks that
 * small record directly. */
static int eof_chains(wal_reader_t *r, uint64_t off, uint64_t **out, size_t *count, uint64_t *deferred) {
    const uint64_t size = r->file_size;
    uint64_t *v = NULL;
    size_t n = 0, cap = 0;
    char *chunk = NULL;
    int rc = TDB_OK;
    *out = NULL;
    *count = 0;
    *deferred = 0;
    if (size < WAL_HEADER_SIZE || size - WAL_HEADER_SIZE < off + 1) return TDB_OK;
    const uint64_t lo = off + 1;
    uint64_t c1 = size - WAL_HEADER_SIZE + 1; /* positions [c0, c1), c1 exclusive */
    size_t chunk_cap = (c1 - lo < WAL_READ_CHUNK ? (size_t)(c1 - lo) : WAL_READ_CHUNK) + WAL_HEADER_SIZE;
    if (!(chunk = (char *)malloc(chunk_cap))) RAISE(TDB_ERR_NOMEM, "wal %s: out of memory for recovery scan", r->path);
    while (c1 > lo) {
        uint64_t c0 = c1 - lo > WAL_READ_CHUNK ? c1 - WAL_READ_CHUNK : lo;
        /* Headers at [c0, c1) need bytes up to c1 + 7 <= size. */
        TRY(env_read_exact(r->file, c0, chunk, (size_t)(c1 - c0) + WAL_HEADER_SIZE - 1, r->path));
        for (uint64_t p = c1; p-- > c0;) {
            uint32_t len = dec_fixed32(chunk + (p - c0) + 4);
            if (!plausible(r, p, len) || len <= WAL_SCAN_SMALL) continue;
            uint64_t next = p + WAL_HEADER_SIZE + len;
            if (next != size && !in_desc(v, n, next)) {
                (*deferred)++;
                continue;
            }
            if (n == cap) {
                size_t ncap = cap ? 2 * cap : 16;
                uint64_t *nv = (uint64_t *)realloc(v, ncap * sizeof *v);
                if (!nv) RAISE(TDB_ERR_NOMEM, "wal %s: out of memory for recovery scan", r->path);
                v = nv;
                cap = ncap;
            }
            v[n++] = p; /* below every entry so far: stays descending */
        }
        c1 = c0;
    }
    for (size_t i = 0; i < n / 2; i++) {
        uint64_t t = v[i];
        v[i] = v[n - 1 - i];
        v[n - 1 - i] = t;
    }
    *out = v;
    *count = n;
    v = NULL;
err:
    free(v);
    free(chunk);
    return rc;
}

/* State of one recovery scan (see scan_for_intact). */
typedef struct scan {
    uint64_t off;          /* the damaged record; candidates are after it */
    uint64_t large;        /* pass 1: plausible candidates over WAL_SCAN_SMALL */
    uint64_t *chains;      /* pass 2: large candidates chained to end of file */
    size_t nchains;
    uint64_t deferred;     /* large candidates not in chains */
    uint64_t budget, spent;/* pass 3: bytes it may / did checksum */
    uint64_t found;        /* first intact record met, 0 if none */
} scan_t;

/* Forward sweep over the candidates after sc->off. Pass 1 checks every
 * small candidate and counts the large ones; pass 3 checks the large ones
 * not checked by pass 2, within the budget. Stops at the first intact one. */
static int forward_pass(wal_reader_t *r, scan_t *sc, int pass) {
    const uint64_t size = r->file_size;
    size_t j = 0; /* chains[j] is the first chain start >= s */
    for (uint64_t s = sc->off + 1; s <= size && size - s >= WAL_HEADER_SIZE; s++) {
        const char *p;
        int rc = ensure(r, s, WAL_HEADER_SIZE, &p);
        if (rc != TDB_OK) return rc;
        uint32_t len = dec_fixed32(p + 4);
        if (!plausible(r, s, len)) continue;
        if (pass == 1 && len > WAL_SCAN_SMALL) {
            sc->large++;
            continue;
        }
        if (pass == 3) {
            if (len <= WAL_SCAN_SMALL) continue; /* pass 1 did it */
            while (j < sc->nchains && sc->chains[j] < s) j++;
            if (j < sc->nchains && sc->chains[j] == s) continue; /* pass 2 did it */
            if (sc->budget - sc->spent < len) {
                r->unverified = 1;
                if (sc->budget - sc->spent <= WAL_SCAN_SMALL) return TDB_OK; /* nothing more fits */
                continue;
            }
            sc->spent += len;
        }
        if ((rc = verify_at(r, s, len)) < 0) return rc;
        if (rc == 1) {
            sc->found = s;
            return TDB_OK;
        }
    }
    return TDB_OK;
}

/* Search (off, end of file) for an intact record: sets *found to the first
 * one met (0 if none). Passes as described in wal.h: 1) small candidates,
 * 2) large candidates whose header chain ends exactly at end of file,
 * 3) other large candidates within the work budget. */
static int scan_for_intact(wal_reader_t *r, uint64_t off, uint64_t *found) {
    scan_t sc;
    memset(&sc, 0, sizeof sc);
    sc.off = off;
    sc.budget = 8 * (r->file_size - off);
    if (sc.budget < WAL_SCAN_BUDGET_MIN) sc.budget = WAL_SCAN_BUDGET_MIN;
    int rc = TDB_OK;
    TRY(forward_pass(r, &sc, 1));
    if (sc.found || sc.large == 0) goto err;
    TRY(eof_chains(r, off, &sc.chains, &sc.nchains, &sc.deferred));
    for (size_t i = 0; i < sc.nchains && !sc.found; i++) {
        const char *p;
        TRY(ensure(r, sc.chains[i], WAL_HEADER_SIZE, &p));
        if ((rc = verify_at(r, sc.chains[i], dec_fixed32(p + 4))) < 0) goto err;
        if (rc == 1) sc.found = sc.chains[i];
        rc = TDB_OK;
    }
    if (sc.found || sc.deferred == 0) goto err;
    TRY(forward_pass(r, &sc, 3));
err:
    free(sc.chains);
    *found = sc.found;
    return rc;
}

/* Classify the damaged record at off: corruption if any intact record
 * starts after it, else torn tail. */
static int bad_record(wal_reader_t *r, uint64_t off, const char *why) {
    uint64_t found = 0;
    r->bad_off = off;
    r->why = why;
    int rc = scan_for_intact(r, off, &found);
    if (rc != TDB_OK) {
        r->status = rc; /* detail already raised */
        return rc;
    }
    if (found) {
        r->intact_off = found;
        r->status = TDB_ERR_CORRUPTION;
        return reraise(r);
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

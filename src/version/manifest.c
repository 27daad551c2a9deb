/*
 * version/manifest: encode, decode, write and read the MANIFEST snapshot.
 * Format and invariants are in manifest.h.
 */
#include "version/manifest.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/checksum.h"
#include "util/coding.h"
#include "util/error.h"
#include "util/ikey.h"

#define MANIFEST_MAGIC "TDBMANIF"
#define MANIFEST_MAGIC_LEN 8
#define MANIFEST_FORMAT 4     /* written; 1 to 3 are still read (manifest.h) */
#define MANIFEST_FORMAT_MIN 1
#define MANIFEST_HEADER (MANIFEST_MAGIC_LEN + 4)
#define MANIFEST_MIN_CF_BYTES 32   /* smallest possible encoded family */
#define MANIFEST_MIN_FILE_BYTES 25 /* smallest possible encoded file */

/* ---------------------------------------------------------------------- */
/* encode                                                                  */
/* ---------------------------------------------------------------------- */

/* Append one file record. */
static int encode_file(int level, const file_meta_t *f, buf_t *b) {
    int rc = TDB_OK;
    TRY(put_varint32(b, (uint32_t)level));
    TRY(put_varint64(b, f->number));
    TRY(put_varint64(b, f->file_size));
    TRY(put_lenprefixed(b, buf_slice(&f->smallest)));
    TRY(put_lenprefixed(b, buf_slice(&f->largest)));
    TRY(put_varint64(b, f->min_seq));
    TRY(put_varint64(b, f->max_seq));
    TRY(put_varint64(b, f->num_entries));
    TRY(put_varint64(b, f->num_deletes));
    TRY(put_varint64(b, f->num_range_deletes));
err:
    return rc;
}

/* Serialize m into out. */
int manifest_encode(const manifest_t *m, buf_t *out) {
    int rc = TDB_OK;
    buf_t cfg = {0};
    size_t start = out->size;
    TRY(buf_append(out, MANIFEST_MAGIC, MANIFEST_MAGIC_LEN));
    TRY(put_fixed32(out, MANIFEST_FORMAT));
    TRY(put_varint64(out, m->next_file_number));
    TRY(put_varint64(out, m->last_sequence));
    TRY(put_varint32(out, m->next_cf_id));
    if (m->ncf < 0) RAISE(TDB_ERR_INVALID_ARG, "manifest: %d column families", m->ncf);
    TRY(put_varint32(out, (uint32_t)m->ncf));
    for (int i = 0; i < m->ncf; i++) {
        const manifest_cf_t *cf = &m->cfs[i];
        if (!cf->name) RAISE(TDB_ERR_INVALID_ARG, "manifest: column family %u has no name", cf->id);
        TRY(put_varint32(out, cf->id));
        TRY(put_lenprefixed(out, slice_make(cf->name, strlen(cf->name))));
        buf_clear(&cfg);
        TRY(manifest_options_encode(&cf->config, &cfg));
        TRY(put_lenprefixed(out, buf_slice(&cfg)));
        TRY(put_varint64(out, cf->log_number));
        int nfiles = cf->version ? version_total_files(cf->version) : 0;
        TRY(put_varint32(out, (uint32_t)nfiles));
        for (int l = 1; l < TDB_MAX_LEVELS && cf->version; l++)
            for (int j = 0; j < version_num_files(cf->version, l); j++)
                TRY(encode_file(l, version_file(cf->version, l, j), out));
    }
    TRY(put_fixed32(out, tdb_checksum(out->data + start, out->size - start)));
err:
    if (rc != TDB_OK) out->size = start;
    buf_free(&cfg);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* decode                                                                  */
/* ---------------------------------------------------------------------- */

typedef struct cursor {
    const char *p, *limit;
} cursor_t;

/* Read a varint64; 0 on truncation. */
static int rd_v64(cursor_t *c, uint64_t *v) {
    const char *q = dec_varint64(c->p, c->limit, v);
    if (!q) return 0;
    c->p = q;
    return 1;
}

/* Read a varint32; 0 on truncation or overflow. */
static int rd_v32(cursor_t *c, uint32_t *v) {
    const char *q = dec_varint32(c->p, c->limit, v);
    if (!q) return 0;
    c->p = q;
    return 1;
}

/* Read a length-prefixed slice; 0 if it runs past the limit. */
static int rd_slice(cursor_t *c, slice_t *s) {
    const char *q = dec_lenprefixed(c->p, c->limit, s);
    if (!q) return 0;
    c->p = q;
    return 1;
}

/* Decode one file record and add it to the edit; records its number. */
static int decode_file(cursor_t *c, const manifest_t *m, uint32_t format, uint32_t cf_id, version_edit_t *e,
                       uint64_t *nums, size_t *nnums) {
    uint32_t level;
    uint64_t number, size, min_seq, max_seq, entries, deletes, range_deletes = 0;
    slice_t smallest, largest;
    if (!rd_v32(c, &level) || !rd_v64(c, &number) || !rd_v64(c, &size) || !rd_slice(c, &smallest) ||
        !rd_slice(c, &largest) || !rd_v64(c, &min_seq) || !rd_v64(c, &max_seq) || !rd_v64(c, &entries) ||
        !rd_v64(c, &deletes) || (format >= 2 && !rd_v64(c, &range_deletes)))
        return tdb_err(TDB_ERR_CORRUPTION, "manifest: column family %u: truncated file record", cf_id);
    if (level < 1 || level >= TDB_MAX_LEVELS)
        return tdb_err(TDB_ERR_CORRUPTION, "manifest: file %llu at invalid level %u", (unsigned long long)number,
                       level);
    if (number == 0 || number >= m->next_file_number)
        return tdb_err(TDB_ERR_CORRUPTION, "manifest: file number %llu outside [1, %llu)",
                       (unsigned long long)number, (unsigned long long)m->next_file_number);
    if (!ikey_valid(smallest) || !ikey_valid(largest) || ikey_compare(smallest, largest) > 0)
        return tdb_err(TDB_ERR_CORRUPTION, "manifest: file %llu has an invalid key range",
                       (unsigned long long)number);
    if (min_seq > max_seq || max_seq > m->last_sequence)
        return tdb_err(TDB_ERR_CORRUPTION, "manifest: file %llu has sequences [%llu, %llu] beyond last %llu",
                       (unsigned long long)number, (unsigned long long)min_seq, (unsigned long long)max_seq,
                       (unsigned long long)m->last_sequence);
    if (deletes > entries)
        return tdb_err(TDB_ERR_CORRUPTION, "manifest: file %llu has more deletes than entries",
                       (unsigned long long)number);
    file_meta_t *f =
        file_meta_create(number, size, smallest, largest, min_seq, max_seq, entries, deletes);
    if (!f) return tdb_err(TDB_ERR_NOMEM, "manifest: file meta");
    f->num_range_deletes = range_deletes;
    int rc = version_edit_add(e, (int)level, f);
    file_meta_unref(f); /* the edit holds it now (or it is freed on failure) */
    if (rc == TDB_OK) nums[(*nnums)++] = number;
    return rc;
}

/* Order file numbers ascending. */
static int num_cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : (x > y);
}

/* Parse a manifest snapshot. */
int manifest_decode(slice_t data, manifest_t *out, file_obsolete_fn fn, void *ctx) {
    int rc = TDB_OK;
    manifest_t m;
    version_edit_t e = {0};
    version_t *empty = NULL;
    uint64_t *nums = NULL;
    size_t nnums = 0;
    memset(&m, 0, sizeof m);
    memset(out, 0, sizeof *out);

    if (data.size < MANIFEST_HEADER + 4) RAISE(TDB_ERR_CORRUPTION, "manifest: %zu bytes is too short", data.size);
    if (memcmp(data.data, MANIFEST_MAGIC, MANIFEST_MAGIC_LEN) != 0) RAISE(TDB_ERR_CORRUPTION, "manifest: bad magic");
    uint32_t stored = dec_fixed32(data.data + data.size - 4);
    if (tdb_checksum(data.data, data.size - 4) != stored) RAISE(TDB_ERR_CORRUPTION, "manifest: checksum mismatch");
    uint32_t format = dec_fixed32(data.data + MANIFEST_MAGIC_LEN);
    if (format < MANIFEST_FORMAT_MIN || format > MANIFEST_FORMAT)
        RAISE(TDB_ERR_CORRUPTION, "manifest: unknown format version %u", format);
    m.format = format;

    cursor_t c = {data.data + MANIFEST_HEADER, data.data + data.size - 4};
    uint32_t ncf;
    if (!rd_v64(&c, &m.next_file_number) || !rd_v64(&c, &m.last_sequence) || !rd_v32(&c, &m.next_cf_id) ||
        !rd_v32(&c, &ncf))
        RAISE(TDB_ERR_CORRUPTION, "manifest: truncated header");
    if (m.last_sequence > SEQ_MAX) RAISE(TDB_ERR_CORRUPTION, "manifest: last sequence beyond 56 bits");
    if (ncf > (size_t)(c.limit - c.p) / MANIFEST_MIN_CF_BYTES || ncf > (uint32_t)INT32_MAX)
        RAISE(TDB_ERR_CORRUPTION, "manifest: %u column families cannot fit", ncf);
    if (ncf) {
        m.cfs = (manifest_cf_t *)calloc(ncf, sizeof *m.cfs);
        if (!m.cfs) RAISE(TDB_ERR_NOMEM, "manifest: %u column families", ncf);
        /* Every file record takes at least MANIFEST_MIN_FILE_BYTES. */
        size_t maxfiles = (size_t)(c.limit - c.p) / MANIFEST_MIN_FILE_BYTES + 1;
        nums = (uint64_t *)malloc(maxfiles * sizeof *nums);
        if (!nums) RAISE(TDB_ERR_NOMEM, "manifest: file numbers");
    }
    empty = version_create(NULL, NULL);
    if (!empty) RAISE(TDB_ERR_NOMEM, "manifest: version");

    for (uint32_t i = 0; i < ncf; i++) {
        manifest_cf_t *cf = &m.cfs[i];
        slice_t name, cfg;
        uint32_t nfiles;
        if (!rd_v32(&c, &cf->id) || !rd_slice(&c, &name) || !rd_slice(&c, &cfg))
            RAISE(TDB_ERR_CORRUPTION, "manifest: truncated column family %u", i);
        if (cf->id >= m.next_cf_id)
            RAISE(TDB_ERR_CORRUPTION, "manifest: column family id %u >= next id %u", cf->id, m.next_cf_id);
        if (name.size == 0 || name.size > TDB_MAX_CF_NAME || memchr(name.data, 0, name.size))
            RAISE(TDB_ERR_CORRUPTION, "manifest: column family %u has an invalid name", cf->id);
        for (uint32_t j = 0; j < i; j++) {
            if (m.cfs[j].id == cf->id) RAISE(TDB_ERR_CORRUPTION, "manifest: column family id %u twice", cf->id);
            if (strlen(m.cfs[j].name) == name.size && memcmp(m.cfs[j].name, name.data, name.size) == 0)
                RAISE(TDB_ERR_CORRUPTION, "manifest: column family name %.*s twice", (int)name.size, name.data);
        }
        cf->name = (char *)malloc(name.size + 1);
        if (!cf->name) RAISE(TDB_ERR_NOMEM, "manifest: name");
        memcpy(cf->name, name.data, name.size);
        cf->name[name.size] = '\0';
        m.ncf = (int)i + 1; /* so a failure frees what is filled */
        TRY(manifest_options_decode(cfg, format, cf->id, &cf->config));
        if (!rd_v64(&c, &cf->log_number) || !rd_v32(&c, &nfiles))
            RAISE(TDB_ERR_CORRUPTION, "manifest: truncated column family %u", cf->id);
        if (nfiles > (size_t)(c.limit - c.p) / MANIFEST_MIN_FILE_BYTES)
            RAISE(TDB_ERR_CORRUPTION, "manifest: %u files cannot fit", nfiles);
        version_edit_free(&e);
        for (uint32_t j = 0; j < nfiles; j++) TRY(decode_file(&c, &m, format, cf->id, &e, nums, &nnums));
        rc = version_apply(empty, &e, &cf->version);
        if (rc != TDB_OK) {
            /* Any inconsistency in the level shape is corruption of the file. */
            if (rc != TDB_ERR_NOMEM) {
                char detail[512];
                snprintf(detail, sizeof detail, "%s", tdb_last_error());
                rc = tdb_err(TDB_ERR_CORRUPTION, "manifest: column family %u: %s", cf->id, detail);
            }
            goto err;
        }
    }
    if (c.p != c.limit) RAISE(TDB_ERR_CORRUPTION, "manifest: %zu trailing bytes", (size_t)(c.limit - c.p));
    if (nnums > 1) {
        qsort(nums, nnums, sizeof *nums, num_cmp);
        for (size_t i = 1; i < nnums; i++)
            if (nums[i] == nums[i - 1])
                RAISE(TDB_ERR_CORRUPTION, "manifest: file %llu listed twice", (unsigned long long)nums[i]);
    }
    for (int i = 0; i < m.ncf; i++) version_set_obsolete_fn(m.cfs[i].version, fn, ctx);
    *out = m;
    memset(&m, 0, sizeof m);
err:
    /* Versions of a failed decode have no callback: freeing them reports
     * nothing. */
    manifest_free(&m);
    version_edit_free(&e);
    version_unref(empty);
    free(nums);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* file I/O                                                                */
/* ---------------------------------------------------------------------- */

/* Encode and atomically replace <dir>/MANIFEST. */
int manifest_write(env_t *env, const char *dir, const manifest_t *m) { return manifest_replace(env, dir, m, NULL); }

/* manifest_write, telling whether the new MANIFEST replaced the old one
 * (*renamed, see env_write_file_replace). */
int manifest_replace(env_t *env, const char *dir, const manifest_t *m, int *renamed) {
    buf_t b = {0};
    if (renamed) *renamed = 0;
    int rc = manifest_encode(m, &b);
    if (rc == TDB_OK) rc = env_write_file_replace(env, dir, MANIFEST_NAME, b.data, b.size, renamed);
    buf_free(&b);
    return rc;
}

/* Read and decode <dir>/MANIFEST. */
int manifest_read(env_t *env, const char *dir, manifest_t *m, file_obsolete_fn fn, void *ctx) {
    char path[4096];
    char *data = NULL;
    size_t n = 0;
    memset(m, 0, sizeof *m);
    snprintf(path, sizeof path, "%s/%s", dir, MANIFEST_NAME);
    TDB_RET(env_read_file(env, path, &data, &n));
    int rc = manifest_decode(slice_make(data, n), m, fn, ctx);
    if (rc != TDB_OK && rc != TDB_ERR_NOMEM) {
        char detail[512];
        snprintf(detail, sizeof detail, "%s", tdb_last_error());
        rc = tdb_err(rc, "%s: %s", path, detail);
    }
    free(data);
    return rc;
}

/* Release everything m owns. */
void manifest_free(manifest_t *m) {
    for (int i = 0; i < m->ncf; i++) {
        free(m->cfs[i].name);
        version_unref(m->cfs[i].version);
    }
    free(m->cfs);
    memset(m, 0, sizeof *m);
}

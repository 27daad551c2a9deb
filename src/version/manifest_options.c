/*
 * version/manifest_options: the column-family options stored in the
 * MANIFEST, in their own versioned encoding (format in manifest.h and
 * docs/design/version.md).
 *
 * Since MANIFEST format 4 the options are tagged fields, so the file format
 * no longer follows the declaration order of tdb_cf_config_t:
 *
 *   options = field*            (any order, each known tag at most once)
 *   field   = varint32 tag | varint32 length | value (length bytes)
 *   tag     = field id << 1 | must_understand
 *   value   = varint64 for integers (an int as its 32-bit pattern),
 *             fixed64 of the bits for a double
 *
 * A reader skips an unknown tag whose must_understand bit is 0 (an option
 * a newer version added that an older one may ignore) and rejects one whose
 * bit is 1 (an option that changes how data is read). Every field of the
 * table below marked required must be present; a field added later is
 * marked optional with the value it takes when absent (the behaviour before
 * it existed), so a MANIFEST written before the field existed still reads.
 *
 * Formats 1-3 stored the fields positionally, in declaration order as they
 * were then; options_decode_positional reads that encoding (a longer blob
 * was allowed: its tail is ignored).
 *
 * Invariant: whatever decodes is validated the same way for every format
 * (known compression and sync mode, finite doubles, a representable size).
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "util/coding.h"
#include "util/error.h"
#include "version/manifest.h"

typedef enum { OPT_SIZE, OPT_U64, OPT_U32, OPT_INT, OPT_DOUBLE } opt_kind_t;

typedef struct opt_field {
    uint32_t tag;      /* id << 1 | must_understand */
    opt_kind_t kind;   /* how the value is stored in tdb_cf_config_t */
    size_t offset;     /* offsetof(tdb_cf_config_t, field) */
    int required;      /* 1: absent is corruption; 0: absent reads as below */
    uint64_t absent_u; /* value of an absent optional integer field */
    double absent_d;   /* value of an absent optional double field */
    const char *name;
} opt_field_t;

#define OPT_TAG(id, must) ((uint32_t)(id) << 1 | (uint32_t)(must))
#define OPT(id, kind, field) {OPT_TAG(id, 0), kind, offsetof(tdb_cf_config_t, field), 1, 0, 0.0, #field}

/* Tag ids are never reused: a field removed keeps its id retired. A field
 * added gets the next id, required = 0 and its absent value. */
static const opt_field_t OPT_FIELDS[] = {
    OPT(1, OPT_SIZE, write_buffer_size),
    OPT(2, OPT_INT, compression),
    OPT(3, OPT_DOUBLE, bloom_fpr),
    OPT(4, OPT_INT, sync_mode),
    OPT(5, OPT_U64, sync_interval_us),
    OPT(6, OPT_U32, block_size),
    OPT(7, OPT_U32, value_threshold),
    OPT(8, OPT_INT, l0_queue_stall_threshold),
    OPT(9, OPT_INT, l1_file_count_trigger),
    OPT(10, OPT_INT, level_size_ratio),
    OPT(11, OPT_DOUBLE, tombstone_density_trigger),
    OPT(12, OPT_U64, tombstone_density_min_entries),
};
#define OPT_NFIELDS (sizeof OPT_FIELDS / sizeof OPT_FIELDS[0])

/* The value of field f of c as the integer that is stored. */
static uint64_t opt_get_u(const tdb_cf_config_t *c, const opt_field_t *f) {
    const char *p = (const char *)c + f->offset;
    switch (f->kind) {
    case OPT_SIZE: return (uint64_t)*(const size_t *)p;
    case OPT_U64: return *(const uint64_t *)p;
    case OPT_U32: return *(const uint32_t *)p;
    case OPT_INT: return (uint32_t)*(const int *)p;
    case OPT_DOUBLE: break;
    }
    return 0;
}

/* Store the integer v into field f of c (v already range-checked). */
static void opt_set_u(tdb_cf_config_t *c, const opt_field_t *f, uint64_t v) {
    char *p = (char *)c + f->offset;
    switch (f->kind) {
    case OPT_SIZE: *(size_t *)p = (size_t)v; break;
    case OPT_U64: *(uint64_t *)p = v; break;
    case OPT_U32: *(uint32_t *)p = (uint32_t)v; break;
    case OPT_INT: *(int *)p = (int)(uint32_t)v; break;
    case OPT_DOUBLE: break;
    }
}

/* Append c as tagged fields (the format-4 encoding). */
int manifest_options_encode(const tdb_cf_config_t *c, buf_t *b) {
    int rc = TDB_OK;
    char tmp[16];
    for (size_t i = 0; i < OPT_NFIELDS; i++) {
        const opt_field_t *f = &OPT_FIELDS[i];
        size_t n;
        if (f->kind == OPT_DOUBLE) {
            uint64_t u;
            memcpy(&u, (const char *)c + f->offset, sizeof u);
            enc_fixed64(tmp, u);
            n = 8;
        } else {
            n = (size_t)(enc_varint64(tmp, opt_get_u(c, f)) - tmp);
        }
        TRY(put_varint32(b, f->tag));
        TRY(put_lenprefixed(b, slice_make(tmp, n)));
    }
err:
    return rc;
}

/* The table row of a stored tag, or NULL if this version does not know it. */
static const opt_field_t *opt_find(uint32_t tag) {
    for (size_t i = 0; i < OPT_NFIELDS; i++)
        if (OPT_FIELDS[i].tag == tag) return &OPT_FIELDS[i];
    return NULL;
}

/* Decode one known field's value into cfg. */
static int opt_decode_value(const opt_field_t *f, slice_t v, tdb_cf_config_t *cfg, uint32_t id) {
    if (f->kind == OPT_DOUBLE) {
        if (v.size != 8)
            return tdb_err(TDB_ERR_CORRUPTION, "manifest: column family %u: option %s has %zu bytes, not 8", id,
                           f->name, v.size);
        uint64_t u = dec_fixed64(v.data);
        memcpy((char *)cfg + f->offset, &u, sizeof u);
        return TDB_OK;
    }
    uint64_t u;
    const char *end = dec_varint64(v.data, v.data + v.size, &u);
    if (!end || end != v.data + v.size)
        return tdb_err(TDB_ERR_CORRUPTION, "manifest: column family %u: option %s is not one varint", id, f->name);
    if (((f->kind == OPT_U32 || f->kind == OPT_INT) && u > UINT32_MAX) ||
        (f->kind == OPT_SIZE && u > (uint64_t)SIZE_MAX))
        return tdb_err(TDB_ERR_CORRUPTION, "manifest: column family %u: option %s out of range", id, f->name);
    opt_set_u(cfg, f, u);
    return TDB_OK;
}

/* Decode the tagged fields of format 4 into cfg. */
static int options_decode_tagged(slice_t blob, tdb_cf_config_t *cfg, uint32_t id) {
    const char *p = blob.data, *limit = blob.data + blob.size;
    unsigned char seen[OPT_NFIELDS];
    memset(seen, 0, sizeof seen);
    while (p < limit) {
        uint32_t tag;
        slice_t v;
        p = dec_varint32(p, limit, &tag);
        if (p) p = dec_lenprefixed(p, limit, &v);
        if (!p) return tdb_err(TDB_ERR_CORRUPTION, "manifest: column family %u: truncated options", id);
        const opt_field_t *f = opt_find(tag);
        if (!f) {
            if (tag & 1u)
                return tdb_err(TDB_ERR_CORRUPTION,
                               "manifest: column family %u stores option tag %u that this version does not know "
                               "and must understand (written by a newer version?)",
                               id, tag);
            continue; /* an option a newer version added; ignorable by its tag */
        }
        size_t i = (size_t)(f - OPT_FIELDS);
        if (seen[i]) return tdb_err(TDB_ERR_CORRUPTION, "manifest: column family %u: option %s twice", id, f->name);
        seen[i] = 1;
        TDB_RET(opt_decode_value(f, v, cfg, id));
    }
    for (size_t i = 0; i < OPT_NFIELDS; i++) {
        const opt_field_t *f = &OPT_FIELDS[i];
        if (seen[i]) continue;
        if (f->required)
            return tdb_err(TDB_ERR_CORRUPTION, "manifest: column family %u: option %s missing", id, f->name);
        if (f->kind == OPT_DOUBLE) memcpy((char *)cfg + f->offset, &f->absent_d, sizeof f->absent_d);
        else opt_set_u(cfg, f, f->absent_u);
    }
    return TDB_OK;
}

/* Read a varint64 from *p; 0 on truncation. */
static int rd_v64(const char **p, const char *limit, uint64_t *v) {
    const char *q = dec_varint64(*p, limit, v);
    if (!q) return 0;
    *p = q;
    return 1;
}

/* Read a varint32 from *p; 0 on truncation or overflow. */
static int rd_v32(const char **p, const char *limit, uint32_t *v) {
    const char *q = dec_varint32(*p, limit, v);
    if (!q) return 0;
    *p = q;
    return 1;
}

/* Read a double stored as fixed64 bits. */
static int rd_double(const char **p, const char *limit, double *d) {
    if (limit - *p < 8) return 0;
    uint64_t u = dec_fixed64(*p);
    memcpy(d, &u, sizeof *d);
    *p += 8;
    return 1;
}

/* Decode the positional fields of formats 1-3 (declaration order of
 * tdb_cf_config_t as it was then; a longer blob's tail is ignored). */
static int options_decode_positional(slice_t blob, tdb_cf_config_t *cfg, uint32_t id) {
    const char *p = blob.data, *limit = blob.data + blob.size;
    uint64_t wbs, sync_us, tmin;
    uint32_t comp, sync, bs, vt, stall, trig, ratio;
    double fpr, tdt;
    if (!rd_v64(&p, limit, &wbs) || !rd_v32(&p, limit, &comp) || !rd_double(&p, limit, &fpr) ||
        !rd_v32(&p, limit, &sync) || !rd_v64(&p, limit, &sync_us) || !rd_v32(&p, limit, &bs) ||
        !rd_v32(&p, limit, &vt) || !rd_v32(&p, limit, &stall) || !rd_v32(&p, limit, &trig) ||
        !rd_v32(&p, limit, &ratio) || !rd_double(&p, limit, &tdt) || !rd_v64(&p, limit, &tmin))
        return tdb_err(TDB_ERR_CORRUPTION, "manifest: column family %u: truncated config", id);
    if (wbs > (uint64_t)SIZE_MAX)
        return tdb_err(TDB_ERR_CORRUPTION, "manifest: column family %u: invalid config", id);
    cfg->write_buffer_size = (size_t)wbs;
    cfg->compression = (int)comp;
    cfg->bloom_fpr = fpr;
    cfg->sync_mode = (int)sync;
    cfg->sync_interval_us = sync_us;
    cfg->block_size = bs;
    cfg->value_threshold = vt;
    cfg->l0_queue_stall_threshold = (int)stall;
    cfg->l1_file_count_trigger = (int)trig;
    cfg->level_size_ratio = (int)ratio;
    cfg->tombstone_density_trigger = tdt;
    cfg->tombstone_density_min_entries = tmin;
    return TDB_OK;
}

/* Decode and sanity-check the stored options of a MANIFEST of `format`. */
int manifest_options_decode(slice_t blob, uint32_t format, uint32_t id, tdb_cf_config_t *cfg) {
    memset(cfg, 0, sizeof *cfg);
    if (format >= 4) TDB_RET(options_decode_tagged(blob, cfg, id));
    else TDB_RET(options_decode_positional(blob, cfg, id));
    double fpr = cfg->bloom_fpr, tdt = cfg->tombstone_density_trigger;
    if ((uint32_t)cfg->compression > TDB_COMPRESS_ZSTD || (uint32_t)cfg->sync_mode > TDB_SYNC_FULL ||
        !isfinite(fpr) || fpr < 0 || fpr >= 1 || !isfinite(tdt) || tdt < 0)
        return tdb_err(TDB_ERR_CORRUPTION, "manifest: column family %u: invalid config", id);
    return TDB_OK;
}

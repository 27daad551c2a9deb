/* sst/format: footer, record trailers and the properties block encoding. */
#include "sst/format.h"

#include <stdlib.h>

#include "sst/compress.h"
#include "util/checksum.h"
#include "util/coding.h"
#include "util/error.h"

/* Properties fields (tag = field << 1 | wire). */
enum {
    PF_NUM_ENTRIES = 1,
    PF_NUM_DELETES = 2,
    PF_NUM_RANGE_DELETES = 3,
    PF_RAW_KEY_BYTES = 4,
    PF_RAW_VALUE_BYTES = 5,
    PF_NUM_SEPARATED = 6,
    PF_DATA_BYTES = 7,
    PF_MIN_SEQ = 8,
    PF_MAX_SEQ = 9,
    PF_SMALLEST = 10, /* bytes */
    PF_LARGEST = 11,  /* bytes */
    PF_COMPRESSION = 12,
    PF_FORMAT_VERSION = 13,
    PF_NUM_DATA_BLOCKS = 14,
    PF_MAX_BLOCK_RAW = 15,
    PF_VALUE_BYTES = 16,
    PF_RANGE_DEL_BLOCK = 17, /* bytes: varint64 offset | varint64 size */
};
#define WIRE_VARINT 0u
#define WIRE_BYTES 1u

/* Write the footer's 64 bytes. */
void sst_footer_encode(const sst_footer_t *f, char *dst) {
    enc_fixed64(dst + 0, f->index.offset);
    enc_fixed64(dst + 8, f->index.size);
    enc_fixed64(dst + 16, f->filter.offset);
    enc_fixed64(dst + 24, f->filter.size);
    enc_fixed64(dst + 32, f->props.offset);
    enc_fixed64(dst + 40, f->props.size);
    enc_fixed32(dst + 48, f->version);
    enc_fixed32(dst + 52, tdb_checksum(dst, 52));
    enc_fixed64(dst + 56, SST_MAGIC);
}

/* Parse and verify the footer's 64 bytes. */
int sst_footer_decode(const char *src, sst_footer_t *f, const char *path) {
    if (dec_fixed64(src + 56) != SST_MAGIC)
        return tdb_err(TDB_ERR_CORRUPTION, "%s: bad sst magic (not a table or truncated)", path);
    if (dec_fixed32(src + 52) != tdb_checksum(src, 52))
        return tdb_err(TDB_ERR_CORRUPTION, "%s: footer checksum mismatch", path);
    f->index.offset = dec_fixed64(src + 0);
    f->index.size = dec_fixed64(src + 8);
    f->filter.offset = dec_fixed64(src + 16);
    f->filter.size = dec_fixed64(src + 24);
    f->props.offset = dec_fixed64(src + 32);
    f->props.size = dec_fixed64(src + 40);
    f->version = dec_fixed32(src + 48);
    if (f->version != SST_FORMAT_VERSION)
        return tdb_err(TDB_ERR_CORRUPTION, "%s: unsupported sst format version %u", path, f->version);
    return TDB_OK;
}

/* Compress if worthwhile, then append payload + trailer to out. */
int sst_encode_record(int compression, slice_t payload, buf_t *scratch, buf_t *out, uint64_t *stored_size) {
    int rc = TDB_OK;
    slice_t body = payload;
    unsigned type = TDB_COMPRESS_NONE;
    if (compression != TDB_COMPRESS_NONE && payload.size > 0) {
        buf_clear(scratch);
        TRY(tdb_compress(compression, payload, scratch));
        /* Keep it only if it saves at least 1/8 of the raw size. */
        if ((uint64_t)scratch->size * 8 <= (uint64_t)payload.size * 7) {
            body = buf_slice(scratch);
            type = (unsigned)compression;
        }
    }
    size_t start = out->size;
    TRY(buf_reserve(out, body.size + SST_TRAILER_SIZE));
    TRY(buf_append(out, body.data, body.size));
    char t = (char)type;
    TRY(buf_append(out, &t, 1));
    TRY(put_fixed32(out, tdb_checksum(out->data + start, body.size + 1)));
    *stored_size = body.size;
err:
    return rc;
}

/* Check a record's trailer checksum and codec byte. */
int sst_check_record(const char *rec, uint64_t size, unsigned *type, const char *path, const char *what,
                     uint64_t offset) {
    uint32_t stored = dec_fixed32(rec + size + 1);
    if (stored != tdb_checksum(rec, (size_t)size + 1))
        return tdb_err(TDB_ERR_CORRUPTION, "%s: %s at offset %llu: checksum mismatch", path, what,
                       (unsigned long long)offset);
    unsigned t = (unsigned char)rec[size];
    if (!tdb_compression_valid((int)t))
        return tdb_err(TDB_ERR_CORRUPTION, "%s: %s at offset %llu: unknown compression type %u", path, what,
                       (unsigned long long)offset, t);
    *type = t;
    return TDB_OK;
}

/* Append one varint field. */
static int put_field_u64(buf_t *out, unsigned field, uint64_t v) {
    TDB_RET(put_varint32(out, (uint32_t)(field << 1 | WIRE_VARINT)));
    return put_varint64(out, v);
}

/* Append one bytes field. */
static int put_field_bytes(buf_t *out, unsigned field, slice_t s) {
    TDB_RET(put_varint32(out, (uint32_t)(field << 1 | WIRE_BYTES)));
    return put_lenprefixed(out, s);
}

/* Encode all properties as tagged fields. */
int sst_props_encode(const sst_props_t *p, const sst_props_ext_t *x, buf_t *out) {
    int rc = TDB_OK;
    TRY(put_field_u64(out, PF_FORMAT_VERSION, x->format_version));
    TRY(put_field_u64(out, PF_NUM_ENTRIES, p->num_entries));
    TRY(put_field_u64(out, PF_NUM_DELETES, p->num_deletes));
    TRY(put_field_u64(out, PF_NUM_RANGE_DELETES, p->num_range_deletes));
    TRY(put_field_u64(out, PF_RAW_KEY_BYTES, p->raw_key_bytes));
    TRY(put_field_u64(out, PF_RAW_VALUE_BYTES, p->raw_value_bytes));
    TRY(put_field_u64(out, PF_NUM_SEPARATED, p->num_separated_values));
    TRY(put_field_u64(out, PF_DATA_BYTES, p->data_bytes));
    TRY(put_field_u64(out, PF_MIN_SEQ, p->min_seq));
    TRY(put_field_u64(out, PF_MAX_SEQ, p->max_seq));
    TRY(put_field_bytes(out, PF_SMALLEST, buf_slice(&p->smallest)));
    TRY(put_field_bytes(out, PF_LARGEST, buf_slice(&p->largest)));
    TRY(put_field_u64(out, PF_COMPRESSION, (uint64_t)p->compression));
    TRY(put_field_u64(out, PF_NUM_DATA_BLOCKS, x->num_data_blocks));
    TRY(put_field_u64(out, PF_MAX_BLOCK_RAW, x->max_block_raw));
    TRY(put_field_u64(out, PF_VALUE_BYTES, x->value_bytes));
    if (x->range_del.size > 0) {
        char h[2 * VARINT64_MAX], *q = h;
        q = enc_varint64(q, x->range_del.offset);
        q = enc_varint64(q, x->range_del.size);
        TRY(put_field_bytes(out, PF_RANGE_DEL_BLOCK, slice_make(h, (size_t)(q - h))));
    }
err:
    return rc;
}

/* Decode tagged fields into p / x, skipping unknown ones. */
int sst_props_decode(slice_t in, sst_props_t *p, sst_props_ext_t *x, const char *path) {
    int rc = TDB_OK;
    const char *q = in.data, *limit = in.data + in.size;
    while (q < limit) {
        uint32_t tag;
        q = dec_varint32(q, limit, &tag);
        if (!q) RAISE(TDB_ERR_CORRUPTION, "%s: properties: bad tag", path);
        unsigned field = tag >> 1, wire = tag & 1u;
        uint64_t v = 0;
        slice_t s = {0};
        if (wire == WIRE_VARINT) {
            q = dec_varint64(q, limit, &v);
        } else {
            q = dec_lenprefixed(q, limit, &s);
        }
        if (!q) RAISE(TDB_ERR_CORRUPTION, "%s: properties: truncated field %u", path, field);
        /* A known field must arrive with its own wire type. */
        int want_bytes = (field == PF_SMALLEST || field == PF_LARGEST || field == PF_RANGE_DEL_BLOCK);
        if (field >= PF_NUM_ENTRIES && field <= PF_RANGE_DEL_BLOCK && want_bytes != (wire == WIRE_BYTES))
            RAISE(TDB_ERR_CORRUPTION, "%s: properties: field %u has wrong wire type", path, field);
        switch (field) {
        case PF_NUM_ENTRIES: p->num_entries = v; break;
        case PF_NUM_DELETES: p->num_deletes = v; break;
        case PF_NUM_RANGE_DELETES: p->num_range_deletes = v; break;
        case PF_RAW_KEY_BYTES: p->raw_key_bytes = v; break;
        case PF_RAW_VALUE_BYTES: p->raw_value_bytes = v; break;
        case PF_NUM_SEPARATED: p->num_separated_values = v; break;
        case PF_DATA_BYTES: p->data_bytes = v; break;
        case PF_MIN_SEQ: p->min_seq = v; break;
        case PF_MAX_SEQ: p->max_seq = v; break;
        case PF_SMALLEST:
            buf_clear(&p->smallest);
            TRY(buf_append(&p->smallest, s.data, s.size));
            break;
        case PF_LARGEST:
            buf_clear(&p->largest);
            TRY(buf_append(&p->largest, s.data, s.size));
            break;
        case PF_COMPRESSION:
            if (v > 255 || !tdb_compression_valid((int)v))
                RAISE(TDB_ERR_CORRUPTION, "%s: properties: bad compression %llu", path, (unsigned long long)v);
            p->compression = (int)v;
            break;
        case PF_FORMAT_VERSION:
            if (v > UINT32_MAX) RAISE(TDB_ERR_CORRUPTION, "%s: properties: bad version", path);
            x->format_version = (uint32_t)v;
            break;
        case PF_NUM_DATA_BLOCKS: x->num_data_blocks = v; break;
        case PF_MAX_BLOCK_RAW: x->max_block_raw = v; break;
        case PF_VALUE_BYTES: x->value_bytes = v; break;
        case PF_RANGE_DEL_BLOCK: {
            const char *h = s.data, *hl = s.data + s.size;
            if (!(h = dec_varint64(h, hl, &x->range_del.offset)) || !(h = dec_varint64(h, hl, &x->range_del.size)) ||
                h != hl || x->range_del.size == 0)
                RAISE(TDB_ERR_CORRUPTION, "%s: properties: bad range-deletion block handle", path);
            break;
        }
        default: break; /* unknown field from a newer writer: skip */
        }
    }
err:
    return rc;
}

/*
 * sst/sst_builder: writes one SSTable (layout in sst/sst.h).
 *
 * Invariants
 *  - Owned by one thread. `offset` = bytes appended to the file + bytes in
 *    `wbuf` (not yet appended): the file offset of the next record.
 *  - Value records go to the output as soon as they are added; the data
 *    block being filled is kept in `data` and written when it reaches
 *    block_size, so a value record always precedes the block referencing it.
 *  - `pending_index` is set between writing a data block and seeing the
 *    next key (or finishing): its separator needs the next block's first key.
 *  - After the first error, `status` holds it and every call returns it.
 *  - Range tombstones are buffered in `rdels` (any order) and written at
 *    finish as one range-deletion block (sorted by start, then seq
 *    descending) between the data and the filter; they widen the table's
 *    smallest/largest keys and sequence range (sst/range_del.h, bounds).
 */
#include <stdlib.h>
#include <string.h>

#include "sst/block.h"
#include "sst/bloom.h"
#include "sst/compress.h"
#include "sst/format.h"
#include "sst/range_del.h"
#include "sst/sst.h"
#include "util/coding.h"
#include "util/error.h"

#define SST_WBUF_SIZE (256u * 1024u)

struct sst_builder {
    env_t *env;
    env_file_t *file;
    char *path;
    sst_options_t opt;
    int status;
    uint64_t offset;       /* logical end of file (appended + buffered) */
    buf_t wbuf;            /* write buffer */
    block_builder_t data;  /* data block being filled */
    block_builder_t index;
    bloom_builder_t *bloom;
    buf_t scratch;         /* compression output */
    buf_t rec;             /* encoded record (payload + trailer) */
    buf_t last_key;        /* last ikey added (unflagged) */
    buf_t sep;             /* separator scratch */
    buf_t tmp_key;         /* flagged key scratch */
    int pending_index;
    sst_handle_t pending_handle;
    uint64_t num_data_blocks, max_block_raw, value_bytes;
    rd_list_t rdels;       /* range tombstones, written at finish */
    sst_props_t props;
};

/* Append bytes to the file through the write buffer. */
static int out_write(sst_builder_t *b, const char *d, size_t n) {
    int rc = TDB_OK;
    if (b->wbuf.size + n > SST_WBUF_SIZE && b->wbuf.size > 0) {
        TRY(env_append(b->file, b->wbuf.data, b->wbuf.size));
        buf_clear(&b->wbuf);
    }
    if (n >= SST_WBUF_SIZE) {
        TRY(env_append(b->file, d, n));
    } else {
        TRY(buf_append(&b->wbuf, d, n));
    }
    b->offset += n;
err:
    return rc;
}

/* Push the write buffer to the file. */
static int out_flush(sst_builder_t *b) {
    int rc = TDB_OK;
    if (b->wbuf.size > 0) {
        TRY(env_append(b->file, b->wbuf.data, b->wbuf.size));
        buf_clear(&b->wbuf);
    }
err:
    return rc;
}

/* Encode payload as a record (compressed if worthwhile) and write it. */
static int write_record(sst_builder_t *b, slice_t payload, int compression, sst_handle_t *h) {
    int rc = TDB_OK;
    uint64_t stored;
    buf_clear(&b->rec);
    TRY(sst_encode_record(compression, payload, &b->scratch, &b->rec, &stored));
    h->offset = b->offset;
    h->size = stored;
    TRY(out_write(b, b->rec.data, b->rec.size));
err:
    return rc;
}

/* Free everything owned by the builder (file must be closed already). */
static void builder_free(sst_builder_t *b) {
    buf_free(&b->wbuf);
    block_builder_free(&b->data);
    block_builder_free(&b->index);
    bloom_builder_destroy(b->bloom);
    buf_free(&b->scratch);
    buf_free(&b->rec);
    buf_free(&b->last_key);
    buf_free(&b->sep);
    buf_free(&b->tmp_key);
    rd_list_free(&b->rdels);
    sst_props_free(&b->props);
    free(b->path);
    free(b);
}

/* Create the file and an empty builder. */
int sst_builder_open(env_t *env, const char *path, const sst_options_t *opt, sst_builder_t **out) {
    int rc = TDB_OK;
    sst_builder_t *b = NULL;
    *out = NULL;
    if (!opt || !tdb_compression_valid(opt->compression))
        RAISE(TDB_ERR_INVALID_ARG, "%s: bad sst options (compression %d)", path, opt ? opt->compression : -1);
    if (!(opt->bloom_fpr < 1.0)) RAISE(TDB_ERR_INVALID_ARG, "%s: bloom_fpr %g must be < 1", path, opt->bloom_fpr);
    b = (sst_builder_t *)calloc(1, sizeof *b);
    if (!b) RAISE(TDB_ERR_NOMEM, "%s: sst builder", path);
    b->env = env;
    b->opt = *opt;
    if (b->opt.block_size == 0) b->opt.block_size = 4096;
    block_builder_init(&b->data, SST_RESTART_INTERVAL);
    block_builder_init(&b->index, SST_RESTART_INTERVAL);
    b->props.compression = opt->compression;
    b->props.min_seq = UINT64_MAX;
    b->path = strdup(path);
    if (!b->path) RAISE(TDB_ERR_NOMEM, "%s: sst builder", path);
    if (opt->bloom_fpr > 0) {
        b->bloom = bloom_builder_create(opt->bloom_fpr);
        if (!b->bloom) RAISE(TDB_ERR_NOMEM, "%s: bloom builder", path);
    }
    TRY(env->open_writable(env, path, &b->file));
    *out = b;
    return TDB_OK;
err:
    if (b) builder_free(b);
    return rc;
}

/* Add the index entry for the last written data block; next_key is the
 * first key of the following block, or NULL at the end of the table. */
static int add_index_entry(sst_builder_t *b, const slice_t *next_key) {
    int rc = TDB_OK;
    slice_t last = buf_slice(&b->last_key);
    slice_t lu = ikey_user(last);
    slice_t sep = last;
    if (next_key) {
        slice_t nu = ikey_user(*next_key);
        TRY(ikey_user_separator(&b->sep, lu, &nu));
    } else {
        TRY(ikey_user_separator(&b->sep, lu, NULL));
    }
    if (b->sep.size < lu.size) { /* shorter: (sep, SEQ_MAX, KT_SEEK) sorts after every lu version */
        TRY(put_fixed64(&b->sep, ikey_pack(SEQ_MAX, KT_SEEK)));
        sep = buf_slice(&b->sep);
    }
    char v[2 * VARINT64_MAX], *p = v;
    p = enc_varint64(p, b->pending_handle.offset);
    p = enc_varint64(p, b->pending_handle.size);
    TRY(block_builder_add(&b->index, sep, slice_make(v, (size_t)(p - v))));
    b->pending_index = 0;
err:
    return rc;
}

/* Write the current data block and remember its handle for the index. */
static int flush_data_block(sst_builder_t *b) {
    int rc = TDB_OK;
    slice_t raw;
    if (block_builder_empty(&b->data)) return TDB_OK;
    TRY(block_builder_finish(&b->data, &raw));
    if (raw.size > b->max_block_raw) b->max_block_raw = raw.size;
    uint64_t before = b->offset;
    TRY(write_record(b, raw, b->opt.compression, &b->pending_handle));
    b->props.data_bytes += b->offset - before;
    b->num_data_blocks++;
    b->pending_index = 1;
    block_builder_reset(&b->data);
err:
    return rc;
}

/* Add one entry (see sst.h). */
int sst_builder_add(sst_builder_t *b, slice_t ikey, slice_t value) {
    int rc = TDB_OK;
    if (b->status != TDB_OK) return b->status;
    if (!ikey_valid(ikey)) RAISE(TDB_ERR_INVALID_ARG, "%s: internal key of %zu bytes", b->path, ikey.size);
    unsigned type = ikey_type(ikey);
    if (type > KT_MAX_VALID) RAISE(TDB_ERR_INVALID_ARG, "%s: bad key type %u", b->path, type);
    if (type == KT_RANGE_DELETE)
        RAISE(TDB_ERR_INVALID_ARG, "%s: range tombstones go through sst_builder_add_range_del", b->path);
    if (value.size > UINT32_MAX) RAISE(TDB_ERR_TOO_LARGE, "%s: value of %zu bytes", b->path, value.size);
    if (ikey.size > UINT32_MAX / 2) RAISE(TDB_ERR_TOO_LARGE, "%s: key of %zu bytes", b->path, ikey.size);
    if (b->props.num_entries > 0 && ikey_compare(buf_slice(&b->last_key), ikey) >= 0)
        RAISE(TDB_ERR_INVALID_ARG, "%s: keys out of order at entry %llu", b->path,
              (unsigned long long)b->props.num_entries);

    if (b->pending_index) TRY(add_index_entry(b, &ikey));
    if (b->bloom) TRY(bloom_builder_add(b->bloom, ikey_user(ikey)));

    slice_t key = ikey, val = value;
    char ref[VARINT64_MAX + 2 * VARINT32_MAX];
    if (b->opt.value_threshold > 0 && value.size >= b->opt.value_threshold && kt_is_value(type)) {
        sst_handle_t h;
        uint64_t before = b->offset;
        TRY(write_record(b, value, b->opt.compression, &h));
        if (h.size > UINT32_MAX) RAISE(TDB_ERR_TOO_LARGE, "%s: value record of %llu bytes", b->path,
                                       (unsigned long long)h.size);
        b->value_bytes += b->offset - before;
        char *p = ref;
        p = enc_varint64(p, h.offset);
        p = enc_varint32(p, (uint32_t)h.size);
        p = enc_varint32(p, (uint32_t)value.size);
        val = slice_make(ref, (size_t)(p - ref));
        buf_clear(&b->tmp_key);
        TRY(buf_append(&b->tmp_key, ikey.data, ikey.size));
        b->tmp_key.data[ikey.size - IKEY_TRAILER] = (char)(type | SST_KT_SEPARATED);
        key = buf_slice(&b->tmp_key);
        b->props.num_separated_values++;
    }
    TRY(block_builder_add(&b->data, key, val));

    uint64_t seq = ikey_seq(ikey);
    if (b->props.num_entries == 0) TRY(buf_append(&b->props.smallest, ikey.data, ikey.size));
    buf_clear(&b->last_key);
    TRY(buf_append(&b->last_key, ikey.data, ikey.size));
    b->props.num_entries++;
    if (type == KT_DELETE || type == KT_SINGLE_DELETE) b->props.num_deletes++;
    b->props.raw_key_bytes += ikey.size;
    b->props.raw_value_bytes += value.size;
    if (seq < b->props.min_seq) b->props.min_seq = seq;
    if (seq > b->props.max_seq) b->props.max_seq = seq;

    if (block_builder_size(&b->data) >= b->opt.block_size) TRY(flush_data_block(b));
    return TDB_OK;
err:
    b->status = rc;
    return rc;
}

/* Buffer one range tombstone (written at finish). */
int sst_builder_add_range_del(sst_builder_t *b, slice_t start, slice_t end, uint64_t seq) {
    int rc = TDB_OK;
    if (b->status != TDB_OK) return b->status;
    if (start.size == 0 || slice_compare(start, end) >= 0)
        RAISE(TDB_ERR_INVALID_ARG, "%s: range tombstone with start >= end", b->path);
    if (seq > SEQ_MAX) RAISE(TDB_ERR_INVALID_ARG, "%s: range tombstone sequence %llu", b->path, (unsigned long long)seq);
    if (start.size > UINT32_MAX / 4 || end.size > UINT32_MAX / 4)
        RAISE(TDB_ERR_TOO_LARGE, "%s: range tombstone keys of %zu/%zu bytes", b->path, start.size, end.size);
    TRY(rd_list_add(&b->rdels, start, end, seq));
    return TDB_OK;
err:
    b->status = rc;
    return rc;
}

/* Sort the buffered tombstones, write their block, widen the key and
 * sequence ranges. */
static int write_range_dels(sst_builder_t *b, sst_handle_t *h) {
    int rc = TDB_OK;
    block_builder_t bb;
    buf_t key = {0}, bound = {0};
    block_builder_init(&bb, SST_RESTART_INTERVAL);
    range_del_t *v = b->rdels.v;
    size_t n = b->rdels.n;
    rd_sort_by_start(v, n);
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && slice_equal(v[i].start, v[i - 1].start) && v[i].seq == v[i - 1].seq)
            RAISE(TDB_ERR_INVALID_ARG, "%s: two range tombstones at one (start, seq)", b->path);
        buf_clear(&key);
        TRY(rd_bound_smallest(&key, v[i].start, v[i].seq));
        TRY(block_builder_add(&bb, buf_slice(&key), v[i].end));
        if (i == 0 && (b->props.smallest.size == 0 || ikey_compare(buf_slice(&key), buf_slice(&b->props.smallest)) < 0)) {
            buf_clear(&b->props.smallest);
            TRY(buf_append(&b->props.smallest, key.data, key.size));
        }
        buf_clear(&bound);
        TRY(rd_bound_largest(&bound, v[i].end));
        if (b->props.largest.size == 0 || ikey_compare(buf_slice(&bound), buf_slice(&b->props.largest)) > 0) {
            buf_clear(&b->props.largest);
            TRY(buf_append(&b->props.largest, bound.data, bound.size));
        }
        if (v[i].seq < b->props.min_seq) b->props.min_seq = v[i].seq;
        if (v[i].seq > b->props.max_seq) b->props.max_seq = v[i].seq;
        b->props.raw_key_bytes += key.size;
        b->props.raw_value_bytes += v[i].end.size;
    }
    slice_t raw;
    TRY(block_builder_finish(&bb, &raw));
    TRY(write_record(b, raw, TDB_COMPRESS_NONE, h));
    b->props.num_range_deletes = n;
err:
    block_builder_free(&bb);
    buf_free(&key);
    buf_free(&bound);
    return rc;
}

/* Bytes written + buffered. */
uint64_t sst_builder_file_size(const sst_builder_t *b) {
    return b->offset + (block_builder_empty(&b->data) ? 0 : block_builder_size(&b->data));
}

/* Entries added so far. */
uint64_t sst_builder_num_entries(const sst_builder_t *b) { return b->props.num_entries; }

/* Write a metadata block raw (never compressed). */
static int write_meta(sst_builder_t *b, slice_t payload, sst_handle_t *h) {
    return write_record(b, payload, TDB_COMPRESS_NONE, h);
}

/* Finish the table: remaining block, filter, index, properties, footer. */
int sst_builder_finish(sst_builder_t *b, sst_props_t *props) {
    int rc = b->status;
    buf_t meta = {0};
    sst_footer_t f;
    memset(&f, 0, sizeof f);
    if (props) memset(props, 0, sizeof *props);
    if (rc != TDB_OK) goto err;
    TRY(flush_data_block(b));
    if (b->pending_index) TRY(add_index_entry(b, NULL));
    if (b->props.num_entries > 0) TRY(buf_append(&b->props.largest, b->last_key.data, b->last_key.size));
    sst_props_ext_t x = {b->num_data_blocks, b->max_block_raw, b->value_bytes, SST_FORMAT_VERSION, {0, 0}};
    if (b->rdels.n > 0) TRY(write_range_dels(b, &x.range_del));
    if (b->bloom) {
        TRY(bloom_builder_finish(b->bloom, &meta));
        TRY(write_meta(b, buf_slice(&meta), &f.filter));
    }
    slice_t idx;
    TRY(block_builder_finish(&b->index, &idx));
    TRY(write_meta(b, idx, &f.index));
    if (b->props.num_entries == 0 && b->rdels.n == 0) b->props.min_seq = 0;
    buf_clear(&meta);
    TRY(sst_props_encode(&b->props, &x, &meta));
    TRY(write_meta(b, buf_slice(&meta), &f.props));
    f.version = SST_FORMAT_VERSION;
    char foot[SST_FOOTER_SIZE];
    sst_footer_encode(&f, foot);
    TRY(out_write(b, foot, sizeof foot));
    TRY(out_flush(b));
    TRY(env_sync(b->file));
    rc = env_close(b->file);
    b->file = NULL;
    if (rc != TDB_OK) goto err;
    b->props.file_size = b->offset;
    if (props) {
        *props = b->props; /* hand the owned buffers over */
        memset(&b->props.smallest, 0, sizeof b->props.smallest);
        memset(&b->props.largest, 0, sizeof b->props.largest);
    }
err:
    buf_free(&meta);
    if (b->file) env_close(b->file);
    builder_free(b);
    return rc;
}

/* Close the file and free the builder without writing the tail. */
void sst_builder_abandon(sst_builder_t *b) {
    if (!b) return;
    if (b->file) env_close(b->file);
    builder_free(b);
}

/* Free the props' owned buffers. */
void sst_props_free(sst_props_t *p) {
    if (!p) return;
    buf_free(&p->smallest);
    buf_free(&p->largest);
}

/* Deep copy of properties. */
int sst_props_copy(sst_props_t *dst, const sst_props_t *src) {
    *dst = *src;
    memset(&dst->smallest, 0, sizeof dst->smallest);
    memset(&dst->largest, 0, sizeof dst->largest);
    int rc = buf_append(&dst->smallest, src->smallest.data, src->smallest.size);
    if (rc == TDB_OK) rc = buf_append(&dst->largest, src->largest.data, src->largest.size);
    if (rc != TDB_OK) sst_props_free(dst);
    return rc;
}

/*
 * sst/sst_verify: reading every block and value record of one SSTable back
 * from disk and checking it against the index and the properties.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sst/block.h"
#include "sst/block_pool.h"
#include "sst/bloom.h"
#include "sst/compress.h"
#include "sst/format.h"
#include "sst/range_del.h"
#include "sst/reader_impl.h"
#include "sst/sst.h"
#include "util/coding.h"
#include "util/error.h"
#include "util/pinned.h"

/* ---------------------------------------------------------------------- */
/* Verification                                                            */
/* ---------------------------------------------------------------------- */

/* Read every data block and value record from disk and check them. */
int sst_reader_verify(sst_reader_t *r) {
    int rc = TDB_OK;
    block_ref_t ref = {0};
    block_iter_t bi;
    buf_t prev = {0}, val = {0}, first = {0};
    char *rdraw = NULL;
    rd_list_t rdl = {0};
    uint64_t entries = 0, separated = 0;
    block_iter_init(&bi, sst_key_cmp);
    for (size_t i = 0; i < r->nblocks; i++) {
        uint64_t boff = r->idx[i].offset;
        slice_t sep = slice_make(r->idx[i].key, r->idx[i].key_len);
        TRY(sst_load_data_block(r, i, SST_CACHE_NONE, &ref));
        if (block_iter_set(&bi, slice_make(ref.blk->data, ref.blk->size)) != TDB_OK) {
            rc = sst_wrap_err(r, bi.status, "data block", boff);
            goto err;
        }
        size_t in_block = 0;
        for (block_iter_seek_to_first(&bi); block_iter_valid(&bi); block_iter_next(&bi)) {
            slice_t k = block_iter_key(&bi);
            if (stored_key_type(k) < 0)
                RAISE(TDB_ERR_CORRUPTION, "%s: data block at offset %llu: bad key", r->path,
                      (unsigned long long)boff);
            if (entries > 0 && sst_key_cmp(buf_slice(&prev), k) >= 0)
                RAISE(TDB_ERR_CORRUPTION, "%s: data block at offset %llu: keys out of order", r->path,
                      (unsigned long long)boff);
            if (in_block == 0 && i > 0 &&
                sst_key_cmp(k, slice_make(r->idx[i - 1].key, r->idx[i - 1].key_len)) <= 0)
                RAISE(TDB_ERR_CORRUPTION, "%s: data block at offset %llu: first key not above previous separator",
                      r->path, (unsigned long long)boff);
            if (sst_key_cmp(k, sep) > 0)
                RAISE(TDB_ERR_CORRUPTION, "%s: data block at offset %llu: key above its index separator",
                      r->path, (unsigned long long)boff);
            if (sst_key_separated(k)) {
                TRY(sst_resolve_value(r, block_iter_value(&bi), SST_CACHE_NONE, boff, &val));
                separated++;
            }
            if (entries == 0 && r->props.num_range_deletes == 0 && sst_key_cmp(k, buf_slice(&r->props.smallest)) != 0)
                RAISE(TDB_ERR_CORRUPTION, "%s: first key differs from the recorded smallest key", r->path);
            if (entries == 0) TRY(buf_append(&first, k.data, k.size));
            uint64_t seq = ikey_seq(k);
            if (seq < r->props.min_seq || seq > r->props.max_seq)
                RAISE(TDB_ERR_CORRUPTION, "%s: data block at offset %llu: sequence %llu outside [%llu, %llu]",
                      r->path, (unsigned long long)boff, (unsigned long long)seq,
                      (unsigned long long)r->props.min_seq, (unsigned long long)r->props.max_seq);
            buf_clear(&prev);
            TRY(buf_append(&prev, k.data, k.size));
            entries++;
            in_block++;
        }
        if (bi.status != TDB_OK) {
            rc = sst_wrap_err(r, bi.status, "data block", boff);
            goto err;
        }
        if (in_block == 0)
            RAISE(TDB_ERR_CORRUPTION, "%s: data block at offset %llu: empty", r->path, (unsigned long long)boff);
        sst_ref_release(r, &ref);
    }
    if (r->props.num_range_deletes == 0) {
        if (entries > 0 && sst_key_cmp(buf_slice(&prev), buf_slice(&r->props.largest)) != 0)
            RAISE(TDB_ERR_CORRUPTION, "%s: last key differs from the recorded largest key", r->path);
    } else {
        /* Re-read the range-deletion block from disk; the bounds are then
         * the extremes of the points and the tombstones. */
        TRY(sst_read_meta(r, r->ext.range_del, r->file_size - SST_FOOTER_SIZE, "range-deletion block", &rdraw));
        TRY(sst_parse_range_dels(r, slice_make(rdraw, (size_t)r->ext.range_del.size), r->ext.range_del.offset, &rdl));
        buf_t lo = {0}, hi = {0};
        rc = rd_bound_smallest(&lo, rdl.v[0].start, rdl.v[0].seq);
        for (size_t i = 0; i < rdl.n && rc == TDB_OK; i++) {
            buf_t bnd = {0};
            rc = rd_bound_largest(&bnd, rdl.v[i].end);
            if (rc == TDB_OK && (hi.size == 0 || ikey_compare(buf_slice(&bnd), buf_slice(&hi)) > 0)) {
                buf_clear(&hi);
                rc = buf_append(&hi, bnd.data, bnd.size);
            }
            buf_free(&bnd);
        }
        if (rc == TDB_OK && entries > 0) {
            /* first and prev are stored keys: order them without the
             * separated-value flag, as the writer recorded the bounds (a
             * flagged point at sequence 0 would otherwise sort before a
             * tombstone bound on the same user key). */
            if (sst_key_cmp(buf_slice(&first), buf_slice(&lo)) < 0) {
                buf_clear(&lo);
                rc = buf_append(&lo, first.data, first.size);
            }
            if (rc == TDB_OK && sst_key_cmp(buf_slice(&prev), buf_slice(&hi)) > 0) {
                buf_clear(&hi);
                rc = buf_append(&hi, prev.data, prev.size);
            }
        }
        int same = rc == TDB_OK && sst_key_cmp(buf_slice(&lo), buf_slice(&r->props.smallest)) == 0 &&
                   sst_key_cmp(buf_slice(&hi), buf_slice(&r->props.largest)) == 0;
        buf_free(&lo);
        buf_free(&hi);
        if (rc != TDB_OK) goto err;
        if (!same) RAISE(TDB_ERR_CORRUPTION, "%s: key range differs from the recorded smallest/largest keys", r->path);
    }
    if (entries != r->props.num_entries || separated != r->props.num_separated_values)
        RAISE(TDB_ERR_CORRUPTION, "%s: %llu entries (%llu separated), properties say %llu (%llu)", r->path,
              (unsigned long long)entries, (unsigned long long)separated,
              (unsigned long long)r->props.num_entries, (unsigned long long)r->props.num_separated_values);
err:
    if (ref.blk) sst_ref_release(r, &ref);
    block_iter_free(&bi);
    buf_free(&prev);
    buf_free(&val);
    buf_free(&first);
    pinned_free(rdraw);
    rd_list_free(&rdl);
    return rc;
}

/*
 * fuzz_sst: the SST reader over a file of fuzz bytes: open (footer, index,
 * filter, properties), full forward and backward iteration, seeks, point
 * gets, bloom checks and verify.
 * Input: mode byte, then the file. Every record of a table is protected by
 * a checksum, so random mutations mostly test the checksum path; mode bits
 * make the harness correct checksums first so mutations reach the parsers:
 *   bit 0: the footer checksum;
 *   bit 1: the trailers of the index, filter and properties blocks and of
 *          every data block the index points at.
 * Bit 2 selects a block cache (else reads bypass caching).
 */
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "fuzz_common.h"
#include "sst/block.h"
#include "sst/format.h"
#include "sst/sst.h"
#include "util/checksum.h"

/* Correct the trailer of the record [off, off + size) if it fits. */
static void fix_record(char *f, size_t n, uint64_t off, uint64_t size) {
    if (off > n || size > n || off + size + SST_TRAILER_SIZE > n) return;
    enc_fixed32(f + off + size + 1, tdb_checksum(f + off, (size_t)size + 1));
}

/* Apply the checksum corrections the mode asks for. */
static void fixup(char *f, size_t n, int mode) {
    if (n < SST_FOOTER_SIZE) return;
    char *ft = f + n - SST_FOOTER_SIZE;
    if (mode & 1) enc_fixed32(ft + 52, tdb_checksum(ft, 52));
    if (!(mode & 2)) return;
    uint64_t io = dec_fixed64(ft), is = dec_fixed64(ft + 8);
    fix_record(f, n, dec_fixed64(ft + 16), dec_fixed64(ft + 24));
    fix_record(f, n, dec_fixed64(ft + 32), dec_fixed64(ft + 40));
    if (io > n || is > n || io + is + SST_TRAILER_SIZE > n) return;
    fix_record(f, n, io, is);
    if ((unsigned char)f[io + is] != TDB_COMPRESS_NONE) return;
    block_iter_t it;
    block_iter_init(&it, sst_key_cmp);
    if (block_iter_set(&it, slice_make(f + io, (size_t)is)) == TDB_OK) {
        int k = 0;
        for (block_iter_seek_to_first(&it); block_iter_valid(&it) && k < 4096; block_iter_next(&it), k++) {
            slice_t v = block_iter_value(&it);
            uint64_t off, sz;
            const char *p = dec_varint64(v.data, v.data + v.size, &off);
            if (p && dec_varint64(p, v.data + v.size, &sz)) fix_record(f, n, off, sz);
        }
    }
    block_iter_free(&it);
}

/* One input: open the bytes as a table and read all of it. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static uint64_t file_number = 1;
    if (size < 1) return 0;
    int mode = data[0];
    size_t n = size - 1;
    char *f = (char *)malloc(n ? n : 1);
    if (!f) return 0;
    memcpy(f, data + 1, n);
    fixup(f, n, mode);
    env_t *env = memenv_set(f, n);
    lru_cache_t *cache = (mode & 4) ? lru_cache_create(1 << 20, 1, sst_block_cache_deleter, NULL) : NULL;
    sst_reader_t *r = NULL;
    uint64_t sink = 0;
    if (sst_reader_open(env, "fuzz.sst", file_number++, cache, &r) == TDB_OK) {
        buf_t first = {0}, val = {0};
        iter_t *it = sst_reader_iter(r);
        if (it) {
            int k = 0;
            for (iter_seek_to_first(it); iter_valid(it) && k < 100000; iter_next(it), k++) {
                slice_t key = iter_key(it), v = iter_value(it);
                if (k == 0) buf_append(&first, key.data, key.size);
                sink += fuzz_touch(key.data, key.size) + fuzz_touch(v.data, v.size);
            }
            k = 0;
            for (iter_seek_to_last(it); iter_valid(it) && k < 1000; iter_prev(it), k++) {
                slice_t key = iter_key(it);
                sink += fuzz_touch(key.data, key.size);
            }
            if (first.size) {
                iter_seek(it, buf_slice(&first));
                if (iter_valid(it)) sink += iter_key(it).size;
            }
            iter_seek(it, slice_make(f, n < 20 ? n : 20));
            if (iter_valid(it)) sink += iter_key(it).size;
            iter_destroy(it);
        }
        unsigned type;
        uint64_t seq;
        if (first.size >= 8) {
            slice_t uk = slice_make(first.data, first.size - 8);
            sst_reader_may_contain(r, uk);
            sst_reader_get(r, uk, SEQ_MAX, &type, &seq, &val);
        }
        sst_reader_get(r, slice_make(f, n < 12 ? n : 12), SEQ_MAX, &type, &seq, &val);
        sst_reader_verify(r);
        buf_free(&first);
        buf_free(&val);
        sst_reader_unref(r);
    }
    (void)sink;
    if (cache) lru_cache_destroy(cache);
    free(f);
    return 0;
}

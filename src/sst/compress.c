/*
 * sst/compress: lz4 / zstd / snappy block codecs behind one interface.
 *
 * Format (all codecs but NONE): varint32 uncompressed length || codec bytes.
 * zstd contexts are cached per thread (created lazily, freed at thread
 * exit) so a flush or compaction does not allocate a context per block.
 */
#include "sst/compress.h"

#include <lz4.h>
#include <pthread.h>
#include <snappy-c.h>
#include <stdint.h>
#include <zstd.h>

#include "util/coding.h"
#include "util/error.h"

/* Level 1: see compress.h for the rationale. */
#define TDB_ZSTD_LEVEL 1

static pthread_once_t zstd_once = PTHREAD_ONCE_INIT;
static pthread_key_t zstd_cctx_key, zstd_dctx_key;
static int zstd_keys_ok;

/* Thread-exit destructor for a cached compression context. */
static void free_cctx(void *p) { ZSTD_freeCCtx((ZSTD_CCtx *)p); }
/* Thread-exit destructor for a cached decompression context. */
static void free_dctx(void *p) { ZSTD_freeDCtx((ZSTD_DCtx *)p); }

/* Create the thread-local keys for the zstd context caches (once). */
static void zstd_keys_init(void) {
    if (pthread_key_create(&zstd_cctx_key, free_cctx) != 0) return;
    if (pthread_key_create(&zstd_dctx_key, free_dctx) != 0) {
        pthread_key_delete(zstd_cctx_key);
        return;
    }
    zstd_keys_ok = 1;
}

/* This thread's compression context, or a fresh one in *tmp if TLS is unavailable. */
static ZSTD_CCtx *get_cctx(ZSTD_CCtx **tmp) {
    *tmp = NULL;
    pthread_once(&zstd_once, zstd_keys_init);
    if (zstd_keys_ok) {
        ZSTD_CCtx *c = (ZSTD_CCtx *)pthread_getspecific(zstd_cctx_key);
        if (c) return c;
        c = ZSTD_createCCtx();
        if (c && pthread_setspecific(zstd_cctx_key, c) == 0) return c;
        *tmp = c;
        return c;
    }
    *tmp = ZSTD_createCCtx();
    return *tmp;
}

/* This thread's decompression context, or a fresh one in *tmp if TLS is unavailable. */
static ZSTD_DCtx *get_dctx(ZSTD_DCtx **tmp) {
    *tmp = NULL;
    pthread_once(&zstd_once, zstd_keys_init);
    if (zstd_keys_ok) {
        ZSTD_DCtx *d = (ZSTD_DCtx *)pthread_getspecific(zstd_dctx_key);
        if (d) return d;
        d = ZSTD_createDCtx();
        if (d && pthread_setspecific(zstd_dctx_key, d) == 0) return d;
        *tmp = d;
        return d;
    }
    *tmp = ZSTD_createDCtx();
    return *tmp;
}

/* 1 if type names a codec this build knows. */
int tdb_compression_valid(int type) {
    return type == TDB_COMPRESS_NONE || type == TDB_COMPRESS_SNAPPY || type == TDB_COMPRESS_LZ4 ||
           type == TDB_COMPRESS_ZSTD;
}

/* Worst-case codec output size for n input bytes (0 if n is too large for the codec). */
static size_t codec_bound(int type, size_t n) {
    switch (type) {
    case TDB_COMPRESS_SNAPPY: return snappy_max_compressed_length(n);
    case TDB_COMPRESS_LZ4: return n > LZ4_MAX_INPUT_SIZE ? 0 : (size_t)LZ4_compressBound((int)n);
    case TDB_COMPRESS_ZSTD: {
        size_t b = ZSTD_compressBound(n);
        return ZSTD_isError(b) ? 0 : b;
    }
    default: return 0;
    }
}

/* Compress `in` with codec `type`, appending varint length || codec bytes to out. */
int tdb_compress(int type, slice_t in, buf_t *out) {
    int rc = TDB_OK;
    size_t old = out->size;
    if (!tdb_compression_valid(type)) return tdb_err(TDB_ERR_INVALID_ARG, "compress: unknown codec %d", type);
    if (type == TDB_COMPRESS_NONE) return buf_append(out, in.data, in.size);
    if (in.size > UINT32_MAX) return tdb_err(TDB_ERR_TOO_LARGE, "compress: %zu-byte block", in.size);
    size_t bound = codec_bound(type, in.size);
    if (bound == 0) return tdb_err(TDB_ERR_TOO_LARGE, "compress: %zu-byte block", in.size);
    TRY(buf_reserve(out, VARINT32_MAX + bound));
    char *p = enc_varint32(out->data + out->size, (uint32_t)in.size);
    out->size = (size_t)(p - out->data);
    const char *src = in.size ? in.data : "";
    size_t produced = 0;
    switch (type) {
    case TDB_COMPRESS_SNAPPY: {
        size_t n = bound;
        if (snappy_compress(src, in.size, p, &n) != SNAPPY_OK) RAISE(TDB_ERR_INVALID_ARG, "snappy compress failed");
        produced = n;
        break;
    }
    case TDB_COMPRESS_LZ4: {
        int n = LZ4_compress_default(src, p, (int)in.size, (int)bound);
        if (n <= 0) RAISE(TDB_ERR_INVALID_ARG, "lz4 compress failed");
        produced = (size_t)n;
        break;
    }
    case TDB_COMPRESS_ZSTD: {
        ZSTD_CCtx *tmp, *cctx = get_cctx(&tmp);
        if (!cctx) RAISE(TDB_ERR_NOMEM, "zstd compression context");
        size_t n = ZSTD_compressCCtx(cctx, p, bound, src, in.size, TDB_ZSTD_LEVEL);
        ZSTD_freeCCtx(tmp);
        if (ZSTD_isError(n)) RAISE(TDB_ERR_INVALID_ARG, "zstd compress: %s", ZSTD_getErrorName(n));
        produced = n;
        break;
    }
    }
    out->size += produced;
    return TDB_OK;
err:
    out->size = old;
    return rc;
}

/* The varint length header of a compressed `in`: the declared length and
 * where the codec bytes start. */
static int read_length_header(slice_t in, uint32_t *declared, const char **body) {
    *body = in.size ? dec_varint32(in.data, in.data + in.size, declared) : NULL;
    return *body ? TDB_OK : tdb_err(TDB_ERR_CORRUPTION, "decompress: bad length header");
}

int tdb_decompressed_length(int type, slice_t in, size_t *out) {
    *out = 0;
    if (!tdb_compression_valid(type)) return tdb_err(TDB_ERR_CORRUPTION, "decompress: unknown codec %d", type);
    if (type == TDB_COMPRESS_NONE) {
        *out = in.size;
        return TDB_OK;
    }
    uint32_t declared = 0;
    const char *body;
    int rc = read_length_header(in, &declared, &body);
    if (rc == TDB_OK) *out = declared;
    return rc;
}

/* Decode `in` (varint length || codec bytes) with codec `type`, appending the bytes to out. */
int tdb_decompress(int type, slice_t in, size_t max_out, buf_t *out) {
    int rc = TDB_OK;
    size_t old = out->size;
    if (!tdb_compression_valid(type)) return tdb_err(TDB_ERR_CORRUPTION, "decompress: unknown codec %d", type);
    if (type == TDB_COMPRESS_NONE) {
        if (in.size > max_out)
            return tdb_err(TDB_ERR_CORRUPTION, "decompress: %zu bytes exceed limit %zu", in.size, max_out);
        return buf_append(out, in.data, in.size);
    }
    uint32_t declared = 0;
    const char *p;
    TRY(read_length_header(in, &declared, &p));
    if (declared > max_out)
        return tdb_err(TDB_ERR_CORRUPTION, "decompress: declared %u bytes exceed limit %zu", declared, max_out);
    size_t clen = (size_t)(in.data + in.size - p);
    /* +1 so the destination pointer is never NULL, even for an empty block. */
    TRY(buf_reserve(out, (size_t)declared + 1));
    char *dst = out->data + out->size;
    switch (type) {
    case TDB_COMPRESS_SNAPPY: {
        size_t n = 0;
        if (snappy_uncompressed_length(p, clen, &n) != SNAPPY_OK || n != declared)
            RAISE(TDB_ERR_CORRUPTION, "snappy: bad block header");
        n = declared;
        if (snappy_uncompress(p, clen, dst, &n) != SNAPPY_OK || n != declared)
            RAISE(TDB_ERR_CORRUPTION, "snappy: corrupt block");
        break;
    }
    case TDB_COMPRESS_LZ4: {
        if (clen > LZ4_MAX_INPUT_SIZE || clen == 0) RAISE(TDB_ERR_CORRUPTION, "lz4: bad block size %zu", clen);
        int n = LZ4_decompress_safe(p, dst, (int)clen, (int)declared);
        if (n < 0 || (uint32_t)n != declared) RAISE(TDB_ERR_CORRUPTION, "lz4: corrupt block");
        break;
    }
    case TDB_COMPRESS_ZSTD: {
        ZSTD_DCtx *tmp, *dctx = get_dctx(&tmp);
        if (!dctx) RAISE(TDB_ERR_NOMEM, "zstd decompression context");
        size_t n = ZSTD_decompressDCtx(dctx, dst, declared, p, clen);
        ZSTD_freeDCtx(tmp);
        if (ZSTD_isError(n) || n != declared) RAISE(TDB_ERR_CORRUPTION, "zstd: corrupt block");
        break;
    }
    }
    out->size += declared;
    return TDB_OK;
err:
    out->size = old;
    return rc;
}

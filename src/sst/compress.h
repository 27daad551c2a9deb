/*
 * sst/compress: block compression codecs through the system libraries
 * (lz4, zstd, snappy via its C API snappy-c.h).
 *
 * Compressed format: varint32 uncompressed length, then the codec's bytes,
 * so decompression allocates exactly the declared size, which must be
 * <= max_out (TDB_ERR_CORRUPTION otherwise).
 *
 * TDB_COMPRESS_NONE is a plain copy in both directions (no length prefix):
 * tdb_compress appends `in` unchanged; tdb_decompress appends `in` unchanged
 * if in.size <= max_out (TDB_ERR_CORRUPTION otherwise).
 *
 * zstd runs at level 1: blocks are small (~4-16 KiB), where level 3 buys
 * no ratio over level 1 but costs CPU in flushes and compactions (measured on
 * synthetic 4 KiB key/value blocks: level 1 ratio 0.365 at 115 MB/s, level 3
 * 0.381 at 78 MB/s); decompression speed is the same. lz4 uses its default
 * (acceleration 1) fast mode.
 *
 * Invariants
 *  - Decompression never trusts its input: a declared length above max_out,
 *    a codec error, or a produced length different from the declared one
 *    all return TDB_ERR_CORRUPTION, and nothing is read or written out of
 *    bounds.
 *  - On error, `out` keeps its previous contents (its size is restored).
 *  - Stateless and thread-safe: any thread may call any function.
 */
#ifndef TDB_SST_COMPRESS_H
#define TDB_SST_COMPRESS_H

#include <stddef.h>

#include "util/slice.h"

#ifdef __cplusplus
extern "C" {
#endif

/* type: TDB_COMPRESS_*; appends to out; NONE copies. Unknown type -> TDB_ERR_INVALID_ARG. */
int tdb_compress(int type, slice_t in, buf_t *out);
/* Appends; corrupt/short input -> TDB_ERR_CORRUPTION; unknown type -> CORRUPTION. */
int tdb_decompress(int type, slice_t in, size_t max_out, buf_t *out);
/* Bytes tdb_decompress would append for `in` (NONE: in.size), read from
 * the length header; TDB_ERR_CORRUPTION if the header is bad or the type
 * unknown. Lets a caller allocate the output exactly once. */
int tdb_decompressed_length(int type, slice_t in, size_t *out);
/* 1 if a known codec. */
int tdb_compression_valid(int type);

#ifdef __cplusplus
}
#endif
#endif

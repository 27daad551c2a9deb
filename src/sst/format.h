/*
 * sst/format: the on-disk pieces shared by the SSTable builder and reader:
 * block handles, the 5-byte block trailer, the 64-byte footer, the
 * properties block encoding, and the sst-internal key comparator.
 * The whole file layout is described in sst/sst.h and docs/design/sst.md.
 *
 * Invariants
 *  - Every decoder here takes [p, limit) and never reads outside it; any
 *    malformed input gives TDB_ERR_CORRUPTION with a detail naming the file.
 *  - A "stored" record is `payload || type u8 || fixed32 checksum`, where the
 *    checksum is tdb_checksum over payload || type. The payload is either raw
 *    (type TDB_COMPRESS_NONE) or the output of tdb_compress(type, ...).
 *  - Internal to the SST, bit 0x80 of an internal key's type byte marks a
 *    separated value. sst_key_cmp orders keys as ikey_compare would with the
 *    flag cleared, so flagged keys sort exactly as their unflagged originals.
 */
#ifndef TDB_SST_FORMAT_H
#define TDB_SST_FORMAT_H

#include <stdint.h>

#include "env/env.h"
#include "sst/sst.h"
#include "util/error.h"
#include "util/ikey.h"
#include "util/slice.h"

#ifdef __cplusplus
extern "C" {
#endif

#define SST_FORMAT_VERSION 1u
#define SST_MAGIC 0x3173656469546462ull /* "bdTides1" little-endian */
#define SST_FOOTER_SIZE 64u
#define SST_TRAILER_SIZE 5u   /* type u8 + fixed32 checksum */
#define SST_RESTART_INTERVAL 16
#define SST_KT_SEPARATED 0x80u /* type-byte flag: value stored apart */

/* Location of a stored record: `size` payload bytes at `offset`, followed by
 * the SST_TRAILER_SIZE-byte trailer. */
typedef struct sst_handle {
    uint64_t offset;
    uint64_t size;
} sst_handle_t;

typedef struct sst_footer {
    sst_handle_t index, filter, props; /* filter.size == 0: no filter */
    uint32_t version;
} sst_footer_t;

/* Encode the footer into exactly SST_FOOTER_SIZE bytes at dst. */
void sst_footer_encode(const sst_footer_t *f, char *dst);
/* Decode and verify (checksum, magic, version) SST_FOOTER_SIZE bytes. */
int sst_footer_decode(const char *src, sst_footer_t *f, const char *path);

/* Byte of a stored key's type with the separated flag removed. */
static inline int sst_key_separated(slice_t k) {
    return k.size >= IKEY_TRAILER && ((unsigned char)k.data[k.size - IKEY_TRAILER] & SST_KT_SEPARATED);
}

/* ikey_compare ignoring the separated flag; total on malformed (short) keys. */
static inline int sst_key_cmp(slice_t a, slice_t b) {
    if (TDB_UNLIKELY(a.size < IKEY_TRAILER || b.size < IKEY_TRAILER)) return slice_compare(a, b);
    int r = slice_compare(ikey_user(a), ikey_user(b));
    if (r) return r;
    uint64_t ta = ikey_trailer(a) & ~(uint64_t)SST_KT_SEPARATED;
    uint64_t tb = ikey_trailer(b) & ~(uint64_t)SST_KT_SEPARATED;
    return ta > tb ? -1 : (ta < tb);
}

/* Append `payload` stored with codec `compression` (falling back to raw when
 * compression saves < 12.5%) plus the trailer to out. *stored_size receives
 * the payload bytes written (excluding the trailer). */
int sst_encode_record(int compression, slice_t payload, buf_t *scratch, buf_t *out, uint64_t *stored_size);

/* Verify the trailer of a stored record held in rec[0 .. size + 5) and
 * return its type byte in *type. `what`/`offset` name it in errors. */
int sst_check_record(const char *rec, uint64_t size, unsigned *type, const char *path, const char *what,
                     uint64_t offset);

/* Internal fields not exposed by sst_props_t. */
typedef struct sst_props_ext {
    uint64_t num_data_blocks;
    uint64_t max_block_raw;   /* largest uncompressed data block */
    uint64_t value_bytes;     /* bytes of value records incl. trailers */
    uint32_t format_version;
    sst_handle_t range_del;   /* range-deletion block; size 0 = none */
} sst_props_ext_t;

/* Encode properties as tagged fields (see sst.h) appended to out. */
int sst_props_encode(const sst_props_t *p, const sst_props_ext_t *x, buf_t *out);
/* Decode tagged fields; unknown tags are skipped. p must be zeroed. */
int sst_props_decode(slice_t in, sst_props_t *p, sst_props_ext_t *x, const char *path);

#ifdef __cplusplus
}
#endif
#endif

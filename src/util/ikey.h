/*
 * util/ikey: the internal key format shared by the WAL, memtable, SSTables
 * and compaction.
 *
 *   internal key = user_key || trailer
 *   trailer      = fixed64 little-endian of (seq << 8 | type)
 *
 * Ordering (ikey_compare): user key ascending (bytewise), then sequence
 * descending, then type descending. So for one user key the newest version
 * comes first, and a lookup key built with (seq = S, type = KT_SEEK) lands on
 * the newest version visible at snapshot S.
 *
 * Invariants
 *  - seq fits in 56 bits (SEQ_MAX); sequence 0 is never assigned to a write.
 *    A bottommost compaction rewrites a version older than every snapshot
 *    to sequence 0 (version/table_write.c): 0 means "older than anything".
 *  - type is one of the KT_* values below; bit 0x80 is reserved for storage
 *    layers (the SST marks separated values with it) and never escapes them.
 *  - KT_PUT_TTL values start with fixed64 LE expiry (unix seconds), then
 *    the user value.
 */
#ifndef TDB_UTIL_IKEY_H
#define TDB_UTIL_IKEY_H

#include <stdint.h>

#include "util/coding.h"
#include "util/slice.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
    KT_DELETE = 0,        /* tombstone: shadows all older versions       */
    KT_PUT = 1,           /* value                                        */
    KT_SINGLE_DELETE = 2, /* cancels exactly one older put                */
    KT_RANGE_DELETE = 3,  /* reserved: [user_key, value) deleted          */
    KT_PUT_TTL = 4,       /* fixed64 expiry || value                       */
    KT_MAX_VALID = 4,
    KT_SEEK = 0x7f        /* highest type: used only in lookup keys        */
} key_type_t;

#define SEQ_MAX ((((uint64_t)1) << 56) - 1)
#define IKEY_TRAILER 8

static inline uint64_t ikey_pack(uint64_t seq, unsigned type) { return (seq << 8) | type; }

/* Build an internal key into buf (appending). */
int ikey_append(buf_t *b, slice_t user_key, uint64_t seq, unsigned type);

/* Accessors; k.size must be >= IKEY_TRAILER (checked by ikey_valid). */
static inline int ikey_valid(slice_t k) { return k.size >= IKEY_TRAILER; }
static inline slice_t ikey_user(slice_t k) { return slice_make(k.data, k.size - IKEY_TRAILER); }
static inline uint64_t ikey_trailer(slice_t k) { return dec_fixed64(k.data + k.size - IKEY_TRAILER); }
static inline uint64_t ikey_seq(slice_t k) { return ikey_trailer(k) >> 8; }
static inline unsigned ikey_type(slice_t k) { return (unsigned)(ikey_trailer(k) & 0xff); }

/* Order described above. Both keys must be valid internal keys. */
static inline int ikey_compare(slice_t a, slice_t b) {
    int r = slice_compare(ikey_user(a), ikey_user(b));
    if (r) return r;
    uint64_t ta = ikey_trailer(a), tb = ikey_trailer(b);
    return ta > tb ? -1 : (ta < tb);
}

/* Is a value of this type a live value (not a deletion)? */
static inline int kt_is_value(unsigned t) { return t == KT_PUT || t == KT_PUT_TTL; }

/* Shortest user key s with a <= s < b (for index separators); a < b. Writes
 * into out. If b is NULL: a short key >= a. */
int ikey_user_separator(buf_t *out, slice_t a, const slice_t *b);

#ifdef __cplusplus
}
#endif
#endif

/* util/slice: a borrowed byte range, and a growable owned buffer. */
#ifndef TDB_UTIL_SLICE_H
#define TDB_UTIL_SLICE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct slice {
    const char *data;
    size_t size;
} slice_t;

static inline slice_t slice_make(const void *d, size_t n) {
    slice_t s;
    s.data = (const char *)d;
    s.size = n;
    return s;
}

/* Keys of up to this many bytes are compared without calling memcmp: in
 * 8-byte words, the last one overlapping the word before it, and keys
 * shorter than 8 bytes as one number. A table's primary key of one INT is
 * 4 bytes, and neighbouring keys of a scan share their first bytes; memcmp's
 * call was most of a comparison. */
#define SLICE_INLINE_MAX 32

/* An 8-byte word loaded from memory as a number whose order is its bytes'
 * order. */
static inline uint64_t slice_order64(uint64_t raw) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    raw = __builtin_bswap64(raw);
#endif
    return raw;
}

/* The n < 8 bytes at p as a number whose order, among strings of n bytes,
 * is their bytewise order: the first and the last 4 bytes (overlapping)
 * from 4 bytes up; below, the bytes at 0, n/2 and n-1, which are all of
 * them. */
static inline uint64_t slice_short(const char *p, size_t n) {
    if (n >= 4) {
        uint32_t hi, lo;
        memcpy(&hi, p, 4);
        memcpy(&lo, p + n - 4, 4);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
        hi = __builtin_bswap32(hi);
        lo = __builtin_bswap32(lo);
#endif
        return ((uint64_t)hi << 32) | lo;
    }
    if (n == 0) return 0;
    const unsigned char *u = (const unsigned char *)p;
    return ((uint64_t)u[0] << 16) | ((uint64_t)u[n >> 1] << 8) | u[n - 1];
}

/* Of n >= 8 bytes, how many the words compare: all up to SLICE_INLINE_MAX,
 * else the first word (most keys differ in it), memcmp the rest. */
static inline size_t slice_words_end(size_t n) { return n <= SLICE_INLINE_MAX ? n : 8; }

/* Compare bytes [0, end) (end >= 8) of a and b in 8-byte words, the last
 * overlapping the one before; 1 with the first unequal pair of words (as
 * loaded) in *x, *y, or 0 if the bytes are equal. */
static inline int slice_words_differ(const char *a, const char *b, size_t end, uint64_t *x, uint64_t *y) {
    for (size_t i = 0;; i += 8) {
        if (i + 8 > end) i = end - 8;
        memcpy(x, a + i, 8);
        memcpy(y, b + i, 8);
        if (*x != *y) return 1;
        if (i + 8 == end) return 0;
    }
}

/* Bytewise three-way comparison, shorter prefix first. */
static inline int slice_compare(slice_t a, slice_t b) {
    size_t n = a.size < b.size ? a.size : b.size, i = n;
    uint64_t x, y;
    if (n < 8) {
        x = slice_short(a.data, n);
        y = slice_short(b.data, n);
        if (x != y) return x < y ? -1 : 1;
    } else {
        i = slice_words_end(n);
        if (slice_words_differ(a.data, b.data, i, &x, &y)) return slice_order64(x) < slice_order64(y) ? -1 : 1;
    }
    int r = n > i ? memcmp(a.data + i, b.data + i, n - i) : 0;
    if (r == 0) r = (a.size < b.size) ? -1 : (a.size > b.size);
    return r;
}

/* Equal bytes? As slice_compare does (a scan asks this of every entry it
 * steps to). */
static inline int slice_equal(slice_t a, slice_t b) {
    size_t n = a.size;
    if (n != b.size) return 0;
    if (n < 8) return slice_short(a.data, n) == slice_short(b.data, n);
    size_t end = slice_words_end(n);
    uint64_t x, y;
    if (slice_words_differ(a.data, b.data, end, &x, &y)) return 0;
    return end == n || memcmp(a.data + end, b.data + end, n - end) == 0;
}

/* Owned, growable buffer. A zeroed buf_t is a valid empty buffer. */
typedef struct buf {
    char *data;
    size_t size;
    size_t cap;
} buf_t;

/* Ensure room for `extra` more bytes; TDB_ERR_NOMEM on failure. */
int buf_reserve(buf_t *b, size_t extra);
int buf_append(buf_t *b, const void *d, size_t n);
static inline void buf_clear(buf_t *b) { b->size = 0; }
void buf_free(buf_t *b);
static inline slice_t buf_slice(const buf_t *b) { return slice_make(b->data, b->size); }

#ifdef __cplusplus
}
#endif
#endif

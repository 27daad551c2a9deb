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

/* Bytewise three-way comparison, shorter prefix first. */
static inline int slice_compare(slice_t a, slice_t b) {
    size_t n = a.size < b.size ? a.size : b.size, i = 0;
    if (n >= 8) { /* most keys differ in their first 8 bytes: no call */
        uint64_t x, y;
        memcpy(&x, a.data, 8);
        memcpy(&y, b.data, 8);
        if (x != y) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
            x = __builtin_bswap64(x);
            y = __builtin_bswap64(y);
#endif
            return x < y ? -1 : 1;
        }
        i = 8; /* equal so far: memcmp only the rest */
    }
    int r = n > i ? memcmp(a.data + i, b.data + i, n - i) : 0;
    if (r == 0) r = (a.size < b.size) ? -1 : (a.size > b.size);
    return r;
}

/* Equal bytes? Like slice_compare, the first 8 bytes decide most unequal
 * pairs without a call (a scan asks this of every entry it steps to). */
static inline int slice_equal(slice_t a, slice_t b) {
    if (a.size != b.size) return 0;
    if (a.size >= 8) {
        uint64_t x, y;
        memcpy(&x, a.data, 8);
        memcpy(&y, b.data, 8);
        if (x != y) return 0;
        return a.size == 8 || memcmp(a.data + 8, b.data + 8, a.size - 8) == 0;
    }
    return a.size == 0 || memcmp(a.data, b.data, a.size) == 0;
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

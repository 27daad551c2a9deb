/*
 * util/coding: little-endian fixed-width and varint encodings.
 *
 * Decoders take [p, limit) and return the position after the decoded value,
 * or NULL if the input is truncated or malformed. They never read past
 * limit, so they are safe on bytes read from disk.
 */
#ifndef TDB_UTIL_CODING_H
#define TDB_UTIL_CODING_H

#include <stdint.h>
#include <string.h>

#include "util/slice.h"

#ifdef __cplusplus
extern "C" {
#endif

static inline void enc_fixed32(char *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void enc_fixed64(char *p, uint64_t v) { memcpy(p, &v, 8); }
static inline uint32_t dec_fixed32(const char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t dec_fixed64(const char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

#define VARINT32_MAX 5
#define VARINT64_MAX 10

/* Write a varint at p (room for VARINT*_MAX bytes); returns the end. */
static inline char *enc_varint32(char *p, uint32_t v) {
    unsigned char *u = (unsigned char *)p;
    while (v >= 0x80) { *u++ = (unsigned char)(v | 0x80); v >>= 7; }
    *u++ = (unsigned char)v;
    return (char *)u;
}
static inline char *enc_varint64(char *p, uint64_t v) {
    unsigned char *u = (unsigned char *)p;
    while (v >= 0x80) { *u++ = (unsigned char)(v | 0x80); v >>= 7; }
    *u++ = (unsigned char)v;
    return (char *)u;
}
static inline int varint_length(uint64_t v) {
    int n = 1;
    while (v >= 0x80) { v >>= 7; n++; }
    return n;
}

static inline const char *dec_varint32(const char *p, const char *limit, uint32_t *v) {
    uint32_t r = 0;
    for (int shift = 0; shift <= 28 && p < limit; shift += 7) {
        uint32_t b = (unsigned char)*p++;
        if (shift == 28 && b > 0x0f) return NULL; /* overflows 32 bits */
        r |= (b & 0x7f) << shift;
        if (!(b & 0x80)) { *v = r; return p; }
    }
    return NULL;
}
static inline const char *dec_varint64(const char *p, const char *limit, uint64_t *v) {
    uint64_t r = 0;
    for (int shift = 0; shift <= 63 && p < limit; shift += 7) {
        uint64_t b = (unsigned char)*p++;
        if (shift == 63 && b > 1) return NULL;
        r |= (b & 0x7f) << shift;
        if (!(b & 0x80)) { *v = r; return p; }
    }
    return NULL;
}

/* Append encodings to a buffer (TDB_OK or TDB_ERR_NOMEM). */
int put_fixed32(buf_t *b, uint32_t v);
int put_fixed64(buf_t *b, uint64_t v);
int put_varint32(buf_t *b, uint32_t v);
int put_varint64(buf_t *b, uint64_t v);
/* varint32 length followed by the bytes. */
int put_lenprefixed(buf_t *b, slice_t s);
/* Decode a varint32 length-prefixed slice pointing into [p, limit). */
const char *dec_lenprefixed(const char *p, const char *limit, slice_t *out);

#ifdef __cplusplus
}
#endif
#endif

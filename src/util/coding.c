/* util/coding: buffer-appending encoders. */
#include "util/coding.h"

#include "util/error.h"

int put_fixed32(buf_t *b, uint32_t v) {
    char t[4];
    enc_fixed32(t, v);
    return buf_append(b, t, 4);
}

int put_fixed64(buf_t *b, uint64_t v) {
    char t[8];
    enc_fixed64(t, v);
    return buf_append(b, t, 8);
}

int put_varint32(buf_t *b, uint32_t v) {
    char t[VARINT32_MAX];
    return buf_append(b, t, (size_t)(enc_varint32(t, v) - t));
}

int put_varint64(buf_t *b, uint64_t v) {
    char t[VARINT64_MAX];
    return buf_append(b, t, (size_t)(enc_varint64(t, v) - t));
}

int put_lenprefixed(buf_t *b, slice_t s) {
    TDB_RET(put_varint32(b, (uint32_t)s.size));
    return buf_append(b, s.data, s.size);
}

const char *dec_lenprefixed(const char *p, const char *limit, slice_t *out) {
    uint32_t n;
    p = dec_varint32(p, limit, &n);
    if (!p || (size_t)(limit - p) < n) return NULL;
    *out = slice_make(p, n);
    return p + n;
}

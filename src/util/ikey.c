/* util/ikey: internal key construction and index separators. */
#include "util/ikey.h"

#include "util/error.h"

int ikey_append(buf_t *b, slice_t user_key, uint64_t seq, unsigned type) {
    TDB_RET(buf_append(b, user_key.data, user_key.size));
    return put_fixed64(b, ikey_pack(seq, type));
}

int ikey_user_separator(buf_t *out, slice_t a, const slice_t *b) {
    buf_clear(out);
    if (b) {
        /* Common prefix, then try to bump one byte of a. */
        size_t n = a.size < b->size ? a.size : b->size, i = 0;
        while (i < n && a.data[i] == b->data[i]) i++;
        if (i < n) {
            unsigned char ca = (unsigned char)a.data[i];
            if (ca < 0xff && ca + 1 < (unsigned char)b->data[i]) {
                int rc = buf_append(out, a.data, i + 1);
                if (rc == TDB_OK) out->data[i] = (char)(ca + 1);
                return rc;
            }
        }
        return buf_append(out, a.data, a.size);
    }
    /* Short successor: first byte that can be bumped. */
    for (size_t i = 0; i < a.size; i++) {
        unsigned char c = (unsigned char)a.data[i];
        if (c != 0xff) {
            int rc = buf_append(out, a.data, i + 1);
            if (rc == TDB_OK) out->data[i] = (char)(c + 1);
            return rc;
        }
    }
    return buf_append(out, a.data, a.size);
}

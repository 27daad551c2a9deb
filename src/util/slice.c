/* util/slice: owned buffer growth. */
#include "util/slice.h"

#include <stdlib.h>

#include "util/error.h"

int buf_reserve(buf_t *b, size_t extra) {
    if (b->size + extra <= b->cap) return TDB_OK;
    size_t ncap = b->cap ? b->cap * 2 : 64;
    while (ncap < b->size + extra) ncap *= 2;
    char *p = (char *)realloc(b->data, ncap);
    if (!p) return tdb_err(TDB_ERR_NOMEM, "buffer of %zu bytes", ncap);
    b->data = p;
    b->cap = ncap;
    return TDB_OK;
}

int buf_append(buf_t *b, const void *d, size_t n) {
    TDB_RET(buf_reserve(b, n));
    if (n) memcpy(b->data + b->size, d, n);
    b->size += n;
    return TDB_OK;
}

void buf_free(buf_t *b) {
    free(b->data);
    b->data = NULL;
    b->size = b->cap = 0;
}

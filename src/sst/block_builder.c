/* sst/block_builder: building prefix-compressed blocks with restart points. */
#include "sst/block.h"

#include "util/coding.h"
#include "util/error.h"

/* Initialize an empty builder. */
void block_builder_init(block_builder_t *b, int restart_interval) {
    memset(b, 0, sizeof *b);
    b->interval = restart_interval < 1 ? 1 : restart_interval;
}

/* Forget all entries but keep the buffers. */
void block_builder_reset(block_builder_t *b) {
    buf_clear(&b->buf);
    buf_clear(&b->restarts);
    buf_clear(&b->last_key);
    b->counter = 0;
    b->num_restarts = 0;
    b->num_entries = 0;
    b->finished = 0;
}

/* Free the builder's buffers. */
void block_builder_free(block_builder_t *b) {
    buf_free(&b->buf);
    buf_free(&b->restarts);
    buf_free(&b->last_key);
}

/* Size of the finished block: entries + restart array + count. */
size_t block_builder_size(const block_builder_t *b) {
    uint32_t n = b->num_restarts ? b->num_restarts : 1;
    return b->finished ? b->buf.size : b->buf.size + (size_t)n * 4 + 4;
}

/* Append one entry, sharing a prefix with the previous key unless at a
 * restart point. */
int block_builder_add(block_builder_t *b, slice_t key, slice_t value) {
    int rc = TDB_OK;
    if (b->finished) RAISE(TDB_ERR_INVALID_ARG, "block builder: add after finish");
    if (key.size > UINT32_MAX || value.size > UINT32_MAX ||
        (uint64_t)b->buf.size + key.size + value.size + 15 + 4 * ((uint64_t)b->num_restarts + 2) > UINT32_MAX)
        RAISE(TDB_ERR_TOO_LARGE, "block builder: block would exceed 4 GiB");
    size_t shared = 0;
    if (b->counter >= b->interval || b->num_entries == 0) {
        TRY(put_fixed32(&b->restarts, (uint32_t)b->buf.size));
        b->num_restarts++;
        b->counter = 0;
    } else {
        size_t n = b->last_key.size < key.size ? b->last_key.size : key.size;
        while (shared < n && b->last_key.data[shared] == key.data[shared]) shared++;
    }
    size_t non_shared = key.size - shared;
    char hdr[3 * VARINT32_MAX], *p = hdr;
    p = enc_varint32(p, (uint32_t)shared);
    p = enc_varint32(p, (uint32_t)non_shared);
    p = enc_varint32(p, (uint32_t)value.size);
    TRY(buf_reserve(&b->buf, (size_t)(p - hdr) + non_shared + value.size));
    TRY(buf_append(&b->buf, hdr, (size_t)(p - hdr)));
    TRY(buf_append(&b->buf, key.data + shared, non_shared));
    TRY(buf_append(&b->buf, value.data, value.size));
    b->last_key.size = shared; /* keep the shared prefix, append the rest */
    TRY(buf_append(&b->last_key, key.data + shared, non_shared));
    b->counter++;
    b->num_entries++;
err:
    return rc;
}

/* Append the restart array and its count; expose the block bytes. */
int block_builder_finish(block_builder_t *b, slice_t *out) {
    int rc = TDB_OK;
    if (!b->finished) {
        if (b->num_restarts == 0) {
            TRY(put_fixed32(&b->restarts, 0));
            b->num_restarts = 1;
        }
        TRY(buf_append(&b->buf, b->restarts.data, b->restarts.size));
        TRY(put_fixed32(&b->buf, b->num_restarts));
        b->finished = 1;
    }
    *out = buf_slice(&b->buf);
err:
    return rc;
}

/* fuzz_batch: the write-batch decoder (the WAL record payload, db/batch.c
 * batch_iterate), on raw bytes. */
#include "db/db_impl.h"
#include "fuzz_common.h"

typedef struct counts {
    uint64_t entries, sink;
} counts_t;

/* Read every decoded entry. */
static int visit(void *ctx, uint64_t seq, const batch_entry_t *e) {
    counts_t *c = (counts_t *)ctx;
    c->entries++;
    c->sink += seq + e->type + e->cf_id + fuzz_touch(e->key.data, e->key.size) +
               fuzz_touch(e->value.data, e->value.size);
    if (e->key.size == 0) fuzz_fail("batch entry with an empty key");
    return TDB_OK;
}

/* One input: decode it as a batch. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    counts_t c = {0, 0};
    int rc = batch_iterate(slice_make(data, size), visit, &c);
    if (rc == TDB_OK && c.entries != batch_count_raw(slice_make(data, size)))
        fuzz_fail("batch decoded a different number of entries than its header declares");
    if (rc != TDB_OK && rc != TDB_ERR_CORRUPTION) fuzz_fail("batch_iterate: error other than CORRUPTION");
    return 0;
}

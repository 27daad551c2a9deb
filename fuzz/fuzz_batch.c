/* fuzz_batch: the write-batch decoder on raw bytes: a WAL record payload
 * through batch_from_wal, then batch_iterate (db/batch.c); and through
 * batch_txn_record, the decoder of two-phase commit records. */
#include "db/batch.h"
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
    buf_t rep = {0};
    uint64_t expected = 0;
    int rc = batch_from_wal(slice_make(data, size), &expected, &rep);
    if (rc != TDB_OK && rc != TDB_ERR_CORRUPTION) fuzz_fail("batch_from_wal: error other than CORRUPTION");
    if (rc == TDB_OK) {
        uint64_t seq = dec_fixed64(rep.data);
        if (seq == 0 || expected != seq + batch_count_raw(buf_slice(&rep)))
            fuzz_fail("batch_from_wal: sequence state not advanced past the batch");
        rc = batch_iterate(buf_slice(&rep), visit, &c);
        if (rc == TDB_OK && c.entries != batch_count_raw(buf_slice(&rep)))
            fuzz_fail("batch decoded a different number of entries than its header declares");
        if (rc != TDB_OK && rc != TDB_ERR_CORRUPTION) fuzz_fail("batch_iterate: error other than CORRUPTION");
    }
    batch_txn_rec_t tr;
    expected = 0;
    rc = batch_txn_record(slice_make(data, size), &expected, &tr);
    if (rc != 0 && rc != 1 && rc != TDB_ERR_CORRUPTION) fuzz_fail("batch_txn_record: error other than CORRUPTION");
    if (rc == 1) {
        if (tr.xid.size == 0 || tr.xid.size > BATCH_MAX_XID) fuzz_fail("transaction record with a bad xid accepted");
        if (tr.kind == BATCH_TXN_COMMIT ? expected != tr.seq + tr.count : expected != 0)
            fuzz_fail("batch_txn_record: sequence state moved wrongly");
        if (tr.kind == BATCH_TXN_PREPARE) {
            buf_clear(&rep);
            char hdr[BATCH_HEADER] = {0};
            enc_fixed64(hdr, 1);
            enc_fixed32(hdr + 8, tr.count);
            if (buf_append(&rep, hdr, sizeof hdr) == TDB_OK &&
                buf_append(&rep, tr.entries.data, tr.entries.size) == TDB_OK) {
                rc = batch_iterate(buf_slice(&rep), visit, &c);
                if (rc != TDB_OK && rc != TDB_ERR_CORRUPTION)
                    fuzz_fail("prepared entries: error other than CORRUPTION");
            }
        }
    }
    buf_free(&rep);
    return 0;
}

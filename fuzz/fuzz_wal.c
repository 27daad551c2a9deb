/*
 * fuzz_wal: the WAL reader (recovery's view of a log file) and the write
 * batch decoder on every record it returns.
 * Input: mode byte, then
 *  - mode & 1 == 0: the raw file;
 *  - mode & 1 == 1: records given as [u16 length][payload], each framed with
 *    a correct header and checksum (so mutations reach the batch decoder
 *    and the resync logic after intact records), then the remaining bytes
 *    appended raw (a torn or damaged tail).
 */
#include <stdlib.h>
#include <string.h>

#include "db/batch.h"
#include "fuzz_common.h"
#include "util/checksum.h"
#include "wal/wal.h"

/* Read every decoded entry. */
static int visit(void *ctx, uint64_t seq, const batch_entry_t *e) {
    *(uint64_t *)ctx += seq + e->type + e->cf_id + fuzz_touch(e->key.data, e->key.size) +
                        fuzz_touch(e->value.data, e->value.size);
    return TDB_OK;
}

/* Frame [u16 len][payload]... into WAL records, rest raw. */
static char *frame(const uint8_t *d, size_t n, size_t *out_n) {
    char *o = (char *)malloc(n * 5 + 16);
    if (!o) return NULL;
    size_t i = 0, j = 0;
    while (i + 2 <= n) {
        size_t len = (size_t)d[i] | (size_t)d[i + 1] << 8;
        if (i + 2 + len > n) break;
        enc_fixed32(o + j + 4, (uint32_t)len);
        enc_fixed32(o + j, tdb_checksum2(o + j + 4, 4, d + i + 2, len));
        memcpy(o + j + 8, d + i + 2, len);
        j += 8 + len;
        i += 2 + len;
    }
    memcpy(o + j, d + i, n - i);
    *out_n = j + (n - i);
    return o;
}

/* One input: read the bytes as a WAL, decode each record. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    int mode = data[0];
    const uint8_t *d = data + 1;
    size_t n = size - 1;
    char *framed = NULL;
    if (mode & 1) {
        framed = frame(d, n, &n);
        if (!framed) return 0;
        d = (const uint8_t *)framed;
    }
    env_t *env = memenv_set(d, n);
    wal_reader_t *r = NULL;
    if (wal_reader_open(env, "fuzz.log", &r) == TDB_OK) {
        uint64_t sink = 0, records = 0, last_end = 0, expected = 0;
        buf_t rep = {0};
        for (;;) {
            slice_t rec;
            int rc = wal_reader_next(r, &rec);
            if (rc != TDB_OK) {
                if (wal_reader_next(r, &rec) != rc) fuzz_fail("wal_reader_next is not sticky after an error");
                break;
            }
            sink += fuzz_touch(rec.data, rec.size);
            if (batch_from_wal(rec, &expected, &rep) == TDB_OK) batch_iterate(buf_slice(&rep), visit, &sink);
            uint64_t end = wal_reader_valid_end(r);
            if (end < last_end || end > n) fuzz_fail("valid_end moved backwards or past the file");
            last_end = end;
            if (++records > (n / 8) + 1) fuzz_fail("more records than the file can hold");
        }
        if (wal_reader_valid_end(r) > n) fuzz_fail("valid_end past end of file");
        (void)sink;
        buf_free(&rep);
        wal_reader_close(r);
    }
    free(framed);
    return 0;
}

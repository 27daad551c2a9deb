/*
 * fuzz_bloom: bloom_check and bloom_may_contain on arbitrary filter bytes
 * (must never crash, and a malformed filter must answer "may contain"), and
 * the builder's no-false-negative property on keys from the input.
 * Input: u8 key length k (mod 64), k key bytes, then the filter bytes.
 */
#include "fuzz_common.h"
#include "sst/bloom.h"
#include "util/error.h"

/* One input: query it as a filter, build one from it. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    size_t k = data[0] % 64;
    if (1 + k > size) k = size - 1;
    slice_t key = slice_make(data + 1, k), filter = slice_make(data + 1 + k, size - 1 - k);
    int ok = bloom_check(filter) == TDB_OK;
    int hit = bloom_may_contain(filter, key);
    if (!ok && hit != 1) fuzz_fail("malformed filter answered 'absent'");
    for (size_t i = 0; i + 4 <= filter.size && i < 64; i += 4) bloom_may_contain(filter, slice_make(filter.data + i, 4));

    /* Builder: every added key must be reported present. */
    double fpr = 0.001 + (double)(data[0] % 50) / 100.0;
    bloom_builder_t *b = bloom_builder_create(fpr);
    if (!b) return 0;
    size_t nkeys = 0;
    for (size_t i = 1; i + 3 <= size && nkeys < 200; i += 3, nkeys++) bloom_builder_add(b, slice_make(data + i, 3));
    buf_t out = {0};
    if (bloom_builder_finish(b, &out) == TDB_OK) {
        if (bloom_check(buf_slice(&out)) != TDB_OK) fuzz_fail("built filter fails bloom_check");
        for (size_t i = 1, n = 0; i + 3 <= size && n < nkeys; i += 3, n++)
            if (!bloom_may_contain(buf_slice(&out), slice_make(data + i, 3))) fuzz_fail("bloom false negative");
    }
    buf_free(&out);
    bloom_builder_destroy(b);
    return 0;
}

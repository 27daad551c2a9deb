/*
 * fuzz_decompress: tdb_decompress for every codec on arbitrary bytes (must
 * fail cleanly, never allocate beyond max_out), and a round trip of what
 * decodes. Input: u8 codec (mod 5: 4 is an unknown codec), u8 log2 of
 * max_out (mod 24), then the compressed bytes.
 */
#include <string.h>

#include "fuzz_common.h"
#include "sst/compress.h"
#include "util/error.h"

/* One input: decompress with a codec, round-trip the result. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 2) return 0;
    int type = data[0] % 5;
    size_t max_out = (size_t)1 << (data[1] % 24);
    slice_t in = slice_make(data + 2, size - 2);
    buf_t out = {0};
    int rc = tdb_decompress(type, in, max_out, &out);
    if (rc == TDB_OK) {
        if (out.size > max_out) fuzz_fail("decompressed more than max_out");
        buf_t c = {0}, back = {0};
        if (tdb_compress(type, buf_slice(&out), &c) == TDB_OK) {
            if (tdb_decompress(type, buf_slice(&c), out.size, &back) != TDB_OK) fuzz_fail("round trip failed");
            if (back.size != out.size || (out.size && memcmp(back.data, out.data, out.size) != 0))
                fuzz_fail("round trip changed the data");
        }
        buf_free(&c);
        buf_free(&back);
    } else if (out.size != 0) {
        fuzz_fail("failed decompression changed the output size");
    }
    buf_free(&out);
    return 0;
}

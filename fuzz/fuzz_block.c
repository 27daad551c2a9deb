/*
 * fuzz_block: the block decoder (sst/block.h) over raw bytes, walked both
 * ways and sought. Input: mode byte (bit 0: internal-key comparator, else
 * bytewise), then the block.
 */
#include "fuzz_common.h"
#include "sst/block.h"
#include "sst/format.h"

static int bytewise(slice_t a, slice_t b) { return slice_compare(a, b); }

/* One input: walk and seek it as a block. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    block_iter_t it;
    block_iter_init(&it, (data[0] & 1) ? sst_key_cmp : bytewise);
    slice_t block = slice_make(data + 1, size - 1);
    uint64_t sink = 0;
    if (block_iter_set(&it, block) == TDB_OK) {
        size_t n = 0;
        for (block_iter_seek_to_first(&it); block_iter_valid(&it) && n < 100000; block_iter_next(&it), n++) {
            slice_t k = block_iter_key(&it), v = block_iter_value(&it);
            sink += fuzz_touch(k.data, k.size) + fuzz_touch(v.data, v.size);
            if (v.size && (v.data < block.data || v.data + v.size > block.data + block.size))
                fuzz_fail("block value outside the block");
        }
        size_t m = 0;
        for (block_iter_seek_to_last(&it); block_iter_valid(&it) && m < 100000; block_iter_prev(&it), m++) {
            slice_t k = block_iter_key(&it);
            sink += fuzz_touch(k.data, k.size);
        }
        /* Seek to a few targets taken from the input. */
        for (size_t i = 0; i < 4 && size > 2; i++) {
            size_t off = (size_t)data[1] * (i + 1) % (size - 1), len = (size - 1 - off) < 24 ? (size - 1 - off) : 24;
            block_iter_seek(&it, slice_make(block.data + off, len));
            if (block_iter_valid(&it)) {
                slice_t k = block_iter_key(&it);
                sink += fuzz_touch(k.data, k.size);
                block_iter_next(&it);
            }
        }
    }
    (void)sink;
    block_iter_free(&it);
    return 0;
}

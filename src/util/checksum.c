/* util/checksum: xxHash-based checksums. */
#include "util/checksum.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

static inline uint32_t mask(uint64_t h) {
    uint32_t c = (uint32_t)(h ^ (h >> 32));
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

uint32_t tdb_checksum(const void *p, size_t n) { return mask(XXH3_64bits(p, n)); }

uint32_t tdb_checksum2(const void *a, size_t an, const void *b, size_t bn) {
    XXH3_state_t st;
    XXH3_64bits_reset(&st);
    XXH3_64bits_update(&st, a, an);
    XXH3_64bits_update(&st, b, bn);
    return mask(XXH3_64bits_digest(&st));
}

uint64_t tdb_hash64(const void *p, size_t n, uint64_t seed) {
    return XXH3_64bits_withSeed(p, n, seed);
}

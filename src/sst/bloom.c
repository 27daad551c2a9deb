/*
 * sst/bloom: cache-line-blocked bloom filter.
 *
 * A key's 64-bit hash h = (h2 << 32 | h1) picks its block from h2
 * (multiply-shift range reduction over num_blocks), and its k probes inside
 * that 512-bit (64-byte) block from both halves: x0 = h1, x(i+1) =
 * x(i) * 0x9e3779b9 + h2 (mod 2^32), probe i = top 9 bits of x(i). So a query
 * touches one cache line.
 *
 * Why not plain double hashing (h1 + i*h2) mod 512: within a 512-bit block
 * its probes form an arithmetic progression and collide structurally; at
 * 100k keys it measured 1.34% for a 1% target and 0.31% for 0.1%, against
 * 1.16% / 0.16% for this remixed form, which matches the ideal (independent
 * probes) blocked-filter rate computed for 512-bit blocks.
 */
#include "sst/bloom.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "util/checksum.h"
#include "util/coding.h"
#include "util/error.h"

#define BLOOM_VERSION 1
#define BLOOM_BLOCK_BYTES 64
#define BLOOM_BLOCK_BITS 512
#define BLOOM_TRAILER 6 /* num_probes u8 | num_blocks fixed32 | version u8 */
#define BLOOM_SEED 0x7469646573626c6full /* "tidesblo" */

struct bloom_builder {
    double bits_per_key;
    int num_probes;
    uint64_t *hashes;
    size_t n, cap;
    uint64_t last_hash;
    int has_last;
};

/* Create a builder for a target false-positive rate fpr in (0,1). */
bloom_builder_t *bloom_builder_create(double fpr) {
    if (!(fpr > 0.0 && fpr < 1.0)) {
        tdb_err(TDB_ERR_INVALID_ARG, "bloom: fpr %g not in (0,1)", fpr);
        return NULL;
    }
    bloom_builder_t *b = (bloom_builder_t *)calloc(1, sizeof(*b));
    if (!b) return NULL;
    const double ln2 = 0.69314718055994530942;
    b->bits_per_key = -log(fpr) / (ln2 * ln2);
    long k = lround(b->bits_per_key * ln2);
    b->num_probes = (int)(k < 1 ? 1 : k > 30 ? 30 : k);
    return b;
}

/* Record the hash of user_key; a key hashing like the previous one (in
 * particular an equal consecutive key) adds nothing and is skipped. */
int bloom_builder_add(bloom_builder_t *b, slice_t user_key) {
    uint64_t h = tdb_hash64(user_key.data, user_key.size, BLOOM_SEED);
    if (b->has_last && h == b->last_hash) return TDB_OK;
    if (b->n == b->cap) {
        size_t ncap = b->cap ? b->cap * 2 : 256;
        uint64_t *p = (uint64_t *)realloc(b->hashes, ncap * sizeof(uint64_t));
        if (!p) return tdb_err(TDB_ERR_NOMEM, "bloom: %zu hashes", ncap);
        b->hashes = p;
        b->cap = ncap;
    }
    b->hashes[b->n++] = h;
    b->last_hash = h;
    b->has_last = 1;
    return TDB_OK;
}

/* Block index for hash h among num_blocks blocks. */
static inline uint32_t bloom_block(uint64_t h, uint32_t num_blocks) {
    return (uint32_t)(((h >> 32) * num_blocks) >> 32);
}

/* Set the k probe bits of h in block blk (512 bits at blk). */
static inline void bloom_set(unsigned char *blk, uint64_t h, int k) {
    uint32_t x = (uint32_t)h, h2 = (uint32_t)(h >> 32);
    for (int i = 0; i < k; i++) {
        uint32_t a = x >> 23;
        blk[a >> 3] |= (unsigned char)(1u << (a & 7));
        x = x * 0x9e3779b9u + h2;
    }
}

/* 1 if all k probe bits of h are set in block blk. */
static inline int bloom_test(const unsigned char *blk, uint64_t h, int k) {
    uint32_t x = (uint32_t)h, h2 = (uint32_t)(h >> 32);
    for (int i = 0; i < k; i++) {
        uint32_t a = x >> 23;
        if (!(blk[a >> 3] & (1u << (a & 7)))) return 0;
        x = x * 0x9e3779b9u + h2;
    }
    return 1;
}

/* Serialize the filter over all added keys, appending it to out. */
int bloom_builder_finish(bloom_builder_t *b, buf_t *out) {
    double bits = ceil((double)b->n * b->bits_per_key);
    double blocks = ceil(bits / BLOOM_BLOCK_BITS);
    if (blocks < 1) blocks = 1;
    if (blocks > (double)(UINT32_MAX / 2) || blocks * BLOOM_BLOCK_BYTES > (double)(SIZE_MAX / 2))
        return tdb_err(TDB_ERR_TOO_LARGE, "bloom: %zu keys", b->n);
    uint32_t nb = (uint32_t)blocks;
    size_t bytes = (size_t)nb * BLOOM_BLOCK_BYTES;
    TDB_RET(buf_reserve(out, bytes + BLOOM_TRAILER));
    unsigned char *base = (unsigned char *)out->data + out->size;
    memset(base, 0, bytes);
    for (size_t i = 0; i < b->n; i++) {
        uint64_t h = b->hashes[i];
        bloom_set(base + (size_t)bloom_block(h, nb) * BLOOM_BLOCK_BYTES, h, b->num_probes);
    }
    char *t = (char *)base + bytes;
    t[0] = (char)b->num_probes;
    enc_fixed32(t + 1, nb);
    t[5] = (char)BLOOM_VERSION;
    out->size += bytes + BLOOM_TRAILER;
    return TDB_OK;
}

/* Free a builder (NULL is fine). */
void bloom_builder_destroy(bloom_builder_t *b) {
    if (!b) return;
    free(b->hashes);
    free(b);
}

/* Parse and validate the trailer; on success sets *k and *nb. */
static int bloom_parse(slice_t f, int *k, uint32_t *nb) {
    if (f.size < BLOOM_TRAILER) return 0;
    const char *t = f.data + f.size - BLOOM_TRAILER;
    if ((unsigned char)t[5] != BLOOM_VERSION) return 0;
    int probes = (unsigned char)t[0];
    if (probes < 1 || probes > 30) return 0;
    uint32_t blocks = dec_fixed32(t + 1);
    if (blocks == 0) return 0;
    if ((uint64_t)blocks * BLOOM_BLOCK_BYTES != (uint64_t)(f.size - BLOOM_TRAILER)) return 0;
    *k = probes;
    *nb = blocks;
    return 1;
}

/* May the filter contain user_key? Malformed filters answer 1. */
int bloom_may_contain(slice_t filter, slice_t user_key) {
    int k;
    uint32_t nb;
    if (!bloom_parse(filter, &k, &nb)) return 1;
    uint64_t h = tdb_hash64(user_key.data, user_key.size, BLOOM_SEED);
    const unsigned char *blk =
        (const unsigned char *)filter.data + (size_t)bloom_block(h, nb) * BLOOM_BLOCK_BYTES;
    return bloom_test(blk, h, k);
}

/* Validate a serialized filter's structure. */
int bloom_check(slice_t filter) {
    int k;
    uint32_t nb;
    if (!bloom_parse(filter, &k, &nb))
        return tdb_err(TDB_ERR_CORRUPTION, "bloom filter: malformed (%zu bytes)", filter.size);
    return TDB_OK;
}

/*
 * sst/bloom: a whole-table bloom filter over user keys.
 *
 * Cache-line blocked: each key maps to one 64-byte block (512 bits) and all
 * of its probes fall inside that block, all derived from one 64-bit hash
 * (tdb_hash64; remixed double hashing, see bloom.c). Serialized format:
 *
 *   bit array (num_blocks * 64 bytes) | num_probes u8 | num_blocks fixed32 | version u8
 *
 * Invariants
 *  - No false negatives: every key added to a builder is reported by
 *    bloom_may_contain on the finished filter.
 *  - bloom_may_contain never trusts the filter bytes: anything malformed
 *    (wrong size, bad probe count, unknown version) answers 1 ("may
 *    contain"), never a false negative and never an out-of-bounds read.
 *  - A builder is owned by one thread; a serialized filter is immutable and
 *    may be queried concurrently.
 */
#ifndef TDB_SST_BLOOM_H
#define TDB_SST_BLOOM_H

#include "util/slice.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bloom_builder bloom_builder_t;

/* fpr in (0,1): bits/key = -ln(fpr)/ln(2)^2, k = round(bits*ln2) clamp 1..30. NULL on OOM/bad fpr. */
bloom_builder_t *bloom_builder_create(double fpr);
/* Stores the 64-bit hash only (tdb_hash64), dedupes consecutive equal keys. */
int bloom_builder_add(bloom_builder_t *b, slice_t user_key);
/* Serialized filter appended to out. The builder may then be destroyed. */
int bloom_builder_finish(bloom_builder_t *b, buf_t *out);
void bloom_builder_destroy(bloom_builder_t *b);
/* Query a serialized filter (zero-copy over the bytes). Malformed filter
 * bytes -> returns 1 (may contain): never a false negative, never a crash. */
int bloom_may_contain(slice_t filter, slice_t user_key);
/* Validate a serialized filter's structure: TDB_OK or TDB_ERR_CORRUPTION. */
int bloom_check(slice_t filter);

#ifdef __cplusplus
}
#endif
#endif

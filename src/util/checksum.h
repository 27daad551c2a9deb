/*
 * util/checksum: the checksum on every persistent record and block, and the
 * hash used by bloom filters and cache sharding. Both come from xxHash
 * (XXH3), the system library.
 *
 * Stored checksums are masked (rotated and offset) so that a checksum of
 * data that itself embeds checksums does not degenerate.
 */
#ifndef TDB_UTIL_CHECKSUM_H
#define TDB_UTIL_CHECKSUM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* 32-bit masked checksum of [p, p+n). */
uint32_t tdb_checksum(const void *p, size_t n);
/* Checksum of two consecutive pieces, as if concatenated. */
uint32_t tdb_checksum2(const void *a, size_t an, const void *b, size_t bn);
/* 64-bit hash for bloom filters and sharding (seeded). */
uint64_t tdb_hash64(const void *p, size_t n, uint64_t seed);

#ifdef __cplusplus
}
#endif
#endif

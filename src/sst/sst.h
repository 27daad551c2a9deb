/*
 * sst: sorted string tables, the immutable files of the LSM tree.
 *
 * File layout (format version 1; all integers little-endian; full detail in
 * docs/design/sst.md):
 *
 *   [value record | data block]*   interleaved, in the order written
 *   filter block                   (absent if bloom_fpr <= 0)
 *   index block
 *   properties block
 *   footer                         64 bytes
 *
 * Every record (value record, data, filter, index, properties block) is
 * stored as `payload || type u8 || fixed32 tdb_checksum(payload || type)`.
 * type is the TDB_COMPRESS_* codec of the payload; a payload is compressed
 * only if that saves >= 12.5% (else stored raw, type NONE). Filter, index
 * and properties blocks are always raw.
 *
 * Data block (uncompressed):
 *   entry*  : varint32 shared | varint32 non_shared | varint32 value_len |
 *             key[shared..] (non_shared bytes) | value (value_len bytes)
 *   restarts: fixed32 offset * num_restarts | fixed32 num_restarts
 *   A restart point every 16 entries (entries at a restart have shared = 0);
 *   restart[0] = 0 and restarts are strictly increasing. Keys are internal
 *   keys, strictly increasing by ikey_compare (flag ignored, see below).
 *
 * Separated values: a put (KT_PUT, KT_PUT_TTL) whose value is >=
 *   value_threshold bytes (threshold > 0) is written as a value record
 *   (payload = the value, compressed per the codec if it saves) before the
 *   data block that references it. The entry's key has type |= 0x80 and its
 *   value is varint64 record offset | varint32 stored size | varint32 raw
 *   size. The flag never leaves this module: keys returned by readers and
 *   iterators have it cleared and values are resolved.
 *
 * Index block: same block format; one entry per data block, in order.
 *   key = separator S with last_key(block) <= S < first_key(next block)
 *   (user key shortened by ikey_user_separator + (SEQ_MAX, KT_SEEK) when that
 *   makes it shorter, else the last key itself), value = varint64 offset |
 *   varint64 size (payload size, excluding the trailer).
 *
 * Filter block: bloom filter (sst/bloom.h) over every user key.
 *
 * Properties block: a sequence of (varint32 tag, value). tag = field << 1 |
 *   wire, wire 0 = varint64, wire 1 = varint32 length + bytes. Unknown
 *   fields are skipped, so fields can be added without a version bump.
 *
 * Range-deletion block (optional, between the data and the filter; raw,
 *   same block format): keys (start, seq, KT_RANGE_DELETE) strictly
 *   increasing, values = end (exclusive); located by properties field 17
 *   (varint64 offset | varint64 size), counted by num_range_deletes. The
 *   table's smallest/largest keys and min/max_seq include the tombstones
 *   (bounds: sst/range_del.h).
 *
 * Footer (64 bytes): index handle, filter handle, properties handle (each
 *   fixed64 offset + fixed64 size) | fixed32 format version | fixed32
 *   tdb_checksum of the preceding 52 bytes | fixed64 magic.
 *
 * Invariants
 *  - A finished file is immutable. Every byte of it is covered by a
 *    checksum (records by their trailer, the footer by its own checksum), so
 *    any flipped byte is reported as TDB_ERR_CORRUPTION by open, a read, an
 *    iterator or sst_reader_verify.
 *  - A reader never trusts the file: every offset and length is
 *    bounds-checked against the file size before use; decompressed sizes are
 *    bounded by the recorded maximum; errors name the file and offset.
 *  - Builders are owned by one thread. A reader is shared: get, iter,
 *    may_contain and verify may run concurrently from many threads; its
 *    in-memory state (index, filter, properties) is immutable after open and
 *    its refcount is atomic. Iterators belong to one thread each.
 *  - Block cache entries are keyed (file_number, record offset) and hold the
 *    decoded payload (sst_block_cache_deleter frees them); the caller must
 *    not reuse a file number for different contents within one cache.
 */
#ifndef TDB_SST_SST_H
#define TDB_SST_SST_H

#include <stdint.h>

#include "cache/cache.h"
#include "env/env.h"
#include "sst/range_del.h"
#include "util/iter.h"
#include "util/slice.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sst_options {
    int compression;          /* TDB_COMPRESS_* */
    uint32_t block_size;      /* target uncompressed data block size (default 4096; 0 = default) */
    double bloom_fpr;         /* 0 = no filter */
    uint32_t value_threshold; /* values >= this are separated; 0 = never */
} sst_options_t;

typedef struct sst_props {
    uint64_t num_entries, num_deletes, num_range_deletes, raw_key_bytes, raw_value_bytes,
        num_separated_values, data_bytes, file_size, min_seq, max_seq;
    buf_t smallest, largest; /* internal keys, owned */
    int compression;
} sst_props_t;

/* Release the buffers owned by p (the struct itself is not freed). */
void sst_props_free(sst_props_t *p);
/* Deep copy src into dst (dst is overwritten, not freed first). */
int sst_props_copy(sst_props_t *dst, const sst_props_t *src);

/* Deleter to pass to lru_cache_create for a cache used as block cache. */
void sst_block_cache_deleter(void *value, void *ctx);

typedef struct sst_builder sst_builder_t;

/* Create the file at path (truncating) and start a table. */
int sst_builder_open(env_t *env, const char *path, const sst_options_t *opt, sst_builder_t **out);
/* Add an entry; ikeys strictly increasing (else TDB_ERR_INVALID_ARG); type
 * byte must be <= KT_MAX_VALID. After any error the builder is unusable
 * (later calls return the same error); abandon it. */
int sst_builder_add(sst_builder_t *b, slice_t ikey, slice_t value);
/* Buffer a range tombstone deleting user keys [start, end) below seq
 * (start non-empty, start < end, else TDB_ERR_INVALID_ARG; sticky like
 * add). Any order; written at finish as the range-deletion block. Two
 * tombstones with equal (start, seq) fail the finish. */
int sst_builder_add_range_del(sst_builder_t *b, slice_t start, slice_t end, uint64_t seq);
/* Bytes written + buffered: for splitting outputs. */
uint64_t sst_builder_file_size(const sst_builder_t *b);
uint64_t sst_builder_num_entries(const sst_builder_t *b);
/* Write filter, index, properties and footer, fsync, close. Fills *props
 * (caller frees with sst_props_free; may be NULL). Frees b, also on error. */
int sst_builder_finish(sst_builder_t *b, sst_props_t *props);
/* Close without finishing (the caller deletes the file). Frees b. */
void sst_builder_abandon(sst_builder_t *b);

typedef struct sst_reader sst_reader_t;

/* Open: read and verify footer, index, filter and properties (kept in
 * memory). cache may be NULL; data blocks and value records go through the
 * cache keyed (file_number, offset) with charge = decoded size. Refcount
 * starts at 1. */
int sst_reader_open(env_t *env, const char *path, uint64_t file_number, lru_cache_t *block_cache,
                    sst_reader_t **out);
/* Read data blocks that were read once already through a read-only
 * mapping of the file instead of pread (no system call, no copy; still
 * checksum-verified). First reads keep using pread, so a block that cannot
 * be read fails with an error, not SIGBUS. A no-op if the env cannot map.
 * Call right after open, before the reader is shared. On failure the
 * reader is unchanged (pread only). */
int sst_reader_map(sst_reader_t *r);
void sst_reader_ref(sst_reader_t *r);
/* Drop a reference; closes the file and frees the reader at zero. */
void sst_reader_unref(sst_reader_t *r);
const sst_props_t *sst_reader_props(const sst_reader_t *r);
uint64_t sst_reader_file_number(const sst_reader_t *r);
const char *sst_reader_path(const sst_reader_t *r);
/* 0 if the bloom filter excludes user_key, else 1. */
int sst_reader_may_contain(const sst_reader_t *r, slice_t user_key);
/* Newest entry for user_key with seq <= snap_seq: returns 1 and sets *type
 * (flag stripped), *seq, and copies the value into *value (buf_clear then
 * append); 0 if absent (bloom checked first); negative TDB_ERR_* on error. */
int sst_reader_get(sst_reader_t *r, slice_t user_key, uint64_t snap_seq, unsigned *type, uint64_t *seq,
                   buf_t *value);
/* Iterator over all entries (internal keys, separated values resolved
 * lazily on value()), both directions, seek. Holds a reader ref. On a
 * damaged block (or a failed value resolution) it becomes invalid with
 * status CORRUPTION. NULL only on allocation failure. */
iter_t *sst_reader_iter(sst_reader_t *r);
/* The same for one pass over the table (compaction's inputs): it uses the
 * blocks the cache holds but does not insert those it reads, so the pass
 * does not push the readers' blocks out of the cache for blocks of a
 * table about to be deleted. */
iter_t *sst_reader_scan_iter(sst_reader_t *r);
/* The table's range tombstones, sorted by start then seq descending
 * (borrowed: valid while the caller holds a reference). Returns the count. */
size_t sst_reader_range_dels(const sst_reader_t *r, const range_del_t **out);
/* Highest sequence <= snap_seq of a range tombstone of this table covering
 * user_key, 0 if none. One binary search (fragments built at open). */
uint64_t sst_reader_range_del_seq(const sst_reader_t *r, slice_t user_key, uint64_t snap_seq);
/* Approximate number of entries with user key in [lo, hi) (NULL: no
 * bound), for query planning. A range within one or two data blocks is
 * counted in them (read through the cache); a longer one comes from the
 * in-memory block index alone: the blocks between the bounds, edge blocks
 * interpolated on key prefixes, times the mean entries per block. */
uint64_t sst_reader_approx_entries(sst_reader_t *r, const slice_t *lo, const slice_t *hi);
/* Verify every block and value record checksum and the key order (reads
 * from disk, bypassing the cache): TDB_OK or CORRUPTION with detail. */
int sst_reader_verify(sst_reader_t *r);
/* Data blocks and value records read from disk by this reader so far
 * (pread or mapping), those of them read through the mapping, and of
 * these the reads slower than a read from memory (they pause the mapping:
 * sst_reader.c). */
uint64_t sst_reader_disk_reads(const sst_reader_t *r);
uint64_t sst_reader_map_reads(const sst_reader_t *r);
uint64_t sst_reader_map_slow(const sst_reader_t *r);

#ifdef __cplusplus
}
#endif
#endif

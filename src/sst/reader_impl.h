/*
 * sst/reader_impl: the reader's private state, shared by the files of one
 * idea (sst_reader.c: open, point lookups, properties; sst_iter.c: the
 * iterator; sst_verify.c: verification). Private to src/sst, and C only
 * (it holds atomics). Invariants: at the top of sst/sst_reader.c.
 */
#ifndef TDB_SST_READER_IMPL_H
#define TDB_SST_READER_IMPL_H

#include <stdatomic.h>
#include <stddef.h>
#include <string.h>

#include "sst/block.h"
#include "sst/format.h"
#include "sst/range_del.h"
#include "sst/sst.h"
#include "util/ikey.h"

/* Decoded record payload: the block cache's value type. One allocation:
 * the payload follows the header (data == (char *)(block + 1)), so a
 * cached block costs one malloc and one fewer cache miss to reach. */
typedef struct sst_block {
    char *data;
    size_t size;
    size_t cap; /* of the whole allocation, from the block pool */
    /* The block cache's entry for it (lru_cache_insert_embedded): with the
     * buffer on a 64-byte boundary, a cache hit and the first look at the
     * block touch one cache line instead of two. */
    uint64_t handle[LRU_HANDLE_SPACE / 8];
} sst_block_t;

/* A loaded record: either pinned in the cache (h) or owned (h == NULL). */
typedef struct block_ref {
    sst_block_t *blk;
    lru_handle_t *h;
} block_ref_t;

typedef struct idx_entry {
    const char *key;
    uint32_t key_len;
    uint64_t offset, size;
} idx_entry_t;

struct sst_reader {
    env_t *env;
    env_file_t *file;
    char *path;
    uint64_t file_number;
    lru_cache_t *cache;
    atomic_int refs;
    atomic_uint_fast64_t disk_reads;
    uint64_t file_size;
    uint64_t data_end;
    sst_props_t props;
    sst_props_ext_t ext;
    idx_entry_t *idx;
    size_t nblocks;
    char *idx_keys;
    uint64_t *idx_pfx;  /* per entry: 8 user-key bytes after idx_lcp, big-endian */
    uint64_t *idx_top;  /* idx_pfx[j * IDX_TOP_STRIDE] for each j < ntop */
    size_t ntop;
    size_t idx_lcp;     /* user-key prefix shared by every index key */
    char *filter;
    size_t filter_size;
    rd_list_t rdl;  /* range tombstones */
    rd_frags_t rdf; /* ... fragmented (all sequences, or the top one) */
    int rd_top_only;
    const char *map;              /* [0, data_end) mapped, or NULL */
    _Atomic unsigned char *seen;  /* per data block: read once with pread */
    atomic_uint_fast64_t map_reads;
    atomic_uint_fast64_t map_slow; /* ...of them, found not in memory */
    /* Mapped reads that fault to the disk (sst_reader.c, invariants):
     * misses of seen blocks left to pread before the mapping is tried
     * again, and the length of the last such pause (0: mapping). */
    atomic_int map_skip;
    atomic_int map_pause;
};

/* Unpin or free a loaded record. */
void sst_ref_release(const sst_reader_t *r, block_ref_t *ref);
/* Re-raise the current thread's error detail prefixed with file and offset. */
int sst_wrap_err(const sst_reader_t *r, int rc, const char *what, uint64_t off);
/* How a read uses the block cache (the use_cache arguments below). */
enum {
    SST_CACHE_NONE = 0, /* straight from the file */
    SST_CACHE_FILL = 1, /* look up; a block read from the file is inserted */
    SST_CACHE_PEEK = 2, /* look up; a block read from the file is not (a
                           one-pass scan: compaction) */
};

/* Data block i read from the file (the miss path of sst_load_data_block),
 * inserted into the block cache when use_cache is SST_CACHE_FILL. */
int sst_read_data_block(sst_reader_t *r, size_t i, int use_cache, block_ref_t *ref);

/* The block a cache handle pins: every block is cached with its entry
 * embedded in it (lru_cache_insert_embedded on blk->handle), so this is
 * the value lru_handle_value would return, without the call. */
static inline sst_block_t *sst_block_of_handle(lru_handle_t *h) {
    return (sst_block_t *)(void *)((char *)h - offsetof(sst_block_t, handle));
}

/* Pin the cached record at file offset off into *ref; 0 if not cached. */
static inline int sst_cache_lookup(sst_reader_t *r, uint64_t off, block_ref_t *ref) {
    lru_handle_t *h = r->cache ? lru_cache_lookup(r->cache, r->file_number, off) : NULL;
    if (!h) return 0;
    ref->h = h;
    ref->blk = sst_block_of_handle(h);
    return 1;
}

/* Load data block i of the index: through the cache unless use_cache is
 * SST_CACHE_NONE (inserted only with SST_CACHE_FILL). The
 * hit path is inline, so a scan's block-to-block step (sst_iter.c, its
 * main caller) costs no call into sst_reader.c and folds use_cache. */
static inline int sst_load_data_block(sst_reader_t *r, size_t i, int use_cache, block_ref_t *ref) {
    if (use_cache && sst_cache_lookup(r, r->idx[i].offset, ref)) return TDB_OK;
    return sst_read_data_block(r, i, use_cache, ref);
}
/* Resolve a separated value reference into *out (buf_clear then append). */
int sst_resolve_value(sst_reader_t *r, slice_t refv, int use_cache, uint64_t block_off, buf_t *out);
/* Check a metadata handle lies in [0, limit) and read it (raw only). */
int sst_read_meta(sst_reader_t *r, sst_handle_t h, uint64_t limit, const char *what, char **out);
/* Decode and check a range-deletion block into *out (appending). */
int sst_parse_range_dels(const sst_reader_t *r, slice_t blk, uint64_t off, rd_list_t *out);

/* Big-endian value of up to 8 bytes of u starting at off, zero-padded:
 * if two such values differ, the user keys (sharing u[0, off)) compare
 * the same way. */
static inline uint64_t key_prefix(slice_t u, size_t off) {
    unsigned char b[8] = {0};
    if (u.size > off) memcpy(b, u.data + off, u.size - off < 8 ? u.size - off : 8);
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | b[i];
    return v;
}

/* Index entries per sample of the top-level prefix array. */
#define IDX_TOP_STRIDE 16

/* Separator of index entry i compared with target, given the entry's
 * prefix; the prefix decides unless it ties (or use_pfx is 0). */
static inline int index_cmp(const sst_reader_t *r, size_t i, uint64_t pfx, int use_pfx, uint64_t tp,
                            slice_t target) {
    if (use_pfx && pfx != tp) return pfx < tp ? -1 : 1;
    return sst_key_cmp(slice_make(r->idx[i].key, r->idx[i].key_len), target);
}

/* Index of the first block whose separator is >= target (nblocks if none).
 * Two levels: a binary search of the small sample array idx_top (every
 * IDX_TOP_STRIDE-th prefix, cache-resident across lookups) picks a run of
 * at most IDX_TOP_STRIDE - 1 entries, searched in idx_pfx; so a lookup
 * touches a couple of cache lines of the big arrays instead of one per
 * step. Full keys are compared only on prefix ties. */
static inline size_t index_lower_bound(const sst_reader_t *r, slice_t target) {
    if (r->nblocks == 0) return 0;
    slice_t tu = target.size >= IKEY_TRAILER ? ikey_user(target) : slice_make(NULL, 0);
    int use_pfx = target.size >= IKEY_TRAILER && tu.size >= r->idx_lcp &&
                  (r->idx_lcp == 0 || memcmp(tu.data, r->idx[0].key, r->idx_lcp) == 0);
    uint64_t tp = use_pfx ? key_prefix(tu, r->idx_lcp) : 0;
    /* First sample j whose entry is >= target: the answer is in
     * ((j - 1) * STRIDE, j * STRIDE] (clipped to nblocks). */
    size_t lo = 0, hi = r->ntop;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (index_cmp(r, mid * IDX_TOP_STRIDE, r->idx_top[mid], use_pfx, tp, target) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t end = lo < r->ntop ? lo * IDX_TOP_STRIDE : r->nblocks;
    hi = end;
    lo = lo > 0 ? (lo - 1) * IDX_TOP_STRIDE + 1 : 0;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (index_cmp(r, mid, r->idx_pfx[mid], use_pfx, tp, target) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Validate a stored key's trailer: type (flag stripped) must be known, the
 * flag only on value types. Returns the stripped type or -1. */
static inline int stored_key_type(slice_t k) {
    if (k.size < IKEY_TRAILER) return -1;
    unsigned t = (unsigned char)k.data[k.size - IKEY_TRAILER];
    unsigned base = t & ~SST_KT_SEPARATED;
    if (base > KT_MAX_VALID) return -1;
    if ((t & SST_KT_SEPARATED) && !kt_is_value(base)) return -1;
    return (int)base;
}

#endif

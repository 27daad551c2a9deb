/*
 * sst/sst_reader: opening, point lookups, iteration and verification of one
 * SSTable (layout in sst/sst.h).
 *
 * Invariants
 *  - After open (and sst_reader_map, before the reader is shared),
 *    everything in sst_reader_t except `refs`, `disk_reads`, `map_reads`
 *    and the `seen` bytes (atomics) is immutable, so any number of threads
 *    may call get/iter/may_contain/verify concurrently. The env file
 *    supports concurrent pread; the block cache is internally locked.
 *  - Mapped reads (sst_reader_map): a data block is read through the
 *    mapping only once `seen[i]` is set, which happens after a pread of it
 *    succeeded; first reads, value records and verify always use pread.
 *    So a cold block costs one read of exactly its pages (a fault per page
 *    would not), and a page that cannot be read at all fails a pread with
 *    an error before it is ever touched through the mapping (SIGBUS). A
 *    block read through the mapping is checksum-verified like any other.
 *  - The index is decoded at open into `idx` (keys in `idx_keys`), checked
 *    to be strictly increasing, with block handles strictly increasing,
 *    non-overlapping and inside [0, data_end), data_end = start of the
 *    metadata blocks.
 *  - A block or value record is used only after its trailer checksum was
 *    verified and its decoded size bounded (data blocks by the recorded
 *    max_block_raw, value records by their recorded raw size).
 *  - Cache values are sst_block_t objects: the decoded payload right after
 *    its header (which holds the cache entry itself) in one 64-byte aligned
 *    buffer of the block pool (sst/block_pool.h), given back by
 *    sst_block_cache_deleter and charged to the cache at the buffer's
 *    capacity. A pinned handle keeps one alive.
 *  - The range-deletion block (if any) is read, checked and decoded at open
 *    into `rdl` (sorted by start, then seq descending, each inside the
 *    table's [smallest, largest] bounds, sequences inside [min_seq,
 *    max_seq]) and fragmented into `rdf` (all sequences kept), so lookups
 *    at any snapshot are one binary search. data_end excludes the block.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sst/block.h"
#include "sst/block_pool.h"
#include "sst/bloom.h"
#include "sst/compress.h"
#include "sst/format.h"
#include "sst/range_del.h"
#include "sst/sst.h"
#include "util/coding.h"
#include "util/error.h"
#include "util/pinned.h"

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
};

/* Free a decoded record (header and payload are one allocation). */
static void block_free(sst_block_t *b) {
    if (b) block_pool_put(b, b->cap);
}

/* Cache deleter: frees an sst_block_t. */
void sst_block_cache_deleter(void *value, void *ctx) {
    (void)ctx;
    block_free((sst_block_t *)value);
}

/* Unpin or free a loaded record. */
static void ref_release(const sst_reader_t *r, block_ref_t *ref) {
    if (ref->h)
        lru_cache_release(r->cache, ref->h);
    else
        block_free(ref->blk);
    ref->h = NULL;
    ref->blk = NULL;
}

/* Re-raise the current thread's error detail prefixed with file and offset. */
static int wrap_err(const sst_reader_t *r, int rc, const char *what, uint64_t off) {
    char detail[256];
    snprintf(detail, sizeof detail, "%s", tdb_last_error());
    return tdb_err(rc, "%s: %s at offset %llu: %s", r->path, what, (unsigned long long)off, detail);
}

/* Approximate malloc bookkeeping per allocation, charged to the cache. */
#define SST_ALLOC_OVERHEAD 16

/* Check that a record of `size` payload bytes plus trailer at off lies in
 * [0, end) before anything is allocated for it. */
static int record_in_bounds(const sst_reader_t *r, uint64_t off, uint64_t size, uint64_t end, const char *what) {
    if (size > end || end - size < SST_TRAILER_SIZE || off > end - size - SST_TRAILER_SIZE)
        return tdb_err(TDB_ERR_CORRUPTION, "%s: %s at offset %llu size %llu: outside the file (%llu bytes)", r->path,
                       what, (unsigned long long)off, (unsigned long long)size, (unsigned long long)r->file_size);
    return TDB_OK;
}

/* Read size + trailer bytes at off into dst and verify the trailer. */
static int read_checked(sst_reader_t *r, uint64_t off, uint64_t size, const char *what, char *dst, unsigned *type) {
    TDB_RET(env_read_exact(r->file, off, dst, (size_t)size + SST_TRAILER_SIZE, r->path));
    return sst_check_record(dst, size, type, r->path, what, off);
}

/* Read and verify a raw record of `size` payload bytes at off within
 * [0, end) into a buffer from pinned_alloc (metadata at open; the filter
 * is kept as read). */
static int read_raw(sst_reader_t *r, uint64_t off, uint64_t size, uint64_t end, const char *what, char **buf,
                    unsigned *type) {
    int rc = TDB_OK;
    char *p = NULL;
    TRY(record_in_bounds(r, off, size, end, what));
    p = (char *)pinned_alloc((size_t)size + SST_TRAILER_SIZE);
    if (!p) RAISE(TDB_ERR_NOMEM, "%s: %s of %llu bytes", r->path, what, (unsigned long long)size);
    TRY(read_checked(r, off, size, what, p, type));
    *buf = p;
    return TDB_OK;
err:
    pinned_free(p);
    return rc;
}

/* Per-thread buffer that stored records are read into before they are
 * decoded into their own allocation: a block miss then costs one malloc
 * (the block) instead of a read buffer, a growing decode buffer and a
 * shrinking realloc, which contend on malloc's arena locks when several
 * threads read. Buffers above SCRATCH_KEEP are not kept. */
#define SCRATCH_KEEP (256u << 10)

typedef struct scratch {
    char *p;
    size_t cap;
} scratch_t;

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_ok;

static void scratch_free(void *v) {
    scratch_t *s = (scratch_t *)v;
    free(s->p);
    free(s);
}

static void scratch_init(void) { scratch_ok = pthread_key_create(&scratch_key, scratch_free) == 0; }

/* This thread's scratch buffer, created on first use; NULL if none can be kept. */
static scratch_t *thread_scratch(void) {
    pthread_once(&scratch_once, scratch_init);
    if (!scratch_ok) return NULL;
    scratch_t *s = (scratch_t *)pthread_getspecific(scratch_key);
    if (!s && (s = (scratch_t *)calloc(1, sizeof *s)) && pthread_setspecific(scratch_key, s) != 0) {
        free(s);
        s = NULL;
    }
    return s;
}

/* n bytes to read into: this thread's buffer, or a malloc the caller must
 * free (*owned) when n is large or no buffer can be kept. NULL: no memory. */
static char *scratch_get(size_t n, char **owned) {
    *owned = NULL;
    scratch_t *s = n <= SCRATCH_KEEP ? thread_scratch() : NULL;
    if (!s) return *owned = (char *)malloc(n ? n : 1);
    if (s->cap < n) {
        size_t cap = s->cap ? s->cap : 16384;
        while (cap < n) cap *= 2;
        char *p = (char *)realloc(s->p, cap);
        if (!p) return NULL;
        s->p = p;
        s->cap = cap;
    }
    return s->p;
}

/* Read, verify and decode the record at (off, size): decoded size <= max_raw.
 * blk: its data block index, or -1 for a value record (never mapped). The
 * block (header and payload) is allocated once, at its exact size. */
static int read_record(sst_reader_t *r, long blk, uint64_t off, uint64_t size, uint64_t max_raw, const char *what,
                       sst_block_t **out) {
    int rc = TDB_OK;
    char *owned = NULL, *raw;
    unsigned type;
    size_t n = 0;
    const size_t hdr = sizeof(sst_block_t);
    sst_block_t *b = NULL;
    TRY(record_in_bounds(r, off, size, r->data_end, what));
    if (blk >= 0 && r->map && atomic_load_explicit(&r->seen[blk], memory_order_relaxed)) {
        raw = (char *)r->map + off; /* in [0, data_end): record_in_bounds */
        TRY(sst_check_record(raw, size, &type, r->path, what, off));
        atomic_fetch_add_explicit(&r->map_reads, 1, memory_order_relaxed);
    } else {
        raw = scratch_get((size_t)size + SST_TRAILER_SIZE, &owned);
        if (!raw) RAISE(TDB_ERR_NOMEM, "%s: %s of %llu bytes", r->path, what, (unsigned long long)size);
        TRY(read_checked(r, off, size, what, raw, &type));
        if (blk >= 0 && r->map) atomic_store_explicit(&r->seen[blk], 1, memory_order_relaxed);
    }
    atomic_fetch_add_explicit(&r->disk_reads, 1, memory_order_relaxed);
    slice_t in = slice_make(raw, (size_t)size);
    if ((rc = tdb_decompressed_length((int)type, in, &n)) != TDB_OK) {
        rc = wrap_err(r, rc, what, off);
        goto err;
    }
    if (n > max_raw)
        RAISE(TDB_ERR_CORRUPTION, "%s: %s at offset %llu: size %llu above maximum %llu", r->path, what,
              (unsigned long long)off, (unsigned long long)n, (unsigned long long)max_raw);
    size_t cap;
    b = (sst_block_t *)block_pool_get(hdr + n + 1, &cap); /* +1: room tdb_decompress reserves */
    if (!b) RAISE(TDB_ERR_NOMEM, "%s: %s of %zu bytes", r->path, what, n);
    b->cap = cap;
    if (type == TDB_COMPRESS_NONE) {
        memcpy(b + 1, raw, n);
    } else {
        buf_t dec = {(char *)b, hdr, hdr + n + 1}; /* exact: never grows */
        if ((rc = tdb_decompress((int)type, in, (size_t)max_raw, &dec)) != TDB_OK) {
            rc = wrap_err(r, rc, what, off);
            goto err;
        }
    }
    b->size = n;
    b->data = (char *)(b + 1);
    *out = b;
    b = NULL;
err:
    block_free(b);
    free(owned);
    return rc;
}

/* Get a decoded record through the block cache (or straight from disk). */
static int load_record(sst_reader_t *r, long blk, uint64_t off, uint64_t size, uint64_t max_raw, int use_cache,
                       const char *what, block_ref_t *ref) {
    ref->h = NULL;
    ref->blk = NULL;
    if (use_cache && r->cache) {
        lru_handle_t *h = lru_cache_lookup(r->cache, r->file_number, off);
        if (h) {
            ref->h = h;
            ref->blk = (sst_block_t *)lru_handle_value(h);
            return TDB_OK;
        }
    }
    TDB_RET(read_record(r, blk, off, size, max_raw, what, &ref->blk));
    if (use_cache && r->cache) {
        /* Charge the allocation too, not only the decoded bytes. */
        ref->h = lru_cache_insert_embedded(r->cache, r->file_number, off, ref->blk, ref->blk->cap + SST_ALLOC_OVERHEAD,
                                           ref->blk->handle);
    }
    return TDB_OK;
}

/* Load data block i of the index. */
static int load_data_block(sst_reader_t *r, size_t i, int use_cache, block_ref_t *ref) {
    return load_record(r, (long)i, r->idx[i].offset, r->idx[i].size, r->ext.max_block_raw, use_cache, "data block", ref);
}

/* Resolve a separated value reference into *out (buf_clear then append). */
static int resolve_value(sst_reader_t *r, slice_t refv, int use_cache, uint64_t block_off, buf_t *out) {
    int rc = TDB_OK;
    block_ref_t ref = {0};
    uint64_t off;
    uint32_t stored, raw;
    const char *p = refv.data, *limit = refv.data + refv.size;
    if (!(p = dec_varint64(p, limit, &off)) || !(p = dec_varint32(p, limit, &stored)) ||
        !(p = dec_varint32(p, limit, &raw)) || p != limit)
        RAISE(TDB_ERR_CORRUPTION, "%s: data block at offset %llu: bad value reference", r->path,
              (unsigned long long)block_off);
    /* A value record is written before the block that references it. */
    if (off >= block_off)
        RAISE(TDB_ERR_CORRUPTION, "%s: data block at offset %llu: value reference %llu not before it", r->path,
              (unsigned long long)block_off, (unsigned long long)off);
    TRY(load_record(r, -1, off, stored, raw, use_cache, "value record", &ref));
    if (ref.blk->size != raw)
        RAISE(TDB_ERR_CORRUPTION, "%s: value record at offset %llu: size %zu, expected %u", r->path,
              (unsigned long long)off, ref.blk->size, raw);
    buf_clear(out);
    TRY(buf_append(out, ref.blk->data, ref.blk->size));
err:
    if (ref.blk) ref_release(r, &ref);
    return rc;
}

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
static size_t index_lower_bound(const sst_reader_t *r, slice_t target) {
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
static int stored_key_type(slice_t k) {
    if (k.size < IKEY_TRAILER) return -1;
    unsigned t = (unsigned char)k.data[k.size - IKEY_TRAILER];
    unsigned base = t & ~SST_KT_SEPARATED;
    if (base > KT_MAX_VALID) return -1;
    if ((t & SST_KT_SEPARATED) && !kt_is_value(base)) return -1;
    return (int)base;
}

/* ---------------------------------------------------------------------- */
/* Open / close                                                            */
/* ---------------------------------------------------------------------- */

/* Check a metadata handle lies in [0, limit) and read it (raw only). */
static int read_meta(sst_reader_t *r, sst_handle_t h, uint64_t limit, const char *what, char **out) {
    int rc = TDB_OK;
    unsigned type;
    char *p = NULL;
    TRY(read_raw(r, h.offset, h.size, limit, what, &p, &type));
    if (type != TDB_COMPRESS_NONE)
        RAISE(TDB_ERR_CORRUPTION, "%s: %s at offset %llu: compressed metadata not supported", r->path, what,
              (unsigned long long)h.offset);
    *out = p;
    return TDB_OK;
err:
    pinned_free(p);
    return rc;
}

/* Decode and check the index block into r->idx / r->idx_keys. */
static int load_index(sst_reader_t *r, slice_t blk) {
    int rc = TDB_OK;
    block_iter_t bi;
    buf_t keys = {0};
    size_t n = 0, cap = 0;
    idx_entry_t *ents = NULL, *pents = NULL;
    char *pkeys = NULL;
    bool pinned = false; /* ents is pents */
    uint64_t prev_end = 0;
    block_iter_init(&bi, sst_key_cmp);
    if (block_iter_set(&bi, blk) != TDB_OK) {
        rc = wrap_err(r, bi.status, "index block", 0);
        goto err;
    }
    for (block_iter_seek_to_first(&bi); block_iter_valid(&bi); block_iter_next(&bi)) {
        slice_t k = block_iter_key(&bi), v = block_iter_value(&bi);
        uint64_t off, size;
        const char *p = v.data, *limit = v.data + v.size;
        if (!(p = dec_varint64(p, limit, &off)) || !(p = dec_varint64(p, limit, &size)) || p != limit)
            RAISE(TDB_ERR_CORRUPTION, "%s: index entry %zu: bad block handle", r->path, n);
        if (k.size < IKEY_TRAILER || k.size > UINT32_MAX)
            RAISE(TDB_ERR_CORRUPTION, "%s: index entry %zu: bad key", r->path, n);
        if (n > 0 && sst_key_cmp(slice_make(keys.data + (size_t)(uintptr_t)ents[n - 1].key,
                                            ents[n - 1].key_len), k) >= 0)
            RAISE(TDB_ERR_CORRUPTION, "%s: index entry %zu: keys out of order", r->path, n);
        if (off < prev_end || size > r->data_end || r->data_end - size < SST_TRAILER_SIZE ||
            off > r->data_end - size - SST_TRAILER_SIZE)
            RAISE(TDB_ERR_CORRUPTION, "%s: index entry %zu: block %llu+%llu out of place", r->path, n,
                  (unsigned long long)off, (unsigned long long)size);
        prev_end = off + size + SST_TRAILER_SIZE;
        if (n == cap) {
            cap = cap ? cap * 2 : 64;
            idx_entry_t *ne = (idx_entry_t *)realloc(ents, cap * sizeof *ents);
            if (!ne) RAISE(TDB_ERR_NOMEM, "%s: index of %zu entries", r->path, cap);
            ents = ne;
        }
        ents[n].key = (const char *)(uintptr_t)keys.size; /* offset for now */
        ents[n].key_len = (uint32_t)k.size;
        ents[n].offset = off;
        ents[n].size = size;
        n++;
        TRY(buf_append(&keys, k.data, k.size));
    }
    if (bi.status != TDB_OK) {
        rc = wrap_err(r, bi.status, "index block", 0);
        goto err;
    }
    if (n != r->ext.num_data_blocks)
        RAISE(TDB_ERR_CORRUPTION, "%s: index has %zu blocks, properties say %llu", r->path, n,
              (unsigned long long)r->ext.num_data_blocks);
    /* Kept while the table is open: out of malloc's arenas (util/pinned.h). */
    if (!(pkeys = (char *)pinned_dup(keys.data, keys.size)) || !(pents = (idx_entry_t *)pinned_dup(ents, n * sizeof *ents)))
        RAISE(TDB_ERR_NOMEM, "%s: index of %zu entries", r->path, n);
    free(ents);
    ents = pents;
    pinned = true;
    for (size_t i = 0; i < n; i++) ents[i].key = pkeys + (size_t)(uintptr_t)ents[i].key;
    if (n > 0) {
        slice_t a = ikey_user(slice_make(ents[0].key, ents[0].key_len));
        slice_t b = ikey_user(slice_make(ents[n - 1].key, ents[n - 1].key_len));
        size_t m = a.size < b.size ? a.size : b.size, l = 0;
        while (l < m && a.data[l] == b.data[l]) l++;
        r->idx_lcp = l;
        r->idx_pfx = (uint64_t *)pinned_alloc(n * sizeof *r->idx_pfx);
        if (!r->idx_pfx) RAISE(TDB_ERR_NOMEM, "%s: index prefixes", r->path);
        for (size_t i = 0; i < n; i++)
            r->idx_pfx[i] = key_prefix(ikey_user(slice_make(ents[i].key, ents[i].key_len)), l);
        r->ntop = (n + IDX_TOP_STRIDE - 1) / IDX_TOP_STRIDE;
        r->idx_top = (uint64_t *)pinned_alloc(r->ntop * sizeof *r->idx_top);
        if (!r->idx_top) RAISE(TDB_ERR_NOMEM, "%s: index samples", r->path);
        for (size_t j = 0; j < r->ntop; j++) r->idx_top[j] = r->idx_pfx[j * IDX_TOP_STRIDE];
    }
    r->idx = ents;
    r->nblocks = n;
    r->idx_keys = pkeys;
    ents = NULL;
    pkeys = NULL;
err:
    block_iter_free(&bi);
    if (pinned) pinned_free(ents);
    else free(ents);
    pinned_free(pkeys);
    buf_free(&keys);
    return rc;
}

/* Decode and check a range-deletion block into *out (appending). */
static int parse_range_dels(const sst_reader_t *r, slice_t blk, uint64_t off, rd_list_t *out) {
    int rc = TDB_OK;
    block_iter_t bi;
    buf_t prev = {0}, bound = {0};
    size_t n = 0;
    block_iter_init(&bi, sst_key_cmp);
    slice_t small = buf_slice(&r->props.smallest), large = buf_slice(&r->props.largest);
    if (block_iter_set(&bi, blk) != TDB_OK) {
        rc = wrap_err(r, bi.status, "range-deletion block", off);
        goto err;
    }
    for (block_iter_seek_to_first(&bi); block_iter_valid(&bi); block_iter_next(&bi)) {
        slice_t k = block_iter_key(&bi), end = block_iter_value(&bi);
        if (k.size <= IKEY_TRAILER || (unsigned char)k.data[k.size - IKEY_TRAILER] != KT_RANGE_DELETE)
            RAISE(TDB_ERR_CORRUPTION, "%s: range-deletion block at offset %llu: bad key %zu", r->path,
                  (unsigned long long)off, n);
        slice_t start = ikey_user(k);
        uint64_t seq = ikey_seq(k);
        if (slice_compare(start, end) >= 0)
            RAISE(TDB_ERR_CORRUPTION, "%s: range-deletion block at offset %llu: empty range %zu", r->path,
                  (unsigned long long)off, n);
        if (n > 0 && sst_key_cmp(buf_slice(&prev), k) >= 0)
            RAISE(TDB_ERR_CORRUPTION, "%s: range-deletion block at offset %llu: keys out of order", r->path,
                  (unsigned long long)off);
        if (seq < r->props.min_seq || seq > r->props.max_seq)
            RAISE(TDB_ERR_CORRUPTION, "%s: range tombstone sequence %llu outside [%llu, %llu]", r->path,
                  (unsigned long long)seq, (unsigned long long)r->props.min_seq,
                  (unsigned long long)r->props.max_seq);
        buf_clear(&bound);
        TRY(rd_bound_largest(&bound, end));
        if (!ikey_valid(small) || !ikey_valid(large) || ikey_compare(k, small) < 0 ||
            ikey_compare(buf_slice(&bound), large) > 0)
            RAISE(TDB_ERR_CORRUPTION, "%s: range tombstone %zu outside the table's key range", r->path, n);
        TRY(rd_list_add(out, start, end, seq));
        buf_clear(&prev);
        TRY(buf_append(&prev, k.data, k.size));
        n++;
    }
    if (bi.status != TDB_OK) {
        rc = wrap_err(r, bi.status, "range-deletion block", off);
        goto err;
    }
    if (n != r->props.num_range_deletes)
        RAISE(TDB_ERR_CORRUPTION, "%s: %zu range tombstones, properties say %llu", r->path, n,
              (unsigned long long)r->props.num_range_deletes);
err:
    block_iter_free(&bi);
    buf_free(&prev);
    buf_free(&bound);
    return rc;
}

/* Free a reader's memory and close its file. */
static void reader_free(sst_reader_t *r) {
    if (r->file) env_close(r->file); /* unmaps too */
    free((void *)r->seen);
    pinned_free(r->idx);
    pinned_free(r->idx_keys);
    pinned_free(r->idx_pfx);
    pinned_free(r->idx_top);
    pinned_free(r->filter);
    rd_list_free(&r->rdl);
    rd_frags_free(&r->rdf);
    sst_props_free(&r->props);
    free(r->path);
    free(r);
}

/* Open a table: footer, properties, index and filter. */
int sst_reader_open(env_t *env, const char *path, uint64_t file_number, lru_cache_t *block_cache,
                    sst_reader_t **out) {
    int rc = TDB_OK;
    char foot[SST_FOOTER_SIZE];
    char *meta = NULL;
    sst_footer_t f;
    sst_reader_t *r = (sst_reader_t *)calloc(1, sizeof *r);
    *out = NULL;
    if (!r) return tdb_err(TDB_ERR_NOMEM, "%s: sst reader", path);
    r->env = env;
    r->file_number = file_number;
    r->cache = block_cache;
    atomic_init(&r->refs, 1);
    atomic_init(&r->disk_reads, 0);
    atomic_init(&r->map_reads, 0);
    r->path = strdup(path);
    if (!r->path) RAISE(TDB_ERR_NOMEM, "%s: sst reader", path);
    TRY(env->open_readable(env, path, &r->file));
    TRY(env_fsize(r->file, &r->file_size));
    if (r->file_size < SST_FOOTER_SIZE)
        RAISE(TDB_ERR_CORRUPTION, "%s: file too short for an sst (%llu bytes)", path,
              (unsigned long long)r->file_size);
    TRY(env_read_exact(r->file, r->file_size - SST_FOOTER_SIZE, foot, sizeof foot, path));
    TRY(sst_footer_decode(foot, &f, path));

    uint64_t meta_limit = r->file_size - SST_FOOTER_SIZE;
    r->data_end = f.index.offset < f.props.offset ? f.index.offset : f.props.offset;
    if (f.filter.size > 0 && f.filter.offset < r->data_end) r->data_end = f.filter.offset;

    /* Properties first: they bound what the index may reference. */
    TRY(read_meta(r, f.props, meta_limit, "properties block", &meta));
    TRY(sst_props_decode(slice_make(meta, (size_t)f.props.size), &r->props, &r->ext, path));
    pinned_free(meta);
    meta = NULL;
    if (r->ext.format_version != f.version)
        RAISE(TDB_ERR_CORRUPTION, "%s: properties version %u != footer version %u", path, r->ext.format_version,
              f.version);
    if (r->ext.num_data_blocks > 0 && r->ext.max_block_raw == 0)
        RAISE(TDB_ERR_CORRUPTION, "%s: properties: missing maximum block size", path);
    r->props.file_size = r->file_size;
    if (r->ext.range_del.size > 0) {
        if (r->ext.range_del.offset < r->data_end) r->data_end = r->ext.range_del.offset;
        TRY(read_meta(r, r->ext.range_del, meta_limit, "range-deletion block", &meta));
        TRY(parse_range_dels(r, slice_make(meta, (size_t)r->ext.range_del.size), r->ext.range_del.offset, &r->rdl));
        pinned_free(meta);
        meta = NULL;
        /* Every covering sequence per fragment, within a linear budget;
         * heavily nested tombstones get the highest one only, and reads at
         * older snapshots then scan the list. */
        rc = rd_frags_build(&r->rdf, r->rdl.v, r->rdl.n, SEQ_MAX, 0, 8 * r->rdl.n + 4096);
        if (rc == TDB_ERR_TOO_LARGE) {
            r->rd_top_only = 1;
            rc = rd_frags_build(&r->rdf, r->rdl.v, r->rdl.n, SEQ_MAX, 1, 0);
        }
        if (rc != TDB_OK) goto err;
    } else if (r->props.num_range_deletes > 0) {
        RAISE(TDB_ERR_CORRUPTION, "%s: %llu range tombstones but no range-deletion block", path,
              (unsigned long long)r->props.num_range_deletes);
    }

    TRY(read_meta(r, f.index, meta_limit, "index block", &meta));
    TRY(load_index(r, slice_make(meta, (size_t)f.index.size)));
    pinned_free(meta);
    meta = NULL;
    if ((r->nblocks == 0) != (r->props.num_entries == 0))
        RAISE(TDB_ERR_CORRUPTION, "%s: %zu blocks for %llu entries", path, r->nblocks,
              (unsigned long long)r->props.num_entries);

    if (f.filter.size > 0) {
        TRY(read_meta(r, f.filter, meta_limit, "filter block", &r->filter));
        r->filter_size = (size_t)f.filter.size;
        if (bloom_check(slice_make(r->filter, r->filter_size)) != TDB_OK) {
            rc = wrap_err(r, TDB_ERR_CORRUPTION, "filter block", f.filter.offset);
            goto err;
        }
    }
    *out = r;
    return TDB_OK;
err:
    pinned_free(meta);
    reader_free(r);
    return rc;
}

/* Map the data blocks' region for repeated reads (see the top). */
int sst_reader_map(sst_reader_t *r) {
    if (r->map || r->nblocks == 0 || !r->env->map_readable) return TDB_OK; /* blocks: data_end > 0 */
    _Atomic unsigned char *seen = (_Atomic unsigned char *)calloc(r->nblocks, sizeof *seen);
    if (!seen) return tdb_err(TDB_ERR_NOMEM, "%s: map of %zu blocks", r->path, r->nblocks);
    const char *m = NULL;
    int rc = r->env->map_readable(r->file, r->data_end, &m);
    if (rc != TDB_OK) {
        free((void *)seen);
        return rc;
    }
    r->seen = seen;
    r->map = m;
    return TDB_OK;
}

/* Take a reference. */
void sst_reader_ref(sst_reader_t *r) { atomic_fetch_add_explicit(&r->refs, 1, memory_order_relaxed); }

/* Drop a reference; free at zero. */
void sst_reader_unref(sst_reader_t *r) {
    if (!r) return;
    if (atomic_fetch_sub_explicit(&r->refs, 1, memory_order_acq_rel) == 1) reader_free(r);
}

/* Accessors for immutable reader state. */
const sst_props_t *sst_reader_props(const sst_reader_t *r) { return &r->props; }
uint64_t sst_reader_file_number(const sst_reader_t *r) { return r->file_number; }
const char *sst_reader_path(const sst_reader_t *r) { return r->path; }

/* Data blocks and value records read from disk so far (pread or mapping). */
uint64_t sst_reader_disk_reads(const sst_reader_t *r) {
    return atomic_load_explicit(&((sst_reader_t *)r)->disk_reads, memory_order_relaxed);
}

/* ...of them, data blocks read through the mapping. */
uint64_t sst_reader_map_reads(const sst_reader_t *r) {
    return atomic_load_explicit(&((sst_reader_t *)r)->map_reads, memory_order_relaxed);
}

/* Position of user key u in the table, in blocks: i + f when u falls in
 * block i (the first whose separator is >= (u, SEQ_MAX)), f its place
 * between the separators that bound block i, read from their 8-byte
 * prefixes after the common prefix (0.5 when they do not tell). */
static double approx_block_pos(const sst_reader_t *r, slice_t u) {
    char small[256];
    char *tk = u.size + IKEY_TRAILER <= sizeof small ? small : (char *)malloc(u.size + IKEY_TRAILER);
    if (!tk) return (double)r->nblocks / 2;
    if (u.size) memcpy(tk, u.data, u.size);
    enc_fixed64(tk + u.size, ikey_pack(SEQ_MAX, KT_SEEK));
    size_t i = index_lower_bound(r, slice_make(tk, u.size + IKEY_TRAILER));
    if (tk != small) free(tk);
    if (i >= r->nblocks) return (double)r->nblocks;
    double f = 0.5;
    int shares = u.size >= r->idx_lcp && (r->idx_lcp == 0 || memcmp(u.data, r->idx[0].key, r->idx_lcp) == 0);
    if (shares) {
        uint64_t up = key_prefix(u, r->idx_lcp), hi = r->idx_pfx[i], lo;
        if (i > 0) {
            lo = r->idx_pfx[i - 1];
        } else {
            slice_t sm = buf_slice(&r->props.smallest);
            slice_t su = sm.size >= IKEY_TRAILER ? ikey_user(sm) : slice_make(NULL, 0);
            lo = su.size >= r->idx_lcp ? key_prefix(su, r->idx_lcp) : 0;
        }
        if (hi > lo) {
            f = up <= lo ? 0.0 : up >= hi ? 1.0 : (double)(up - lo) / (double)(hi - lo);
        }
    }
    return (double)i + f;
}

/* Entries with user key in [lo, hi) in blocks i..j, counted by reading
 * them (through the cache); -1 if a block cannot be read. */
static int64_t count_in_blocks(sst_reader_t *r, size_t i, size_t j, slice_t lo, slice_t hi) {
    int64_t n = 0;
    for (size_t b = i; b <= j; b++) {
        block_ref_t ref = {0};
        block_iter_t bi;
        block_iter_init(&bi, sst_key_cmp);
        int ok = load_data_block(r, b, 1, &ref) == TDB_OK &&
                 block_iter_set(&bi, slice_make(ref.blk->data, ref.blk->size)) == TDB_OK;
        for (block_iter_seek_to_first(&bi); ok && block_iter_valid(&bi); block_iter_next(&bi)) {
            slice_t u = ikey_user(block_iter_key(&bi));
            if (slice_compare(u, lo) < 0) continue;
            if (slice_compare(u, hi) >= 0) break;
            n++;
        }
        if (ok && block_iter_status(&bi) != TDB_OK) ok = 0;
        if (ref.blk) ref_release(r, &ref);
        block_iter_free(&bi);
        if (!ok) return -1;
    }
    return n;
}

/* Approximate entries with user key in [lo, hi): a range within one or
 * two blocks is counted in them; a longer one is the blocks between the
 * two positions times the table's mean entries per block (index only). */
uint64_t sst_reader_approx_entries(sst_reader_t *r, const slice_t *lo, const slice_t *hi) {
    if (r->nblocks == 0) return 0;
    double a = lo ? approx_block_pos(r, *lo) : 0.0;
    double b = hi ? approx_block_pos(r, *hi) : (double)r->nblocks;
    if (b <= a && (b < a || !lo || !hi)) return 0;
    if (lo && hi && (size_t)b - (size_t)a <= 1 && (size_t)a < r->nblocks) {
        size_t j = (size_t)b < r->nblocks ? (size_t)b : r->nblocks - 1;
        int64_t n = count_in_blocks(r, (size_t)a, j, *lo, *hi);
        if (n >= 0) return (uint64_t)n;
    }
    double n = (b - a) * (double)r->props.num_entries / (double)r->nblocks;
    return n < 1.0 ? 1 : (uint64_t)(n + 0.5);
}

/* The table's range tombstones. */
size_t sst_reader_range_dels(const sst_reader_t *r, const range_del_t **out) {
    *out = r->rdl.v;
    return r->rdl.n;
}

/* Newest tombstone covering user_key at snap_seq. */
uint64_t sst_reader_range_del_seq(const sst_reader_t *r, slice_t user_key, uint64_t snap_seq) {
    if (r->rdf.n == 0) return 0;
    if (!r->rd_top_only) return rd_frags_max_seq(&r->rdf, user_key, snap_seq, NULL);
    uint64_t top = rd_frags_max_seq(&r->rdf, user_key, UINT64_MAX, NULL);
    if (top <= snap_seq) return top;
    uint64_t best = 0; /* an older snapshot: scan */
    for (size_t i = 0; i < r->rdl.n && slice_compare(r->rdl.v[i].start, user_key) <= 0; i++) {
        const range_del_t *t = &r->rdl.v[i];
        if (t->seq <= snap_seq && t->seq > best && slice_compare(user_key, t->end) < 0) best = t->seq;
    }
    return best;
}

/* Bloom check (1 when there is no filter). */
int sst_reader_may_contain(const sst_reader_t *r, slice_t user_key) {
    if (!r->filter) return 1;
    return bloom_may_contain(slice_make(r->filter, r->filter_size), user_key);
}

/* ---------------------------------------------------------------------- */
/* Point lookup                                                            */
/* ---------------------------------------------------------------------- */

/* Newest version of user_key visible at snap_seq (see sst.h). */
int sst_reader_get(sst_reader_t *r, slice_t user_key, uint64_t snap_seq, unsigned *type, uint64_t *seq,
                   buf_t *value) {
    int rc = TDB_OK, found = 0;
    char small[256];
    char *tk = small;
    block_ref_t ref = {0};
    block_iter_t bi;
    block_iter_init(&bi, sst_key_cmp);
    if (r->nblocks == 0 || !sst_reader_may_contain(r, user_key)) return 0;
    if (user_key.size + IKEY_TRAILER > sizeof small) {
        tk = (char *)malloc(user_key.size + IKEY_TRAILER);
        if (!tk) return tdb_err(TDB_ERR_NOMEM, "%s: lookup key", r->path);
    }
    if (user_key.size) memcpy(tk, user_key.data, user_key.size);
    enc_fixed64(tk + user_key.size, ikey_pack(snap_seq > SEQ_MAX ? SEQ_MAX : snap_seq, KT_SEEK));
    slice_t target = slice_make(tk, user_key.size + IKEY_TRAILER);

    size_t i = index_lower_bound(r, target);
    if (i == r->nblocks) goto err; /* past the last key */
    TRY(load_data_block(r, i, 1, &ref));
    if (block_iter_set(&bi, slice_make(ref.blk->data, ref.blk->size)) != TDB_OK) {
        rc = wrap_err(r, bi.status, "data block", r->idx[i].offset);
        goto err;
    }
    block_iter_seek(&bi, target);
    if (!block_iter_valid(&bi)) {
        if (bi.status != TDB_OK) rc = wrap_err(r, bi.status, "data block", r->idx[i].offset);
        goto err; /* by the index invariant the key is absent */
    }
    slice_t k = block_iter_key(&bi);
    int t = stored_key_type(k);
    if (t < 0)
        RAISE(TDB_ERR_CORRUPTION, "%s: data block at offset %llu: bad key", r->path,
              (unsigned long long)r->idx[i].offset);
    if (!slice_equal(ikey_user(k), user_key)) goto err;
    *type = (unsigned)t;
    *seq = ikey_seq(k);
    if (sst_key_separated(k)) {
        TRY(resolve_value(r, block_iter_value(&bi), 1, r->idx[i].offset, value));
    } else {
        slice_t v = block_iter_value(&bi);
        buf_clear(value);
        TRY(buf_append(value, v.data, v.size));
    }
    found = 1;
err:
    if (ref.blk) ref_release(r, &ref);
    block_iter_free(&bi);
    if (tk != small) free(tk);
    return rc != TDB_OK ? rc : found;
}

/* ---------------------------------------------------------------------- */
/* Iterator                                                                */
/* ---------------------------------------------------------------------- */

typedef struct sst_iter {
    iter_t base;
    sst_reader_t *r;
    size_t bidx;        /* index of the loaded block (valid if ref.blk) */
    block_ref_t ref;
    block_iter_t bi;
    int status;
    int separated;      /* current entry's value is a reference */
    int resolved;       /* ... and has been read into val */
    slice_t key;        /* current key with the flag cleared */
    buf_t kbuf;         /* storage for flagged keys */
    buf_t val;          /* resolved separated value */
    /* seek_prepare state, for the seek that must follow */
    slice_t pf_target;  /* the target it was prepared for */
    size_t pf_blk;      /* index_lower_bound(pf_target) */
    uint64_t pf_hash;   /* block cache hash of block pf_blk */
    int pf_status;      /* error fetching block pf_blk, or TDB_OK */
    int pf_set;         /* pf_target/pf_blk/pf_status hold */
} sst_iter_t;

/* Drop the loaded block. */
static void it_release_block(sst_iter_t *it) {
    if (it->ref.blk) ref_release(it->r, &it->ref);
    block_iter_clear(&it->bi);
}

/* Hold block i in it->ref (block iterator not set up yet); an error code
 * on failure, with no block held. */
static int it_fetch(sst_iter_t *it, size_t i) {
    it_release_block(it);
    int rc = load_data_block(it->r, i, 1, &it->ref);
    if (rc == TDB_OK) it->bidx = i;
    return rc;
}

/* Load block i (reusing it if already loaded or fetched); 0 on failure or
 * i out of range. */
static int it_load(sst_iter_t *it, size_t i) {
    if (it->ref.blk && it->bidx == i) {
        if (it->bi.data == it->ref.blk->data) return 1;
    } else {
        if (i >= it->r->nblocks) {
            it_release_block(it);
            return 0;
        }
        int rc = it_fetch(it, i);
        if (rc != TDB_OK) {
            it->status = rc;
            return 0;
        }
    }
    if (block_iter_set(&it->bi, slice_make(it->ref.blk->data, it->ref.blk->size)) != TDB_OK) {
        it->status = wrap_err(it->r, it->bi.status, "data block", it->r->idx[i].offset);
        it_release_block(it);
        return 0;
    }
    return 1;
}

/* Set up key/value views for the current block entry. */
static void it_settle(sst_iter_t *it) {
    if (it->status != TDB_OK || !it->ref.blk) return;
    if (!block_iter_valid(&it->bi)) {
        if (it->bi.status != TDB_OK) {
            it->status = wrap_err(it->r, it->bi.status, "data block", it->r->idx[it->bidx].offset);
            it_release_block(it);
        }
        return;
    }
    slice_t k = block_iter_key(&it->bi);
    if (stored_key_type(k) < 0) {
        it->status = tdb_err(TDB_ERR_CORRUPTION, "%s: data block at offset %llu: bad key", it->r->path,
                             (unsigned long long)it->r->idx[it->bidx].offset);
        it_release_block(it);
        return;
    }
    it->separated = sst_key_separated(k);
    it->resolved = 0;
    if (it->separated) {
        buf_clear(&it->kbuf);
        if (buf_append(&it->kbuf, k.data, k.size) != TDB_OK) {
            it->status = TDB_ERR_NOMEM;
            it_release_block(it);
            return;
        }
        it->kbuf.data[k.size - IKEY_TRAILER] &= (char)~SST_KT_SEPARATED;
        it->key = buf_slice(&it->kbuf);
    } else {
        it->key = k;
    }
}

/* Move forward over exhausted blocks to the next entry. */
static void it_skip_forward(sst_iter_t *it) {
    while (it->status == TDB_OK && it->ref.blk && !block_iter_valid(&it->bi) && it->bi.status == TDB_OK) {
        size_t next = it->bidx + 1;
        if (!it_load(it, next)) break;
        block_iter_seek_to_first(&it->bi);
    }
    it_settle(it);
}

/* Move backward over exhausted blocks to the previous entry. */
static void it_skip_backward(sst_iter_t *it) {
    while (it->status == TDB_OK && it->ref.blk && !block_iter_valid(&it->bi) && it->bi.status == TDB_OK) {
        if (it->bidx == 0) {
            it_release_block(it);
            break;
        }
        if (!it_load(it, it->bidx - 1)) break;
        block_iter_seek_to_last(&it->bi);
    }
    it_settle(it);
}

/* Positioned on an entry with no error. */
static int it_valid(const iter_t *base) {
    const sst_iter_t *it = (const sst_iter_t *)base;
    return it->status == TDB_OK && it->ref.blk && block_iter_valid(&it->bi);
}

/* First entry of the table. */
static void it_seek_to_first(iter_t *base) {
    sst_iter_t *it = (sst_iter_t *)base;
    it->status = TDB_OK;
    if (!it_load(it, 0)) return;
    block_iter_seek_to_first(&it->bi);
    it_skip_forward(it);
}

/* Last entry of the table. */
static void it_seek_to_last(iter_t *base) {
    sst_iter_t *it = (sst_iter_t *)base;
    it->status = TDB_OK;
    if (it->r->nblocks == 0 || !it_load(it, it->r->nblocks - 1)) return;
    block_iter_seek_to_last(&it->bi);
    it_skip_backward(it);
}

/* seek_prepare (contract in util/iter.h), one step per stage: the index
 * search and a hint for the block's cache slot; a hint for its cache
 * entry; the block fetch (kept for it_load) with hints for its restart
 * array and first entries; setting up the block iterator with hints for
 * the restart keys; the restart search with hints for the entries the
 * seek will scan. Steps already done (block loaded, iterator set up) are
 * skipped; without a cache there are no hints to the cache. */
static int it_seek_prepare(iter_t *base, slice_t target, int stage) {
    sst_iter_t *it = (sst_iter_t *)base;
    sst_reader_t *r = it->r;
    if (stage == 0) {
        it->pf_target = target;
        it->pf_blk = index_lower_bound(r, target);
        it->pf_status = TDB_OK;
        it->pf_set = 1;
        if (it->pf_blk >= r->nblocks) return 0;
    }
    int loaded = it->ref.blk && it->bidx == it->pf_blk;
    if (!loaded && stage < (r->cache ? 2 : 1)) { /* the cache slot hint, then its entry's */
        if (r->cache) {
            if (stage == 0) it->pf_hash = lru_cache_key_hash(r->file_number, r->idx[it->pf_blk].offset);
            lru_cache_prefetch(r->cache, it->pf_hash, stage);
        }
        return 1;
    }
    if (!loaded) {
        it->pf_status = it_fetch(it, it->pf_blk);
        if (it->pf_status != TDB_OK) return 0;
        const sst_block_t *b = it->ref.blk;
        __builtin_prefetch(b->data + b->size - 4);
        __builtin_prefetch(b->data);
        return 1;
    }
    if (it->bi.data != it->ref.blk->data) {
        if (block_iter_set(&it->bi, slice_make(it->ref.blk->data, it->ref.blk->size)) != TDB_OK) {
            block_iter_clear(&it->bi); /* it_load sets it up again and reports the damage */
            return 0;
        }
        return block_iter_prefetch_seek(&it->bi, target, 0);
    }
    return block_iter_prefetch_seek(&it->bi, target, 1);
}

/* First entry >= target (via the index, then the block). */
static void it_seek(iter_t *base, slice_t target) {
    sst_iter_t *it = (sst_iter_t *)base;
    it->status = TDB_OK;
    int prepared = it->pf_set && it->pf_target.data == target.data && it->pf_target.size == target.size;
    it->pf_set = 0;
    if (prepared && (it->status = it->pf_status) != TDB_OK) return;
    size_t i = prepared ? it->pf_blk : index_lower_bound(it->r, target);
    if (!it_load(it, i)) return;
    block_iter_seek(&it->bi, target);
    it_skip_forward(it);
}

/* Next entry, crossing into the next block if needed. */
static void it_next(iter_t *base) {
    sst_iter_t *it = (sst_iter_t *)base;
    if (!it_valid(base)) return;
    block_iter_next(&it->bi);
    it_skip_forward(it);
}

/* Previous entry, crossing into the previous block if needed. */
static void it_prev(iter_t *base) {
    sst_iter_t *it = (sst_iter_t *)base;
    if (!it_valid(base)) return;
    block_iter_prev(&it->bi);
    it_skip_backward(it);
}

/* Current internal key, separated flag cleared. */
static slice_t it_key(const iter_t *base) { return ((const sst_iter_t *)base)->key; }

/* Value of the current entry; a separated value is read on first use. On
 * failure the iterator becomes invalid with that status. */
static slice_t it_value(const iter_t *base) {
    sst_iter_t *it = (sst_iter_t *)base; /* lazily resolved state is mutable */
    if (!it->separated) return block_iter_value(&it->bi);
    if (!it->resolved) {
        int rc = resolve_value(it->r, block_iter_value(&it->bi), 1, it->r->idx[it->bidx].offset, &it->val);
        if (rc != TDB_OK) {
            it->status = rc;
            it_release_block(it);
            return slice_make(NULL, 0);
        }
        it->resolved = 1;
    }
    return buf_slice(&it->val);
}

/* TDB_OK or the error that invalidated the iterator. */
static int it_status(const iter_t *base) { return ((const sst_iter_t *)base)->status; }

/* Release the block, buffers and the reader reference. */
static void it_destroy(iter_t *base) {
    sst_iter_t *it = (sst_iter_t *)base;
    it_release_block(it);
    block_iter_free(&it->bi);
    buf_free(&it->kbuf);
    buf_free(&it->val);
    sst_reader_unref(it->r);
    free(it);
}

static const iter_ops_t sst_iter_ops = {
    it_valid, it_seek_to_first, it_seek_to_last, it_seek,        it_next,
    it_prev,  it_key,           it_value,        it_status,      it_destroy,
    it_seek_prepare,
    NULL, /* seek_forward */
};

/* New iterator over the whole table (holds a reader reference). */
iter_t *sst_reader_iter(sst_reader_t *r) {
    sst_iter_t *it = (sst_iter_t *)calloc(1, sizeof *it);
    if (!it) {
        tdb_err(TDB_ERR_NOMEM, "%s: sst iterator", r->path);
        return NULL;
    }
    it->base.ops = &sst_iter_ops;
    it->r = r;
    sst_reader_ref(r);
    block_iter_init(&it->bi, sst_key_cmp);
    it->status = TDB_OK;
    return &it->base;
}

/* ---------------------------------------------------------------------- */
/* Verification                                                            */
/* ---------------------------------------------------------------------- */

/* Read every data block and value record from disk and check them. */
int sst_reader_verify(sst_reader_t *r) {
    int rc = TDB_OK;
    block_ref_t ref = {0};
    block_iter_t bi;
    buf_t prev = {0}, val = {0}, first = {0};
    char *rdraw = NULL;
    rd_list_t rdl = {0};
    uint64_t entries = 0, separated = 0;
    block_iter_init(&bi, sst_key_cmp);
    for (size_t i = 0; i < r->nblocks; i++) {
        uint64_t boff = r->idx[i].offset;
        slice_t sep = slice_make(r->idx[i].key, r->idx[i].key_len);
        TRY(load_data_block(r, i, 0, &ref));
        if (block_iter_set(&bi, slice_make(ref.blk->data, ref.blk->size)) != TDB_OK) {
            rc = wrap_err(r, bi.status, "data block", boff);
            goto err;
        }
        size_t in_block = 0;
        for (block_iter_seek_to_first(&bi); block_iter_valid(&bi); block_iter_next(&bi)) {
            slice_t k = block_iter_key(&bi);
            if (stored_key_type(k) < 0)
                RAISE(TDB_ERR_CORRUPTION, "%s: data block at offset %llu: bad key", r->path,
                      (unsigned long long)boff);
            if (entries > 0 && sst_key_cmp(buf_slice(&prev), k) >= 0)
                RAISE(TDB_ERR_CORRUPTION, "%s: data block at offset %llu: keys out of order", r->path,
                      (unsigned long long)boff);
            if (in_block == 0 && i > 0 &&
                sst_key_cmp(k, slice_make(r->idx[i - 1].key, r->idx[i - 1].key_len)) <= 0)
                RAISE(TDB_ERR_CORRUPTION, "%s: data block at offset %llu: first key not above previous separator",
                      r->path, (unsigned long long)boff);
            if (sst_key_cmp(k, sep) > 0)
                RAISE(TDB_ERR_CORRUPTION, "%s: data block at offset %llu: key above its index separator",
                      r->path, (unsigned long long)boff);
            if (sst_key_separated(k)) {
                TRY(resolve_value(r, block_iter_value(&bi), 0, boff, &val));
                separated++;
            }
            if (entries == 0 && r->props.num_range_deletes == 0 && sst_key_cmp(k, buf_slice(&r->props.smallest)) != 0)
                RAISE(TDB_ERR_CORRUPTION, "%s: first key differs from the recorded smallest key", r->path);
            if (entries == 0) TRY(buf_append(&first, k.data, k.size));
            uint64_t seq = ikey_seq(k);
            if (seq < r->props.min_seq || seq > r->props.max_seq)
                RAISE(TDB_ERR_CORRUPTION, "%s: data block at offset %llu: sequence %llu outside [%llu, %llu]",
                      r->path, (unsigned long long)boff, (unsigned long long)seq,
                      (unsigned long long)r->props.min_seq, (unsigned long long)r->props.max_seq);
            buf_clear(&prev);
            TRY(buf_append(&prev, k.data, k.size));
            entries++;
            in_block++;
        }
        if (bi.status != TDB_OK) {
            rc = wrap_err(r, bi.status, "data block", boff);
            goto err;
        }
        if (in_block == 0)
            RAISE(TDB_ERR_CORRUPTION, "%s: data block at offset %llu: empty", r->path, (unsigned long long)boff);
        ref_release(r, &ref);
    }
    if (r->props.num_range_deletes == 0) {
        if (entries > 0 && sst_key_cmp(buf_slice(&prev), buf_slice(&r->props.largest)) != 0)
            RAISE(TDB_ERR_CORRUPTION, "%s: last key differs from the recorded largest key", r->path);
    } else {
        /* Re-read the range-deletion block from disk; the bounds are then
         * the extremes of the points and the tombstones. */
        TRY(read_meta(r, r->ext.range_del, r->file_size - SST_FOOTER_SIZE, "range-deletion block", &rdraw));
        TRY(parse_range_dels(r, slice_make(rdraw, (size_t)r->ext.range_del.size), r->ext.range_del.offset, &rdl));
        buf_t lo = {0}, hi = {0};
        rc = rd_bound_smallest(&lo, rdl.v[0].start, rdl.v[0].seq);
        for (size_t i = 0; i < rdl.n && rc == TDB_OK; i++) {
            buf_t bnd = {0};
            rc = rd_bound_largest(&bnd, rdl.v[i].end);
            if (rc == TDB_OK && (hi.size == 0 || ikey_compare(buf_slice(&bnd), buf_slice(&hi)) > 0)) {
                buf_clear(&hi);
                rc = buf_append(&hi, bnd.data, bnd.size);
            }
            buf_free(&bnd);
        }
        if (rc == TDB_OK && entries > 0) {
            if (ikey_compare(buf_slice(&first), buf_slice(&lo)) < 0) {
                buf_clear(&lo);
                rc = buf_append(&lo, first.data, first.size);
            }
            if (rc == TDB_OK && ikey_compare(buf_slice(&prev), buf_slice(&hi)) > 0) {
                buf_clear(&hi);
                rc = buf_append(&hi, prev.data, prev.size);
            }
        }
        int same = rc == TDB_OK && sst_key_cmp(buf_slice(&lo), buf_slice(&r->props.smallest)) == 0 &&
                   sst_key_cmp(buf_slice(&hi), buf_slice(&r->props.largest)) == 0;
        buf_free(&lo);
        buf_free(&hi);
        if (rc != TDB_OK) goto err;
        if (!same) RAISE(TDB_ERR_CORRUPTION, "%s: key range differs from the recorded smallest/largest keys", r->path);
    }
    if (entries != r->props.num_entries || separated != r->props.num_separated_values)
        RAISE(TDB_ERR_CORRUPTION, "%s: %llu entries (%llu separated), properties say %llu (%llu)", r->path,
              (unsigned long long)entries, (unsigned long long)separated,
              (unsigned long long)r->props.num_entries, (unsigned long long)r->props.num_separated_values);
err:
    if (ref.blk) ref_release(r, &ref);
    block_iter_free(&bi);
    buf_free(&prev);
    buf_free(&val);
    buf_free(&first);
    pinned_free(rdraw);
    rd_list_free(&rdl);
    return rc;
}

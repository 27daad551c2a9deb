/*
 * sst/sst_reader: opening and point lookups of one SSTable (layout in
 * sst/sst.h); its iterator is in sst/sst_iter.c, verification in
 * sst/sst_verify.c, the state they share in sst/reader_impl.h.
 *
 * Invariants
 *  - After open (and sst_reader_map, before the reader is shared),
 *    everything in sst_reader_t except `refs`, the read counters, the
 *    mapping's pause and the `seen` bytes (atomics) is immutable, so any
 *    number of threads may call get/iter/may_contain/verify concurrently.
 *    The env file supports concurrent pread; the block cache is
 *    internally locked.
 *  - Mapped reads (sst_reader_map): a data block is read through the
 *    mapping only once `seen[i]` is set, which happens after a pread of it
 *    succeeded; first reads, value records and verify always use pread.
 *    So a cold block costs one read of exactly its pages (a fault per page
 *    would not), and a page that cannot be read at all fails a pread with
 *    an error before it is ever touched through the mapping (SIGBUS). A
 *    block read through the mapping is checksum-verified like any other.
 *  - A mapped read pays only while the block's pages are still in memory.
 *    When the OS has dropped them (data larger than the memory left for
 *    the page cache), it faults them back one page at a time, each a
 *    separate disk read the thread waits for, where a pread asks for the
 *    whole block at once. So a mapped read is timed (env->now_micros), and
 *    one slower than MAP_SLOW_US (plus a microsecond per KiB) pauses the
 *    mapping of this file: the next `map_pause` misses of seen blocks are
 *    pread (16, doubling at each slow probe up to 1024), then one probes
 *    the mapping again; a fast probe resumes it. Only the choice of path
 *    depends on the clock, never what is read.
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
#include "sst/reader_impl.h"
#include "sst/sst.h"
#include "util/coding.h"
#include "util/error.h"
#include "util/pinned.h"

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
void sst_ref_release(const sst_reader_t *r, block_ref_t *ref) {
    if (ref->h)
        lru_cache_release(r->cache, ref->h);
    else
        block_free(ref->blk);
    ref->h = NULL;
    ref->blk = NULL;
}

/* Re-raise the current thread's error detail prefixed with file and offset. */
int sst_wrap_err(const sst_reader_t *r, int rc, const char *what, uint64_t off) {
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

/* Mapped reads of a file whose pages are not in memory (see the top). */
#define MAP_SLOW_US 25
#define MAP_PAUSE_MIN 16
#define MAP_PAUSE_MAX 1024

/* Whether a miss of a seen block goes through the mapping (else pread). */
static bool map_wanted(sst_reader_t *r) {
    if (atomic_load_explicit(&r->map_skip, memory_order_relaxed) <= 0) return true;
    return atomic_fetch_sub_explicit(&r->map_skip, 1, memory_order_relaxed) <= 0;
}

/* A mapped read of `size` bytes took `us`: pause the mapping if it was
 * slow (longer at each slow probe in a row), resume it if not. */
static void map_timed(sst_reader_t *r, uint64_t size, uint64_t us) {
    if (us <= MAP_SLOW_US + size / 1024) {
        if (atomic_load_explicit(&r->map_pause, memory_order_relaxed))
            atomic_store_explicit(&r->map_pause, 0, memory_order_relaxed);
        return;
    }
    atomic_fetch_add_explicit(&r->map_slow, 1, memory_order_relaxed);
    int p = atomic_load_explicit(&r->map_pause, memory_order_relaxed) * 2;
    p = p < MAP_PAUSE_MIN ? MAP_PAUSE_MIN : p > MAP_PAUSE_MAX ? MAP_PAUSE_MAX : p;
    atomic_store_explicit(&r->map_pause, p, memory_order_relaxed);
    atomic_store_explicit(&r->map_skip, p, memory_order_relaxed);
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
    if (blk >= 0 && r->map && atomic_load_explicit(&r->seen[blk], memory_order_relaxed) && map_wanted(r)) {
        raw = (char *)r->map + off; /* in [0, data_end): record_in_bounds */
        uint64_t t0 = r->env->now_micros(r->env);
        rc = sst_check_record(raw, size, &type, r->path, what, off); /* the first touch of its pages */
        map_timed(r, size, r->env->now_micros(r->env) - t0);
        if (rc != TDB_OK) goto err;
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
        rc = sst_wrap_err(r, rc, what, off);
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
            rc = sst_wrap_err(r, rc, what, off);
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

/* Read a decoded record from the file and, with SST_CACHE_FILL, insert it
 * into the block cache (the caller looked it up there first). */
static int read_and_cache(sst_reader_t *r, long blk, uint64_t off, uint64_t size, uint64_t max_raw, int use_cache,
                          const char *what, block_ref_t *ref) {
    ref->h = NULL;
    ref->blk = NULL;
    TDB_RET(read_record(r, blk, off, size, max_raw, what, &ref->blk));
    if (use_cache == SST_CACHE_FILL && r->cache) {
        /* Charge the allocation too, not only the decoded bytes. */
        ref->h = lru_cache_insert_embedded(r->cache, r->file_number, off, ref->blk, ref->blk->cap + SST_ALLOC_OVERHEAD,
                                           ref->blk->handle);
    }
    return TDB_OK;
}

/* Get a decoded record through the block cache (or straight from disk). */
static int load_record(sst_reader_t *r, long blk, uint64_t off, uint64_t size, uint64_t max_raw, int use_cache,
                       const char *what, block_ref_t *ref) {
    if (use_cache && sst_cache_lookup(r, off, ref)) return TDB_OK;
    return read_and_cache(r, blk, off, size, max_raw, use_cache, what, ref);
}

/* The miss path of sst_load_data_block (reader_impl.h): data block i read
 * from the file, cached with SST_CACHE_FILL. */
int sst_read_data_block(sst_reader_t *r, size_t i, int use_cache, block_ref_t *ref) {
    return read_and_cache(r, (long)i, r->idx[i].offset, r->idx[i].size, r->ext.max_block_raw, use_cache, "data block",
                          ref);
}

/* Resolve a separated value reference into *out (buf_clear then append). */
int sst_resolve_value(sst_reader_t *r, slice_t refv, int use_cache, uint64_t block_off, buf_t *out) {
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
    if (ref.blk) sst_ref_release(r, &ref);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* Open / close                                                            */
/* ---------------------------------------------------------------------- */

/* Check a metadata handle lies in [0, limit) and read it (raw only). */
int sst_read_meta(sst_reader_t *r, sst_handle_t h, uint64_t limit, const char *what, char **out) {
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
        rc = sst_wrap_err(r, bi.status, "index block", 0);
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
        rc = sst_wrap_err(r, bi.status, "index block", 0);
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
int sst_parse_range_dels(const sst_reader_t *r, slice_t blk, uint64_t off, rd_list_t *out) {
    int rc = TDB_OK;
    block_iter_t bi;
    buf_t prev = {0}, bound = {0};
    size_t n = 0;
    block_iter_init(&bi, sst_key_cmp);
    slice_t small = buf_slice(&r->props.smallest), large = buf_slice(&r->props.largest);
    if (block_iter_set(&bi, blk) != TDB_OK) {
        rc = sst_wrap_err(r, bi.status, "range-deletion block", off);
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
        rc = sst_wrap_err(r, bi.status, "range-deletion block", off);
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
    atomic_init(&r->map_slow, 0);
    atomic_init(&r->map_skip, 0);
    atomic_init(&r->map_pause, 0);
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
    TRY(sst_read_meta(r, f.props, meta_limit, "properties block", &meta));
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
        TRY(sst_read_meta(r, r->ext.range_del, meta_limit, "range-deletion block", &meta));
        TRY(sst_parse_range_dels(r, slice_make(meta, (size_t)r->ext.range_del.size), r->ext.range_del.offset, &r->rdl));
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

    TRY(sst_read_meta(r, f.index, meta_limit, "index block", &meta));
    TRY(load_index(r, slice_make(meta, (size_t)f.index.size)));
    pinned_free(meta);
    meta = NULL;
    if ((r->nblocks == 0) != (r->props.num_entries == 0))
        RAISE(TDB_ERR_CORRUPTION, "%s: %zu blocks for %llu entries", path, r->nblocks,
              (unsigned long long)r->props.num_entries);

    if (f.filter.size > 0) {
        TRY(sst_read_meta(r, f.filter, meta_limit, "filter block", &r->filter));
        r->filter_size = (size_t)f.filter.size;
        if (bloom_check(slice_make(r->filter, r->filter_size)) != TDB_OK) {
            rc = sst_wrap_err(r, TDB_ERR_CORRUPTION, "filter block", f.filter.offset);
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

/* ...of those, reads slower than a read from memory (see the top). */
uint64_t sst_reader_map_slow(const sst_reader_t *r) {
    return atomic_load_explicit(&((sst_reader_t *)r)->map_slow, memory_order_relaxed);
}

/* The internal key that seeks to user key u's first entry visible at seq:
 * u and its trailer, in small when they fit (cap bytes), else in a malloc'd
 * buffer the caller frees (NULL if that fails). */
static char *seek_ikey(slice_t u, uint64_t seq, char *small, size_t cap) {
    char *tk = u.size + IKEY_TRAILER <= cap ? small : (char *)malloc(u.size + IKEY_TRAILER);
    if (!tk) return NULL;
    if (u.size) memcpy(tk, u.data, u.size);
    enc_fixed64(tk + u.size, ikey_pack(seq, KT_SEEK));
    return tk;
}

/* Position of user key u in the table, in blocks: i + f when u falls in
 * block i (the first whose separator is >= (u, SEQ_MAX)), f its place
 * between the separators that bound block i, read from their 8-byte
 * prefixes after the common prefix (0.5 when they do not tell). */
static double approx_block_pos(const sst_reader_t *r, slice_t u) {
    char small[256];
    char *tk = seek_ikey(u, SEQ_MAX, small, sizeof small);
    if (!tk) return (double)r->nblocks / 2;
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
 * them (through the cache); -1 if a block cannot be read. Block i is
 * entered at lo through its restart points, not walked from its start:
 * lo usually falls inside it, and the entries before lo are most of it. */
static int64_t count_in_blocks(sst_reader_t *r, size_t i, size_t j, slice_t lo, slice_t hi) {
    char small[256];
    char *tk = seek_ikey(lo, SEQ_MAX, small, sizeof small);
    if (!tk) return -1;
    int64_t n = 0;
    for (size_t b = i; b <= j; b++) {
        block_ref_t ref = {0};
        block_iter_t bi;
        block_iter_init(&bi, sst_key_cmp);
        int ok = sst_load_data_block(r, b, SST_CACHE_FILL, &ref) == TDB_OK &&
                 block_iter_set(&bi, slice_make(ref.blk->data, ref.blk->size)) == TDB_OK;
        if (ok && b == i) block_iter_seek(&bi, slice_make(tk, lo.size + IKEY_TRAILER));
        else if (ok) block_iter_seek_to_first(&bi); /* every entry of a later block is >= lo */
        for (; ok && block_iter_valid(&bi); block_iter_next(&bi)) {
            if (slice_compare(ikey_user(block_iter_key(&bi)), hi) >= 0) break;
            n++;
        }
        if (ok && block_iter_status(&bi) != TDB_OK) ok = 0;
        if (ref.blk) sst_ref_release(r, &ref);
        block_iter_free(&bi);
        if (!ok) {
            n = -1;
            break;
        }
    }
    if (tk != small) free(tk);
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
    tk = seek_ikey(user_key, snap_seq > SEQ_MAX ? SEQ_MAX : snap_seq, small, sizeof small);
    if (!tk) return tdb_err(TDB_ERR_NOMEM, "%s: lookup key", r->path);
    slice_t target = slice_make(tk, user_key.size + IKEY_TRAILER);

    size_t i = index_lower_bound(r, target);
    if (i == r->nblocks) goto err; /* past the last key */
    TRY(sst_load_data_block(r, i, SST_CACHE_FILL, &ref));
    if (block_iter_set(&bi, slice_make(ref.blk->data, ref.blk->size)) != TDB_OK) {
        rc = sst_wrap_err(r, bi.status, "data block", r->idx[i].offset);
        goto err;
    }
    block_iter_seek(&bi, target);
    if (!block_iter_valid(&bi)) {
        if (bi.status != TDB_OK) rc = sst_wrap_err(r, bi.status, "data block", r->idx[i].offset);
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
        TRY(sst_resolve_value(r, block_iter_value(&bi), SST_CACHE_FILL, r->idx[i].offset, value));
    } else {
        slice_t v = block_iter_value(&bi);
        buf_clear(value);
        TRY(buf_append(value, v.data, v.size));
    }
    found = 1;
err:
    if (ref.blk) sst_ref_release(r, &ref);
    block_iter_free(&bi);
    if (tk != small) free(tk);
    return rc != TDB_OK ? rc : found;
}

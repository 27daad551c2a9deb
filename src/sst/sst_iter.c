/*
 * sst/sst_iter: the iterator over one SSTable (invariants at the top of
 * sst/sst_reader.c). One thread per iterator; it holds a reader reference.
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
    int cache;          /* SST_CACHE_FILL, or SST_CACHE_PEEK for a scan */
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
    /* next-block hint of a forward scan: at entry offset nx_at of the
     * loaded block, hint the cache entry of block bidx + 1 (hash nx_hash),
     * whose slot was hinted when this block was entered */
    uint32_t nx_at;     /* UINT32_MAX: no hint due */
    uint64_t nx_hash;
} sst_iter_t;

/* Drop the loaded block. */
static void it_release_block(sst_iter_t *it) {
    if (it->ref.blk) sst_ref_release(it->r, &it->ref);
    block_iter_clear(&it->bi);
}

/* Hold block i in it->ref (block iterator not set up yet); an error code
 * on failure, with no block held. */
static int it_fetch(sst_iter_t *it, size_t i) {
    it_release_block(it);
    it->nx_at = UINT32_MAX; /* it_skip_forward sets it again for a forward step */
    int rc = sst_load_data_block(it->r, i, it->cache, &it->ref);
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
        __builtin_prefetch(it->ref.blk->data); /* the first entry, alongside the restart count read below */
    }
    if (block_iter_set(&it->bi, slice_make(it->ref.blk->data, it->ref.blk->size)) != TDB_OK) {
        it->status = sst_wrap_err(it->r, it->bi.status, "data block", it->r->idx[i].offset);
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
            it->status = sst_wrap_err(it->r, it->bi.status, "data block", it->r->idx[it->bidx].offset);
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

/* A forward scan entered block bidx from the one before: start the cache
 * misses of the block after it now (its cache slot), and of its entry half
 * way through this block (it_next), so the next step to a new block finds
 * the slot and the entry (which shares a line with the block's header)
 * cached instead of waiting on two misses in a row. */
static void it_hint_next_block(sst_iter_t *it) {
    sst_reader_t *r = it->r;
    it->nx_at = UINT32_MAX;
    if (!r->cache || it->bidx + 1 >= r->nblocks) return;
    it->nx_hash = lru_cache_key_hash(r->file_number, r->idx[it->bidx + 1].offset);
    lru_cache_prefetch(r->cache, it->nx_hash, 0);
    it->nx_at = it->bi.restarts / 2;
}

/* Move forward over exhausted blocks to the next entry. */
static void it_skip_forward(sst_iter_t *it) {
    while (it->status == TDB_OK && it->ref.blk && !block_iter_valid(&it->bi) && it->bi.status == TDB_OK) {
        size_t next = it->bidx + 1;
        if (!it_load(it, next)) break;
        it_hint_next_block(it);
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
    if (TDB_UNLIKELY(it->bi.cur >= it->nx_at)) { /* half way: the next block's cache entry */
        lru_cache_prefetch(it->r->cache, it->nx_hash, 1);
        it->nx_at = UINT32_MAX;
    }
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
        int rc = sst_resolve_value(it->r, block_iter_value(&it->bi), it->cache, it->r->idx[it->bidx].offset,
                                   &it->val);
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
    NULL, /* next_user_key */
    NULL, /* seek_for_prev: seek and step back */
};

/* New iterator over the whole table (holds a reader reference). */
static iter_t *new_iter(sst_reader_t *r, int cache) {
    sst_iter_t *it = (sst_iter_t *)calloc(1, sizeof *it);
    if (!it) {
        tdb_err(TDB_ERR_NOMEM, "%s: sst iterator", r->path);
        return NULL;
    }
    it->base.ops = &sst_iter_ops;
    it->r = r;
    it->cache = cache;
    it->nx_at = UINT32_MAX;
    sst_reader_ref(r);
    block_iter_init(&it->bi, sst_key_cmp);
    it->status = TDB_OK;
    return &it->base;
}

iter_t *sst_reader_iter(sst_reader_t *r) { return new_iter(r, SST_CACHE_FILL); }

/* ...for one pass over the table: cached blocks are used, blocks read from
 * the file are not cached. */
iter_t *sst_reader_scan_iter(sst_reader_t *r) { return new_iter(r, SST_CACHE_PEEK); }

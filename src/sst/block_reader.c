/* sst/block_reader: bounds-checked iteration and seek over one block. */
#include "sst/block.h"

#include <stdlib.h>

#include "util/coding.h"
#include "util/error.h"
#include "util/prefetch.h"

/* Prepare an iterator with inline key storage and no block. */
void block_iter_init(block_iter_t *it, key_cmp_fn cmp) {
    it->data = NULL;
    it->restarts = 0;
    it->num_restarts = 0;
    it->cmp = cmp;
    it->cur = 0;
    it->next = 0;
    it->restart_idx = 0;
    it->status = TDB_OK;
    it->value = slice_make(NULL, 0);
    it->key = it->key_small;
    it->key_size = 0;
    it->key_cap = sizeof it->key_small;
}

/* Free a heap key buffer if one was needed. */
void block_iter_free(block_iter_t *it) {
    if (it->key != it->key_small) free(it->key);
    it->key = it->key_small;
    it->key_cap = sizeof it->key_small;
    it->key_size = 0;
}

/* Make the iterator invalid with a corruption status. */
static void set_corrupt(block_iter_t *it, const char *what, uint32_t off) {
    it->status = tdb_err(TDB_ERR_CORRUPTION, "block: %s at block offset %u", what, off);
    it->cur = it->restarts;
    it->key_size = 0;
    it->value = slice_make(NULL, 0);
}

/* Detach from the block: an invalid iterator with no error. */
void block_iter_clear(block_iter_t *it) {
    it->data = NULL;
    it->restarts = 0;
    it->num_restarts = 0;
    it->cur = 0;
    it->next = 0;
    it->restart_idx = 0;
    it->key_size = 0;
    it->value = slice_make(NULL, 0);
    it->status = TDB_OK;
}

/* Parse the restart array header of a block. */
int block_iter_set(block_iter_t *it, slice_t block) {
    it->data = block.data;
    it->restarts = 0;
    it->num_restarts = 0;
    it->cur = 0;
    it->next = 0;
    it->restart_idx = 0;
    it->key_size = 0;
    it->value = slice_make(NULL, 0);
    it->status = TDB_OK;
    if (block.size < 8 || block.size > UINT32_MAX) {
        it->status = tdb_err(TDB_ERR_CORRUPTION, "block: bad size %zu", block.size);
        return it->status;
    }
    uint32_t n = dec_fixed32(block.data + block.size - 4);
    uint32_t max = (uint32_t)((block.size - 4) / 4);
    if (n == 0 || n > max) {
        it->status = tdb_err(TDB_ERR_CORRUPTION, "block: bad restart count %u (size %zu)", n, block.size);
        return it->status;
    }
    it->num_restarts = n;
    it->restarts = (uint32_t)(block.size - 4 - (size_t)n * 4);
    it->cur = it->restarts; /* unpositioned */
    return TDB_OK;
}

/* Raw restart offset i (unchecked value; i < num_restarts). */
static inline uint32_t restart_point(const block_iter_t *it, uint32_t i) {
    return dec_fixed32(it->data + it->restarts + (size_t)i * 4);
}

/* Decode an entry header at p; returns pointer to the key delta or NULL. */
static inline const char *decode_header(const char *p, const char *limit, uint32_t *shared, uint32_t *non_shared,
                                        uint32_t *vlen) {
    if (limit - p >= 3) {
        const unsigned char *u = (const unsigned char *)p;
        if ((u[0] | u[1] | u[2]) < 0x80) { /* fast path: three one-byte varints */
            *shared = u[0];
            *non_shared = u[1];
            *vlen = u[2];
            p += 3;
            goto check;
        }
    }
    if (!(p = dec_varint32(p, limit, shared))) return NULL;
    if (!(p = dec_varint32(p, limit, non_shared))) return NULL;
    if (!(p = dec_varint32(p, limit, vlen))) return NULL;
check:
    if ((uint64_t)*non_shared + *vlen > (uint64_t)(limit - p)) return NULL;
    return p;
}

/* Grow the key buffer to hold n bytes (keeping the current contents). */
static int key_reserve(block_iter_t *it, size_t n) {
    if (n <= it->key_cap) return TDB_OK;
    size_t cap = it->key_cap * 2;
    while (cap < n) cap *= 2;
    char *p = (char *)malloc(cap);
    if (!p) return tdb_err(TDB_ERR_NOMEM, "block: key buffer of %zu bytes", cap);
    memcpy(p, it->key, it->key_size);
    if (it->key != it->key_small) free(it->key);
    it->key = p;
    it->key_cap = cap;
    return TDB_OK;
}

/* Decode the entry at it->next and make it current; 0 at end or on error. */
static int parse_next(block_iter_t *it) {
    it->cur = it->next;
    if (it->cur >= it->restarts) {
        it->cur = it->restarts;
        it->restart_idx = it->num_restarts;
        return 0;
    }
    const char *limit = it->data + it->restarts;
    uint32_t shared, non_shared, vlen;
    const char *p = decode_header(it->data + it->cur, limit, &shared, &non_shared, &vlen);
    if (!p || shared > it->key_size) {
        set_corrupt(it, "bad entry", it->cur);
        return 0;
    }
    int rc = key_reserve(it, (size_t)shared + non_shared);
    if (rc != TDB_OK) {
        it->status = rc;
        it->cur = it->restarts;
        return 0;
    }
    memcpy(it->key + shared, p, non_shared);
    it->key_size = (size_t)shared + non_shared;
    it->value = slice_make(p + non_shared, vlen);
    it->next = (uint32_t)(p + non_shared + vlen - it->data);
    /* Start loading the following entry, taken to be as long as this one:
     * a scan reads it next, after its caller's work on this one (a row
     * handed to the SQL layer), and a cached block is seldom in the CPU's
     * caches. */
    const char *nx = it->data + it->next;
    size_t len = it->next - it->cur < TDB_PREFETCH_ENTRY_MAX ? it->next - it->cur : TDB_PREFETCH_ENTRY_MAX;
    tdb_prefetch_range(nx, (size_t)(limit - nx) < len ? limit : nx + len);
    while (it->restart_idx + 1 < it->num_restarts && restart_point(it, it->restart_idx + 1) < it->cur)
        it->restart_idx++;
    return 1;
}

/* Position before the entry at restart i (the next parse reads it). */
static int seek_to_restart(block_iter_t *it, uint32_t i) {
    uint32_t off = restart_point(it, i);
    if (off >= it->restarts || (i == 0 && off != 0)) {
        set_corrupt(it, "bad restart offset", off);
        return 0;
    }
    it->key_size = 0; /* forces shared == 0 at a restart */
    it->restart_idx = i;
    it->next = off;
    return 1;
}

/* First entry. */
void block_iter_seek_to_first(block_iter_t *it) {
    if (it->status != TDB_OK) return;
    if (it->restarts == 0) { /* empty block */
        it->cur = 0;
        return;
    }
    if (seek_to_restart(it, 0)) parse_next(it);
}

/* Last entry: from the last restart, scan to the end. */
void block_iter_seek_to_last(block_iter_t *it) {
    if (it->status != TDB_OK) return;
    if (it->restarts == 0) return;
    if (!seek_to_restart(it, it->num_restarts - 1)) return;
    while (parse_next(it) && it->next < it->restarts) {
    }
}

/* The last restart whose key is < target (0 if none): binary search. 0 and
 * *bad = the offending offset on a malformed restart entry, else 1. */
static int restart_search(const block_iter_t *it, slice_t target, uint32_t *out, uint32_t *bad) {
    uint32_t left = 0, right = it->num_restarts - 1;
    const char *limit = it->data + it->restarts;
    while (left < right) {
        uint32_t mid = left + (right - left + 1) / 2;
        uint32_t off = restart_point(it, mid);
        uint32_t shared, non_shared, vlen;
        const char *p = off < it->restarts ? decode_header(it->data + off, limit, &shared, &non_shared, &vlen) : NULL;
        if (!p || shared != 0) {
            *bad = off;
            return 0;
        }
        if (it->cmp(slice_make(p, non_shared), target) < 0)
            left = mid;
        else
            right = mid - 1;
    }
    *out = left;
    return 1;
}

/* Bytes of entries a seek's scan hint covers from its restart point, and
 * restart keys its search hint covers. */
#define SCAN_HINT_BYTES 1024
#define RESTART_HINT_MAX 32u

/* Prefetch hints for block_iter_seek(target) (block.h). */
int block_iter_prefetch_seek(const block_iter_t *it, slice_t target, int stage) {
    if (it->status != TDB_OK || it->restarts == 0) return 0;
    if (stage == 0) {
        uint32_t n = it->num_restarts < RESTART_HINT_MAX ? it->num_restarts : RESTART_HINT_MAX;
        for (uint32_t i = 1; i < n; i++) {
            uint32_t off = restart_point(it, i);
            if (off < it->restarts) __builtin_prefetch(it->data + off);
        }
        return 1;
    }
    uint32_t r, bad;
    if (!restart_search(it, target, &r, &bad)) return 0; /* the seek reports it */
    uint32_t from = restart_point(it, r);
    uint32_t to = r + 1 < it->num_restarts ? restart_point(it, r + 1) : it->restarts;
    if (to > it->restarts || from >= to) return 0;
    if (to - from > SCAN_HINT_BYTES) to = from + SCAN_HINT_BYTES;
    tdb_prefetch_range(it->data + from, it->data + to);
    return 0;
}

/* Binary search the restarts, then scan to the first key >= target. */
void block_iter_seek(block_iter_t *it, slice_t target) {
    if (it->status != TDB_OK) return;
    if (it->restarts == 0) return;
    uint32_t left, bad;
    if (!restart_search(it, target, &left, &bad)) {
        set_corrupt(it, "bad restart entry", bad);
        return;
    }
    if (!seek_to_restart(it, left)) return;
    while (parse_next(it)) {
        if (it->cmp(block_iter_key(it), target) >= 0) return;
    }
}

/* Next entry. */
void block_iter_next(block_iter_t *it) {
    if (!block_iter_valid(it)) return;
    parse_next(it);
}

/* Previous entry: rescan from the restart point before the current one. */
void block_iter_prev(block_iter_t *it) {
    if (!block_iter_valid(it)) return;
    uint32_t original = it->cur;
    while (restart_point(it, it->restart_idx) >= original) {
        if (it->restart_idx == 0) { /* before the first entry */
            it->cur = it->restarts;
            it->restart_idx = it->num_restarts;
            return;
        }
        it->restart_idx--;
    }
    if (!seek_to_restart(it, it->restart_idx)) return;
    while (parse_next(it)) {
        if (it->next == original) return;
        if (it->next > original) {
            set_corrupt(it, "restart array out of step with entries", original);
            return;
        }
    }
    if (it->status == TDB_OK) set_corrupt(it, "entry chain broken", original);
}

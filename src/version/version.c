/*
 * version/version: file metadata, immutable versions, edits and lookups.
 * Invariants are stated in version.h.
 */
#include "version/version.h"

#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/ikey.h"

struct version {
    int refs; /* atomic builtins */
    file_obsolete_fn fn;
    void *ctx;
    int n[TDB_MAX_LEVELS];
    file_meta_t **files[TDB_MAX_LEVELS];
    uint64_t bytes[TDB_MAX_LEVELS];
    int n_rd_files; /* files with num_range_deletes > 0 (set by version_apply) */
    int l1_runs;    /* version_l1_runs (set by version_apply) */
};

/* ---------------------------------------------------------------------- */
/* file_meta                                                               */
/* ---------------------------------------------------------------------- */

/* Allocate a file meta with the given fields; refs = 1. */
file_meta_t *file_meta_create(uint64_t number, uint64_t file_size, slice_t smallest, slice_t largest,
                              uint64_t min_seq, uint64_t max_seq, uint64_t num_entries,
                              uint64_t num_deletes) {
    file_meta_t *f = (file_meta_t *)calloc(1, sizeof *f);
    if (!f) return NULL;
    if (buf_append(&f->smallest, smallest.data, smallest.size) != TDB_OK ||
        buf_append(&f->largest, largest.data, largest.size) != TDB_OK) {
        buf_free(&f->smallest);
        buf_free(&f->largest);
        free(f);
        return NULL;
    }
    f->number = number;
    f->file_size = file_size;
    f->min_seq = min_seq;
    f->max_seq = max_seq;
    f->num_entries = num_entries;
    f->num_deletes = num_deletes;
    f->refs = 1;
    return f;
}

/* File meta from a finished table's properties. */
file_meta_t *file_meta_from_props(uint64_t number, const sst_props_t *p) {
    file_meta_t *f = file_meta_create(number, p->file_size, buf_slice(&p->smallest), buf_slice(&p->largest),
                                      p->min_seq, p->max_seq, p->num_entries, p->num_deletes);
    if (f) f->num_range_deletes = p->num_range_deletes;
    return f;
}

/* Take a reference. */
/* Do a's and b's user-key ranges share a key? */
int file_meta_overlaps(const file_meta_t *a, const file_meta_t *b) {
    return slice_compare(ikey_user(buf_slice(&a->largest)), ikey_user(buf_slice(&b->smallest))) >= 0 &&
           slice_compare(ikey_user(buf_slice(&a->smallest)), ikey_user(buf_slice(&b->largest))) <= 0;
}

void file_meta_ref(file_meta_t *f) { __atomic_add_fetch(&f->refs, 1, __ATOMIC_RELAXED); }

/* Drop a reference; the last one frees f and reports it obsolete. */
void file_meta_unref(file_meta_t *f) {
    if (!f) return;
    if (__atomic_sub_fetch(&f->refs, 1, __ATOMIC_ACQ_REL) != 0) return;
    file_obsolete_fn fn = f->obsolete_fn;
    void *ctx = f->obsolete_ctx;
    uint64_t number = f->number;
    sst_reader_t *pinned = __atomic_load_n(&f->reader, __ATOMIC_ACQUIRE);
    if (pinned) table_cache_unpin(__atomic_load_n(&f->reader_tc, __ATOMIC_RELAXED), pinned);
    buf_free(&f->smallest);
    buf_free(&f->largest);
    free(f);
    if (fn) fn(ctx, number);
}

/* ---------------------------------------------------------------------- */
/* version                                                                 */
/* ---------------------------------------------------------------------- */

/* Empty version with refs 1. */
version_t *version_create(file_obsolete_fn fn, void *ctx) {
    version_t *v = (version_t *)calloc(1, sizeof *v);
    if (!v) return NULL;
    v->refs = 1;
    v->fn = fn;
    v->ctx = ctx;
    return v;
}

/* Take a reference. */
void version_ref(version_t *v) { __atomic_add_fetch(&v->refs, 1, __ATOMIC_RELAXED); }

/* Free a version's storage, dropping its file references. */
static void version_free(version_t *v) {
    for (int l = 0; l < TDB_MAX_LEVELS; l++) {
        for (int i = 0; i < v->n[l]; i++) file_meta_unref(v->files[l][i]);
        free(v->files[l]);
    }
    free(v);
}

/* Drop a reference; the last one frees v. */
void version_unref(version_t *v) {
    if (!v) return;
    if (__atomic_sub_fetch(&v->refs, 1, __ATOMIC_ACQ_REL) == 0) version_free(v);
}

/* Number of files at level. */
int version_num_files(const version_t *v, int level) {
    if (level < 1 || level >= TDB_MAX_LEVELS) return 0;
    return v->n[level];
}

/* i-th file at level, or NULL if out of range. */
file_meta_t *version_file(const version_t *v, int level, int i) {
    if (level < 1 || level >= TDB_MAX_LEVELS || i < 0 || i >= v->n[level]) return NULL;
    return v->files[level][i];
}

/* Level-1 runs, counted by version_apply. */
int version_l1_runs(const version_t *v) { return v->l1_runs; }

/* Sum of file sizes at level. */
uint64_t version_level_bytes(const version_t *v, int level) {
    if (level < 1 || level >= TDB_MAX_LEVELS) return 0;
    return v->bytes[level];
}

/* Files over all levels. */
int version_total_files(const version_t *v) {
    int t = 0;
    for (int l = 1; l < TDB_MAX_LEVELS; l++) t += v->n[l];
    return t;
}

/* Set the obsolete callback of v and of its files that have none yet. */
void version_set_obsolete_fn(version_t *v, file_obsolete_fn fn, void *ctx) {
    v->fn = fn;
    v->ctx = ctx;
    for (int l = 1; l < TDB_MAX_LEVELS; l++) {
        for (int i = 0; i < v->n[l]; i++) {
            file_meta_t *f = v->files[l][i];
            if (!f->obsolete_fn) {
                f->obsolete_fn = fn;
                f->obsolete_ctx = ctx;
            }
        }
    }
}


/* ---------------------------------------------------------------------- */
/* edits                                                                   */
/* ---------------------------------------------------------------------- */

/* Record that f is added to level (takes a reference). */
int version_edit_add(version_edit_t *e, int level, file_meta_t *f) {
    if (level < 1 || level >= TDB_MAX_LEVELS || !f) return tdb_err(TDB_ERR_INVALID_ARG, "edit: bad level %d", level);
    if (e->n_add == e->cap_add) {
        int ncap = e->cap_add ? e->cap_add * 2 : 8;
        void *p = realloc(e->add, (size_t)ncap * sizeof e->add[0]);
        if (!p) return tdb_err(TDB_ERR_NOMEM, "edit: %d additions", ncap);
        e->add = p;
        e->cap_add = ncap;
    }
    file_meta_ref(f);
    e->add[e->n_add].level = level;
    e->add[e->n_add].f = f;
    e->n_add++;
    return TDB_OK;
}

/* Record that file `number` leaves level. */
int version_edit_del(version_edit_t *e, int level, uint64_t number) {
    if (level < 1 || level >= TDB_MAX_LEVELS) return tdb_err(TDB_ERR_INVALID_ARG, "edit: bad level %d", level);
    if (e->n_del == e->cap_del) {
        int ncap = e->cap_del ? e->cap_del * 2 : 8;
        void *p = realloc(e->del, (size_t)ncap * sizeof e->del[0]);
        if (!p) return tdb_err(TDB_ERR_NOMEM, "edit: %d deletions", ncap);
        e->del = p;
        e->cap_del = ncap;
    }
    e->del[e->n_del].level = level;
    e->del[e->n_del].number = number;
    e->n_del++;
    return TDB_OK;
}

/* Release the edit's file references and arrays. */
void version_edit_free(version_edit_t *e) {
    for (int i = 0; i < e->n_add; i++) file_meta_unref(e->add[i].f);
    free(e->add);
    free(e->del);
    memset(e, 0, sizeof *e);
}

/* ---------------------------------------------------------------------- */
/* apply                                                                   */
/* ---------------------------------------------------------------------- */

typedef struct del_key {
    int level;
    uint64_t number;
} del_key_t;

/* Order deletions by (level, number). */
static int del_cmp(const void *a, const void *b) {
    const del_key_t *x = (const del_key_t *)a, *y = (const del_key_t *)b;
    if (x->level != y->level) return x->level < y->level ? -1 : 1;
    return x->number < y->number ? -1 : (x->number > y->number);
}

/* Level-1 order: newest first (max_seq desc, then number desc). */
static int l1_cmp(const void *a, const void *b) {
    const file_meta_t *x = *(file_meta_t *const *)a, *y = *(file_meta_t *const *)b;
    if (x->max_seq != y->max_seq) return x->max_seq > y->max_seq ? -1 : 1;
    return x->number > y->number ? -1 : (x->number < y->number);
}

/* Deeper-level order: smallest key ascending. */
static int lk_cmp(const void *a, const void *b) {
    const file_meta_t *x = *(file_meta_t *const *)a, *y = *(file_meta_t *const *)b;
    int c = ikey_compare(buf_slice(&x->smallest), buf_slice(&y->smallest));
    if (c) return c;
    return x->number < y->number ? -1 : (x->number > y->number);
}

/* Order file numbers ascending. */
static int u64_cmp(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : (x > y);
}

/* Level-1 runs of v (version.h), its level 1 in order: a file joins the
 * current run if its sequence range meets the run's and its keys meet none
 * of the run's files; otherwise it starts a new run. */
static int count_l1_runs(const version_t *v) {
    int runs = 0, first = 0;
    uint64_t run_min = 0;
    for (int i = 0; i < v->n[1]; i++) {
        const file_meta_t *f = v->files[1][i];
        int join = runs > 0 && f->max_seq >= run_min;
        for (int j = first; j < i && join; j++)
            if (file_meta_overlaps(v->files[1][j], f)) join = 0;
        if (!join) {
            runs++;
            first = i;
            run_min = f->min_seq;
        } else if (f->min_seq < run_min) {
            run_min = f->min_seq;
        }
    }
    return runs;
}

/* Build base + edit into a new version. */
int version_apply(const version_t *base, const version_edit_t *e, version_t **out) {
    int rc = TDB_OK;
    version_t *v = NULL;
    del_key_t *dels = NULL;
    uint64_t *nums = NULL;
    *out = NULL;

    if (e->n_add < 0 || e->n_del < 0)
        RAISE(TDB_ERR_INVALID_ARG, "version apply: %d files added, %d deleted", e->n_add, e->n_del);
    for (int i = 0; i < e->n_add; i++) {
        if (e->add[i].level < 1 || e->add[i].level >= TDB_MAX_LEVELS || !e->add[i].f)
            RAISE(TDB_ERR_INVALID_ARG, "version apply: bad level %d", e->add[i].level);
        if (!ikey_valid(buf_slice(&e->add[i].f->smallest)) || !ikey_valid(buf_slice(&e->add[i].f->largest)))
            RAISE(TDB_ERR_INVALID_ARG, "version apply: file %llu has no key range",
                  (unsigned long long)e->add[i].f->number);
    }
    for (int i = 0; i < e->n_del; i++)
        if (e->del[i].level < 1 || e->del[i].level >= TDB_MAX_LEVELS)
            RAISE(TDB_ERR_INVALID_ARG, "version apply: bad level %d", e->del[i].level);

    v = version_create(base->fn, base->ctx);
    if (!v) RAISE(TDB_ERR_NOMEM, "version");
    if (e->n_del) {
        dels = (del_key_t *)malloc((size_t)e->n_del * sizeof *dels);
        if (!dels) RAISE(TDB_ERR_NOMEM, "version apply");
        for (int i = 0; i < e->n_del; i++) {
            dels[i].level = e->del[i].level;
            dels[i].number = e->del[i].number;
        }
        qsort(dels, (size_t)e->n_del, sizeof *dels, del_cmp);
    }

    int matched = 0, total = 0;
    for (int l = 1; l < TDB_MAX_LEVELS; l++) {
        int cap = base->n[l];
        for (int i = 0; i < e->n_add; i++) cap += e->add[i].level == l;
        if (cap == 0) continue;
        v->files[l] = (file_meta_t **)malloc((size_t)cap * sizeof(file_meta_t *));
        if (!v->files[l]) RAISE(TDB_ERR_NOMEM, "version apply: level %d", l);
        for (int i = 0; i < base->n[l]; i++) {
            file_meta_t *f = base->files[l][i];
            del_key_t k = {l, f->number};
            if (dels && bsearch(&k, dels, (size_t)e->n_del, sizeof *dels, del_cmp)) {
                matched++;
                continue;
            }
            file_meta_ref(f);
            v->files[l][v->n[l]++] = f;
            v->bytes[l] += f->file_size;
            v->n_rd_files += f->num_range_deletes > 0;
        }
        for (int i = 0; i < e->n_add; i++) {
            if (e->add[i].level != l) continue;
            file_meta_t *f = e->add[i].f;
            file_meta_ref(f);
            v->files[l][v->n[l]++] = f;
            v->bytes[l] += f->file_size;
            v->n_rd_files += f->num_range_deletes > 0;
        }
        total += v->n[l];
    }
    if (matched != e->n_del) {
        /* Name one unmatched or duplicated deletion. */
        for (int i = 0; i < e->n_del; i++) {
            int found = 0, l = dels[i].level;
            for (int j = 0; j < base->n[l] && !found; j++) found = base->files[l][j]->number == dels[i].number;
            if (!found || (i > 0 && del_cmp(&dels[i], &dels[i - 1]) == 0))
                RAISE(TDB_ERR_CORRUPTION, "version apply: file %llu deleted from level %d that lacks it",
                      (unsigned long long)dels[i].number, l);
        }
        RAISE(TDB_ERR_CORRUPTION, "version apply: duplicate deletions");
    }

    /* No file number twice. */
    if (total > 1) {
        nums = (uint64_t *)malloc((size_t)total * sizeof *nums);
        if (!nums) RAISE(TDB_ERR_NOMEM, "version apply");
        int k = 0;
        for (int l = 1; l < TDB_MAX_LEVELS; l++)
            for (int i = 0; i < v->n[l]; i++) nums[k++] = v->files[l][i]->number;
        qsort(nums, (size_t)total, sizeof *nums, u64_cmp);
        for (int i = 1; i < total; i++)
            if (nums[i] == nums[i - 1])
                RAISE(TDB_ERR_CORRUPTION, "version apply: file %llu present twice", (unsigned long long)nums[i]);
    }

    /* Level order and the disjointness of levels >= 2. */
    if (v->n[1] > 1) qsort(v->files[1], (size_t)v->n[1], sizeof(file_meta_t *), l1_cmp);
    v->l1_runs = count_l1_runs(v);
    for (int l = 2; l < TDB_MAX_LEVELS; l++) {
        if (v->n[l] > 1) qsort(v->files[l], (size_t)v->n[l], sizeof(file_meta_t *), lk_cmp);
        for (int i = 1; i < v->n[l]; i++) {
            const file_meta_t *a = v->files[l][i - 1], *b = v->files[l][i];
            if (slice_compare(ikey_user(buf_slice(&a->largest)), ikey_user(buf_slice(&b->smallest))) >= 0)
                RAISE(TDB_ERR_CORRUPTION, "version apply: files %llu and %llu overlap at level %d",
                      (unsigned long long)a->number, (unsigned long long)b->number, l);
        }
    }

    /* Files entering a version now report to its callback. */
    for (int i = 0; i < e->n_add; i++) {
        file_meta_t *f = e->add[i].f;
        if (!f->obsolete_fn) {
            f->obsolete_fn = base->fn;
            f->obsolete_ctx = base->ctx;
        }
    }
    *out = v;
    v = NULL;
err:
    /* A failed new version drops only the references it took; the files
     * stay referenced by base or the edit, so no callback fires. */
    if (v) version_free(v);
    free(dels);
    free(nums);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* lookups                                                                 */
/* ---------------------------------------------------------------------- */

/* The reader of f (version.h). */
int version_file_reader(table_cache_t *tc, const file_meta_t *cf, sst_reader_t **out, int *owned) {
    file_meta_t *f = (file_meta_t *)cf; /* only the set-once pin changes */
    *owned = 0;
    sst_reader_t *r = __atomic_load_n(&f->reader, __ATOMIC_ACQUIRE);
    if (r) {
        *out = r;
        return TDB_OK;
    }
    TDB_RET(table_cache_pin(tc, f->number, &r));
    if (!r) {
        *owned = 1;
        return table_cache_get(tc, f->number, out);
    }
    sst_reader_t *cur = NULL;
    __atomic_store_n(&f->reader_tc, tc, __ATOMIC_RELAXED);
    if (!__atomic_compare_exchange_n(&f->reader, &cur, r, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        table_cache_unpin(tc, r); /* another lookup pinned first */
        r = cur;
    }
    *out = r;
    return TDB_OK;
}

/* Probe one file for user_key: its newest point entry and its newest
 * covering range tombstone; 1 found (the newer of the two), 0 absent, <0
 * error. */
static int probe_file(table_cache_t *tc, const file_meta_t *f, slice_t user_key, uint64_t snap_seq,
                      unsigned *type, uint64_t *seq, buf_t *value) {
    sst_reader_t *r = NULL;
    int owned;
    TDB_RET(version_file_reader(tc, f, &r, &owned));
    uint64_t tomb = sst_reader_range_del_seq(r, user_key, snap_seq);
    int rc = sst_reader_get(r, user_key, snap_seq, type, seq, value); /* checks the bloom filter first */
    if (owned) sst_reader_unref(r);
    if (rc < 0 || tomb == 0 || (rc == 1 && *seq > tomb)) return rc;
    *type = KT_RANGE_DELETE; /* the key is covered by a newer tombstone */
    *seq = tomb;
    buf_clear(value);
    return 1;
}

/* Does f's user-key range include user_key? */
static int file_covers(const file_meta_t *f, slice_t user_key) {
    return slice_compare(user_key, ikey_user(buf_slice(&f->smallest))) >= 0 &&
           slice_compare(user_key, ikey_user(buf_slice(&f->largest))) <= 0;
}

/* Index of the first file at level (>= 2) whose largest user key >= key. */
static int level_find_user(const version_t *v, int level, slice_t user_key) {
    int lo = 0, hi = v->n[level];
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (slice_compare(ikey_user(buf_slice(&v->files[level][mid]->largest)), user_key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Approximate entries of f with user key in [lo, hi): all of them when
 * the file lies inside the range, none when outside, else from its block
 * index. */
static uint64_t file_approx(table_cache_t *tc, const file_meta_t *f, const slice_t *lo, const slice_t *hi) {
    slice_t small = ikey_user(buf_slice(&f->smallest)), large = ikey_user(buf_slice(&f->largest));
    if ((hi && slice_compare(small, *hi) >= 0) || (lo && slice_compare(large, *lo) < 0)) return 0;
    if ((!lo || slice_compare(small, *lo) >= 0) && (!hi || slice_compare(large, *hi) < 0)) return f->num_entries;
    sst_reader_t *r = NULL;
    int owned;
    if (version_file_reader(tc, f, &r, &owned) != TDB_OK) return f->num_entries / 2; /* an estimate either way */
    uint64_t n = sst_reader_approx_entries(r, lo, hi);
    if (owned) sst_reader_unref(r);
    return n;
}

uint64_t version_approx_entries(version_t *v, table_cache_t *tc, const slice_t *lo, const slice_t *hi) {
    uint64_t n = 0;
    for (int i = 0; i < v->n[1]; i++) n += file_approx(tc, v->files[1][i], lo, hi);
    for (int l = 2; l < TDB_MAX_LEVELS; l++) {
        int i = lo ? level_find_user(v, l, *lo) : 0;
        for (; i < v->n[l]; i++) {
            const file_meta_t *f = v->files[l][i];
            if (hi && slice_compare(ikey_user(buf_slice(&f->smallest)), *hi) >= 0) break;
            n += file_approx(tc, f, lo, hi);
        }
    }
    return n;
}

/* Point lookup through the levels. */
int version_get(version_t *v, table_cache_t *tc, slice_t user_key, uint64_t snap_seq, unsigned *type,
                uint64_t *seq, buf_t *value) {
    for (int i = 0; i < v->n[1]; i++) {
        const file_meta_t *f = v->files[1][i];
        if (!file_covers(f, user_key)) continue;
        int rc = probe_file(tc, f, user_key, snap_seq, type, seq, value);
        if (rc != 0) return rc;
    }
    for (int l = 2; l < TDB_MAX_LEVELS; l++) {
        if (v->n[l] == 0) continue;
        int i = level_find_user(v, l, user_key);
        if (i >= v->n[l] || !file_covers(v->files[l][i], user_key)) continue;
        int rc = probe_file(tc, v->files[l][i], user_key, snap_seq, type, seq, value);
        if (rc != 0) return rc;
    }
    return 0;
}

/* Copy the tombstones of the files that have some. */
int version_range_dels(version_t *v, table_cache_t *tc, uint64_t max_seq, rd_list_t *out) {
    if (v->n_rd_files == 0) return TDB_OK; /* common case: no file walk per iterator */
    for (int l = 1; l < TDB_MAX_LEVELS; l++) {
        for (int i = 0; i < v->n[l]; i++) {
            const file_meta_t *f = v->files[l][i];
            if (f->num_range_deletes == 0 || f->min_seq > max_seq) continue;
            sst_reader_t *r = NULL;
            int owned;
            int rc = version_file_reader(tc, f, &r, &owned);
            if (rc != TDB_OK) return rc;
            const range_del_t *rd;
            size_t n = sst_reader_range_dels(r, &rd);
            for (size_t k = 0; k < n && rc == TDB_OK; k++)
                if (rd[k].seq <= max_seq) rc = rd_list_add(out, rd[k].start, rd[k].end, rd[k].seq);
            if (owned) sst_reader_unref(r);
            if (rc != TDB_OK) return rc;
        }
    }
    return TDB_OK;
}

/* Grow an iterator array to hold one more. */
static int iters_push(iter_t ***its, int *n, int *cap, iter_t *it) {
    if (*n == *cap) {
        int ncap = *cap ? *cap * 2 : 8;
        iter_t **p = (iter_t **)realloc(*its, (size_t)ncap * sizeof *p);
        if (!p) return tdb_err(TDB_ERR_NOMEM, "iterator array of %d", ncap);
        *its = p;
        *cap = ncap;
    }
    (*its)[(*n)++] = it;
    return TDB_OK;
}

/* Append iterators covering v. */
int version_add_iters(version_t *v, table_cache_t *tc, iter_t ***its, int *n, int *cap) {
    int rc = TDB_OK, n0 = *n;
    iter_t *it = NULL;
    for (int i = 0; i < v->n[1]; i++) {
        sst_reader_t *r = NULL;
        int owned;
        TRY(version_file_reader(tc, v->files[1][i], &r, &owned));
        it = sst_reader_iter(r); /* holds its own reference */
        if (owned) sst_reader_unref(r);
        if (!it) RAISE(TDB_ERR_NOMEM, "table iterator");
        TRY(iters_push(its, n, cap, it));
        it = NULL;
    }
    for (int l = 2; l < TDB_MAX_LEVELS; l++) {
        if (v->n[l] == 0) continue;
        it = version_level_iter(v, tc, l);
        if (!it) RAISE(TDB_ERR_NOMEM, "level iterator");
        TRY(iters_push(its, n, cap, it));
        it = NULL;
    }
    return TDB_OK;
err:
    iter_destroy(it);
    while (*n > n0) iter_destroy((*its)[--*n]);
    return rc;
}

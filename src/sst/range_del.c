/*
 * sst/range_del: owned tombstone lists, fragmentation and file bounds
 * (invariants in range_del.h).
 */
#include "sst/range_del.h"

#include <stdlib.h>
#include <string.h>

#include "util/coding.h"
#include "util/error.h"
#include "util/ikey.h"

#define RD_CHUNK_MIN (16u * 1024u)

struct rd_chunk {
    rd_chunk_t *next;
    size_t used, cap;
    char data[];
};

/* Copy n bytes into the list's chunk storage; NULL on OOM. */
static char *rd_store(rd_list_t *l, const char *d, size_t n) {
    rd_chunk_t *c = l->chunks;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > RD_CHUNK_MIN ? n : RD_CHUNK_MIN;
        c = (rd_chunk_t *)malloc(sizeof *c + cap);
        if (!c) return NULL;
        c->next = l->chunks;
        c->used = 0;
        c->cap = cap;
        l->chunks = c;
    }
    char *p = c->data + c->used;
    if (n) memcpy(p, d, n);
    c->used += n;
    return p;
}

/* Append a copy of one tombstone. */
int rd_list_add(rd_list_t *l, slice_t start, slice_t end, uint64_t seq) {
    if (l->n == l->cap) {
        size_t nc = l->cap ? l->cap * 2 : 16;
        range_del_t *p = (range_del_t *)realloc(l->v, nc * sizeof *p);
        if (!p) return tdb_err(TDB_ERR_NOMEM, "range tombstone list of %zu", nc);
        l->v = p;
        l->cap = nc;
    }
    char *k = rd_store(l, start.data, start.size);
    char *e = k ? rd_store(l, end.data, end.size) : NULL;
    if (!e) return tdb_err(TDB_ERR_NOMEM, "range tombstone keys");
    l->v[l->n].start = slice_make(k, start.size);
    l->v[l->n].end = slice_make(e, end.size);
    l->v[l->n].seq = seq;
    l->n++;
    return TDB_OK;
}

/* Free everything the list owns. */
void rd_list_free(rd_list_t *l) {
    while (l->chunks) {
        rd_chunk_t *c = l->chunks;
        l->chunks = c->next;
        free(c);
    }
    free(l->v);
    memset(l, 0, sizeof *l);
}

/* start ascending, seq descending. */
static int cmp_start(const void *a, const void *b) {
    const range_del_t *x = (const range_del_t *)a, *y = (const range_del_t *)b;
    int c = slice_compare(x->start, y->start);
    if (c) return c;
    return x->seq > y->seq ? -1 : (x->seq < y->seq);
}

/* seq ascending, then start ascending. */
static int cmp_seq(const void *a, const void *b) {
    const range_del_t *x = (const range_del_t *)a, *y = (const range_del_t *)b;
    if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
    return slice_compare(x->start, y->start);
}

void rd_sort_by_start(range_del_t *v, size_t n) {
    if (n > 1) qsort(v, n, sizeof *v, cmp_start);
}

/* Merge touching pieces of equal sequence. */
size_t rd_coalesce(range_del_t *v, size_t n) {
    if (n < 2) return n;
    qsort(v, n, sizeof *v, cmp_seq);
    size_t k = 0;
    for (size_t i = 1; i < n; i++) {
        if (v[i].seq == v[k].seq && slice_compare(v[i].start, v[k].end) <= 0) {
            if (slice_compare(v[i].end, v[k].end) > 0) v[k].end = v[i].end;
        } else {
            v[++k] = v[i];
        }
    }
    n = k + 1;
    rd_sort_by_start(v, n);
    return n;
}

/* ---------------------------------------------------------------------- */
/* fragments                                                               */
/* ---------------------------------------------------------------------- */

static int cmp_slice(const void *a, const void *b) { return slice_compare(*(const slice_t *)a, *(const slice_t *)b); }

static int cmp_u64_desc(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x > y ? -1 : (x < y);
}

void rd_frags_free(rd_frags_t *f) {
    free(f->lo);
    free(f->hi);
    free(f->off);
    free(f->seqs);
    free(f->keys);
    memset(f, 0, sizeof *f);
}

/* Max-heap of tombstone indices by seq (for max_only sweeps). */
static void heap_push(size_t *h, size_t *n, const range_del_t *t, size_t x) {
    size_t i = (*n)++;
    h[i] = x;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (t[h[p]].seq >= t[h[i]].seq) break;
        size_t tmp = h[p];
        h[p] = h[i];
        h[i] = tmp;
        i = p;
    }
}

static void heap_pop(size_t *h, size_t *n, const range_del_t *t) {
    h[0] = h[--*n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < *n && t[h[l]].seq > t[h[m]].seq) m = l;
        if (r < *n && t[h[r]].seq > t[h[m]].seq) m = r;
        if (m == i) break;
        size_t tmp = h[m];
        h[m] = h[i];
        h[i] = tmp;
        i = m;
    }
}

/* Sweep over the sorted boundaries, keeping the tombstones active at each
 * elementary interval: all of them (a pruned array; the work is bounded by
 * the output, itself bounded by max_total) or, for max_only, a max-heap by
 * sequence with lazy removal (O(n log n)). */
int rd_frags_build(rd_frags_t *f, const range_del_t *v, size_t n, uint64_t max_seq, int max_only,
                   size_t max_total) {
    int rc = TDB_OK;
    range_del_t *t = NULL;
    slice_t *bounds = NULL;
    size_t *active = NULL, *flo = NULL, *fhi = NULL;
    uint64_t *seqs = NULL, *tmp = NULL;
    size_t m = 0, nb = 0, nf = 0, capf = 0, ns = 0, caps = 0;
    memset(f, 0, sizeof *f);
    if (n == 0) return TDB_OK;

    t = (range_del_t *)malloc(n * sizeof *t);
    bounds = (slice_t *)malloc(2 * n * sizeof *bounds);
    active = (size_t *)malloc(n * sizeof *active);
    tmp = (uint64_t *)malloc(n * sizeof *tmp);
    if (!t || !bounds || !active || !tmp) RAISE(TDB_ERR_NOMEM, "range tombstone fragments");
    for (size_t i = 0; i < n; i++) {
        if (v[i].seq > max_seq || slice_compare(v[i].start, v[i].end) >= 0) continue;
        t[m++] = v[i];
    }
    if (m == 0) goto err;
    for (size_t i = 0; i < m; i++) {
        bounds[nb++] = t[i].start;
        bounds[nb++] = t[i].end;
    }
    qsort(bounds, nb, sizeof *bounds, cmp_slice);
    size_t u = 0;
    for (size_t i = 1; i < nb; i++)
        if (slice_compare(bounds[i], bounds[u]) != 0) bounds[++u] = bounds[i];
    nb = u + 1;
    qsort(t, m, sizeof *t, cmp_start);

    size_t next = 0, na = 0;
    for (size_t j = 0; j + 1 < nb; j++) {
        slice_t b = bounds[j];
        size_t k = 0;
        if (max_only) {
            while (next < m && slice_compare(t[next].start, b) <= 0) heap_push(active, &na, t, next++);
            while (na > 0 && slice_compare(t[active[0]].end, b) <= 0) heap_pop(active, &na, t);
            if (na == 0) continue;
            tmp[k++] = t[active[0]].seq;
        } else {
            while (next < m && slice_compare(t[next].start, b) <= 0) active[na++] = next++;
            size_t keep = 0;
            for (size_t a = 0; a < na; a++)
                if (slice_compare(t[active[a]].end, b) > 0) active[keep++] = active[a];
            na = keep;
            if (na == 0) continue;
            for (size_t a = 0; a < na; a++) tmp[k++] = t[active[a]].seq;
            qsort(tmp, k, sizeof *tmp, cmp_u64_desc);
            size_t d = 1; /* pieces of one tombstone may repeat a sequence */
            for (size_t a = 1; a < k; a++)
                if (tmp[a] != tmp[d - 1]) tmp[d++] = tmp[a];
            k = d;
        }
        if (nf > 0 && fhi[nf - 1] == j && ns - f->off[nf - 1] == k &&
            memcmp(seqs + f->off[nf - 1], tmp, k * sizeof *tmp) == 0) {
            fhi[nf - 1] = j + 1; /* same coverage: one fragment */
            continue;
        }
        if (max_total && ns + k > max_total)
            RAISE(TDB_ERR_TOO_LARGE, "range tombstone fragments: more than %zu sequences", max_total);
        if (nf == capf) {
            size_t nc = capf ? capf * 2 : 16;
            size_t *a1 = (size_t *)realloc(flo, nc * sizeof *a1);
            if (!a1) RAISE(TDB_ERR_NOMEM, "range tombstone fragments");
            flo = a1;
            size_t *a2 = (size_t *)realloc(fhi, nc * sizeof *a2);
            if (!a2) RAISE(TDB_ERR_NOMEM, "range tombstone fragments");
            fhi = a2;
            size_t *a3 = (size_t *)realloc(f->off, (nc + 1) * sizeof *a3);
            if (!a3) RAISE(TDB_ERR_NOMEM, "range tombstone fragments");
            f->off = a3;
            capf = nc;
        }
        if (ns + k > caps) {
            size_t nc = caps ? caps * 2 : 32;
            while (nc < ns + k) nc *= 2;
            uint64_t *p = (uint64_t *)realloc(seqs, nc * sizeof *p);
            if (!p) RAISE(TDB_ERR_NOMEM, "range tombstone fragments");
            seqs = p;
            caps = nc;
        }
        f->off[nf] = ns;
        memcpy(seqs + ns, tmp, k * sizeof *tmp);
        ns += k;
        flo[nf] = j;
        fhi[nf] = j + 1;
        nf++;
    }
    if (nf == 0) goto err;
    f->off[nf] = ns;

    /* Copy the boundary keys the fragments use into one buffer. */
    size_t total = 0;
    for (size_t i = 0; i < nf; i++) total += bounds[flo[i]].size + bounds[fhi[i]].size;
    f->keys = (char *)malloc(total ? total : 1);
    f->lo = (slice_t *)malloc(nf * sizeof *f->lo);
    f->hi = (slice_t *)malloc(nf * sizeof *f->hi);
    if (!f->keys || !f->lo || !f->hi) RAISE(TDB_ERR_NOMEM, "range tombstone fragments");
    char *p = f->keys;
    for (size_t i = 0; i < nf; i++) {
        slice_t a = bounds[flo[i]], b = bounds[fhi[i]];
        memcpy(p, a.data, a.size);
        f->lo[i] = slice_make(p, a.size);
        p += a.size;
        memcpy(p, b.data, b.size);
        f->hi[i] = slice_make(p, b.size);
        p += b.size;
    }
    f->seqs = seqs;
    seqs = NULL;
    f->n = nf;
err:
    if (rc != TDB_OK || f->n == 0) {
        free(f->lo);
        free(f->hi);
        free(f->off);
        free(f->keys);
        memset(f, 0, sizeof *f);
    }
    free(seqs);
    free(t);
    free(bounds);
    free(active);
    free(tmp);
    free(flo);
    free(fhi);
    return rc;
}

/* Fragment containing key, or -1. */
long rd_frags_find(const rd_frags_t *f, slice_t key, size_t *hint) {
    if (f->n == 0) return -1;
    if (hint && *hint < f->n) {
        size_t h = *hint;
        if (slice_compare(f->lo[h], key) <= 0) {
            if (slice_compare(key, f->hi[h]) < 0) return (long)h;
            if (h + 1 < f->n && slice_compare(f->lo[h + 1], key) <= 0 && slice_compare(key, f->hi[h + 1]) < 0) {
                *hint = h + 1;
                return (long)(h + 1);
            }
        }
    }
    /* Last fragment with lo <= key. */
    size_t lo = 0, hi = f->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (slice_compare(f->lo[mid], key) <= 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    if (lo == 0) return -1;
    size_t i = lo - 1;
    if (hint) *hint = i;
    return slice_compare(key, f->hi[i]) < 0 ? (long)i : -1;
}

/* Highest covering sequence <= snap. */
uint64_t rd_frags_max_seq(const rd_frags_t *f, slice_t key, uint64_t snap, size_t *hint) {
    long i = rd_frags_find(f, key, hint);
    if (i < 0) return 0;
    for (size_t k = f->off[i]; k < f->off[i + 1]; k++)
        if (f->seqs[k] <= snap) return f->seqs[k];
    return 0;
}

/* Does a tombstone newer than since (and <= snap) touch [lo, hi]? */
int rd_frags_overlap_newer(const rd_frags_t *f, const slice_t *lo, const slice_t *hi, uint64_t since,
                           uint64_t snap) {
    size_t i = 0;
    if (lo) { /* first fragment with hi > lo */
        size_t a = 0, b = f->n;
        while (a < b) {
            size_t mid = a + (b - a) / 2;
            if (slice_compare(f->hi[mid], *lo) <= 0)
                a = mid + 1;
            else
                b = mid;
        }
        i = a;
    }
    for (; i < f->n; i++) {
        if (hi && slice_compare(f->lo[i], *hi) > 0) break;
        for (size_t k = f->off[i]; k < f->off[i + 1]; k++) {
            if (f->seqs[k] > snap) continue;
            if (f->seqs[k] > since) return 1;
            break; /* descending: the rest are older */
        }
    }
    return 0;
}

/* ---------------------------------------------------------------------- */
/* file bounds                                                             */
/* ---------------------------------------------------------------------- */

int rd_bound_smallest(buf_t *out, slice_t start, uint64_t seq) { return ikey_append(out, start, seq, KT_RANGE_DELETE); }

int rd_bound_largest(buf_t *out, slice_t end) {
    if (end.size > 1 && end.data[end.size - 1] == 0)
        return ikey_append(out, slice_make(end.data, end.size - 1), 0, KT_RANGE_DELETE);
    return ikey_append(out, end, SEQ_MAX, KT_RANGE_DELETE);
}

int rd_user_successor(buf_t *out, slice_t x) {
    buf_clear(out);
    TDB_RET(buf_append(out, x.data, x.size));
    return buf_append(out, "", 1);
}

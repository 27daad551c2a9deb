/*
 * version/compaction: compaction picking (policy and invariants in
 * compaction.h). Everything here runs under the db mutex.
 */
#include "version/compaction.h"

#include <stdlib.h>
#include <string.h>

#include "util/error.h"
#include "util/ikey.h"

/* A user-key range [lo, hi] (borrowed slices). */
typedef struct urange {
    slice_t lo, hi;
} urange_t;

/* User-key range of one file. */
static urange_t file_range(const file_meta_t *f) {
    urange_t r = {ikey_user(buf_slice(&f->smallest)), ikey_user(buf_slice(&f->largest))};
    return r;
}

/* Widen r to cover f. */
static void range_extend(urange_t *r, const file_meta_t *f) {
    urange_t g = file_range(f);
    if (slice_compare(g.lo, r->lo) < 0) r->lo = g.lo;
    if (slice_compare(g.hi, r->hi) > 0) r->hi = g.hi;
}

/* Does f's user-key range intersect r? */
static int file_overlaps(const file_meta_t *f, urange_t r) {
    urange_t g = file_range(f);
    return slice_compare(g.hi, r.lo) >= 0 && slice_compare(g.lo, r.hi) <= 0;
}

/* Do two user-key ranges intersect? */
static int ranges_overlap(urange_t a, urange_t b) {
    return slice_compare(a.hi, b.lo) >= 0 && slice_compare(a.lo, b.hi) <= 0;
}

/* ---------------------------------------------------------------------- */
/* Registry of compactions in progress                                     */
/* ---------------------------------------------------------------------- */

struct compaction_state {
    compaction_t **run; /* registered compactions, unordered */
    int n, cap;
};

/* New empty registry. */
compaction_state_t *compaction_state_create(void) {
    return (compaction_state_t *)calloc(1, sizeof(compaction_state_t));
}

/* Free a registry (its compactions belong to their callers). */
void compaction_state_free(compaction_state_t *s) {
    if (!s) return;
    free(s->run);
    free(s);
}

/* Number of registered compactions. */
int compaction_state_running(const compaction_state_t *s) { return s ? s->n : 0; }

/* Does a compaction registered in s write into `level` over range r? */
static int state_writes(const compaction_state_t *s, int level, urange_t r) {
    for (int i = 0; s && i < s->n; i++) {
        urange_t rr = {s->run[i]->smallest, s->run[i]->largest};
        if (s->run[i]->output_level == level && ranges_overlap(r, rr)) return 1;
    }
    return 0;
}

/* Does a file of `level` of v overlap r? */
static int level_overlaps(version_t *v, int level, urange_t r) {
    for (int i = 0; i < version_num_files(v, level); i++)
        if (file_overlaps(version_file(v, level, i), r)) return 1;
    return 0;
}

/* The same for a level >= 2 (disjoint files sorted by key), by binary
 * search: does the first file ending at or after r.lo start by r.hi? */
static int sorted_level_overlaps(version_t *v, int level, urange_t r) {
    int lo = 0, hi = version_num_files(v, level);
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (slice_compare(file_range(version_file(v, level, mid)).hi, r.lo) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < version_num_files(v, level) && slice_compare(file_range(version_file(v, level, lo)).lo, r.hi) <= 0;
}

/* Does c conflict with a compaction registered in s? (rules in compaction.h) */
static int state_conflicts(const compaction_state_t *s, const compaction_t *c) {
    if (!s) return 0;
    urange_t rc = {c->smallest, c->largest};
    if (state_writes(s, c->output_level, rc)) return 1;
    for (int i = 0; i < s->n; i++) {
        const compaction_t *r = s->run[i];
        urange_t rr = {r->smallest, r->largest};
        if (c->level == 1 && r->level == 1) return 1;
        /* Reading a level where r writes: implied by the input marks, kept
         * as a guard. */
        if (r->output_level == c->level)
            for (int j = 0; j < c->nin[0]; j++)
                if (file_overlaps(c->in[0][j], rr)) return 1;
    }
    return 0;
}

/* Add c to s; 0 on OOM. */
static int state_add(compaction_state_t *s, compaction_t *c) {
    if (s->n == s->cap) {
        int cap = s->cap ? s->cap * 2 : 4;
        compaction_t **p = (compaction_t **)realloc(s->run, (size_t)cap * sizeof *p);
        if (!p) return 0;
        s->run = p;
        s->cap = cap;
    }
    s->run[s->n++] = c;
    c->state_ = s;
    return 1;
}

/* Remove c from s (if present). */
static void state_remove(compaction_state_t *s, compaction_t *c) {
    if (!s) return;
    for (int i = 0; i < s->n; i++)
        if (s->run[i] == c) {
            s->run[i] = s->run[--s->n];
            break;
        }
    c->state_ = NULL;
}

/* ---------------------------------------------------------------------- */
/* Building a compaction                                                   */
/* ---------------------------------------------------------------------- */

/* Free c without touching marks (refs dropped). */
static void compaction_free(compaction_t *c) {
    if (!c) return;
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < c->nin[k]; i++) file_meta_unref(c->in[k][i]);
        free(c->in[k]);
    }
    free(c);
}

/* Append f to input set k (taking a ref); 0 on OOM. */
static int compaction_push(compaction_t *c, int k, file_meta_t *f, int cap) {
    if (!c->in[k]) {
        c->in[k] = (file_meta_t **)malloc((size_t)(cap > 0 ? cap : 1) * sizeof(file_meta_t *));
        if (!c->in[k]) return 0;
    }
    file_meta_ref(f);
    c->in[k][c->nin[k]++] = f;
    return 1;
}

/* Add every file of `level` overlapping r to input set k; 0 if one is busy
 * (or OOM). */
static int add_overlaps(compaction_t *c, version_t *v, int level, urange_t r, int k) {
    int n = version_num_files(v, level), cnt = 0;
    for (int i = 0; i < n; i++) {
        file_meta_t *f = version_file(v, level, i);
        if (!file_overlaps(f, r)) continue;
        if (f->being_compacted) return 0;
        cnt++;
    }
    for (int i = 0; i < n && cnt; i++) {
        file_meta_t *f = version_file(v, level, i);
        if (file_overlaps(f, r) && !compaction_push(c, k, f, cnt)) return 0;
    }
    return 1;
}

/* Order file metas by smallest user key. */
static int smallest_cmp(const void *a, const void *b) {
    const file_meta_t *x = *(file_meta_t *const *)a, *y = *(file_meta_t *const *)b;
    return slice_compare(file_range(x).lo, file_range(y).lo);
}

/* May c move its inputs down without a rewrite? (rules in compaction.h) */
static int can_move(const compaction_t *c) {
    if (c->level == c->output_level || c->nin[1] != 0 || c->nin[0] == 0) return 0;
    if (c->bottommost) /* a rewrite would drop tombstones (point or range) */
        for (int i = 0; i < c->nin[0]; i++)
            if (c->in[0][i]->num_deletes || c->in[0][i]->num_range_deletes) return 0;
    if (c->nin[0] == 1) return 1;
    /* Pairwise disjoint (level 1 files may overlap each other). */
    file_meta_t **fs = (file_meta_t **)malloc((size_t)c->nin[0] * sizeof *fs);
    if (!fs) return 0; /* a rewrite is always correct */
    memcpy(fs, c->in[0], (size_t)c->nin[0] * sizeof *fs);
    qsort(fs, (size_t)c->nin[0], sizeof *fs, smallest_cmp);
    int ok = 1;
    for (int i = 1; i < c->nin[0] && ok; i++)
        if (slice_compare(file_range(fs[i - 1]).hi, file_range(fs[i]).lo) >= 0) ok = 0;
    free(fs);
    return ok;
}

/* A trivial move lands as deep as it can: past each level below its output
 * where no file overlaps r and no running compaction writes into r. Data in
 * those levels is older than the moved files and none of it covers r, so
 * nothing is shadowed wrongly; a file that would only sit in a middle level
 * to be rewritten by the next compaction into it goes where it would end. */
static void sink_move(compaction_t *c, version_t *v, const compaction_state_t *s, urange_t r) {
    for (int l = c->output_level + 1; l < TDB_MAX_LEVELS && !level_overlaps(v, l, r) && !state_writes(s, l, r); l++)
        c->output_level = l;
}

/* Compute c's range; refuse it (freed, NULL) if it conflicts with s;
 * otherwise fill in bottommost and trivial_move, register it in s and mark
 * its inputs. */
static compaction_t *compaction_finish(compaction_t *c, version_t *v, const compaction_opts_t *o,
                                       compaction_state_t *s) {
    urange_t r = file_range(c->in[0][0]);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < c->nin[k]; i++) range_extend(&r, c->in[k][i]);
    c->smallest = r.lo;
    c->largest = r.hi;
    if (state_conflicts(s, c)) goto fail;
    c->bottommost = 1;
    for (int l = c->output_level + 1; l < TDB_MAX_LEVELS && c->bottommost; l++)
        if (level_overlaps(v, l, r)) c->bottommost = 0;
    c->trivial_move = o && o->allow_trivial_move && can_move(c);
    if (c->trivial_move) sink_move(c, v, s, r);
    if (s && !state_add(s, c)) goto fail;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < c->nin[k]; i++) c->in[k][i]->being_compacted = 1;
    return c;
fail:
    compaction_free(c);
    return NULL;
}

/* New compaction from level into output_level. */
static compaction_t *compaction_new(int level, int output_level, double score) {
    compaction_t *c = (compaction_t *)calloc(1, sizeof *c);
    if (!c) return NULL;
    c->level = level;
    c->output_level = output_level;
    c->score = score;
    return c;
}

/* Can level-1 file i of v move into out on its own ("Trivial moves" in
 * compaction.h)? No tombstone, no overlap with another level-1 file or
 * with a file of out. */
static int l1_file_free(version_t *v, int i, int out) {
    file_meta_t *f = version_file(v, 1, i);
    if (f->num_deletes || f->num_range_deletes || sorted_level_overlaps(v, out, file_range(f))) return 0;
    for (int j = 0; j < version_num_files(v, 1); j++)
        if (j != i && file_meta_overlaps(version_file(v, 1, j), f)) return 0;
    return 1;
}

/* Every file of `level` plus overlaps in `out` (== level: in place); NULL
 * if empty, busy or conflicting. */
static compaction_t *pick_whole_level(version_t *v, int level, int out, double score, const compaction_opts_t *o,
                                      compaction_state_t *s) {
    int n = version_num_files(v, level);
    if (n == 0) return NULL;
    for (int i = 0; i < n; i++)
        if (version_file(v, level, i)->being_compacted) return NULL;
    compaction_t *c = compaction_new(level, out, score);
    if (!c) return NULL;
    /* Level-1 files free to move on their own go first, alone: moving them
     * rewrites nothing, and the rest's union range shrinks. */
    if (level == 1 && out >= 2 && o && o->allow_trivial_move)
        for (int i = 0; i < n; i++)
            if (l1_file_free(v, i, out) && !compaction_push(c, 0, version_file(v, 1, i), n)) goto fail;
    if (c->nin[0]) return compaction_finish(c, v, o, s);
    urange_t r = file_range(version_file(v, level, 0));
    for (int i = 0; i < n; i++) {
        file_meta_t *f = version_file(v, level, i);
        range_extend(&r, f);
        if (!compaction_push(c, 0, f, n)) goto fail;
    }
    /* Overlaps of the whole union range, not of each file: one output table
     * may span the gap between two inputs, so every next-level file in that
     * gap must be an input too. */
    if (out != level && !add_overlaps(c, v, out, r, 1)) goto fail;
    return compaction_finish(c, v, o, s);
fail:
    compaction_free(c);
    return NULL;
}

/* One file f of level (>= 2) plus its overlaps in level+1; NULL if busy or
 * conflicting. */
static compaction_t *pick_one_file(version_t *v, int level, file_meta_t *f, double score,
                                   const compaction_opts_t *o, compaction_state_t *s) {
    if (f->being_compacted) return NULL;
    compaction_t *c = compaction_new(level, level + 1, score);
    if (!c) return NULL;
    if (!compaction_push(c, 0, f, 1) || !add_overlaps(c, v, level + 1, file_range(f), 1)) {
        compaction_free(c);
        return NULL;
    }
    return compaction_finish(c, v, o, s);
}

typedef struct overlap_cand {
    file_meta_t *f;
    double ratio; /* bytes it overlaps in level+1 / its own bytes */
    int index;
} overlap_cand_t;

/* Lowest ratio first; ties in key order. */
static int overlap_cand_cmp(const void *a, const void *b) {
    const overlap_cand_t *x = (const overlap_cand_t *)a, *y = (const overlap_cand_t *)b;
    if (x->ratio != y->ratio) return x->ratio < y->ratio ? -1 : 1;
    return x->index - y->index;
}

/* Size-triggered pick at level >= 2: the pickable file that overlaps the
 * fewest level+1 bytes per byte of its own (RocksDB's kMinOverlappingRatio),
 * so each compaction pushes the most data down per byte it rewrites. Both
 * levels are sorted and disjoint, so one merge-like pass sizes every
 * file's overlap. */
static compaction_t *pick_min_overlap(version_t *v, int level, double score, const compaction_opts_t *o,
                                      compaction_state_t *s) {
    int n = version_num_files(v, level), m = version_num_files(v, level + 1);
    overlap_cand_t *cands = (overlap_cand_t *)malloc((size_t)(n ? n : 1) * sizeof *cands);
    compaction_t *c = NULL;
    if (!cands) { /* out of memory: any pickable file will do */
        for (int i = 0; i < n && !c; i++) c = pick_one_file(v, level, version_file(v, level, i), score, o, s);
        return c;
    }
    int j = 0;
    for (int i = 0; i < n; i++) {
        file_meta_t *f = version_file(v, level, i);
        urange_t r = file_range(f);
        /* Next-level files ending before f ends before every later file too. */
        while (j < m && slice_compare(file_range(version_file(v, level + 1, j)).hi, r.lo) < 0) j++;
        uint64_t bytes = 0;
        for (int k = j; k < m; k++) {
            const file_meta_t *g = version_file(v, level + 1, k);
            if (slice_compare(file_range(g).lo, r.hi) > 0) break;
            bytes += g->file_size;
        }
        cands[i].f = f;
        cands[i].ratio = (double)bytes / (double)(f->file_size ? f->file_size : 1);
        cands[i].index = i;
    }
    qsort(cands, (size_t)n, sizeof *cands, overlap_cand_cmp);
    for (int i = 0; i < n && !c; i++) c = pick_one_file(v, level, cands[i].f, score, o, s);
    free(cands);
    return c;
}

/* ---------------------------------------------------------------------- */
/* Policy                                                                  */
/* ---------------------------------------------------------------------- */

/* t * ratio, saturating. */
static uint64_t mul_sat(uint64_t t, uint64_t ratio) { return t > UINT64_MAX / ratio ? UINT64_MAX : t * ratio; }

/* Level targets and the base level (rules in compaction.h). */
int compaction_level_targets(const version_t *v, const compaction_opts_t *o, uint64_t target[TDB_MAX_LEVELS]) {
    enum { LAST = TDB_MAX_LEVELS - 1 };
    const uint64_t ratio = o->level_size_ratio > 1 ? (uint64_t)o->level_size_ratio : 1;
    for (int l = 0; l < TDB_MAX_LEVELS; l++) target[l] = 0;
    if (!o->dynamic_level_bytes) {
        if (o->base_level_bytes == 0) return 2;
        uint64_t t = o->base_level_bytes;
        for (int l = 2; l < TDB_MAX_LEVELS; l++, t = mul_sat(t, ratio)) target[l] = t;
        return 2;
    }
    uint64_t size = 0; /* the bottom's actual size: the largest level >= 2 */
    int first = 0;     /* first non-empty level >= 2 */
    for (int l = 2; l < TDB_MAX_LEVELS; l++) {
        uint64_t b = version_level_bytes(v, l);
        if (!first && version_num_files(v, l)) first = l;
        if (b > size) size = b;
    }
    target[LAST] = size;
    int base = LAST;
    if (o->base_level_bytes == 0) return first ? first : LAST; /* no size targets */
    /* Shallowest level whose target S / ratio^(LAST-L) stays above
     * base_level_bytes / ratio. */
    const uint64_t cutoff = o->base_level_bytes / ratio;
    for (uint64_t t = size; base > 2 && t / ratio > cutoff; t /= ratio) base--;
    if (first && first < base) base = first; /* never jump over data */
    for (int l = base; l < LAST; l++) {
        uint64_t t = size;
        for (int k = l; k < LAST; k++) t /= ratio;
        target[l] = t > o->base_level_bytes ? t : o->base_level_bytes;
    }
    return base;
}

/* Size score of level >= 2: bytes not being compacted / target. */
static double size_score(version_t *v, int level, uint64_t target) {
    if (target == 0) return 0;
    uint64_t bytes = 0;
    for (int i = 0; i < version_num_files(v, level); i++) {
        file_meta_t *f = version_file(v, level, i);
        if (!f->being_compacted) bytes += f->file_size;
    }
    return (double)bytes / (double)target;
}

/* Level-1 runs that make level 1 due (rules in compaction.h). */
int compaction_l1_trigger(version_t *v, const compaction_opts_t *o, int base) {
    int trig = o->l1_file_count_trigger > 0 ? o->l1_file_count_trigger : 1;
    int n = version_l1_runs(v);
    if (o->l1_read_due) return 1;
    if (!o->writes_pending) return o->l1_idle_trigger > 0 && o->l1_idle_trigger < trig ? o->l1_idle_trigger : trig;
    if (n < trig || n >= 2 * trig) return trig;
    uint64_t l1_bytes = 0, base_bytes = 0;
    urange_t r = file_range(version_file(v, 1, 0));
    for (int i = 0; i < version_num_files(v, 1); i++) {
        range_extend(&r, version_file(v, 1, i));
        l1_bytes += version_file(v, 1, i)->file_size;
    }
    for (int i = 0; i < version_num_files(v, base); i++)
        if (file_overlaps(version_file(v, base, i), r)) base_bytes += version_file(v, base, i)->file_size;
    return base_bytes > l1_bytes ? 2 * trig : trig;
}

/* Level-1 score: runs / trigger; 0 while a level-1 compaction runs. */
static double l1_score(version_t *v, const compaction_opts_t *o, int base, const compaction_state_t *s) {
    int n = version_num_files(v, 1);
    for (int i = 0; i < n; i++)
        if (version_file(v, 1, i)->being_compacted) return 0; /* one level-1 compaction at a time */
    for (int i = 0; s && i < s->n; i++)
        if (s->run[i]->level == 1) return 0;
    return (double)version_l1_runs(v) / compaction_l1_trigger(v, o, base);
}

/* Tombstone share of f if it qualifies for a density compaction, else 0. */
static double tombstone_density(const file_meta_t *f, const compaction_opts_t *o) {
    double trig = o->tombstone_density_trigger;
    if (!(trig > 0 && trig <= 1) || f->num_entries == 0 || f->being_compacted) return 0;
    if (f->num_entries < o->tombstone_density_min_entries) return 0;
    double d = (double)f->num_deletes / (double)f->num_entries;
    return d >= trig ? d : 0;
}

typedef struct tomb_cand {
    file_meta_t *f;
    int level;
    double density;
} tomb_cand_t;

/* Densest first, then shallower level, then lower file number. */
static int tomb_cand_cmp(const void *a, const void *b) {
    const tomb_cand_t *x = (const tomb_cand_t *)a, *y = (const tomb_cand_t *)b;
    if (x->density != y->density) return x->density > y->density ? -1 : 1;
    if (x->level != y->level) return x->level < y->level ? -1 : 1;
    return x->f->number < y->f->number ? -1 : (x->f->number > y->f->number);
}

/* Pick the most urgent compaction. */
compaction_t *compaction_pick(version_t *v, const compaction_opts_t *o, compaction_state_t *s) {
    /* Levels that can push down: 1..TDB_MAX_LEVELS-2. */
    enum { NL = TDB_MAX_LEVELS };
    double score[NL] = {0};
    int tried[NL] = {0};
    uint64_t target[NL];
    int base = compaction_level_targets(v, o, target);
    score[1] = l1_score(v, o, base, s);
    for (int l = 2; l < NL - 1; l++) score[l] = size_score(v, l, target[l]);
    for (;;) {
        int best = -1;
        for (int l = 1; l < NL - 1; l++)
            if (!tried[l] && score[l] >= 1 && (best < 0 || score[l] > score[best])) best = l;
        if (best < 0) break;
        tried[best] = 1;
        compaction_t *c = best == 1 ? pick_whole_level(v, 1, base, score[1], o, s)
                                    : pick_min_overlap(v, best, score[best], o, s);
        if (c) return c;
    }
    /* Tombstone density: densest qualifying file first, at levels >= 2
     * (level 1 is bounded by its file count; see compaction.h). */
    int ncand = 0, capc = 0;
    tomb_cand_t *cands = NULL;
    compaction_t *c = NULL;
    for (int l = 2; l < NL - 1; l++) {
        for (int i = 0; i < version_num_files(v, l); i++) {
            file_meta_t *f = version_file(v, l, i);
            double d = tombstone_density(f, o);
            if (d <= 0) continue;
            if (ncand == capc) {
                capc = capc ? capc * 2 : 8;
                tomb_cand_t *p = (tomb_cand_t *)realloc(cands, (size_t)capc * sizeof *p);
                if (!p) goto out;
                cands = p;
            }
            cands[ncand].f = f;
            cands[ncand].level = l;
            cands[ncand].density = d;
            ncand++;
        }
    }
    if (ncand > 1) qsort(cands, (size_t)ncand, sizeof *cands, tomb_cand_cmp);
    for (int i = 0; i < ncand && !c; i++) c = pick_one_file(v, cands[i].level, cands[i].f, cands[i].density, o, s);
out:
    free(cands);
    return c;
}

/* Manual compaction of a whole level. */
compaction_t *compaction_pick_level(version_t *v, int level, const compaction_opts_t *o, compaction_state_t *s) {
    if (level < 1 || level >= TDB_MAX_LEVELS) return NULL;
    int out = level + 1 < TDB_MAX_LEVELS ? level + 1 : level;
    if (level == 1) {
        uint64_t target[TDB_MAX_LEVELS];
        out = compaction_level_targets(v, o, target);
    }
    return pick_whole_level(v, level, out, 1.0, o, s);
}

/* Does g meet [*lo, *hi] (NULL: open end)? */
static int meets_bounds(urange_t g, const slice_t *lo, const slice_t *hi) {
    return (!hi || slice_compare(g.lo, *hi) <= 0) && (!lo || slice_compare(g.hi, *lo) >= 0);
}

compaction_t *compaction_pick_range(version_t *v, int level, const slice_t *lo, const slice_t *hi,
                                    const compaction_opts_t *o, compaction_state_t *s, int *busy) {
    *busy = 0;
    if (level < 1 || level >= TDB_MAX_LEVELS - 1) return NULL;
    int n = version_num_files(v, level);
    if (n == 0) return NULL;
    char *pick = (char *)calloc((size_t)n, 1);
    if (!pick) return NULL;
    int cnt = 0;
    urange_t r = {{0}, {0}};
    for (int i = 0; i < n; i++) {
        file_meta_t *f = version_file(v, level, i);
        if (!meets_bounds(file_range(f), lo, hi)) continue;
        if (cnt++ == 0) r = file_range(f);
        else range_extend(&r, f);
        pick[i] = 1;
    }
    /* Level 1: close over overlaps (newer and older versions go together). */
    for (int grew = level == 1 && cnt; grew;) {
        grew = 0;
        for (int i = 0; i < n; i++) {
            file_meta_t *f = version_file(v, level, i);
            if (pick[i] || !file_overlaps(f, r)) continue;
            range_extend(&r, f);
            pick[i] = 1;
            cnt++;
            grew = 1;
        }
    }
    compaction_t *c = NULL;
    if (cnt == 0) goto out;
    *busy = 1;
    for (int i = 0; i < n; i++)
        if (pick[i] && version_file(v, level, i)->being_compacted) goto out;
    int out = level + 1;
    if (level == 1) {
        uint64_t target[TDB_MAX_LEVELS];
        out = compaction_level_targets(v, o, target);
    }
    c = compaction_new(level, out, 1.0);
    if (!c) goto out;
    for (int i = 0; i < n; i++)
        if (pick[i] && !compaction_push(c, 0, version_file(v, level, i), cnt)) goto fail;
    if (!add_overlaps(c, v, out, r, 1)) goto fail;
    c = compaction_finish(c, v, o, s);
    if (c) *busy = 0;
    goto out;
fail:
    compaction_free(c);
    c = NULL;
out:
    free(pick);
    return c;
}

/* Unregister, clear marks, drop refs, free. */
void compaction_release(compaction_state_t *s, compaction_t *c) {
    if (!c) return;
    (void)s; /* c remembers the registry it was picked with */
    state_remove(c->state_, c);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < c->nin[k]; i++) c->in[k][i]->being_compacted = 0;
    compaction_free(c);
}

/* Smallest user keys of the files of the first level below c's output level
 * that has any, for those starting inside (c->smallest, c->largest]: the
 * places where an output may end early to line up with that level. */
int compaction_cut_keys(const compaction_t *c, version_t *v, slice_t **keys, int *n) {
    *keys = NULL;
    *n = 0;
    if (c->bottommost) return TDB_OK;
    int l = c->output_level + 1;
    while (l < TDB_MAX_LEVELS && version_num_files(v, l) == 0) l++;
    if (l >= TDB_MAX_LEVELS) return TDB_OK;
    int nf = version_num_files(v, l), cnt = 0;
    slice_t *k = (slice_t *)malloc((size_t)nf * sizeof *k);
    if (!k) return tdb_err(TDB_ERR_NOMEM, "compaction: %d cut keys", nf);
    for (int i = 0; i < nf; i++) {
        slice_t lo = file_range(version_file(v, l, i)).lo;
        if (slice_compare(lo, c->smallest) > 0 && slice_compare(lo, c->largest) <= 0) k[cnt++] = lo;
    }
    *keys = k;
    *n = cnt;
    return TDB_OK;
}

/* Record the trivial move of c's level inputs in edit. */
int compaction_move(const compaction_t *c, version_edit_t *edit) {
    int rc = TDB_OK;
    const int n_add0 = edit->n_add, n_del0 = edit->n_del;
    if (c->level == c->output_level || c->nin[1] != 0 || c->output_level < 2 || c->output_level >= TDB_MAX_LEVELS)
        RAISE(TDB_ERR_INVALID_ARG, "compaction move: L%d->L%d with %d output-level inputs", c->level,
              c->output_level, c->nin[1]);
    for (int i = 0; i < c->nin[0]; i++) {
        TRY(version_edit_del(edit, c->level, c->in[0][i]->number));
        TRY(version_edit_add(edit, c->output_level, c->in[0][i]));
    }
err:
    if (rc != TDB_OK) {
        while (edit->n_add > n_add0) file_meta_unref(edit->add[--edit->n_add].f);
        edit->n_del = n_del0;
    }
    return rc;
}

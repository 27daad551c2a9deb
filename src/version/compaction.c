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

/* Fill in bottommost and mark inputs; returns c. */
static compaction_t *compaction_finish(compaction_t *c, version_t *v) {
    urange_t r = file_range(c->in[0][0]);
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < c->nin[k]; i++) range_extend(&r, c->in[k][i]);
    c->bottommost = 1;
    for (int l = c->output_level + 1; l < TDB_MAX_LEVELS && c->bottommost; l++)
        for (int i = 0; i < version_num_files(v, l); i++)
            if (file_overlaps(version_file(v, l, i), r)) {
                c->bottommost = 0;
                break;
            }
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < c->nin[k]; i++) c->in[k][i]->being_compacted = 1;
    return c;
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

/* Every file of `level` plus overlaps in level+1 (or in place for the last
 * level); NULL if empty or busy. */
static compaction_t *pick_whole_level(version_t *v, int level, double score) {
    int n = version_num_files(v, level);
    if (n == 0) return NULL;
    for (int i = 0; i < n; i++)
        if (version_file(v, level, i)->being_compacted) return NULL;
    int out = level + 1 < TDB_MAX_LEVELS ? level + 1 : level;
    compaction_t *c = compaction_new(level, out, score);
    if (!c) return NULL;
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
    return compaction_finish(c, v);
fail:
    compaction_free(c);
    return NULL;
}

/* One file f of level (>= 2) plus its overlaps in level+1; NULL if busy. */
static compaction_t *pick_one_file(version_t *v, int level, file_meta_t *f, double score) {
    if (f->being_compacted) return NULL;
    compaction_t *c = compaction_new(level, level + 1, score);
    if (!c) return NULL;
    if (!compaction_push(c, 0, f, 1) || !add_overlaps(c, v, level + 1, file_range(f), 1)) {
        compaction_free(c);
        return NULL;
    }
    return compaction_finish(c, v);
}

/* Size-triggered pick at level >= 2: the first pickable file after the
 * level's cursor, wrapping around; advances the cursor. */
static compaction_t *pick_rotating(version_t *v, int level, double score) {
    int n = version_num_files(v, level);
    buf_t *cur = version_cursor_(v, level);
    int start = 0;
    if (cur->size) { /* user keys are never empty: size 0 = no cursor yet */
        /* first file whose smallest user key is beyond the cursor */
        while (start < n &&
               slice_compare(ikey_user(buf_slice(&version_file(v, level, start)->smallest)), buf_slice(cur)) <= 0)
            start++;
    }
    for (int j = 0; j < n; j++) {
        file_meta_t *f = version_file(v, level, (start + j) % n);
        compaction_t *c = pick_one_file(v, level, f, score);
        if (c) {
            slice_t hi = ikey_user(buf_slice(&f->largest));
            buf_clear(cur);
            if (buf_append(cur, hi.data, hi.size) != TDB_OK) buf_clear(cur); /* only a hint */
            return c;
        }
    }
    return NULL;
}

/* Target bytes of level L >= 2 (0 = no target). */
static uint64_t level_target(const compaction_opts_t *o, int level) {
    if (o->base_level_bytes == 0) return 0;
    uint64_t ratio = o->level_size_ratio > 1 ? (uint64_t)o->level_size_ratio : 1;
    uint64_t t = o->base_level_bytes;
    for (int l = 2; l < level; l++) {
        if (t > UINT64_MAX / ratio) return UINT64_MAX;
        t *= ratio;
    }
    return t;
}

/* Urgency score of level (0 if nothing is due or it cannot run). */
static double level_score(version_t *v, int level, const compaction_opts_t *o) {
    int n = version_num_files(v, level);
    if (level == 1) {
        for (int i = 0; i < n; i++)
            if (version_file(v, 1, i)->being_compacted) return 0; /* one level-1 compaction at a time */
        int trig = o->l1_file_count_trigger > 0 ? o->l1_file_count_trigger : 1;
        return (double)n / trig;
    }
    uint64_t target = level_target(o, level), bytes = 0;
    if (target == 0) return 0;
    for (int i = 0; i < n; i++) {
        file_meta_t *f = version_file(v, level, i);
        if (!f->being_compacted) bytes += f->file_size;
    }
    return (double)bytes / (double)target;
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
compaction_t *compaction_pick(version_t *v, const compaction_opts_t *o) {
    /* Levels that can push down: 1..TDB_MAX_LEVELS-2. */
    enum { NL = TDB_MAX_LEVELS };
    double score[NL] = {0};
    int tried[NL] = {0};
    for (int l = 1; l < NL - 1; l++) score[l] = level_score(v, l, o);
    for (;;) {
        int best = -1;
        for (int l = 1; l < NL - 1; l++)
            if (!tried[l] && score[l] >= 1 && (best < 0 || score[l] > score[best])) best = l;
        if (best < 0) break;
        tried[best] = 1;
        compaction_t *c = best == 1 ? pick_whole_level(v, 1, score[1]) : pick_rotating(v, best, score[best]);
        if (c) return c;
    }
    /* Tombstone density: densest qualifying file first. */
    int ncand = 0, capc = 0;
    tomb_cand_t *cands = NULL;
    compaction_t *c = NULL;
    for (int l = 1; l < NL - 1; l++) {
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
    for (int i = 0; i < ncand && !c; i++) {
        /* Only all of level 1 may move at once (see compaction.h). */
        if (cands[i].level == 1)
            c = pick_whole_level(v, 1, cands[i].density);
        else
            c = pick_one_file(v, cands[i].level, cands[i].f, cands[i].density);
    }
out:
    free(cands);
    return c;
}

/* Manual compaction of a whole level. */
compaction_t *compaction_pick_level(version_t *v, int level, const compaction_opts_t *o) {
    (void)o;
    if (level < 1 || level >= TDB_MAX_LEVELS) return NULL;
    return pick_whole_level(v, level, 1.0);
}

/* Clear marks, drop refs, free. */
void compaction_release(compaction_t *c) {
    if (!c) return;
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < c->nin[k]; i++) c->in[k][i]->being_compacted = 0;
    compaction_free(c);
}

/*
 * version/table_write: writing an ordered stream of internal keys into new
 * tables (the output of a flush and of a compaction), applying the
 * snapshot-stripe dropping rule, range tombstones and single deletes.
 * Running a picked compaction is version/compaction_run.c. Rules are in
 * compaction.h and docs/design/deletes.md.
 *
 * Invariants
 *  - Runs without the db mutex; touches no shared state except the files it
 *    creates, the caller-owned edit and ctx.
 *  - Entries of one user key arrive newest first (ikey order), so the first
 *    entry seen in each stripe is that stripe's newest version.
 *  - An output is cut only before the first kept entry of a user key: when
 *    it reached target_file_size, or half of it (any size with
 *    ctx->cut_every) and one of ctx->cut_keys lies in (last user key
 *    written, this user key].
 *  - Range tombstones come from the caller (compaction: the inputs' range-
 *    deletion blocks, sorted by start) or in-band from the stream
 *    (KT_RANGE_DELETE entries of a memtable iterator). Either way a
 *    tombstone is known before any point entry it covers is reached: it
 *    starts at or before that entry's user key and, at an equal user key,
 *    its higher sequence sorts it first.
 *  - Output i covers the user keys [lower_i, upper_i): upper_i =
 *    last_user_key(i) || 0x00 for every output but the last (unbounded),
 *    lower_0 unbounded and lower_{i+1} = upper_i. Each output receives the
 *    pieces of the tombstones clipped to its interval, so pieces of one
 *    tombstone tile its whole range and consecutive outputs stay disjoint by
 *    user key (sst/range_del.h, "File bounds").
 *  - On any error every table created by this call is deleted and its
 *    additions are taken out of the edit again.
 */
#include <stdlib.h>
#include <string.h>

#include "sst/range_del.h"
#include "util/error.h"
#include "util/ikey.h"
#include "version/compaction.h"

/* Stripe index of seq: index of the smallest snapshot >= seq, or
 * nsnapshots ("latest") if none. Stripe 0 is the lowest. */
static int stripe_of(const table_write_ctx_t *ctx, uint64_t seq) {
    int lo = 0, hi = ctx->nsnapshots;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        if (ctx->snapshots[mid] < seq)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Delete a table file (best effort, during error cleanup). */
static void remove_table(table_write_ctx_t *ctx, uint64_t number) {
    char path[4096];
    sst_file_name(path, sizeof path, ctx->dbdir, number);
    (void)ctx->env->remove(ctx->env, path);
}

/* Growable array of tombstone indices into tw_t.rd.v. */
typedef struct idxv {
    size_t *v;
    size_t n, cap;
} idxv_t;

/* Append one index. */
static int idxv_push(idxv_t *a, size_t i) {
    if (a->n == a->cap) {
        size_t nc = a->cap ? a->cap * 2 : 16;
        size_t *p = (size_t *)realloc(a->v, nc * sizeof *p);
        if (!p) return tdb_err(TDB_ERR_NOMEM, "table write: tombstone set of %zu", nc);
        a->v = p;
        a->cap = nc;
    }
    a->v[a->n++] = i;
    return TDB_OK;
}

/* State of one table_write call. */
typedef struct tw {
    table_write_ctx_t *ctx;
    int out_level;
    version_edit_t *edit;
    sst_builder_t *b;
    uint64_t number;
    int user_in_output; /* some entry of the current user key went to b */
    int next_cut;       /* first of ctx->cut_keys not yet passed */
    buf_t last_user;    /* last user key written to b */
    int have_lower;     /* lower bound of b's interval (else unbounded) */
    buf_t lower, upper;
    /* Range tombstones: rd.v[0, npre) came from the caller (sorted by
     * start), later ones in-band. `open`: started (start <= the stream's
     * user key), not yet wholly emitted. `active`: started and still
     * covering the stream's user key (a subset of open). */
    rd_list_t rd;
    size_t npre, next_pre;
    idxv_t open, active;
} tw_t;

/* Emit the pieces of the open tombstones inside [lower, upper) (upper NULL
 * = unbounded) into b, then forget the ones that end by upper. */
static int emit_range_dels(tw_t *w, const slice_t *upper) {
    int rc = TDB_OK;
    table_write_ctx_t *ctx = w->ctx;
    slice_t lo = buf_slice(&w->lower);
    size_t keep = 0;
    for (size_t j = 0; j < w->open.n; j++) {
        const range_del_t *t = &w->rd.v[w->open.v[j]];
        slice_t s = t->start, e = t->end;
        if (w->have_lower && slice_compare(s, lo) < 0) s = lo;
        if (upper && slice_compare(e, *upper) > 0) e = *upper;
        int drop = ctx->bottommost && stripe_of(ctx, t->seq) == 0; /* nothing below to shadow */
        if (!drop && slice_compare(s, e) < 0) TRY(sst_builder_add_range_del(w->b, s, e, t->seq));
        if (upper && slice_compare(t->end, *upper) > 0) w->open.v[keep++] = w->open.v[j];
    }
    w->open.n = upper ? keep : 0;
err:
    return rc;
}

/* Start the pre-supplied tombstones with start <= uk (NULL: all of them). */
static int start_pre(tw_t *w, const slice_t *uk) {
    int rc = TDB_OK;
    while (w->next_pre < w->npre && (!uk || slice_compare(w->rd.v[w->next_pre].start, *uk) <= 0)) {
        TRY(idxv_push(&w->open, w->next_pre));
        TRY(idxv_push(&w->active, w->next_pre));
        w->next_pre++;
    }
err:
    return rc;
}

/* Finish b (its interval ends at upper, NULL = unbounded) and add it to
 * the edit. Frees b. */
static int finish_output(tw_t *w, const slice_t *upper) {
    table_write_ctx_t *ctx = w->ctx;
    uint64_t number = w->number;
    sst_props_t props;
    memset(&props, 0, sizeof props);
    /* Every tombstone starting below upper has started: the stream stands
     * on a user key >= upper, or at the end (upper NULL). */
    int rc = upper ? TDB_OK : start_pre(w, NULL);
    if (rc == TDB_OK) rc = emit_range_dels(w, upper);
    sst_builder_t *b = w->b;
    w->b = NULL;
    if (rc != TDB_OK) {
        sst_builder_abandon(b);
        remove_table(ctx, number);
        return rc;
    }
    rc = sst_builder_finish(b, &props);
    if (rc != TDB_OK) {
        remove_table(ctx, number);
        return rc;
    }
    file_meta_t *f = file_meta_from_props(number, &props);
    sst_props_free(&props);
    if (!f) {
        remove_table(ctx, number);
        return tdb_err(TDB_ERR_NOMEM, "file meta of table %llu", (unsigned long long)number);
    }
    rc = version_edit_add(w->edit, w->out_level, f);
    if (rc == TDB_OK) ctx->bytes_written += f->file_size;
    file_meta_unref(f);
    if (rc != TDB_OK) remove_table(ctx, number);
    return rc;
}

/* Open a new output table. */
static int open_output(tw_t *w) {
    char path[4096];
    w->number = w->ctx->new_file_number(w->ctx->ctx);
    sst_file_name(path, sizeof path, w->ctx->dbdir, w->number);
    return sst_builder_open(w->ctx->env, path, &w->ctx->sst, &w->b);
}

/* Does the stream pass a cut key on reaching user key uk? Advances past
 * every cut key <= uk. */
static int pass_cut_keys(tw_t *w, slice_t uk) {
    const table_write_ctx_t *ctx = w->ctx;
    int from = w->next_cut;
    while (w->next_cut < ctx->ncut && slice_compare(ctx->cut_keys[w->next_cut], uk) <= 0) w->next_cut++;
    return w->next_cut > from;
}

/* Should b end before the first kept entry of user key uk? */
static int output_full(tw_t *w, slice_t uk) {
    const table_write_ctx_t *ctx = w->ctx;
    int passed = pass_cut_keys(w, uk);
    if (!w->b) return 0;
    if (passed && ctx->cut_every) return 1;
    if (!ctx->target_file_size) return 0;
    uint64_t size = sst_builder_file_size(w->b);
    return size >= ctx->target_file_size || (passed && size >= ctx->target_file_size / 2);
}

/* Write one kept point entry, cutting the output first if this is the first
 * kept entry of its user key and the output is full (output_full). */
static int emit_point(tw_t *w, slice_t k, slice_t val) {
    int rc = TDB_OK;
    if (!w->user_in_output && output_full(w, ikey_user(k))) {
        TRY(rd_user_successor(&w->upper, buf_slice(&w->last_user)));
        slice_t up = buf_slice(&w->upper);
        TRY(finish_output(w, &up));
        buf_clear(&w->lower);
        TRY(buf_append(&w->lower, w->upper.data, w->upper.size));
        w->have_lower = 1;
    }
    if (!w->b) TRY(open_output(w));
    TRY(sst_builder_add(w->b, k, val));
    if (!w->user_in_output) {
        slice_t uk = ikey_user(k);
        buf_clear(&w->last_user);
        TRY(buf_append(&w->last_user, uk.data, uk.size));
    }
    w->user_in_output = 1;
err:
    return rc;
}

/* Smallest sequence above seq among the tombstones covering uk (0: none). */
static uint64_t min_cover_above(const tw_t *w, slice_t uk, uint64_t seq) {
    uint64_t best = 0;
    for (size_t j = 0; j < w->active.n; j++) {
        const range_del_t *t = &w->rd.v[w->active.v[j]];
        if (t->seq > seq && (best == 0 || t->seq < best) && slice_compare(t->start, uk) <= 0 &&
            slice_compare(uk, t->end) < 0)
            best = t->seq;
    }
    return best;
}

/* The stream reached a new user key: start tombstones, drop finished ones
 * from the active set. */
static int enter_user_key(tw_t *w, slice_t uk) {
    TDB_RET(start_pre(w, &uk));
    size_t keep = 0;
    for (size_t j = 0; j < w->active.n; j++)
        if (slice_compare(w->rd.v[w->active.v[j]].end, uk) > 0) w->active.v[keep++] = w->active.v[j];
    w->active.n = keep;
    return TDB_OK;
}

/* Does any open tombstone survive into an output starting at the current
 * lower bound? (Called at the end, once every tombstone has started.) */
static int any_range_del_to_keep(const tw_t *w) {
    table_write_ctx_t *ctx = w->ctx;
    slice_t lo = buf_slice(&w->lower);
    for (size_t j = 0; j < w->open.n; j++) {
        const range_del_t *t = &w->rd.v[w->open.v[j]];
        if (ctx->bottommost && stripe_of(ctx, t->seq) == 0) continue;
        if (w->have_lower && slice_compare(t->end, lo) <= 0) continue;
        return 1;
    }
    return 0;
}

/* Write input plus the pre-supplied tombstones pre[0, npre) (sorted by
 * start) into tables at out_level. */
int table_write_merged(iter_t *input, const range_del_t *pre, size_t npre, table_write_ctx_t *ctx, int out_level,
                        version_edit_t *edit) {
    int rc = TDB_OK;
    const int n_add0 = edit->n_add;
    tw_t w;
    memset(&w, 0, sizeof w);
    w.ctx = ctx;
    w.out_level = out_level;
    w.edit = edit;
    buf_t user = {0};      /* current user key */
    buf_t sdkey = {0};     /* a single delete waiting for its successor */
    buf_t zkey = {0};      /* a key rewritten with sequence 0 */
    int have_user = 0;
    int last_stripe = -1;  /* stripe of the previous entry of `user` */

    if (out_level < 1 || out_level >= TDB_MAX_LEVELS) RAISE(TDB_ERR_INVALID_ARG, "table write: level %d", out_level);
    for (size_t i = 0; i < npre; i++) {
        TRY(rd_list_add(&w.rd, pre[i].start, pre[i].end, pre[i].seq));
        ctx->bytes_read += pre[i].start.size + pre[i].end.size + 8;
    }
    w.npre = npre;

    iter_seek_to_first(input);
    while (iter_valid(input)) {
        slice_t k = iter_key(input);
        if (!ikey_valid(k)) RAISE(TDB_ERR_CORRUPTION, "table write: internal key of %zu bytes", k.size);
        slice_t uk = ikey_user(k);
        uint64_t seq = ikey_seq(k);
        unsigned type = ikey_type(k);
        ctx->bytes_read += k.size;

        if (type == KT_RANGE_DELETE) { /* in-band tombstone (memtable) */
            slice_t end = iter_value(input);
            TRY(iter_status(input));
            ctx->bytes_read += end.size;
            if (slice_compare(uk, end) >= 0)
                RAISE(TDB_ERR_CORRUPTION, "table write: range tombstone with start >= end at seq %llu",
                      (unsigned long long)seq);
            TRY(rd_list_add(&w.rd, uk, end, seq));
            TRY(idxv_push(&w.open, w.rd.n - 1));
            TRY(idxv_push(&w.active, w.rd.n - 1));
            goto next;
        }
        if (!have_user || !slice_equal(uk, buf_slice(&user))) {
            buf_clear(&user);
            TRY(buf_append(&user, uk.data, uk.size));
            have_user = 1;
            last_stripe = -1;
            w.user_in_output = 0;
            TRY(enter_user_key(&w, buf_slice(&user)));
            uk = buf_slice(&user);
        }
        int stripe = stripe_of(ctx, seq);
        if (stripe == last_stripe) goto next; /* shadowed within its stripe */
        last_stripe = stripe;

        /* Covered by a range tombstone with no snapshot in between: no
         * reader can see it (nor, then, anything older in its stripe). */
        uint64_t cover = min_cover_above(&w, uk, seq);
        if (cover && stripe_of(ctx, cover) == stripe) goto next;

        if (type == KT_SINGLE_DELETE) {
            /* Look at the next older version: a put in the same stripe is
             * cancelled together with the single delete. */
            buf_clear(&sdkey);
            TRY(buf_append(&sdkey, k.data, k.size));
            iter_next(input);
            if (iter_valid(input)) {
                slice_t k2 = iter_key(input);
                if (ikey_valid(k2) && slice_equal(ikey_user(k2), buf_slice(&user)) && kt_is_value(ikey_type(k2)) &&
                    stripe_of(ctx, ikey_seq(k2)) == stripe) {
                    ctx->bytes_read += k2.size;
                    last_stripe = -1; /* as if neither had been written */
                    goto next;
                }
            } else {
                TRY(iter_status(input));
            }
            if (!(ctx->bottommost && stripe == 0)) TRY(emit_point(&w, buf_slice(&sdkey), slice_make("", 0)));
            continue; /* the input already stands on the following entry */
        }

        if (ctx->bottommost && stripe == 0 && type == KT_DELETE) goto next;
        slice_t val = iter_value(input);
        TRY(iter_status(input)); /* a separated value may fail to resolve */
        ctx->bytes_read += val.size;
        if (ctx->bottommost && stripe == 0 && type == KT_PUT_TTL && val.size >= 8 &&
            (int64_t)dec_fixed64(val.data) <= ctx->now_unix)
            goto next; /* expired, and nothing older can resurface */
        if (ctx->bottommost && stripe == 0 && out_level >= 2 && seq != 0) {
            /* The only version any reader can see, with nothing below it:
             * its sequence carries no information, so it is written as 0
             * (a run of zero trailers compresses to almost nothing). */
            buf_clear(&zkey);
            TRY(buf_append(&zkey, k.data, k.size));
            enc_fixed64(zkey.data + zkey.size - IKEY_TRAILER, ikey_pack(0, type));
            k = buf_slice(&zkey);
        }
        TRY(emit_point(&w, k, val));
    next:
        iter_next(input);
    }
    TRY(iter_status(input));
    if (!w.b) {
        TRY(start_pre(&w, NULL));
        if (any_range_del_to_keep(&w)) TRY(open_output(&w));
    }
    if (w.b) TRY(finish_output(&w, NULL));
err:
    if (w.b) {
        sst_builder_abandon(w.b);
        remove_table(ctx, w.number);
    }
    if (rc != TDB_OK) {
        while (edit->n_add > n_add0) {
            file_meta_t *f = edit->add[--edit->n_add].f;
            remove_table(ctx, f->number);
            file_meta_unref(f);
        }
    }
    buf_free(&user);
    buf_free(&sdkey);
    buf_free(&zkey);
    buf_free(&w.last_user);
    buf_free(&w.lower);
    buf_free(&w.upper);
    rd_list_free(&w.rd);
    free(w.open.v);
    free(w.active.v);
    return rc;
}

/* Write the visible contents of input into new tables at out_level. */
int table_write_from_iter(iter_t *input, table_write_ctx_t *ctx, int out_level, version_edit_t *edit) {
    return table_write_merged(input, NULL, 0, ctx, out_level, edit);
}

/* Take the tables added to edit since n_add0 out again and delete them;
 * drop the deletions recorded since n_del0. */
void table_write_undo(table_write_ctx_t *ctx, version_edit_t *edit, int n_add0, int n_del0) {
    while (edit->n_add > n_add0) {
        file_meta_t *f = edit->add[--edit->n_add].f;
        remove_table(ctx, f->number);
        file_meta_unref(f);
    }
    edit->n_del = n_del0;
}

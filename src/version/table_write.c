/*
 * version/table_write: writing an ordered stream of internal keys into new
 * tables (flush and compaction), applying the snapshot-stripe dropping
 * rule, and running a picked compaction. Rules are in compaction.h.
 *
 * Invariants
 *  - Runs without the db mutex; touches no shared state except the files it
 *    creates, the caller-owned edit and ctx.
 *  - Entries of one user key arrive newest first (ikey order), so the first
 *    entry seen in each stripe is that stripe's newest version.
 *  - An output is cut only before the first kept entry of a user key.
 *  - On any error every table created by this call is deleted and its
 *    additions are taken out of the edit again.
 */
#include <stdlib.h>
#include <string.h>

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

/* Finish builder b (file `number`) and add it to the edit. Frees b. */
static int finish_output(table_write_ctx_t *ctx, sst_builder_t *b, uint64_t number, int out_level,
                         version_edit_t *edit) {
    sst_props_t props;
    memset(&props, 0, sizeof props);
    int rc = sst_builder_finish(b, &props);
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
    rc = version_edit_add(edit, out_level, f);
    if (rc == TDB_OK) ctx->bytes_written += f->file_size;
    file_meta_unref(f);
    if (rc != TDB_OK) remove_table(ctx, number);
    return rc;
}

/* Write the visible contents of input into new tables at out_level. */
int table_write_from_iter(iter_t *input, table_write_ctx_t *ctx, int out_level, version_edit_t *edit) {
    int rc = TDB_OK;
    const int n_add0 = edit->n_add;
    sst_builder_t *b = NULL;
    uint64_t number = 0;
    buf_t user = {0};      /* current user key */
    int have_user = 0;
    int last_stripe = -1;  /* stripe of the previous entry of `user` */
    int user_in_output = 0; /* some entry of `user` already went to b */

    if (out_level < 1 || out_level >= TDB_MAX_LEVELS) RAISE(TDB_ERR_INVALID_ARG, "table write: level %d", out_level);
    for (iter_seek_to_first(input); iter_valid(input); iter_next(input)) {
        slice_t k = iter_key(input);
        if (!ikey_valid(k)) RAISE(TDB_ERR_CORRUPTION, "table write: internal key of %zu bytes", k.size);
        slice_t uk = ikey_user(k);
        uint64_t seq = ikey_seq(k);
        unsigned type = ikey_type(k);
        ctx->bytes_read += k.size;

        if (!have_user || !slice_equal(uk, buf_slice(&user))) {
            buf_clear(&user);
            TRY(buf_append(&user, uk.data, uk.size));
            have_user = 1;
            last_stripe = -1;
            user_in_output = 0;
        }
        int stripe = stripe_of(ctx, seq);
        if (stripe == last_stripe) continue; /* shadowed within its stripe */
        last_stripe = stripe;

        if (ctx->bottommost && stripe == 0) {
            if (type == KT_DELETE || type == KT_SINGLE_DELETE) continue;
        }
        slice_t val = iter_value(input);
        TRY(iter_status(input)); /* a separated value may fail to resolve */
        ctx->bytes_read += val.size;
        if (ctx->bottommost && stripe == 0 && type == KT_PUT_TTL && val.size >= 8 &&
            (int64_t)dec_fixed64(val.data) <= ctx->now_unix)
            continue; /* expired, and nothing older can resurface */

        if (b && !user_in_output && ctx->target_file_size && sst_builder_file_size(b) >= ctx->target_file_size) {
            sst_builder_t *done = b;
            b = NULL;
            TRY(finish_output(ctx, done, number, out_level, edit));
        }
        if (!b) {
            char path[4096];
            number = ctx->new_file_number(ctx->ctx);
            sst_file_name(path, sizeof path, ctx->dbdir, number);
            TRY(sst_builder_open(ctx->env, path, &ctx->sst, &b));
        }
        TRY(sst_builder_add(b, k, val));
        user_in_output = 1;
    }
    TRY(iter_status(input));
    if (b) {
        sst_builder_t *done = b;
        b = NULL;
        TRY(finish_output(ctx, done, number, out_level, edit));
    }
err:
    if (b) {
        sst_builder_abandon(b);
        remove_table(ctx, number);
    }
    if (rc != TDB_OK) {
        while (edit->n_add > n_add0) {
            file_meta_t *f = edit->add[--edit->n_add].f;
            remove_table(ctx, f->number);
            file_meta_unref(f);
        }
    }
    buf_free(&user);
    return rc;
}

/* Merge c's inputs into new tables and record the swap in edit. */
int compaction_run(compaction_t *c, table_cache_t *tc, table_write_ctx_t *ctx, version_edit_t *edit) {
    int rc = TDB_OK, n = 0;
    const int n_add0 = edit->n_add, n_del0 = edit->n_del;
    int total = c->nin[0] + c->nin[1];
    iter_t **children = NULL, *merged = NULL;

    if (total == 0) return TDB_OK;
    children = (iter_t **)calloc((size_t)total, sizeof *children);
    if (!children) RAISE(TDB_ERR_NOMEM, "compaction: %d inputs", total);
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < c->nin[k]; i++) {
            sst_reader_t *r = NULL;
            TRY(table_cache_get(tc, c->in[k][i]->number, &r));
            children[n] = sst_reader_iter(r);
            sst_reader_unref(r); /* the iterator holds its own reference */
            if (!children[n]) RAISE(TDB_ERR_NOMEM, "compaction: table iterator");
            n++;
        }
    }
    merged = iter_merge(children, n, ikey_compare);
    n = 0; /* children now belong to the merge (or were destroyed) */
    if (!merged) RAISE(TDB_ERR_NOMEM, "compaction: merging iterator");

    ctx->bottommost = c->bottommost;
    TRY(table_write_from_iter(merged, ctx, c->output_level, edit));
    for (int i = 0; i < c->nin[0]; i++) TRY(version_edit_del(edit, c->level, c->in[0][i]->number));
    for (int i = 0; i < c->nin[1]; i++) TRY(version_edit_del(edit, c->output_level, c->in[1][i]->number));
err:
    if (rc != TDB_OK) {
        while (edit->n_add > n_add0) {
            file_meta_t *f = edit->add[--edit->n_add].f;
            remove_table(ctx, f->number);
            file_meta_unref(f);
        }
        edit->n_del = n_del0;
    }
    iter_destroy(merged);
    while (n > 0) iter_destroy(children[--n]);
    free(children);
    return rc;
}

/*
 * version/compaction_run: running a picked compaction: its input tables
 * merged into one stream, their range tombstones gathered, written into new
 * tables by version/table_write.c, and the swap recorded in the caller's
 * edit. Runs without the db mutex; on error the edit is left as it was and
 * no output stays on disk.
 */
#include <stdlib.h>

#include "sst/range_del.h"
#include "util/error.h"
#include "util/ikey.h"
#include "version/compaction.h"

/* Merge c's inputs into new tables and record the swap in edit. */
int compaction_run(compaction_t *c, table_cache_t *tc, table_write_ctx_t *ctx, version_edit_t *edit) {
    int rc = TDB_OK, n = 0;
    const int n_add0 = edit->n_add, n_del0 = edit->n_del;
    int total = c->nin[0] + c->nin[1];
    iter_t **children = NULL, *merged = NULL;
    rd_list_t rd = {0};

    if (total == 0) return TDB_OK;
    children = (iter_t **)calloc((size_t)total, sizeof *children);
    if (!children) RAISE(TDB_ERR_NOMEM, "compaction: %d inputs", total);
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < c->nin[k]; i++) {
            sst_reader_t *r = NULL;
            TRY(table_cache_get(tc, c->in[k][i]->number, &r));
            const range_del_t *t;
            size_t nt = sst_reader_range_dels(r, &t);
            for (size_t j = 0; j < nt && rc == TDB_OK; j++) rc = rd_list_add(&rd, t[j].start, t[j].end, t[j].seq);
            children[n] = rc == TDB_OK ? sst_reader_scan_iter(r) : NULL;
            sst_reader_unref(r); /* the iterator holds its own reference */
            if (rc != TDB_OK) goto err;
            if (!children[n]) RAISE(TDB_ERR_NOMEM, "compaction: table iterator");
            n++;
        }
    }
    merged = iter_merge_ikeys(children, n);
    n = 0; /* children now belong to the merge (or were destroyed) */
    if (!merged) RAISE(TDB_ERR_NOMEM, "compaction: merging iterator");

    /* Pieces of one tombstone cut by earlier outputs join again. */
    rd.n = rd_coalesce(rd.v, rd.n);
    ctx->bottommost = c->bottommost;
    TRY(table_write_merged(merged, rd.v, rd.n, ctx, c->output_level, edit));
    for (int i = 0; i < c->nin[0]; i++) TRY(version_edit_del(edit, c->level, c->in[0][i]->number));
    for (int i = 0; i < c->nin[1]; i++) TRY(version_edit_del(edit, c->output_level, c->in[1][i]->number));
err:
    if (rc != TDB_OK) table_write_undo(ctx, edit, n_add0, n_del0);
    iter_destroy(merged);
    while (n > 0) iter_destroy(children[--n]);
    free(children);
    rd_list_free(&rd);
    return rc;
}

/*
 * db/db_iter: the user-facing iterator. It merges the memtables and tables
 * of one superversion and turns internal entries into user keys: for each
 * user key it yields the newest version visible at the snapshot, and hides
 * keys whose newest visible version is a deletion or an expired value.
 *
 * Range tombstones: at creation the iterator gathers every range tombstone
 * of its superversion visible at its sequence (memtable lists, tables with
 * num_range_deletes > 0) and fragments them (sst/range_del.h, highest
 * sequence per fragment). An entry is hidden like a deletion when a
 * fragment containing its user key has a higher sequence; a sequential
 * scan checks the fragment hint first, so hiding costs O(1) amortized and
 * a seek O(log fragments). In-band KT_RANGE_DELETE entries of memtable
 * iterators are skipped. Overlay entries (OVERLAY_SEQ) are never covered.
 *
 * Direction invariant (as in LevelDB's DBIter):
 *  - forward: `in` is positioned at the entry that produced the current key;
 *  - reverse: `in` is positioned just before all entries of the current key,
 *    whose key and value are held in saved_key/saved_value.
 */
#include <stdlib.h>
#include <string.h>

#include "db/db_impl.h"

enum { DIR_FORWARD, DIR_REVERSE };

struct tdb_iter {
    tdb_t *db;
    tdb_cf_t *cf;
    superversion_t *sv;
    iter_t *in;
    uint64_t seq;
    int64_t now;
    int dir;
    bool valid;
    int status;
    buf_t saved_key, saved_value, seek_key;
    buf_t run_key; /* find_next_user_entry: key of the too-new versions stepped over */
    slice_t cur_value; /* forward: user value of the current entry */
    db_iter_observer_fn observe;
    void *observe_ctx;
    void (*on_destroy)(void *);
    void *destroy_ctx;
    rd_frags_t rdf;  /* visible range tombstones, fragmented */
    size_t rd_hint;  /* last fragment hit */
};

/* Report the current position (or running off an end) to the observer. */
static void observe(tdb_iter_t *it, int dir) {
    if (!it->observe) return;
    if (it->valid) {
        size_t n;
        const void *k = tdb_iter_key(it, &n);
        slice_t s = slice_make(k, n);
        it->observe(it->observe_ctx, &s, dir);
    } else if (it->status == TDB_OK) {
        it->observe(it->observe_ctx, NULL, dir);
    }
}

/* Is the internal entry visible and what kind is it? -1 invisible, 0 deletion, 1 value. */
static int classify(tdb_iter_t *it, slice_t ik, slice_t raw, slice_t *user_value) {
    if (!ikey_valid(ik)) return -1;
    uint64_t seq = ikey_seq(ik);
    unsigned t = ikey_type(ik);
    if (t == KT_RANGE_DELETE) return -1; /* gathered into rdf at creation */
    if (seq > it->seq && seq != OVERLAY_SEQ) return -1;
    if (it->rdf.n && seq != OVERLAY_SEQ && rd_frags_max_seq(&it->rdf, ikey_user(ik), UINT64_MAX, &it->rd_hint) > seq)
        return 0; /* covered by a newer range tombstone */
    if (!kt_is_value(t)) return 0;
    return db_value_live(t, raw, it->now, user_value) ? 1 : 0;
}

/* Versions of one user key newer than the iterator stepped over one by
 * one before it seeks to the newest one it may see: a hot key's versions
 * pile up in the memtable (every update adds one), and a scan must not
 * walk them all on each pass. (Older versions of a key already decided are
 * left in one call, iter next_user_key: a memtable jumps a key's run of
 * versions at once, tables step within their block.) */
#define SKIP_BEFORE_RESEEK 8

/* Seek `in` forward to (user, seq, type): with (seq 0, type 0) past every
 * entry of user; with (it->seq, KT_SEEK) to its newest version visible to
 * us. Only the merged sources still behind the target move. */
static int reseek(tdb_iter_t *it, slice_t user, uint64_t seq, unsigned type) {
    buf_clear(&it->seek_key);
    if (ikey_append(&it->seek_key, user, seq, type) != TDB_OK) return TDB_ERR_NOMEM;
    iter_seek_forward(it->in, buf_slice(&it->seek_key));
    return TDB_OK;
}

/* Count dead keys a move stepped over toward the family's read-triggered
 * level-1 compaction (one atomic add per move that met any). */
static void note_dead(tdb_iter_t *it, uint64_t dead) {
    if (dead) atomic_fetch_add_explicit(&it->cf->dead_stepped, dead, memory_order_relaxed);
}

/* Move `in` off saved_key's entry: past all of that key's entries in one
 * next_user_key call where the source has it (false: none of them can come
 * next), else one step (true: more of them may follow). */
static bool leave_saved_key(tdb_iter_t *it) {
    if (!it->in->ops->next_user_key) {
        iter_next(it->in);
        return true;
    }
    it->in->ops->next_user_key(it->in, buf_slice(&it->saved_key));
    return false;
}

/* Forward: from the current internal position, find the next visible user
 * entry, skipping versions of saved_key when `skipping` (in one
 * next_user_key call where the source has it). After SKIP_BEFORE_RESEEK
 * entries of one key stepped over (older versions of saved_key without
 * next_user_key, or versions newer than the iterator's sequence) it seeks
 * instead. */
static void find_next_user_entry(tdb_iter_t *it, bool skipping) {
    unsigned run = 0;   /* older versions of saved_key stepped over in a row */
    unsigned newer = 0; /* too-new versions of run_key stepped over in a row */
    uint64_t dead = 0;  /* dead keys stepped over */
    while (iter_valid(it->in)) {
        slice_t ik = iter_key(it->in);
        if (!ikey_valid(ik)) {
            it->status = tdb_err(TDB_ERR_CORRUPTION, "malformed internal key");
            break;
        }
        slice_t uk = ikey_user(ik);
        int vs_saved = skipping ? slice_compare(uk, buf_slice(&it->saved_key)) : 1;
        if (vs_saved <= 0) {
            if (vs_saved == 0 && it->in->ops->next_user_key) {
                skipping = leave_saved_key(it); /* saved_key, not uk: uk lives in a source the call moves */
            } else if (++run < SKIP_BEFORE_RESEEK) {
                iter_next(it->in);
            } else {
                run = 0;
                if (reseek(it, buf_slice(&it->saved_key), 0, 0) != TDB_OK) {
                    it->status = TDB_ERR_NOMEM;
                    break;
                }
            }
            continue;
        }
        run = 0;
        uint64_t seq = ikey_seq(ik);
        if (seq > it->seq && seq != OVERLAY_SEQ && ikey_type(ik) != KT_RANGE_DELETE) {
            /* Newer than the iterator: step over, or, the SKIP_BEFORE_RESEEK-th
             * newer version of one key in a row, seek to the newest version
             * we may see. */
            if (newer && slice_equal(uk, buf_slice(&it->run_key))) {
                newer++;
            } else {
                newer = 1;
                buf_clear(&it->run_key);
                if (buf_append(&it->run_key, uk.data, uk.size) != TDB_OK) newer = 0;
            }
            if (newer < SKIP_BEFORE_RESEEK) {
                iter_next(it->in);
            } else {
                newer = 0;
                if (reseek(it, buf_slice(&it->run_key), it->seq, KT_SEEK) != TDB_OK) {
                    it->status = TDB_ERR_NOMEM;
                    break;
                }
            }
            continue;
        }
        newer = 0;
        slice_t v, raw = iter_value(it->in);
        /* A value that could not be read (separated value, block) comes back
         * empty with the error in the status: stop, never return it. */
        if (raw.size == 0 && iter_status(it->in) != TDB_OK) break;
        int k = classify(it, ik, raw, &v);
        if (k < 0) {
            iter_next(it->in);
            continue;
        }
        if (k == 0) {
            dead++;
            buf_clear(&it->saved_key);
            if (buf_append(&it->saved_key, uk.data, uk.size) != TDB_OK) {
                it->status = TDB_ERR_NOMEM; /* without the key its older versions would show */
                break;
            }
            /* Deleted: every older version of the key is hidden too, so
             * leave them all at once (a queue's deleted head is a long run
             * of such keys), not by a step and a comparison first. */
            skipping = leave_saved_key(it);
            continue;
        }
        it->cur_value = v;
        it->valid = true;
        note_dead(it, dead);
        return;
    }
    if (it->status == TDB_OK) it->status = iter_status(it->in);
    it->valid = false;
    note_dead(it, dead);
}

/* Reverse: walk back collecting the newest visible version of the key
 * before the current internal position. */
static void find_prev_user_entry(tdb_iter_t *it) {
    int last_kind = 0; /* 0 = deletion/none, 1 = value */
    uint64_t dead = 0; /* dead keys stepped over (a key whose newest visible version is dead) */
    buf_clear(&it->saved_key);
    buf_clear(&it->saved_value);
    while (iter_valid(it->in)) {
        slice_t ik = iter_key(it->in);
        if (!ikey_valid(ik)) {
            it->status = tdb_err(TDB_ERR_CORRUPTION, "malformed internal key");
            break;
        }
        slice_t uk = ikey_user(ik), v, raw = iter_value(it->in);
        if (raw.size == 0 && iter_status(it->in) != TDB_OK) break; /* unreadable value */
        int k = classify(it, ik, raw, &v);
        if (k >= 0) {
            if (last_kind == 1 && slice_compare(uk, buf_slice(&it->saved_key)) < 0) break;
            if (last_kind == 0 && it->saved_key.size && slice_compare(uk, buf_slice(&it->saved_key)) < 0) dead++;
            last_kind = k;
            buf_clear(&it->saved_key);
            buf_append(&it->saved_key, uk.data, uk.size);
            buf_clear(&it->saved_value);
            if (k == 1) buf_append(&it->saved_value, v.data, v.size);
        }
        iter_prev(it->in);
    }
    if (it->status == TDB_OK) it->status = iter_status(it->in);
    note_dead(it, dead);
    if (last_kind == 1 && it->status == TDB_OK) {
        it->valid = true;
        it->dir = DIR_REVERSE;
    } else {
        it->valid = false;
        it->dir = DIR_FORWARD;
        buf_clear(&it->saved_key);
        buf_clear(&it->saved_value);
    }
}

typedef struct rd_collect {
    rd_list_t *l;
    uint64_t max_seq;
} rd_collect_t;

/* Keep a memtable tombstone visible at the iterator's sequence. */
static int rd_collect(void *ctx, slice_t start, slice_t end, uint64_t seq) {
    rd_collect_t *c = (rd_collect_t *)ctx;
    return seq <= c->max_seq ? rd_list_add(c->l, start, end, seq) : TDB_OK;
}

/* Gather and fragment the superversion's tombstones visible at it->seq. */
static int gather_range_dels(tdb_iter_t *it) {
    superversion_t *sv = it->sv;
    rd_list_t all = {0};
    rd_collect_t c = {&all, it->seq};
    int rc = TDB_OK;
    if (memtable_num_range_deletes(sv->mem)) TRY(memtable_range_dels(sv->mem, rd_collect, &c));
    for (int i = 0; i < sv->nimm; i++)
        if (memtable_num_range_deletes(sv->imm[i])) TRY(memtable_range_dels(sv->imm[i], rd_collect, &c));
    TRY(version_range_dels(sv->version, it->db->table_cache, it->seq, &all));
    if (all.n) TRY(rd_frags_build(&it->rdf, all.v, all.n, it->seq, 1, 0));
err:
    rd_list_free(&all);
    return rc;
}

int db_iter_range_dels_changed(tdb_iter_t *it, const slice_t *lo, const slice_t *hi, uint64_t since) {
    return rd_frags_overlap_newer(&it->rdf, lo, hi, since, UINT64_MAX);
}

int db_iter_create(tdb_t *db, tdb_cf_t *cf, uint64_t seq, iter_t *overlay, tdb_iter_t **out) {
    int rc = TDB_OK;
    iter_t **kids = NULL;
    int n = 0, cap = 0;
    tdb_iter_t *it = (tdb_iter_t *)calloc(1, sizeof *it);
    if (!it) {
        iter_destroy(overlay);
        return tdb_err(TDB_ERR_NOMEM, "iterator");
    }
    it->db = db;
    it->cf = cf;
    it->seq = seq;
    it->now = db_now_unix();
    it->sv = cf_get_sv(cf);
    if (!it->sv) {
        iter_destroy(overlay);
        free(it);
        return tdb_err(TDB_ERR_CLOSED, "column family '%s' was dropped", cf->name);
    }
    cap = it->sv->nimm + 2 + TDB_MAX_LEVELS;
    kids = (iter_t **)malloc((size_t)cap * sizeof *kids);
    if (!kids) {
        iter_destroy(overlay);
        RAISE(TDB_ERR_NOMEM, "iterator");
    }
    if (overlay) kids[n++] = overlay;
    if (!(kids[n++] = memtable_iter(it->sv->mem))) RAISE(TDB_ERR_NOMEM, "iterator");
    for (int i = 0; i < it->sv->nimm; i++)
        if (!(kids[n++] = memtable_iter(it->sv->imm[i]))) RAISE(TDB_ERR_NOMEM, "iterator");
    TRY(version_add_iters(it->sv->version, db->table_cache, &kids, &n, &cap));
    TRY(gather_range_dels(it));
    it->in = iter_merge_ikeys(kids, n);
    free(kids);
    kids = NULL;
    if (!it->in) {
        n = 0;
        RAISE(TDB_ERR_NOMEM, "iterator");
    }
    *out = it;
    return TDB_OK;
err:
    for (int i = 0; kids && i < n; i++) iter_destroy(kids[i]);
    free(kids);
    rd_frags_free(&it->rdf);
    sv_unref(it->sv);
    free(it);
    return rc;
}

int tdb_iter_create(tdb_t *db, tdb_cf_t *cf, const tdb_snapshot_t *snap, tdb_iter_t **out) {
    TDB_RET(db_check_cf(db, cf));
    if (!out) return tdb_err(TDB_ERR_INVALID_ARG, "tdb_iter_create: out is NULL");
    return db_iter_create(db, cf, snap ? snap->seq : atomic_load(&db->visible_seq), NULL, out);
}

iter_t *db_iter_internal(tdb_iter_t *it) { return it->in; }

void db_iter_set_destroy_hook(tdb_iter_t *it, void (*fn)(void *), void *ctx) {
    it->on_destroy = fn;
    it->destroy_ctx = ctx;
}

void db_iter_set_observer(tdb_iter_t *it, db_iter_observer_fn fn, void *ctx) {
    it->observe = fn;
    it->observe_ctx = ctx;
}

void tdb_iter_destroy(tdb_iter_t *it) {
    if (!it) return;
    if (it->on_destroy) it->on_destroy(it->destroy_ctx);
    iter_destroy(it->in);
    rd_frags_free(&it->rdf);
    sv_unref(it->sv);
    buf_free(&it->saved_key);
    buf_free(&it->saved_value);
    buf_free(&it->seek_key);
    buf_free(&it->run_key);
    free(it);
}

void tdb_iter_seek_to_first(tdb_iter_t *it) {
    if (!it) return;
    it->dir = DIR_FORWARD;
    it->status = TDB_OK;
    buf_clear(&it->saved_key);
    iter_seek_to_first(it->in);
    find_next_user_entry(it, false);
    if (it->observe) it->observe(it->observe_ctx, NULL, -1);
    observe(it, 1);
}

void tdb_iter_seek_to_last(tdb_iter_t *it) {
    if (!it) return;
    it->status = TDB_OK;
    it->dir = DIR_REVERSE;
    iter_seek_to_last(it->in);
    find_prev_user_entry(it);
    if (it->observe) it->observe(it->observe_ctx, NULL, 1);
    observe(it, -1);
}

void tdb_iter_seek(tdb_iter_t *it, const void *key, size_t klen) {
    if (!it) return;
    it->dir = DIR_FORWARD;
    it->status = TDB_OK;
    buf_clear(&it->saved_key);
    buf_clear(&it->seek_key);
    if (ikey_append(&it->seek_key, slice_make(key, klen), SEQ_MAX, KT_SEEK) != TDB_OK) {
        it->status = TDB_ERR_NOMEM;
        it->valid = false;
        return;
    }
    iter_seek(it->in, buf_slice(&it->seek_key));
    find_next_user_entry(it, false);
    if (it->observe) {
        slice_t t = slice_make(key, klen);
        it->observe(it->observe_ctx, &t, 1);
    }
    observe(it, 1);
}

/* One backward positioning of the merge at the last internal key of
 * `key` (sequence 0, the lowest type: below every version of it), then the
 * newest visible version of the last user key <= key. It was a forward
 * seek, then a change of direction that sought every child again. */
void tdb_iter_seek_for_prev(tdb_iter_t *it, const void *key, size_t klen) {
    if (!it) return;
    it->status = TDB_OK;
    buf_clear(&it->seek_key);
    if (ikey_append(&it->seek_key, slice_make(key, klen), 0, KT_DELETE) != TDB_OK) {
        it->status = TDB_ERR_NOMEM;
        it->valid = false;
        return;
    }
    iter_seek_for_prev(it->in, buf_slice(&it->seek_key), ikey_compare);
    find_prev_user_entry(it);
    if (it->observe) {
        slice_t t = slice_make(key, klen);
        it->observe(it->observe_ctx, &t, -1);
    }
    observe(it, -1);
}

void tdb_iter_next(tdb_iter_t *it) {
    if (!it || !it->valid) return;
    bool skipping = true; /* entries of saved_key may come next */
    if (it->dir == DIR_REVERSE) {
        /* `in` is before the current key's entries; saved_key = current key. */
        it->dir = DIR_FORWARD;
        if (!iter_valid(it->in)) iter_seek_to_first(it->in);
        else iter_next(it->in);
    } else {
        slice_t uk = ikey_user(iter_key(it->in));
        buf_clear(&it->saved_key);
        if (buf_append(&it->saved_key, uk.data, uk.size) != TDB_OK) {
            it->status = TDB_ERR_NOMEM; /* without the key its older versions would show */
            it->valid = false;
            return;
        }
        /* Leave the key's older versions at once (they follow it, in this
         * source and in older ones: a row updated since the last flush
         * has one in a memtable and one in a table) rather than step onto
         * the next one and find it is the same key; then no entry of it is
         * left to compare with. */
        skipping = leave_saved_key(it);
    }
    find_next_user_entry(it, skipping);
    observe(it, 1);
}

void tdb_iter_prev(tdb_iter_t *it) {
    if (!it || !it->valid) return;
    if (it->dir == DIR_FORWARD) {
        /* Move `in` before all entries of the current key. */
        slice_t uk = ikey_user(iter_key(it->in));
        buf_clear(&it->saved_key);
        buf_append(&it->saved_key, uk.data, uk.size);
        for (;;) {
            iter_prev(it->in);
            if (!iter_valid(it->in)) {
                it->valid = false;
                it->status = iter_status(it->in);
                buf_clear(&it->saved_key);
                buf_clear(&it->saved_value);
                observe(it, -1);
                return;
            }
            if (slice_compare(ikey_user(iter_key(it->in)), buf_slice(&it->saved_key)) < 0) break;
        }
        it->dir = DIR_REVERSE;
    }
    find_prev_user_entry(it);
    observe(it, -1);
}

int tdb_iter_valid(const tdb_iter_t *it) { return it && it->valid; }

const void *tdb_iter_key(const tdb_iter_t *it, size_t *klen) {
    if (!it || !it->valid) {
        if (klen) *klen = 0;
        return NULL;
    }
    slice_t k = it->dir == DIR_FORWARD ? ikey_user(iter_key(it->in)) : buf_slice(&it->saved_key);
    if (klen) *klen = k.size;
    return k.data;
}

const void *tdb_iter_value(const tdb_iter_t *it, size_t *vlen) {
    if (!it || !it->valid) {
        if (vlen) *vlen = 0;
        return NULL;
    }
    slice_t v = it->dir == DIR_FORWARD ? it->cur_value : buf_slice(&it->saved_value);
    if (vlen) *vlen = v.size;
    return v.data ? v.data : "";
}

int tdb_iter_status(const tdb_iter_t *it) { return it ? it->status : TDB_ERR_INVALID_ARG; }

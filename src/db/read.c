/* db/read: point lookups, snapshots and statistics. */
#include <stdlib.h>
#include <string.h>

#include "db/db_impl.h"

tdb_snapshot_t *tdb_snapshot_create(tdb_t *db) {
    if (!db) return NULL;
    tdb_snapshot_t *s = (tdb_snapshot_t *)malloc(sizeof *s);
    if (!s) return NULL;
    pthread_mutex_lock(&db->mu);
    if (db->nsnap == db->cap_snap) {
        int n = db->cap_snap ? db->cap_snap * 2 : 16;
        uint64_t *p = (uint64_t *)realloc(db->snapshots, (size_t)n * sizeof *p);
        if (!p) {
            pthread_mutex_unlock(&db->mu);
            free(s);
            return NULL;
        }
        db->snapshots = p;
        db->cap_snap = n;
    }
    /* visible_seq only grows, so appending keeps the list ascending. */
    s->seq = atomic_load(&db->visible_seq);
    db->snapshots[db->nsnap++] = s->seq;
    pthread_mutex_unlock(&db->mu);
    return s;
}

void tdb_snapshot_release(tdb_t *db, tdb_snapshot_t *s) {
    if (!db || !s) return;
    pthread_mutex_lock(&db->mu);
    for (int i = 0; i < db->nsnap; i++) {
        if (db->snapshots[i] == s->seq) {
            memmove(db->snapshots + i, db->snapshots + i + 1, (size_t)(db->nsnap - i - 1) * sizeof *db->snapshots);
            db->nsnap--;
            break;
        }
    }
    pthread_mutex_unlock(&db->mu);
    free(s);
}

uint64_t tdb_snapshot_sequence(const tdb_snapshot_t *s) { return s ? s->seq : 0; }

/* Turn a found entry into the caller's result: a copy of the value. */
static int finish_get(unsigned type, slice_t raw, void **val, size_t *vlen) {
    slice_t v;
    if (!kt_is_value(type) || !db_value_live(type, raw, db_now_unix(), &v)) return TDB_ERR_NOT_FOUND;
    char *p = (char *)malloc(v.size ? v.size : 1);
    if (!p) return tdb_err(TDB_ERR_NOMEM, "value of %zu bytes", v.size);
    if (v.size) memcpy(p, v.data, v.size);
    *val = p;
    *vlen = v.size;
    return TDB_OK;
}

/* The same for a value a table lookup copied into *b (heap memory the
 * caller may own): hand b's storage over instead of copying it again (a
 * TTL prefix is moved out in place). */
static int finish_get_buf(unsigned type, buf_t *b, void **val, size_t *vlen) {
    slice_t v;
    if (!kt_is_value(type) || !db_value_live(type, buf_slice(b), db_now_unix(), &v)) return TDB_ERR_NOT_FOUND;
    if (!b->data) return finish_get(type, buf_slice(b), val, vlen); /* an empty value: nothing allocated */
    if (v.data != b->data) memmove(b->data, v.data, v.size);
    /* Give back a large slack (the buffer grew in powers of two); a small
     * one is not worth a realloc, which costs more than malloc and free. */
    if (b->cap - v.size > 4096) {
        char *p = (char *)realloc(b->data, v.size ? v.size : 1); /* shrinks in place */
        if (p) b->data = p;
    }
    *val = b->data;
    *vlen = v.size;
    b->data = NULL; /* the caller's now */
    b->size = b->cap = 0;
    return TDB_OK;
}

/* Newest change of user_key in one memtable at snap: its newest point entry
 * or a newer range tombstone covering it (reported as KT_RANGE_DELETE with
 * the tombstone's sequence). 1 if either exists, else 0. Memtables hold
 * disjoint, ordered sequence ranges, so the first memtable (newest first)
 * with a hit decides. */
static int mem_lookup(memtable_t *m, slice_t uk, uint64_t snap, unsigned *type, uint64_t *seq, slice_t *raw) {
    int found = memtable_get(m, uk, snap, type, seq, raw);
    uint64_t tomb = memtable_num_range_deletes(m) ? memtable_range_del_seq(m, uk, snap) : 0;
    if (tomb && (!found || tomb > *seq)) {
        *type = KT_RANGE_DELETE;
        *seq = tomb;
        *raw = slice_make("", 0);
        return 1;
    }
    return found;
}

int tdb_get(tdb_t *db, tdb_cf_t *cf, const tdb_snapshot_t *snap, const void *key, size_t klen, void **val,
            size_t *vlen) {
    if (val) *val = NULL; /* what a caller sees on any failure */
    if (vlen) *vlen = 0;
    int rc = db_check_cf(db, cf);
    if (rc != TDB_OK) return rc;
    if (!val || !vlen) return tdb_err(TDB_ERR_INVALID_ARG, "tdb_get: NULL output");
    if (!key || klen == 0) return tdb_err(TDB_ERR_INVALID_ARG, "empty key");
    if (klen > TDB_MAX_KEY_SIZE) return tdb_err(TDB_ERR_TOO_LARGE, "key of %zu bytes exceeds %u", klen, TDB_MAX_KEY_SIZE);
    /* Sequence first, then the superversion: see db_impl.h invariant 2. */
    uint64_t seq = snap ? snap->seq : atomic_load(&db->visible_seq);
    superversion_t *sv = cf_get_sv(cf);
    if (!sv) return tdb_err(TDB_ERR_CLOSED, "column family '%s' was dropped", cf->name);
    slice_t uk = slice_make(key, klen), raw;
    unsigned type;
    uint64_t found_seq;
    buf_t b = {0};
    if (mem_lookup(sv->mem, uk, seq, &type, &found_seq, &raw)) {
        rc = finish_get(type, raw, val, vlen);
        goto done;
    }
    for (int i = 0; i < sv->nimm; i++) {
        if (mem_lookup(sv->imm[i], uk, seq, &type, &found_seq, &raw)) {
            rc = finish_get(type, raw, val, vlen);
            goto done;
        }
    }
    rc = version_get(sv->version, db->table_cache, uk, seq, &type, &found_seq, &b);
    if (rc == 1) rc = finish_get_buf(type, &b, val, vlen);
    else if (rc == 0) rc = TDB_ERR_NOT_FOUND;
done:
    buf_free(&b);
    sv_unref(sv);
    return rc;
}

/* The tables first: when they alone reach max, the memtables' skip-list
 * walks (the larger part of an estimate's cost with a full memtable) are
 * not needed. */
int tdb_approximate_count_max(tdb_t *db, tdb_cf_t *cf, const void *lo, size_t lo_len, const void *hi, size_t hi_len,
                              uint64_t max, uint64_t *count) {
    TDB_RET(db_check_cf(db, cf));
    if (!count) return tdb_err(TDB_ERR_INVALID_ARG, "tdb_approximate_count: NULL output");
    *count = 0;
    if ((lo_len && !lo) || (hi_len && !hi)) return tdb_err(TDB_ERR_INVALID_ARG, "tdb_approximate_count: NULL bound");
    slice_t l = slice_make(lo, lo_len), h = slice_make(hi, hi_len);
    const slice_t *lp = lo_len ? &l : NULL, *hp = hi ? &h : NULL;
    if (lp && hp && slice_compare(l, h) >= 0) return TDB_OK; /* empty range */
    superversion_t *sv = cf_get_sv(cf);
    if (!sv) return tdb_err(TDB_ERR_CLOSED, "column family '%s' was dropped", cf->name);
    uint64_t n = version_approx_entries(sv->version, db->table_cache, lp, hp);
    if (n < max) n += memtable_approx_entries(sv->mem, lp, hp);
    for (int i = 0; i < sv->nimm && n < max; i++) n += memtable_approx_entries(sv->imm[i], lp, hp);
    sv_unref(sv);
    *count = n < max ? n : max;
    return TDB_OK;
}

int tdb_approximate_count(tdb_t *db, tdb_cf_t *cf, const void *lo, size_t lo_len, const void *hi, size_t hi_len,
                          uint64_t *count) {
    return tdb_approximate_count_max(db, cf, lo, lo_len, hi, hi_len, UINT64_MAX, count);
}

/* Add one family's shape to stats (mu held). */
static void add_cf_stats(tdb_cf_t *cf, tdb_stats_t *s) {
    for (int l = 1; l < TDB_MAX_LEVELS; l++) {
        int n = version_num_files(cf->current, l);
        s->levels[l].files += (uint64_t)n;
        s->levels[l].bytes += version_level_bytes(cf->current, l);
        for (int i = 0; i < n; i++) s->num_entries_estimate += version_file(cf->current, l, i)->num_entries;
    }
    s->memtable_bytes += memtable_memory_usage(cf->mem.mem);
    s->num_entries_estimate += memtable_num_entries(cf->mem.mem);
    s->immutable_memtables += (uint64_t)cf->nimm;
    s->flushes_pending += (uint64_t)(cf->nimm - (cf->flushing && cf->nimm ? 1 : 0));
    for (int i = 0; i < cf->nimm; i++) {
        s->memtable_bytes += memtable_memory_usage(cf->imm[i].mem);
        s->num_entries_estimate += memtable_num_entries(cf->imm[i].mem);
    }
    /* Levels over their compaction trigger (compaction.h scores >= 1). */
    compaction_opts_t o = db_compaction_opts(cf);
    uint64_t target[TDB_MAX_LEVELS];
    int base = compaction_level_targets(cf->current, &o, target);
    if (version_l1_runs(cf->current) >= compaction_l1_trigger(cf->current, &o, base)) s->compactions_pending++;
    for (int l = 2; l < TDB_MAX_LEVELS - 1; l++)
        if (target[l] && version_level_bytes(cf->current, l) > target[l]) s->compactions_pending++;
}

int tdb_get_stats(tdb_t *db, tdb_cf_t *cf, tdb_stats_t *out) {
    if (!db || !out) return tdb_err(TDB_ERR_INVALID_ARG, "tdb_get_stats: NULL argument");
    if (cf) {
        TDB_RET(db_check_cf(db, cf));
    }
    memset(out, 0, sizeof *out);
    pthread_mutex_lock(&db->mu);
    for (uint32_t i = 0; i < db->ncf_slots; i++) {
        tdb_cf_t *c = db->cfs[i];
        if (!c || atomic_load(&c->dropped) || (cf && c != cf)) continue;
        add_cf_stats(c, out);
    }
    pthread_mutex_unlock(&db->mu);
    lru_stats_t ls;
    memset(&ls, 0, sizeof ls);
    if (db->block_cache) lru_cache_stats(db->block_cache, &ls);
    out->block_cache_hits = ls.hits;
    out->block_cache_misses = ls.misses;
    out->block_cache_bytes = ls.usage;
    out->user_bytes_written = atomic_load(&db->ctr.user_bytes);
    out->wal_bytes_written = atomic_load(&db->ctr.wal_bytes);
    out->wal_syncs = atomic_load(&db->ctr.wal_syncs);
    out->flush_bytes_written = atomic_load(&db->ctr.flush_bytes);
    out->compaction_bytes_read = atomic_load(&db->ctr.compact_read);
    out->compaction_bytes_written = atomic_load(&db->ctr.compact_written);
    out->flushes = atomic_load(&db->ctr.flushes);
    out->compactions = atomic_load(&db->ctr.compactions);
    out->stall_micros = atomic_load(&db->ctr.stall_micros);
    out->stall_max_micros = atomic_load(&db->ctr.stall_max);
    out->stalls = atomic_load(&db->ctr.stalls);
    out->slowdowns = atomic_load(&db->ctr.delays);
    out->stall_timeouts = atomic_load(&db->ctr.stall_timeouts);
    pthread_mutex_lock(&db->mu);
    out->background_paused = db->bg_paused;
    if (db->lock_mgr && db->lock_mgr_counts)
        db->lock_mgr_counts(db->lock_mgr, out);
    pthread_mutex_unlock(&db->mu);
    out->memory_budget = db->mem_budget;
    out->last_sequence = atomic_load(&db->visible_seq);
    return TDB_OK;
}

int db_latest_seq(tdb_t *db, tdb_cf_t *cf, slice_t key, uint64_t *seq) {
    superversion_t *sv = cf_get_sv(cf);
    if (!sv) return tdb_err(TDB_ERR_CLOSED, "column family '%s' was dropped", cf->name);
    unsigned type;
    slice_t raw;
    int rc = 0;
    (void)db;
    /* A covering range tombstone counts as the key's latest change, so
     * transactions conflict with range deletes. */
    if (mem_lookup(sv->mem, key, SEQ_MAX, &type, seq, &raw)) {
        rc = 1;
        goto done;
    }
    for (int i = 0; i < sv->nimm; i++) {
        if (mem_lookup(sv->imm[i], key, SEQ_MAX, &type, seq, &raw)) {
            rc = 1;
            goto done;
        }
    }
    buf_t b = {0};
    rc = version_get(sv->version, cf->db->table_cache, key, SEQ_MAX, &type, seq, &b);
    buf_free(&b);
done:
    sv_unref(sv);
    return rc;
}

int db_range_changed(tdb_t *db, tdb_cf_t *cf, const slice_t *lo, const slice_t *hi, uint64_t since) {
    tdb_iter_t *it = NULL;
    int rc = db_iter_create(db, cf, SEQ_MAX - 2, NULL, &it);
    if (rc != TDB_OK) return rc;
    iter_t *in = db_iter_internal(it);
    buf_t seek = {0};
    if (lo) {
        rc = ikey_append(&seek, *lo, SEQ_MAX, KT_SEEK);
        if (rc != TDB_OK) goto done;
        iter_seek(in, buf_slice(&seek));
    } else {
        iter_seek_to_first(in);
    }
    /* A range tombstone overlapping [lo, hi] changed the range too, also
     * when it starts below lo (then the scan below does not meet it). */
    rc = db_iter_range_dels_changed(it, lo, hi, since);
    for (; rc == 0 && iter_valid(in); iter_next(in)) {
        slice_t ik = iter_key(in);
        if (hi && slice_compare(ikey_user(ik), *hi) > 0) break;
        if (ikey_seq(ik) > since) {
            rc = 1;
            break;
        }
    }
    if (rc == 0 && iter_status(in) != TDB_OK) rc = iter_status(in);
done:
    buf_free(&seek);
    tdb_iter_destroy(it);
    return rc;
}

int db_changed_since(tdb_t *db, tdb_cf_t *cf, slice_t key, uint64_t since) {
    superversion_t *sv = cf_get_sv(cf);
    if (!sv) return tdb_err(TDB_ERR_CLOSED, "column family '%s' was dropped", cf->name);
    unsigned type;
    slice_t raw;
    uint64_t seq = 0;
    int rc = 0;
    (void)db;
    /* The memtables hold the newest data: the first hit is the latest change. */
    if (mem_lookup(sv->mem, key, SEQ_MAX, &type, &seq, &raw)) {
        rc = seq > since;
        goto done;
    }
    for (int i = 0; i < sv->nimm; i++) {
        if (mem_lookup(sv->imm[i], key, SEQ_MAX, &type, &seq, &raw)) {
            rc = seq > since;
            goto done;
        }
    }
    /* No table holds anything newer than `since`: nothing to look up. */
    if (sv->max_file_seq <= since) goto done;
    buf_t b = {0};
    rc = version_get(sv->version, cf->db->table_cache, key, SEQ_MAX, &type, &seq, &b);
    buf_free(&b);
    if (rc == 1) rc = seq > since;
done:
    sv_unref(sv);
    return rc;
}

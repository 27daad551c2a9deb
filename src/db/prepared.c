/*
 * db/prepared: the registry of prepared transactions (two-phase commit,
 * docs/design/txn.md, "Two-phase commit").
 *
 * Invariants
 *  1. An entry is RESERVED from tdb_txn_prepare's start until its prepare
 *     record is in the WAL; then LISTED (its xid is reported by
 *     tdb_recover_prepared and its keys conflict: db_prepared_has_key) until
 *     the write leader logged its commit marker or a rollback marker was
 *     appended; RESOLVING while a commit or rollback is under way (keys
 *     still conflict). xids are unique among all entries.
 *  2. Prepared data is in no memtable: readers never see it before the
 *     commit marker, which numbers it like a batch.
 *  3. Every LISTED or RESOLVING entry has its prepare record in the current
 *     WAL: db_rotate_wal rewrites them into each new WAL and syncs it before
 *     any write goes there (db_prepared_relog_locked, wal_mu held), so the
 *     deletion of older WALs never loses one, and a marker always follows a
 *     copy of its prepare record in the same log. Entries leave the registry
 *     only while wal_mu or the writer-queue leadership excludes a rotation
 *     (a rollback under wal_mu, a commit in db_prepared_logged by the
 *     leader), so no rotation copies a record whose marker is already in an
 *     older log.
 * Lock: set->mu guards the list and the entries' states; it is a leaf,
 * taken under wal_mu by the relog, never holding another lock.
 */
#include <stdlib.h>
#include <string.h>

#include "db/db_impl.h"
#include "util/checksum.h"

enum { PREP_RESERVED, PREP_LISTED, PREP_RESOLVING };

struct prepared {
    struct prepared *next;
    buf_t xid;
    buf_t rec;          /* BATCH_WAL_SPARE bytes, then the PREPARE record (batch.h) */
    size_t entries_off; /* offset of the entries in rec */
    uint32_t count;     /* entries */
    uint64_t *hashes;   /* (cf id, key) of each entry, sorted */
    uint32_t nhash;
    int state;
    bool attached;      /* a live transaction handle resolves it */
    bool full_sync;     /* a family written is TDB_SYNC_FULL (markers are synced) */
};

struct prepared_set {
    pthread_mutex_t mu;
    prepared_t *head;
    atomic_int listed; /* LISTED + RESOLVING entries: 0 skips every key check */
};

/* Create the registry of a database being opened. */
int db_prepared_open(tdb_t *db) {
    struct prepared_set *s = (struct prepared_set *)calloc(1, sizeof *s);
    if (!s) return tdb_err(TDB_ERR_NOMEM, "prepared transactions");
    pthread_mutex_init(&s->mu, NULL);
    atomic_init(&s->listed, 0);
    db->prepared = s;
    return TDB_OK;
}

/* Free an entry (unlinked). */
static void entry_free(prepared_t *p) {
    buf_free(&p->xid);
    buf_free(&p->rec);
    free(p->hashes);
    free(p);
}

/* Free the registry (close): the records stay in the WAL. */
void db_prepared_close(tdb_t *db) {
    struct prepared_set *s = db->prepared;
    if (!s) return;
    while (s->head) {
        prepared_t *p = s->head;
        s->head = p->next;
        entry_free(p);
    }
    pthread_mutex_destroy(&s->mu);
    free(s);
    db->prepared = NULL;
}

/* The hash a prepared key is found by. */
static uint64_t key_hash(uint32_t cf_id, slice_t key) { return tdb_hash64(key.data, key.size, cf_id); }

/* qsort/bsearch order of hashes. */
static int cmp_u64(const void *a, const void *b) {
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

typedef struct hash_ctx {
    prepared_t *p;
    tdb_t *db; /* during open: find the families' sync modes (else NULL) */
} hash_ctx_t;

/* Note one entry's key hash (and whether its family syncs fully). */
static int hash_entry(void *ctx, uint64_t seq, const batch_entry_t *e) {
    (void)seq;
    hash_ctx_t *c = (hash_ctx_t *)ctx;
    c->p->hashes[c->p->nhash++] = key_hash(e->cf_id, e->key);
    if (c->db && e->cf_id < c->db->ncf_slots && c->db->cfs[e->cf_id] &&
        db_cf_sync_mode(c->db, c->db->cfs[e->cf_id]) == TDB_SYNC_FULL)
        c->p->full_sync = true;
    return TDB_OK;
}

int db_prepared_rep(const prepared_t *p, uint64_t seq, buf_t *out) {
    char hdr[BATCH_HEADER] = {0};
    enc_fixed64(hdr, seq);
    enc_fixed32(hdr + 8, p->count);
    buf_clear(out);
    TDB_RET(buf_append(out, hdr, sizeof hdr));
    return buf_append(out, p->rec.data + p->entries_off, p->rec.size - p->entries_off);
}

uint32_t db_prepared_count_entries(const prepared_t *p) { return p->count; }

/* A new entry for xid whose PREPARE record (after the spare bytes) is
 * rec_tail: decodes the entries and their key hashes. */
static int entry_new(tdb_t *db, bool at_open, slice_t xid, slice_t rec_tail, prepared_t **out) {
    int rc = TDB_OK;
    buf_t rep = {0};
    prepared_t *p = (prepared_t *)calloc(1, sizeof *p);
    if (!p) return tdb_err(TDB_ERR_NOMEM, "prepared transaction");
    char spare[BATCH_WAL_SPARE] = {0};
    TRY(buf_append(&p->xid, xid.data, xid.size));
    TRY(buf_append(&p->rec, spare, sizeof spare));
    TRY(buf_append(&p->rec, rec_tail.data, rec_tail.size));
    uint64_t z = 0;
    batch_txn_rec_t r;
    /* rec_tail lacks the header: parse the record behind a (0, 0) one. */
    slice_t whole = slice_make(p->rec.data + BATCH_WAL_SPARE - 2, rec_tail.size + 2);
    rc = batch_txn_record(whole, &z, &r);
    if (rc != 1 || r.kind != BATCH_TXN_PREPARE)
        RAISE(TDB_ERR_CORRUPTION, "prepare record of %zu bytes does not parse", rec_tail.size);
    if (r.count > r.entries.size) /* bytes from disk: no allocation beyond the record's size */
        RAISE(TDB_ERR_CORRUPTION, "prepare record declares %u entries in %zu bytes", r.count, r.entries.size);
    rc = TDB_OK;
    p->count = r.count;
    p->entries_off = (size_t)(r.entries.data - p->rec.data);
    if (p->count && !(p->hashes = (uint64_t *)malloc((size_t)p->count * sizeof *p->hashes)))
        RAISE(TDB_ERR_NOMEM, "prepared transaction of %u entries", p->count);
    TRY(db_prepared_rep(p, 1, &rep));
    hash_ctx_t hc = {p, at_open ? db : NULL};
    TRY(batch_iterate(buf_slice(&rep), hash_entry, &hc));
    if (p->nhash) qsort(p->hashes, p->nhash, sizeof *p->hashes, cmp_u64);
    buf_free(&rep);
    *out = p;
    return TDB_OK;
err:
    buf_free(&rep);
    entry_free(p);
    return rc;
}

/* The entry of xid (set->mu held), or NULL. */
static prepared_t *find_locked(struct prepared_set *s, slice_t xid) {
    for (prepared_t *p = s->head; p; p = p->next)
        if (slice_equal(buf_slice(&p->xid), xid)) return p;
    return NULL;
}

/* Unlink p (set->mu held). */
static void unlink_locked(struct prepared_set *s, prepared_t *p) {
    for (prepared_t **pp = &s->head; *pp; pp = &(*pp)->next)
        if (*pp == p) {
            *pp = p->next;
            break;
        }
    if (p->state != PREP_RESERVED) atomic_fetch_sub(&s->listed, 1);
}

int db_prepared_reserve(tdb_t *db, slice_t xid, tdb_batch_t *b, bool full_sync, prepared_t **out) {
    struct prepared_set *s = db->prepared;
    buf_t rec = {0};
    prepared_t *p = NULL;
    int rc = batch_txn_marker(&rec, BATCH_TXN_PREPARE, xid, b);
    if (rc == TDB_OK)
        rc = entry_new(db, false, xid, slice_make(rec.data + BATCH_WAL_SPARE, rec.size - BATCH_WAL_SPARE), &p);
    buf_free(&rec);
    if (rc != TDB_OK) return rc;
    pthread_mutex_lock(&s->mu);
    if (find_locked(s, xid)) {
        pthread_mutex_unlock(&s->mu);
        entry_free(p);
        return tdb_err(TDB_ERR_EXISTS, "a prepared transaction with this xid (%zu bytes) exists", xid.size);
    }
    p->state = PREP_RESERVED;
    p->attached = true;
    p->full_sync = full_sync;
    p->next = s->head;
    s->head = p;
    pthread_mutex_unlock(&s->mu);
    b->wal_marker = &p->rec;
    b->wal_only = true;
    *out = p;
    return TDB_OK;
}

void db_prepared_unreserve(tdb_t *db, prepared_t *p) {
    pthread_mutex_lock(&db->prepared->mu);
    unlink_locked(db->prepared, p);
    pthread_mutex_unlock(&db->prepared->mu);
    entry_free(p);
}

void db_prepared_logged(tdb_t *db, prepared_t *p, bool prepare) {
    struct prepared_set *s = db->prepared;
    pthread_mutex_lock(&s->mu);
    if (prepare) {
        p->state = PREP_LISTED;
        atomic_fetch_add(&s->listed, 1);
        pthread_mutex_unlock(&s->mu);
        return;
    }
    unlink_locked(s, p);
    pthread_mutex_unlock(&s->mu);
    entry_free(p);
}

int db_prepared_recovered(tdb_t *db, const batch_txn_rec_t *r, slice_t payload) {
    struct prepared_set *s = db->prepared;
    prepared_t *p = NULL;
    (void)r;
    if (payload.size < 2) return tdb_err(TDB_ERR_CORRUPTION, "prepare record too short");
    TDB_RET(entry_new(db, true, r->xid, slice_make(payload.data + 2, payload.size - 2), &p));
    pthread_mutex_lock(&s->mu);
    prepared_t *old = find_locked(s, r->xid); /* a relogged copy of the same prepare */
    if (old) unlink_locked(s, old);
    p->state = PREP_LISTED;
    p->next = s->head;
    s->head = p;
    atomic_fetch_add(&s->listed, 1);
    pthread_mutex_unlock(&s->mu);
    if (old) entry_free(old);
    return TDB_OK;
}

prepared_t *db_prepared_find(tdb_t *db, slice_t xid) {
    pthread_mutex_lock(&db->prepared->mu);
    prepared_t *p = find_locked(db->prepared, xid);
    if (p && p->state == PREP_RESERVED) p = NULL;
    pthread_mutex_unlock(&db->prepared->mu);
    return p;
}

void db_prepared_remove(tdb_t *db, prepared_t *p) {
    pthread_mutex_lock(&db->prepared->mu);
    unlink_locked(db->prepared, p);
    pthread_mutex_unlock(&db->prepared->mu);
    entry_free(p);
}

int db_prepared_relog_locked(tdb_t *db, wal_writer_t *w) {
    struct prepared_set *s = db->prepared;
    if (atomic_load(&s->listed) == 0) return TDB_OK;
    int rc = TDB_OK, n = 0;
    pthread_mutex_lock(&s->mu);
    for (prepared_t *p = s->head; p; p = p->next) n += p->state != PREP_RESERVED;
    slice_t *v = (slice_t *)malloc((size_t)(n ? n : 1) * sizeof *v);
    if (!v) RAISE(TDB_ERR_NOMEM, "relog of %d prepared transactions", n);
    n = 0;
    for (prepared_t *p = s->head; p; p = p->next)
        if (p->state != PREP_RESERVED)
            v[n++] = slice_make(p->rec.data + BATCH_WAL_SPARE - 2, p->rec.size - BATCH_WAL_SPARE + 2);
    TRY(wal_writer_add(w, v, n));
    TRY(wal_writer_sync(w));
err:
    pthread_mutex_unlock(&s->mu);
    free(v);
    return rc;
}

/* ---- what the transaction layer and the resolving calls use ---- */

int db_prepared_has_key(tdb_t *db, uint32_t cf_id, slice_t key) {
    struct prepared_set *s = db->prepared;
    if (atomic_load_explicit(&s->listed, memory_order_acquire) == 0) return 0;
    uint64_t h = key_hash(cf_id, key);
    int found = 0;
    pthread_mutex_lock(&s->mu);
    for (prepared_t *p = s->head; p && !found; p = p->next)
        if (p->state != PREP_RESERVED && p->nhash && bsearch(&h, p->hashes, p->nhash, sizeof h, cmp_u64)) found = 1;
    pthread_mutex_unlock(&s->mu);
    return found;
}

int db_prepared_any(tdb_t *db) { return atomic_load(&db->prepared->listed) > 0; }

int db_prepared_begin_resolve(tdb_t *db, slice_t xid, bool attached, prepared_t **out) {
    struct prepared_set *s = db->prepared;
    int rc = TDB_OK;
    pthread_mutex_lock(&s->mu);
    prepared_t *p = find_locked(s, xid);
    if (!p || p->state == PREP_RESERVED)
        RAISE(TDB_ERR_NOT_FOUND, "no prepared transaction with this xid (%zu bytes)", xid.size);
    if (p->state == PREP_RESOLVING) RAISE(TDB_ERR_BUSY, "the prepared transaction is being committed or rolled back");
    if (p->attached && !attached)
        RAISE(TDB_ERR_BUSY, "the prepared transaction belongs to a live handle: commit or roll back the handle "
                            "(or free it first)");
    p->state = PREP_RESOLVING;
    *out = p;
err:
    pthread_mutex_unlock(&s->mu);
    return rc;
}

void db_prepared_end_resolve(tdb_t *db, prepared_t *p) {
    pthread_mutex_lock(&db->prepared->mu);
    p->state = PREP_LISTED;
    pthread_mutex_unlock(&db->prepared->mu);
}

bool db_prepared_full_sync(const prepared_t *p) { return p->full_sync; }

void db_prepared_detach(tdb_t *db, slice_t xid) {
    pthread_mutex_lock(&db->prepared->mu);
    prepared_t *p = find_locked(db->prepared, xid);
    if (p) p->attached = false;
    pthread_mutex_unlock(&db->prepared->mu);
}

int db_prepared_list(tdb_t *db, buf_t *out, int *n) {
    int rc = TDB_OK;
    *n = 0;
    buf_clear(out);
    pthread_mutex_lock(&db->prepared->mu);
    for (prepared_t *p = db->prepared->head; p && rc == TDB_OK; p = p->next) {
        if (p->state == PREP_RESERVED) continue;
        rc = put_lenprefixed(out, buf_slice(&p->xid));
        (*n)++;
    }
    pthread_mutex_unlock(&db->prepared->mu);
    return rc;
}

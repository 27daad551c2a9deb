/*
 * db/write_group: group commit. Every writer that cannot take the direct
 * lane queues under mu; the head of the queue becomes the leader, closes
 * the direct gate, takes a group of queued batches, makes room (memtable
 * switch, back-pressure: db/write_stall.c), validates, assigns sequence
 * numbers, writes the group to the WAL as one append (one fsync if any
 * member needs it), applies it to the memtables, publishes the new visible
 * sequence, reopens the gate and wakes the group. Under
 * release_before_sync the fsync comes after the publish and the members'
 * visibility calls (invariant 2b, db_impl.h). The leader also decides
 * whether direct writes may resume. An exclusive writer (DDL, maintenance)
 * is a queue entry without a batch.
 *
 * Members sleep on their writer's park word, not on a condition variable
 * of mu: a member woken through one re-takes mu on waking, so a group's
 * members (and the next leader) used to queue on mu one by one behind the
 * leader, each hand-off a sleep and a wake-up. A finished member is
 * released (writer_release) and returns without mu; only a member that
 * must act under mu (lead, insert its own batch) is kicked and re-takes
 * it. A member's writer lives in its caller's frame: it may return once
 * it sees WRITER_RELEASED, so nothing touches it after the release.
 */
#include <stdlib.h>
#include <string.h>

#include "db/db_impl.h"
#include "db/direct.h"
#include "util/checksum.h"

#define MAX_GROUP_BYTES (1u << 20)

/* Add a family to a small distinct list. */
static int note_cf(tdb_cf_t ***v, int *n, int *cap, tdb_cf_t *cf) {
    for (int i = 0; i < *n; i++)
        if ((*v)[i] == cf) return TDB_OK;
    if (*n == *cap) {
        int nc = *cap ? *cap * 2 : 8;
        tdb_cf_t **p = (tdb_cf_t **)realloc(*v, (size_t)nc * sizeof *p);
        if (!p) return tdb_err(TDB_ERR_NOMEM, "write group");
        *v = p;
        *cap = nc;
    }
    (*v)[(*n)++] = cf;
    return TDB_OK;
}

/* Hash of (cf id, key) for group key sets. */
static uint64_t gk_hash(uint32_t cf_id, slice_t key) {
    uint64_t h = tdb_hash64(key.data, key.size, cf_id);
    return h ? h : 1; /* 0 marks an empty slot */
}

int group_keys_add(group_keys_t *g, uint32_t cf_id, slice_t key) {
    if ((g->n + 1) * 2 > g->cap) {
        size_t ncap = g->cap ? g->cap * 2 : 64;
        uint64_t *ns = (uint64_t *)calloc(ncap, sizeof *ns);
        if (!ns) return tdb_err(TDB_ERR_NOMEM, "group key set");
        for (size_t i = 0; i < g->cap; i++) {
            if (!g->slots[i]) continue;
            size_t j = g->slots[i] & (ncap - 1);
            while (ns[j]) j = (j + 1) & (ncap - 1);
            ns[j] = g->slots[i];
        }
        free(g->slots);
        g->slots = ns;
        g->cap = ncap;
    }
    uint64_t h = gk_hash(cf_id, key);
    size_t j = h & (g->cap - 1);
    while (g->slots[j] && g->slots[j] != h) j = (j + 1) & (g->cap - 1);
    if (!g->slots[j]) {
        g->slots[j] = h;
        g->n++;
    }
    return TDB_OK;
}

int group_keys_has(const group_keys_t *g, uint32_t cf_id, slice_t key) {
    if (!g) return 0;
    if (g->range_del_cfs & ((uint64_t)1 << (cf_id % 64))) return 1; /* conservative: may cover key */
    if (!g->n) return 0;
    uint64_t h = gk_hash(cf_id, key);
    size_t j = h & (g->cap - 1);
    while (g->slots[j]) {
        if (g->slots[j] == h) return 1;
        j = (j + 1) & (g->cap - 1);
    }
    return 0;
}

static int gk_visit(void *ctx, uint64_t seq, const batch_entry_t *e) {
    (void)seq;
    if (e->type == KT_RANGE_DELETE) ((group_keys_t *)ctx)->range_del_cfs |= (uint64_t)1 << (e->cf_id % 64);
    return group_keys_add((group_keys_t *)ctx, e->cf_id, e->key);
}

/* Batches at least this large are inserted by their own writer thread, in
 * parallel with the rest of the group (the memtable takes concurrent adds;
 * smaller ones use the memtable's serial hint, so only the leader may). */
#define PARALLEL_APPLY_MIN_ENTRIES SMALL_BATCH_ENTRIES

/* Insert the group's surviving batches into the memtables: large batches of
 * other members by their own threads, the rest by the leader. Returns when
 * all are in (mu not held on entry or exit). */
static int apply_group(tdb_t *db, writer_t *self, writer_t *last) {
    int rc = TDB_OK, pending = 0;
    pthread_mutex_lock(&db->mu);
    for (writer_t *w = self->next; w && self != last; w = w->next) {
        if (w->rc == TDB_OK && !w->batch->wal_only && tdb_batch_count(w->batch) >= PARALLEL_APPLY_MIN_ENTRIES) {
            w->apply_now = true;
            w->apply_rc = TDB_OK;
            w->pending = &pending;
            w->leader = self;
            pending++;
            writer_kick(db, w);
        }
        if (w == last) break;
    }
    pthread_mutex_unlock(&db->mu);
    for (writer_t *w = self;; w = w->next) {
        if (w->rc == TDB_OK && !w->pending && !w->batch->wal_only && rc == TDB_OK)
            rc = db_apply_batch(db, batch_rep(w->batch), 0);
        if (w == last) break;
    }
    pthread_mutex_lock(&db->mu);
    while (pending > 0) pthread_cond_wait(&self->cv, &db->mu);
    for (writer_t *w = self->next; w && self != last; w = w->next) {
        if (w->pending) {
            TDB_TRET(w->apply_rc);
            w->pending = NULL;
        }
        if (w == last) break;
    }
    pthread_mutex_unlock(&db->mu);
    return rc;
}

/* Leader: commit the group starting at `self` (mu held on entry and exit;
 * released while validating, writing the WAL and applying). */
static void commit_group(tdb_t *db, writer_t *self) {
    tdb_cf_t **cfs = NULL;
    int ncfs = 0, capcfs = 0, n = 0, rc = TDB_OK;
    writer_t *last = self;
    size_t bytes = 0;
    bool any_validate = false, any_prepared = false;
    /* Form the group: consecutive batch writers up to a byte budget. */
    for (writer_t *w = self; w && w->batch; w = w->next) {
        size_t sz = batch_rep(w->batch).size;
        if (w != self && bytes + sz > MAX_GROUP_BYTES) break;
        bytes += sz;
        last = w;
        n++;
        any_validate |= w->validate != NULL;
        any_prepared |= w->prepared != NULL;
        tdb_cf_t **bc;
        int nb = batch_cfs(w->batch, &bc);
        for (int i = 0; i < nb && rc == TDB_OK; i++) rc = note_cf(&cfs, &ncfs, &capcfs, bc[i]);
    }
    direct_gate_close(db); /* from here on the only writer (invariant 2a) */
    if (rc == TDB_OK && db->wal_nospace) rc = db_resume_wal_after_nospace(db);
    mem_state_t st;
    if (rc == TDB_OK) rc = db_make_room(db, self, &last, &n, cfs, ncfs, &st);
    if (rc == TDB_OK) db_direct_refresh(db, &st);
    else atomic_store(&db->direct_ok, false);
    if (self->stall_expired) { /* the leader alone gives up; the next writer leads the rest */
        direct_gate_open(db);
        self->rc = rc;
        db->wq_head = self->next;
        if (!db->wq_head) db->wq_tail = NULL;
        else writer_kick(db, db->wq_head);
        free(cfs);
        return;
    }
    for (writer_t *w = self; rc == TDB_OK; w = w->next) {
        tdb_cf_t **bc;
        int nb = batch_cfs(w->batch, &bc);
        w->rc = TDB_OK;
        for (int i = 0; i < nb; i++)
            if (atomic_load(&bc[i]->dropped)) w->rc = tdb_err(TDB_ERR_CLOSED, "column family '%s' was dropped", bc[i]->name);
        if (w == last) break;
    }
    pthread_mutex_unlock(&db->mu);

    /* Validate (in group order), then number the survivors. The leader is
     * the only writer, and every earlier group is applied. */
    slice_t *payloads = rc == TDB_OK ? (slice_t *)malloc((size_t)n * (sizeof *payloads + sizeof(tdb_batch_t *))) : NULL;
    tdb_batch_t **numbered = payloads ? (tdb_batch_t **)(payloads + n) : NULL;
    if (rc == TDB_OK && !payloads) rc = tdb_err(TDB_ERR_NOMEM, "write group");
    group_keys_t gk = {0};
    int np = 0;
    bool sync = false, dirty = false, wal_full = false;
    uint64_t seq = atomic_load(&db->last_seq) + 1, user_bytes = 0;
    for (writer_t *w = self; rc == TDB_OK; w = w->next) {
        if (w->rc == TDB_OK && w->validate) w->rc = w->validate(w->vctx, db, &gk);
        if (w->rc == TDB_OK) {
            if (any_validate && w != last) {
                TDB_TRET(batch_iterate(batch_rep(w->batch), gk_visit, &gk));
            }
            if (!w->batch->wal_only) { /* a prepare is logged, not numbered (db/write_prepared.c) */
                batch_set_seq(w->batch, seq);
                seq += tdb_batch_count(w->batch);
                user_bytes += batch_user_bytes(w->batch);
            }
            numbered[np++] = w->batch;
            sync |= w->sync;
            dirty |= w->interval;
        }
        if (w == last) break;
    }
    free(gk.slots);

    /* Invariant 2b: the sync after the group is visible and its locks are
     * given back (not for prepares: their records are not applied). */
    bool sync_after = sync && db->cfg.release_before_sync && !any_prepared;
    if (rc == TDB_OK && np > 0) {
        /* wal_mu: direct writers, the interval-sync thread and tdb_sync use
         * the same writer (one thread at a time, wal.h). */
        pthread_mutex_lock(&db->wal_mu);
        for (int i = 0; i < np; i++) payloads[i] = batch_wal_payload(numbered[i], &db->wal_expected_seq);
        /* sync_after: the sync below covers interval members too (no dirty mark) */
        rc = db_wal_append_locked(db, payloads, np, sync && !sync_after, dirty && !sync_after, &wal_full);
        pthread_mutex_unlock(&db->wal_mu);
        if (rc == TDB_OK) {
            rc = apply_group(db, self, last);
            if (rc == TDB_OK) {
                atomic_store(&db->last_seq, seq - 1);
                atomic_store(&db->visible_seq, seq - 1);
                atomic_fetch_add(&db->ctr.user_bytes, user_bytes);
                for (writer_t *w = self; any_prepared; w = w->next) { /* still leader: no rotation in between */
                    if (w->rc == TDB_OK && w->prepared) db_prepared_logged(db, w->prepared, w->batch->wal_only);
                    if (w == last) break;
                }
            }
        }
        if (rc == TDB_OK && sync_after) {
            for (writer_t *w = self;; w = w->next) { /* members are parked: their callers wait */
                if (w->rc == TDB_OK && w->visible) w->visible(w->vctx);
                if (w == last) break;
            }
            pthread_mutex_lock(&db->wal_mu);
            rc = db_wal_sync_locked(db); /* a failure is sticky below: the group is visible */
            pthread_mutex_unlock(&db->wal_mu);
        }
    }

    pthread_mutex_lock(&db->mu);
    if (wal_full) { /* not sticky: the next leader starts a new log, direct writers wait for it */
        db->wal_nospace = true;
        atomic_store(&db->direct_ok, false);
    }
    else if (rc != TDB_OK && np > 0) db_set_bg_error_locked(db, rc); /* sticky: WAL state unknown, or visible and not durable */
    writer_t *after = last->next;
    for (writer_t *w = self, *next;; w = next) {
        bool end = w == last;
        next = w->next; /* read before the release: w may be gone after it */
        if (rc != TDB_OK) w->rc = rc;
        if (w != self) writer_release(db, w);
        if (end) break;
    }
    db->wq_head = after;
    if (!after) db->wq_tail = NULL;
    else writer_kick(db, after);
    direct_gate_open(db);
    free(payloads);
    free(cfs);
}

/* Enqueue a writer and wait until it leads (true: mu held) or is released
 * (false: mu not held). mu held on entry. */
static bool enqueue_and_wait(tdb_t *db, writer_t *w) {
    w->next = NULL;
    atomic_store(&w->park, WRITER_RUNNING);
    if (db->wq_tail) db->wq_tail->next = w;
    else db->wq_head = w;
    db->wq_tail = w;
    for (;;) {
        if (atomic_load(&w->park) == WRITER_RELEASED) { /* released while it waited for mu */
            pthread_mutex_unlock(&db->mu);
            return false;
        }
        if (db->wq_head == w) return true;
        if (w->apply_now) { /* the leader hands us our own memtable insert */
            w->apply_now = false;
            pthread_mutex_unlock(&db->mu);
            int r = db_apply_batch(db, batch_rep(w->batch), 0);
            pthread_mutex_lock(&db->mu);
            w->apply_rc = r;
            if (--*w->pending == 0) pthread_cond_signal(&w->leader->cv);
            continue;
        }
        atomic_store(&w->park, WRITER_PARKED);
        pthread_mutex_unlock(&db->mu);
        if (writer_park(db, w) == WRITER_RELEASED) return false;
        pthread_mutex_lock(&db->mu);
    }
}

/* Become the only active writer (mu held): for DDL and maintenance that must
 * not race with memtable inserts. Pair with db_exit_exclusive. */
void db_enter_exclusive(tdb_t *db, writer_t *w) {
    memset(w, 0, sizeof *w);
    pthread_cond_init(&w->cv, NULL);
    /* Never released: an exclusive writer is in no group and has no stall
     * bound, so it returns as the head of the queue, mu held. */
    (void)enqueue_and_wait(db, w);
    direct_gate_close(db);
}

void db_exit_exclusive(tdb_t *db, writer_t *w) {
    direct_gate_open(db);
    db->wq_head = w->next;
    if (!db->wq_head) db->wq_tail = NULL;
    else writer_kick(db, db->wq_head);
    pthread_cond_destroy(&w->cv);
}

/* Queue w and wait until it is done, leading its group if it becomes the
 * head of the queue (mu held on entry, not held on return). */
void db_group_write(tdb_t *db, writer_t *w) {
    if (!enqueue_and_wait(db, w)) return;
    commit_group(db, w);
    pthread_mutex_unlock(&db->mu);
}

/*
 * db/write: the write path. Two lanes (invariants 2 and 2a, db_impl.h):
 *  - Direct: a batch that needs no fsync (NONE/INTERVAL families), no
 *    validation and no back-pressure is numbered and appended to the WAL
 *    by its own thread under wal_mu (a few microseconds), inserted into the
 *    memtables concurrently with other direct writers, and published in
 *    sequence order (db/direct.c: the gate, tickets, waits). No queue, no
 *    hand-off between threads.
 *  - Group commit: every other writer queues under mu; the head of the
 *    queue becomes the leader, closes the direct gate, takes a group of
 *    queued batches, makes room (memtable switch, back-pressure), validates,
 *    assigns sequence numbers, writes the group to the WAL as one append
 *    (one fsync if any member needs it), applies it to the memtables,
 *    publishes the new visible sequence, reopens the gate and wakes the
 *    group. The leader also decides whether direct writes may resume.
 */
#include <stdlib.h>
#include <string.h>

#include "db/db_impl.h"
#include "db/direct.h"
#include "util/checksum.h"

#define MAX_GROUP_BYTES (1u << 20)
#define STALL_NO_PROGRESS_LIMIT_US (30u * 1000u * 1000u)

/* Make the current WAL durable, then switch to a new WAL file (mu held, by
 * the write leader or during open). The old file is complete and synced
 * before the new one exists, so only the newest WAL can have a torn tail. */
int db_rotate_wal(tdb_t *db) {
    int rc = TDB_OK;
    char path[4096];
    wal_writer_t *nw = NULL;
    uint64_t number = 0;
    pthread_mutex_lock(&db->wal_mu);
    if (db->wal) {
        rc = wal_writer_seal(db->wal); /* cut to its records and synced: complete (wal.h) */
        if (rc != TDB_OK) {
            db_log(db, TDB_LOG_ERROR, "WAL sync at rotation failed: %s", tdb_last_error());
            db_set_bg_error_locked(db, rc);
            pthread_mutex_unlock(&db->wal_mu);
            return rc;
        }
    }
    pthread_mutex_unlock(&db->wal_mu);
    number = db->next_file_number++;
    db_wal_name(path, sizeof path, db->path, number);
    TRY(wal_writer_open(db->env, path, &nw));
    TRY(db->env->sync_dir(db->env, db->path));
    pthread_mutex_lock(&db->wal_mu);
    wal_writer_t *old = db->wal;
    db->wal = nw;
    db->wal_number = number;
    db->wal_expected_seq = 0;
    atomic_store(&db->wal_dirty, false);
    pthread_mutex_unlock(&db->wal_mu);
    if (old) wal_writer_close(old, 0);
    db->wal_nospace = false;
    return TDB_OK;
err:
    if (nw) {
        wal_writer_close(nw, 0);
        db->env->remove(db->env, path);
    }
    return rc;
}

/* The last WAL append ran out of space (its partial record was cut off
 * right then, wal.h; the writer takes no more appends): continue in a fresh
 * log before the next group (mu held, as leader). A log with records is
 * rotated; a log without any is recreated empty under the same number, so
 * writes retried while the disk stays full do not pile up log files. On
 * failure the state stays and the next write tries again. */
static int resume_wal_after_nospace(tdb_t *db) {
    if (wal_writer_size(db->wal) > 0) return db_rotate_wal(db);
    char path[4096];
    wal_writer_t *nw = NULL;
    db_wal_name(path, sizeof path, db->path, db->wal_number);
    TDB_RET(wal_writer_open(db->env, path, &nw));
    pthread_mutex_lock(&db->wal_mu);
    wal_writer_t *old = db->wal;
    db->wal = nw;
    db->wal_expected_seq = 0;
    atomic_store(&db->wal_dirty, false);
    pthread_mutex_unlock(&db->wal_mu);
    wal_writer_close(old, 0);
    db->wal_nospace = false;
    return TDB_OK;
}

/* Move cf's active memtable to the immutable queue (mu held, as leader). */
int db_switch_memtable(tdb_t *db, tdb_cf_t *cf) {
    int rc = TDB_OK;
    memtable_t *fresh = memtable_create();
    if (!fresh) return tdb_err(TDB_ERR_NOMEM, "memtable");
    if (cf->nimm == cf->cap_imm) {
        int n = cf->cap_imm ? cf->cap_imm * 2 : 4;
        mem_slot_t *p = (mem_slot_t *)realloc(cf->imm, (size_t)n * sizeof *p);
        if (!p) RAISE(TDB_ERR_NOMEM, "immutable memtable queue");
        cf->imm = p;
        cf->cap_imm = n;
    }
    cf->imm[cf->nimm++] = cf->mem;
    cf->mem.mem = fresh;
    cf->mem.log_number = db->wal_number;
    fresh = NULL;
    TRY(cf_install_sv(cf));
    db_maybe_schedule(db);
    return TDB_OK;
err:
    if (fresh) memtable_unref(fresh);
    return rc;
}

/* Memtable apply. A batch of fewer than SMALL_BATCH_ENTRIES entries is
 * inserted in batch order through the memtable's serial hint (sequential
 * keys skip the skip-list descent): only the write leader and recovery
 * apply such batches, one at a time. A larger batch is decoded whole,
 * sorted by (family, key, newest first) and each family's run inserted
 * whole (memtable_add_sorted: lanes of climbing splices whose cache misses
 * overlap); its own writer
 * thread may insert it in parallel with the leader (apply_group). */
#define SMALL_BATCH_ENTRIES 16

typedef struct sort_item {
    memtable_item_t it;
    uint32_t cf_id;
} sort_item_t;

typedef struct apply_ctx {
    tdb_t *db;
    uint64_t wal_number; /* recovery: skip families whose log_number is newer */
    sort_item_t *v;      /* sorted apply: the decoded entries */
    uint32_t n;
    bool serial;         /* small batch: may use the memtable's serial hint */
    bool direct;         /* small batch of a direct writer: its thread's hint */
} apply_ctx_t;

/* A direct writer's own insert hint, valid for the memtable numbered
 * mem_id only (memtable_id): sequential keys of one thread skip the
 * skip-list descent as with the leader's serial hint. */
typedef struct thread_hint {
    uint64_t mem_id;
    memtable_hint_t hint;
} thread_hint_t;
static _Thread_local thread_hint_t tl_hint;

/* The family an entry goes to, or NULL to skip it (dropped, or recovery
 * of a log older than the family's flushed state). */
static tdb_cf_t *apply_cf(const apply_ctx_t *c, uint32_t cf_id) {
    tdb_cf_t *cf = cf_by_id(c->db, cf_id);
    if (!cf || atomic_load(&cf->dropped)) return NULL;                /* family dropped */
    if (c->wal_number && c->wal_number < cf->log_number) return NULL; /* already flushed */
    return cf;
}

/* Insert one batch entry into its family's active memtable. */
static int apply_entry(void *arg, uint64_t seq, const batch_entry_t *e) {
    const apply_ctx_t *c = (const apply_ctx_t *)arg;
    tdb_cf_t *cf = apply_cf(c, e->cf_id);
    if (!cf) return TDB_OK;
    memtable_t *m = cf->mem.mem;
    if (c->serial) return memtable_add_serial(m, seq, e->type, e->key, e->value);
    if (c->direct) {
        if (tl_hint.mem_id != memtable_id(m)) {
            memset(&tl_hint.hint, 0, sizeof tl_hint.hint); /* climb 0, like the serial hint */
            tl_hint.mem_id = memtable_id(m);
        }
        return memtable_add_hint(m, &tl_hint.hint, seq, e->type, e->key, e->value);
    }
    return memtable_add(m, seq, e->type, e->key, e->value);
}

/* Sorted apply, pass 1: collect the decoded entries. */
static int collect_entry(void *arg, uint64_t seq, const batch_entry_t *e) {
    apply_ctx_t *c = (apply_ctx_t *)arg;
    sort_item_t *v = &c->v[c->n++];
    v->it.seq = seq;
    v->it.type = e->type;
    v->it.key = e->key;
    v->it.value = e->value;
    v->cf_id = e->cf_id;
    return TDB_OK;
}

/* Internal-key order of two collected entries, family first. */
static int sort_item_cmp(const void *a, const void *b) {
    const sort_item_t *x = (const sort_item_t *)a, *y = (const sort_item_t *)b;
    if (x->cf_id != y->cf_id) return x->cf_id < y->cf_id ? -1 : 1;
    int r = slice_compare(x->it.key, y->it.key);
    if (r) return r;
    return x->it.seq > y->it.seq ? -1 : (x->it.seq < y->it.seq); /* newest first */
}

/* Insert a large batch in key order (see above). */
static int apply_sorted(apply_ctx_t *c, slice_t rep, uint32_t n) {
    /* One allocation: the entries to sort, then room for a family's run. */
    c->v = (sort_item_t *)malloc((size_t)n * (sizeof *c->v + sizeof(memtable_item_t)));
    if (!c->v) return batch_iterate(rep, apply_entry, c); /* no memory to sort: batch order */
    memtable_item_t *items = (memtable_item_t *)(c->v + n);
    c->n = 0;
    int rc = batch_iterate(rep, collect_entry, c); /* validates the whole batch first */
    if (rc == TDB_OK) qsort(c->v, c->n, sizeof *c->v, sort_item_cmp);
    /* Each family's run goes in as one sorted insert. */
    for (uint32_t i = 0; i < c->n && rc == TDB_OK;) {
        uint32_t j = i + 1;
        while (j < c->n && c->v[j].cf_id == c->v[i].cf_id) j++;
        tdb_cf_t *cf = apply_cf(c, c->v[i].cf_id);
        if (cf) {
            for (uint32_t k = i; k < j; k++) items[k - i] = c->v[k].it;
            rc = memtable_add_sorted(cf->mem.mem, items, j - i);
        }
        i = j;
    }
    free(c->v);
    return rc;
}

/* Apply a batch; `direct`: by a direct writer, concurrently with others. */
static int apply_batch(tdb_t *db, slice_t rep, uint64_t wal_number, bool direct) {
    apply_ctx_t c = {db, wal_number, NULL, 0, false, false};
    uint32_t n = batch_count_raw(rep);
    /* Only small batches of the leader alone (or of recovery) use the
     * memtable's serial hint. */
    c.serial = !direct && n < SMALL_BATCH_ENTRIES;
    c.direct = direct;
    /* An entry takes at least 4 bytes: a larger count is corrupt, and
     * batch_iterate reports it without allocating for it. */
    if (n < SMALL_BATCH_ENTRIES || n > rep.size / 4) return batch_iterate(rep, apply_entry, &c);
    return apply_sorted(&c, rep, n);
}

int db_apply_batch(tdb_t *db, slice_t rep, uint64_t wal_number) { return apply_batch(db, rep, wal_number, false); }

/* Time since an arbitrary origin, microseconds. */
static uint64_t now_us(tdb_t *db) { return db->env->now_micros(db->env); }

/* Wait on done_cv for up to `us` microseconds (mu held). */
static void wait_done(tdb_t *db, uint64_t us) { db_cond_wait_us(&db->done_cv, &db->mu, us); }

/* Where graduated back-pressure starts (make_room): a family's pressure
 * (below), and the memtables' share of their memory budget. Below both,
 * writes need no back-pressure and may take the direct lane. */
#define SLOWDOWN_PRESSURE 0.5
#define SLOWDOWN_MEMORY_SHARE 0.75

/* The active-memtable size at which cf switches (the shared size in
 * unified mode). */
static size_t cf_write_buffer_limit(const tdb_t *db, const tdb_cf_t *cf) {
    return db->cfg.unified_memtable ? db->cfg.unified_memtable_write_buffer_size : cf->cfg.write_buffer_size;
}

/* Pressure of one family's backlog: 0 = none, 1 = must stop. Below 1 the
 * writer is slowed in proportion (graduated back-pressure). */
static double cf_pressure(const tdb_cf_t *cf) {
    double q = (double)cf->nimm / (double)cf->cfg.l0_queue_stall_threshold;
    /* Level 1 is allowed to run behind to 8x its trigger before writes stop. */
    double l1 = (double)version_num_files(cf->current, 1) / (8.0 * cf->cfg.l1_file_count_trigger);
    return q > l1 ? q : l1;
}

/* Memory of the memtables (mu held). */
typedef struct mem_state {
    uint64_t total;      /* every memtable, active and immutable */
    uint64_t active;     /* active memtables only */
    tdb_cf_t *largest;   /* largest non-empty active one that may switch */
    double max_pressure; /* highest cf_pressure of any family */
} mem_state_t;

static void memtable_state(tdb_t *db, mem_state_t *st) {
    uint64_t best = 0;
    memset(st, 0, sizeof *st);
    for (uint32_t i = 0; i < db->ncf_slots; i++) {
        tdb_cf_t *cf = db->cfs[i];
        if (!cf || atomic_load(&cf->dropped) || !cf->mem.mem) continue;
        uint64_t active = memtable_memory_usage(cf->mem.mem);
        st->active += active;
        st->total += active;
        for (int k = 0; k < cf->nimm; k++) st->total += memtable_memory_usage(cf->imm[k].mem);
        if (active > best && memtable_num_entries(cf->mem.mem) > 0 && cf->nimm < cf->cfg.l0_queue_stall_threshold) {
            best = active;
            st->largest = cf;
        }
        double p = cf_pressure(cf);
        if (p > st->max_pressure) st->max_pressure = p;
    }
}

/* Memtable bytes charged per entry beyond its batch bytes (node links,
 * lengths, key trailer), for direct_room. */
#define DIRECT_ENTRY_OVERHEAD 64

/* After a leader made room (mu held, gate closed; st: the memtables as
 * make_room left them): may direct writes go ahead, and how many memtable
 * bytes may they add before a leader must look again (unified write
 * buffer, memory budget)? A family's own write buffer is checked by each
 * direct writer. */
static void direct_refresh(tdb_t *db, const mem_state_t *st) {
    double room = (double)INT64_MAX;
    if (db->cfg.unified_memtable) room = (double)db->cfg.unified_memtable_write_buffer_size - (double)st->active;
    double budget_room = SLOWDOWN_MEMORY_SHARE * (double)db->memtable_budget - (double)st->total;
    if (budget_room < room) room = budget_room;
    bool ok = db->bg_error == TDB_OK && !db->wal_nospace && !db->bg_nospace &&
              st->max_pressure < SLOWDOWN_PRESSURE && room > 0;
    pthread_mutex_lock(&db->wal_mu);
    db->direct_room = ok ? (int64_t)room : 0;
    pthread_mutex_unlock(&db->wal_mu);
    atomic_store(&db->direct_ok, ok);
}

/* Unified mode: switch every non-empty family when together they fill the
 * shared write buffer (mu held, as leader). A family whose immutable queue
 * is full keeps its memtable (the stall logic handles it). */
static int unified_switch_if_full(tdb_t *db, bool *rotated) {
    uint64_t total = 0;
    for (uint32_t i = 0; i < db->ncf_slots; i++) {
        tdb_cf_t *cf = db->cfs[i];
        if (cf && !atomic_load(&cf->dropped) && cf->mem.mem) total += memtable_memory_usage(cf->mem.mem);
    }
    if (total < db->cfg.unified_memtable_write_buffer_size) return TDB_OK;
    for (uint32_t i = 0; i < db->ncf_slots; i++) {
        tdb_cf_t *cf = db->cfs[i];
        if (!cf || atomic_load(&cf->dropped) || !cf->mem.mem || memtable_num_entries(cf->mem.mem) == 0) continue;
        if (cf->nimm >= cf->cfg.l0_queue_stall_threshold) continue;
        int rc = TDB_OK;
        if (!*rotated) {
            rc = db_rotate_wal(db);
            *rotated = true;
        }
        TDB_RET(rc);
        TDB_RET(db_switch_memtable(db, cf));
    }
    return TDB_OK;
}

/* Switch a family's memtable, rotating the WAL once per make_room pass. */
static int switch_cf(tdb_t *db, tdb_cf_t *cf, bool *rotated) {
    int rc = TDB_OK;
    if (!*rotated) {
        rc = db_rotate_wal(db);
        *rotated = true;
    }
    TDB_RET(rc);
    return db_switch_memtable(db, cf);
}

/* Take the queued writers whose back-pressure bound passed out of the queue
 * (mu held, by the stalled leader `self`; self itself is the caller's): each
 * fails alone with TDB_ERR_BUSY and stall_expired, nothing of it numbered
 * or written. Members of the leader's group (self..*last, *n of them) leave
 * the group too. Returns the nearest deadline still pending (0: none). */
static uint64_t expire_stalled(tdb_t *db, writer_t *self, writer_t **last, int *n, uint64_t t) {
    uint64_t next = 0;
    bool in_group = self != *last;
    writer_t *prev = self;
    for (writer_t *w = self->next; w; w = prev->next) {
        bool was_last = w == *last;
        if (w->stall_deadline && t >= w->stall_deadline) {
            prev->next = w->next;
            if (db->wq_tail == w) db->wq_tail = prev;
            if (in_group) {
                (*n)--;
                if (was_last) *last = prev;
            }
            w->stall_expired = true;
            w->rc = TDB_ERR_BUSY;
            w->done = true;
            atomic_fetch_add(&db->ctr.stall_timeouts, 1);
            pthread_cond_signal(&w->cv);
        } else {
            if (w->stall_deadline && (!next || w->stall_deadline < next)) next = w->stall_deadline;
            prev = w;
        }
        if (was_last) in_group = false;
    }
    return next;
}

/* Ensure every family the group writes has memtable room, keep the memtables
 * inside the memory budget, and apply back-pressure (mu held, as leader):
 *  - pressure p in [0.5, 1): the group is delayed by up to 2 ms, growing
 *    with p, so writers slow down smoothly while flush/compaction catch up;
 *  - p >= 1 (l0_queue_stall_threshold immutable memtables, level 1 at 8x
 *    its trigger, or memtables over budget with nothing left to switch):
 *    writers wait for background progress; a wait with no progress for
 *    STALL_NO_PROGRESS_LIMIT_US returns TDB_ERR_BUSY (the whole group).
 *    Meanwhile every queued writer whose stall_deadline passes leaves the
 *    queue alone with TDB_ERR_BUSY (expire_stalled); if that is the leader
 *    itself, make_room returns TDB_ERR_BUSY with self->stall_expired set
 *    and the rest of the group stays queued for the next leader. */
static int make_room(tdb_t *db, writer_t *self, writer_t **last, int *n, tdb_cf_t **cfs, int ncfs,
                     mem_state_t *st) {
    uint64_t stall_start = 0, last_progress = 0;
    uint64_t progress_mark = atomic_load(&db->ctr.flushes) + atomic_load(&db->ctr.compactions);
    bool delayed = false;
    for (;;) {
        if (db->bg_error != TDB_OK)
            return tdb_err(TDB_ERR_READ_ONLY, "database is in an error state after: %s", tdb_strerror(db->bg_error));
        bool rotated = false, wait = false;
        double pressure = 0;
        if (db->cfg.unified_memtable) {
            /* One write buffer for every family: when the families' active
             * memtables together reach its size, all switch at once. */
            TDB_RET(unified_switch_if_full(db, &rotated));
        }
        for (int i = 0; i < ncfs; i++) {
            tdb_cf_t *cf = cfs[i];
            if (atomic_load(&cf->dropped)) continue;
            size_t limit = cf_write_buffer_limit(db, cf);
            if (memtable_memory_usage(cf->mem.mem) >= limit && cf->nimm < cf->cfg.l0_queue_stall_threshold) {
                TDB_RET(switch_cf(db, cf, &rotated));
            }
            double p = cf_pressure(cf);
            if (memtable_memory_usage(cf->mem.mem) >= limit) p = 1.0; /* full, queue full */
            if (p > pressure) pressure = p;
        }
        /* Global memory budget: past 90% flush the largest memtable early;
         * past 75% slow writers down; at 100% stop them until flushes free
         * memory. */
        memtable_state(db, st);
        double pm = (double)st->total / (double)db->memtable_budget;
        bool early = pm >= 0.9 && st->largest && memtable_memory_usage(st->largest->mem.mem) >= (64u << 10);
        if (early) {
            TDB_RET(switch_cf(db, st->largest, &rotated));
        }
        double pmem = SLOWDOWN_PRESSURE + (pm - SLOWDOWN_MEMORY_SHARE) * 2;
        if (pm >= 1.0) pressure = 1.0;
        else if (pm >= SLOWDOWN_MEMORY_SHARE && pmem > pressure) pressure = pmem;
        wait = pressure >= 1.0;
        if (wait || (pressure >= SLOWDOWN_PRESSURE && !delayed)) {
            /* Direct writers waiting for the gate must queue (and meet
             * back-pressure and their stall bounds) instead. */
            atomic_store(&db->direct_ok, false);
            direct_wake(db);
        }
        if (wait && db->bg_nospace) /* waiting would last as long as the disk stays full */
            return tdb_err(TDB_ERR_NO_SPACE, "write refused: flush/compaction cannot write (disk full); "
                                             "writes resume once space is freed");
        if (!wait) {
            if (pressure >= SLOWDOWN_PRESSURE && !delayed) {
                /* One graduated delay per group: 0..2 ms as p goes 0.5 -> 1. */
                uint64_t us = (uint64_t)((pressure - SLOWDOWN_PRESSURE) * 4000.0);
                if (us > 0) {
                    uint64_t t0 = now_us(db);
                    wait_done(db, us);
                    uint64_t d = now_us(db) - t0;
                    atomic_fetch_add(&db->ctr.stall_micros, d);
                    atomic_fetch_add(&db->ctr.delays, 1);
                }
                delayed = true;
                continue; /* state may have changed while waiting */
            }
            if (early) memtable_state(db, st); /* *st as make_room leaves it */
            break;
        }
        uint64_t t = now_us(db);
        if (!stall_start) {
            stall_start = last_progress = t;
            atomic_fetch_add(&db->ctr.stalls, 1);
        }
        uint64_t next_deadline = expire_stalled(db, self, last, n, t);
        if (self->stall_deadline && t >= self->stall_deadline) {
            self->stall_expired = true;
            atomic_fetch_add(&db->ctr.stall_timeouts, 1);
            atomic_fetch_add(&db->ctr.stall_micros, t - stall_start);
            return TDB_ERR_BUSY; /* the writer's thread words the error (db_write_bounded) */
        }
        if (self->stall_deadline && (!next_deadline || self->stall_deadline < next_deadline))
            next_deadline = self->stall_deadline;
        uint64_t mark = atomic_load(&db->ctr.flushes) + atomic_load(&db->ctr.compactions);
        if (mark != progress_mark) {
            progress_mark = mark;
            last_progress = t;
        } else if (t - last_progress > STALL_NO_PROGRESS_LIMIT_US) {
            atomic_fetch_add(&db->ctr.stall_micros, t - stall_start);
            return tdb_err(TDB_ERR_BUSY, "write stalled: background flush/compaction made no progress for %u s",
                           STALL_NO_PROGRESS_LIMIT_US / 1000000u);
        }
        db_maybe_schedule(db);
        /* Wake for the nearest stall deadline (+1 ms) if it comes first. */
        wait_done(db, next_deadline && next_deadline - t < 99000 ? next_deadline - t + 1000 : 100000);
    }
    if (stall_start) {
        uint64_t d = now_us(db) - stall_start;
        atomic_fetch_add(&db->ctr.stall_micros, d);
        uint64_t prev = atomic_load(&db->ctr.stall_max);
        while (d > prev && !atomic_compare_exchange_weak(&db->ctr.stall_max, &prev, d)) {
        }
    }
    return TDB_OK;
}

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

/* Append records to the WAL, then fsync if `sync` (wal_mu held). On
 * running out of space the partial record is cut off at once and *nospace
 * set: nothing was written, and the next leader continues in a new log
 * (invariant 7). Any other failure leaves the WAL state unknown: the caller
 * makes it sticky. Returns the error to report, worded. */
static int wal_append_locked(tdb_t *db, const slice_t *payloads, int n, bool sync, bool dirty, bool *nospace) {
    uint64_t before = wal_writer_size(db->wal);
    int rc = wal_writer_add(db->wal, payloads, n);
    *nospace = rc == TDB_ERR_NO_SPACE;
    if (rc == TDB_OK && sync) rc = wal_writer_sync(db->wal);
    if (rc == TDB_OK && dirty && !sync) atomic_store(&db->wal_dirty, true);
    atomic_fetch_add(&db->ctr.wal_bytes, wal_writer_size(db->wal) - before);
    if (*nospace) {
        char detail[512];
        snprintf(detail, sizeof detail, "%s", tdb_last_error());
        rc = wal_writer_sync(db->wal); /* cut the partial record off now (wal.h) */
        if (rc != TDB_OK) {            /* could not cut it: sticky like any failed sync */
            *nospace = false;
            db_log(db, TDB_LOG_ERROR, "WAL truncation after running out of space failed: %s", tdb_last_error());
            return rc;
        }
        db_log(db, TDB_LOG_WARN, "WAL append out of space, write refused: %s", detail);
        return tdb_err(TDB_ERR_NO_SPACE, "disk full: the write was not applied; writes resume once space is "
                                         "freed (%s)", detail);
    }
    if (rc != TDB_OK) db_log(db, TDB_LOG_ERROR, "WAL write failed: %s", tdb_last_error());
    return rc;
}

/* The direct lane (see the top of the file). Sets *queued and returns
 * TDB_OK without doing anything when the batch must take the writer queue
 * instead: gate closed, back-pressure or memory to check, a family full
 * or dropped. Otherwise the write is done (or failed) here. */
static int write_direct(tdb_t *db, tdb_batch_t *b, tdb_cf_t **cfs, int ncfs, bool interval, bool *queued) {
    int rc = TDB_OK;
    bool nospace = false;
    *queued = true;
    if (!direct_enter(db)) return TDB_OK;
    if (!atomic_load(&db->direct_ok)) goto out;
    /* In flight with the gate open: no memtable switches until we leave. */
    for (int i = 0; i < ncfs; i++) {
        tdb_cf_t *cf = cfs[i];
        if (atomic_load(&cf->dropped) || memtable_memory_usage(cf->mem.mem) >= cf_write_buffer_limit(db, cf)) goto out;
    }
    slice_t rep = batch_rep(b);
    uint64_t n = tdb_batch_count(b);
    int64_t charge = (int64_t)rep.size + (int64_t)n * DIRECT_ENTRY_OVERHEAD;
    pthread_mutex_lock(&db->wal_mu);
    if (db->direct_room < charge || !direct_ticket_room(db)) {
        pthread_mutex_unlock(&db->wal_mu);
        goto out;
    }
    *queued = false;
    uint64_t first = atomic_load(&db->last_seq) + 1, ticket = 0;
    batch_set_seq(b, first);
    slice_t payload = batch_wal_payload(b, &db->wal_expected_seq);
    rc = wal_append_locked(db, &payload, 1, false, interval, &nospace);
    if (rc == TDB_OK) {
        atomic_store(&db->last_seq, first + n - 1);
        db->direct_room -= charge;
        ticket = direct_ticket_take(db, first + n - 1); /* ticket order = sequence order */
    }
    pthread_mutex_unlock(&db->wal_mu);
    if (rc != TDB_OK) {
        atomic_store(&db->direct_ok, false); /* the next leader looks at the WAL first */
        goto out;
    }
    rc = apply_batch(db, rep, 0, true);
    /* Published in sequence order, by whichever writer completes the run
     * up to ours; returns once ours is visible. After a failed insert the
     * range is published all the same, so later writers are not stuck; the
     * error below is sticky and refuses further writes. */
    direct_publish(db, ticket, first + n - 1);
    if (rc == TDB_OK) atomic_fetch_add(&db->ctr.user_bytes, batch_user_bytes(b));
    else atomic_store(&db->direct_ok, false);
out:
    direct_leave(db);
    if (rc != TDB_OK) { /* out of the gate: mu may be taken now */
        pthread_mutex_lock(&db->mu);
        if (nospace) db->wal_nospace = true;
        else db_set_bg_error_locked(db, rc);
        pthread_mutex_unlock(&db->mu);
    }
    return rc;
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
        if (w->rc == TDB_OK && tdb_batch_count(w->batch) >= PARALLEL_APPLY_MIN_ENTRIES) {
            w->apply_now = true;
            w->apply_rc = TDB_OK;
            w->pending = &pending;
            w->leader = self;
            pending++;
            pthread_cond_signal(&w->cv);
        }
        if (w == last) break;
    }
    pthread_mutex_unlock(&db->mu);
    for (writer_t *w = self;; w = w->next) {
        if (w->rc == TDB_OK && !w->pending && rc == TDB_OK) rc = db_apply_batch(db, batch_rep(w->batch), 0);
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
    bool any_validate = false;
    /* Form the group: consecutive batch writers up to a byte budget. */
    for (writer_t *w = self; w && w->batch; w = w->next) {
        size_t sz = batch_rep(w->batch).size;
        if (w != self && bytes + sz > MAX_GROUP_BYTES) break;
        bytes += sz;
        last = w;
        n++;
        any_validate |= w->validate != NULL;
        tdb_cf_t **bc;
        int nb = batch_cfs(w->batch, &bc);
        for (int i = 0; i < nb && rc == TDB_OK; i++) rc = note_cf(&cfs, &ncfs, &capcfs, bc[i]);
    }
    direct_gate_close(db); /* from here on the only writer (invariant 2a) */
    if (rc == TDB_OK && db->wal_nospace) rc = resume_wal_after_nospace(db);
    mem_state_t st;
    if (rc == TDB_OK) rc = make_room(db, self, &last, &n, cfs, ncfs, &st);
    if (rc == TDB_OK) direct_refresh(db, &st);
    else atomic_store(&db->direct_ok, false);
    if (self->stall_expired) { /* the leader alone gives up; the next writer leads the rest */
        direct_gate_open(db);
        self->rc = rc;
        self->done = true;
        db->wq_head = self->next;
        if (!db->wq_head) db->wq_tail = NULL;
        else pthread_cond_signal(&db->wq_head->cv);
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
            batch_set_seq(w->batch, seq);
            seq += tdb_batch_count(w->batch);
            numbered[np++] = w->batch;
            user_bytes += batch_user_bytes(w->batch);
            sync |= w->sync;
            dirty |= w->interval;
        }
        if (w == last) break;
    }
    free(gk.slots);

    if (rc == TDB_OK && np > 0) {
        /* wal_mu: direct writers, the interval-sync thread and tdb_sync use
         * the same writer (one thread at a time, wal.h). */
        pthread_mutex_lock(&db->wal_mu);
        for (int i = 0; i < np; i++) payloads[i] = batch_wal_payload(numbered[i], &db->wal_expected_seq);
        rc = wal_append_locked(db, payloads, np, sync, dirty, &wal_full);
        pthread_mutex_unlock(&db->wal_mu);
        if (rc == TDB_OK) {
            rc = apply_group(db, self, last);
            if (rc == TDB_OK) {
                atomic_store(&db->last_seq, seq - 1);
                atomic_store(&db->visible_seq, seq - 1);
                atomic_fetch_add(&db->ctr.user_bytes, user_bytes);
            }
        }
    }

    pthread_mutex_lock(&db->mu);
    if (wal_full) { /* not sticky: the next leader starts a new log, direct writers wait for it */
        db->wal_nospace = true;
        atomic_store(&db->direct_ok, false);
    }
    else if (rc != TDB_OK && np > 0) db_set_bg_error_locked(db, rc); /* sticky: WAL state unknown */
    for (writer_t *w = self;; w = w->next) {
        if (rc != TDB_OK) w->rc = rc;
        w->done = true;
        if (w != self) pthread_cond_signal(&w->cv);
        if (w == last) break;
    }
    db->wq_head = last->next;
    if (!db->wq_head) db->wq_tail = NULL;
    else pthread_cond_signal(&db->wq_head->cv);
    direct_gate_open(db);
    free(payloads);
    free(cfs);
}

/* Enqueue a writer and wait until it is done or leads (mu held). */
static void enqueue_and_wait(tdb_t *db, writer_t *w) {
    w->next = NULL;
    if (db->wq_tail) db->wq_tail->next = w;
    else db->wq_head = w;
    db->wq_tail = w;
    while (!w->done && db->wq_head != w) {
        if (w->apply_now) { /* the leader hands us our own memtable insert */
            w->apply_now = false;
            pthread_mutex_unlock(&db->mu);
            int r = db_apply_batch(db, batch_rep(w->batch), 0);
            pthread_mutex_lock(&db->mu);
            w->apply_rc = r;
            if (--*w->pending == 0) pthread_cond_signal(&w->leader->cv);
            continue;
        }
        pthread_cond_wait(&w->cv, &db->mu);
    }
}

/* Become the only active writer (mu held): for DDL and maintenance that must
 * not race with memtable inserts. Pair with db_exit_exclusive. */
void db_enter_exclusive(tdb_t *db, writer_t *w) {
    memset(w, 0, sizeof *w);
    pthread_cond_init(&w->cv, NULL);
    enqueue_and_wait(db, w);
    direct_gate_close(db);
}

void db_exit_exclusive(tdb_t *db, writer_t *w) {
    direct_gate_open(db);
    db->wq_head = w->next;
    if (!db->wq_head) db->wq_tail = NULL;
    else pthread_cond_signal(&db->wq_head->cv);
    pthread_cond_destroy(&w->cv);
}

int db_write_bounded(tdb_t *db, tdb_batch_t *b, writer_validate_fn fn, void *ctx, int64_t stall_timeout_ms) {
    if (!db || !b) return tdb_err(TDB_ERR_INVALID_ARG, "tdb_write: NULL argument");
    if (tdb_batch_count(b) == 0) return TDB_OK;
    tdb_cf_t **cfs;
    int ncfs = batch_cfs(b, &cfs);
    writer_t w;
    memset(&w, 0, sizeof w);
    w.batch = b;
    w.validate = fn;
    w.vctx = ctx;
    for (int i = 0; i < ncfs; i++) {
        TDB_RET(db_check_cf(db, cfs[i]));
        int mode = db_cf_sync_mode(db, cfs[i]);
        w.sync |= mode == TDB_SYNC_FULL;
        w.interval |= mode == TDB_SYNC_INTERVAL;
    }
    if (!fn && !w.sync) {
        bool queued;
        int rc = write_direct(db, b, cfs, ncfs, w.interval, &queued);
        if (!queued) return rc;
    }
    if (stall_timeout_ms == 0) stall_timeout_ms = db->cfg.write_stall_timeout_ms;
    uint64_t start = 0; /* read the clock only for a bounded write: hot path */
    if (stall_timeout_ms > 0) {
        start = now_us(db);
        w.stall_deadline = start + (uint64_t)stall_timeout_ms * 1000u;
    }
    pthread_cond_init(&w.cv, NULL);
    pthread_mutex_lock(&db->mu);
    enqueue_and_wait(db, &w);
    if (!w.done) commit_group(db, &w);
    bool paused = db->bg_paused > 0;
    pthread_mutex_unlock(&db->mu);
    pthread_cond_destroy(&w.cv);
    if (w.stall_expired)
        return tdb_err(TDB_ERR_BUSY, "write stalled by back-pressure for %llu ms (stall timeout %lld ms): "
                                     "flush/compaction is behind%s; nothing was written, retry later",
                       (unsigned long long)((now_us(db) - start) / 1000u), (long long)stall_timeout_ms,
                       paused ? " (background work is paused)" : "");
    return w.rc;
}

int db_write_validated(tdb_t *db, tdb_batch_t *b, writer_validate_fn fn, void *ctx) {
    return db_write_bounded(db, b, fn, ctx, 0);
}

int tdb_write(tdb_t *db, tdb_batch_t *b) { return db_write_bounded(db, b, NULL, NULL, 0); }

void tdb_write_options_default(tdb_write_options_t *o) { memset(o, 0, sizeof *o); }

int tdb_write_opt(tdb_t *db, tdb_batch_t *b, const tdb_write_options_t *opts) {
    return db_write_bounded(db, b, NULL, NULL, opts ? opts->stall_timeout_ms : 0);
}

int tdb_sync(tdb_t *db) {
    if (!db) return tdb_err(TDB_ERR_INVALID_ARG, "database handle is NULL");
    pthread_mutex_lock(&db->wal_mu);
    int rc = db->wal ? wal_writer_sync(db->wal) : TDB_OK;
    if (rc == TDB_OK) atomic_store(&db->wal_dirty, false);
    pthread_mutex_unlock(&db->wal_mu);
    if (rc != TDB_OK) {
        pthread_mutex_lock(&db->mu);
        db_set_bg_error_locked(db, rc); /* a failed fsync is sticky */
        pthread_mutex_unlock(&db->mu);
    }
    return rc;
}

/* Background fsync of the WAL for families in TDB_SYNC_INTERVAL mode. */
void *db_sync_thread(void *arg) {
    tdb_t *db = (tdb_t *)arg;
    pthread_mutex_lock(&db->mu);
    while (!db->shutting_down) {
        uint64_t interval = db->min_sync_interval_us ? db->min_sync_interval_us : 100000;
        if (interval > 100000) interval = 100000;
        db_cond_wait_us(&db->bg_cv, &db->mu, interval);
        if (db->shutting_down) break;
        pthread_mutex_unlock(&db->mu);
        pthread_mutex_lock(&db->wal_mu);
        int rc = TDB_OK;
        if (db->wal && atomic_exchange(&db->wal_dirty, false)) rc = wal_writer_sync(db->wal);
        pthread_mutex_unlock(&db->wal_mu);
        pthread_mutex_lock(&db->mu);
        if (rc != TDB_OK && db->bg_error == TDB_OK) {
            db_log(db, TDB_LOG_ERROR, "interval WAL sync failed: %s", tdb_last_error());
            db_set_bg_error_locked(db, rc);
        }
    }
    pthread_mutex_unlock(&db->mu);
    return NULL;
}

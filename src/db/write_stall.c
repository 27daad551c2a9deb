/*
 * db/write_stall: back-pressure, decided by the write leader before it
 * numbers a group (mu held, direct gate closed): memtable switches when a
 * family's write buffer (or the unified one) is full or the memory budget
 * nearly spent, a graduated delay while flush/compaction fall behind, a
 * stall (bounded per writer by its stall deadline) when they are too far
 * behind, and whether direct writes may go ahead afterwards.
 */
#include <stdlib.h>
#include <string.h>

#include "db/db_impl.h"
#include "db/direct.h"

/* Time since an arbitrary origin, microseconds. */
static uint64_t now_us(tdb_t *db) { return db->env->now_micros(db->env); }

/* Wait on done_cv for up to `us` microseconds (mu held). */
static void wait_done(tdb_t *db, uint64_t us) { db_cond_wait_us(&db->done_cv, &db->mu, us); }

/* Where graduated back-pressure starts (db_make_room): a family's
 * pressure (below), and the memtables' share of their memory budget. Below
 * both, writes need no back-pressure and may take the direct lane. */
#define SLOWDOWN_PRESSURE 0.5
#define SLOWDOWN_MEMORY_SHARE 0.75
#define STALL_NO_PROGRESS_LIMIT_US (30u * 1000u * 1000u)

/* Pressure of one family's backlog: 0 = none, 1 = must stop. Below 1 the
 * writer is slowed in proportion (graduated back-pressure). */
static double cf_pressure(const tdb_cf_t *cf) {
    double q = (double)cf->nimm / (double)cf->cfg.l0_queue_stall_threshold;
    /* Level 1 is allowed to run behind to 8x its trigger (in runs,
     * version_l1_runs) before writes stop. */
    double l1 = (double)version_l1_runs(cf->current) / (8.0 * cf->cfg.l1_file_count_trigger);
    return q > l1 ? q : l1;
}

/* Memory of the memtables (mu held). */
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

/* After a leader made room (mu held, gate closed; st: the memtables as
 * db_make_room left them): may direct writes go ahead, and how many memtable
 * bytes may they add before a leader must look again (unified write
 * buffer, memory budget)? A family's own write buffer is checked by each
 * direct writer. */
void db_direct_refresh(tdb_t *db, const mem_state_t *st) {
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
            atomic_fetch_add(&db->ctr.stall_timeouts, 1);
            writer_release(db, w); /* last touch of w */
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
 *    itself, db_make_room returns TDB_ERR_BUSY with self->stall_expired set
 *    and the rest of the group stays queued for the next leader. */
int db_make_room(tdb_t *db, writer_t *self, writer_t **last, int *n, tdb_cf_t **cfs, int ncfs,
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
            size_t limit = db_write_buffer_limit(db, cf);
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
            if (early) memtable_state(db, st); /* *st as db_make_room leaves it */
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

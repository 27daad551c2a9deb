/*
 * db/direct: the direct write lane's gate, its in-order publication and
 * its waits (invariant 2a of db/db_impl.h; docs/design/db.md). A narrow
 * internal header: db/write_direct.c, db/write_group.c, db/write_stall.c
 * and db/open.c use the lane through it, and
 * tests include it to drive the waiting policy (direct_set_spin) without
 * the database's private struct.
 *
 * Invariants
 *  1. Gate: a direct writer counts itself in flight, then finds the gate
 *     open; a closer counts itself on the gate, then waits until none is
 *     in flight (both sequentially consistent: one sees the other).
 *  2. Tickets are taken under wal_mu in the same section that numbers the
 *     batch, so ticket order is sequence order. A ticket's range becomes
 *     visible only once it and every earlier ticket are in the memtables:
 *     whichever writer completes the run of finished tickets publishes all
 *     of them (visible_seq only grows, and has no holes).
 *  3. A writer returns only once its range is visible (read-your-writes);
 *     it waits by spinning while spinning pays (see direct.c), else it
 *     sleeps on its own ticket's slot and the publisher wakes exactly it.
 *  4. While the gate is closed and no writer is in flight, every ticket
 *     taken is published: a leader may then number and publish by itself.
 */
#ifndef TDB_DB_DIRECT_H
#define TDB_DB_DIRECT_H

#include <stdbool.h>
#include <stdint.h>

#include "tidesdb/tidesdb.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Set up / free the lane of db (open, close). */
int direct_open(tdb_t *db);
void direct_close(tdb_t *db);

/* Enter the lane: 1 = in flight with the gate open (pair with
 * direct_leave), 0 = the lane is shut (db->direct_ok false): queue. Waits
 * while a leader holds the gate closed and the lane stays allowed. */
int direct_enter(tdb_t *db);
void direct_leave(tdb_t *db);

/* Close the gate and wait until no direct writer is in flight; nests.
 * Direct writers take no lock but wal_mu and wait only for each other, so
 * the caller may hold mu. */
void direct_gate_close(tdb_t *db);
void direct_gate_open(tdb_t *db);
/* Wake writers waiting for the gate (it opened, or the lane was shut). */
void direct_wake(tdb_t *db);

/* Under wal_mu: may one more writer take a ticket (the ring of pending
 * publications has room)? Checked before the WAL append. */
bool direct_ticket_room(tdb_t *db);
/* Under wal_mu, after the append: the ticket of a batch whose last
 * sequence is `last`. */
uint64_t direct_ticket_take(tdb_t *db, uint64_t last);
/* After the memtable insert (successful or not): mark the ticket done,
 * publish every finished ticket in order, and return once `last` is
 * visible. */
void direct_publish(tdb_t *db, uint64_t ticket, uint64_t last);

/* ---- the waiting policy (also for tests) ---- */

/* The longest wait without sleeping (spinning, then yielding): a wait
 * ended within it saves a futex sleep and wake-up (tens of microseconds). */
#define DIRECT_SPIN_MAX_NS 100000ull
/* The pure spin before yielding: on 2 idle cores 96% of waits for another
 * writer's insert end within 2 us, 99% within 4 us. */
#define DIRECT_SPIN_SHORT_NS 2000ull
/* A yield that takes longer ran another thread: more runnable threads
 * than cores, so the waiter sleeps instead. */
#define DIRECT_SLOW_YIELD_NS 3000ull

/* The next spin budget after a wait that lasted `waited_ns` in all (spun
 * or slept) with budget `budget_ns`: a wait that ended within
 * DIRECT_SPIN_MAX_NS raises the budget to twice its length (capped); a
 * longer one (the thread waited for was not running) halves it. */
uint64_t direct_spin_learn(uint64_t budget_ns, uint64_t waited_ns);

/* Override the policy: ns < 0 adaptive (the default), 0 never spin (every
 * wait sleeps at once), > 0 spin (no yield) up to ns before sleeping, even
 * with more spinners than cores. For tests and experiments. */
void direct_set_spin(tdb_t *db, int64_t ns);

typedef struct direct_stats {
    uint64_t waits;          /* waits that did not find their condition at once */
    uint64_t spun;           /* ...that ended while spinning */
    uint64_t slept;          /* ...that slept */
    uint64_t slow_yields;    /* yields that ran another thread (then slept) */
    uint64_t spin_budget_ns; /* the adaptive budget now */
    uint64_t published;      /* tickets published */
} direct_stats_t;
void direct_get_stats(tdb_t *db, direct_stats_t *out);

#ifdef __cplusplus
}
#endif
#endif

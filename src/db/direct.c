/*
 * db/direct: the direct write lane's gate, in-order publication and waits
 * (invariants in db/direct.h).
 *
 * Waiting. A direct writer waits for other writers' memtable inserts (a few
 * microseconds, more in a cache-missing memtable) before its own write is
 * visible, and for a leader to reopen the gate. Spinning pays only while
 * the thread waited for runs: on an idle machine (2 writers, 2 cores) a
 * futex sleep and wake-up costs tens of microseconds, and 96% of these
 * waits end within 2 us; but with more writer threads than cores the
 * thread waited for is often preempted, and a spinner keeps it off a core
 * (with the fixed 100 us spin, 8 writers on 2 cores ran 11K puts/s, 64% of
 * the CPU spinning; sleeping at once instead, about 500K; this scheme,
 * about 770K, as fast as 2 writers). So a wait (spin_until):
 *  - spins for up to DIRECT_SPIN_SHORT_NS (at most cores - 1 spinners);
 *  - then yields the core, which runs the preempted writer if it waits for
 *    one, for as long as the adaptive budget allows (direct_spin_learn: up
 *    to DIRECT_SPIN_MAX_NS, halved by waits that outlast it); a yield that
 *    took long ran another thread, so cores are oversubscribed: stop;
 *  - then sleeps, on its own ticket's slot (a futex on Linux): the
 *    publisher wakes exactly the writers it published, not a herd.
 * Publication is combined: a writer whose predecessors are unfinished
 * marks its ticket done and does not wait to publish itself; the writer
 * that completes the run publishes all of it. A preempted writer then
 * delays the others until it finishes its insert, not until each of its
 * successors has been scheduled once more, one after another.
 */
#include "db/direct.h"

#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#endif

#include "db/db_impl.h"
#include "util/mutex.h"

/* Pending publications: a writer that finds this many tickets unpublished
 * takes the writer queue instead (in practice: more than this many writer
 * threads at once). A power of two. */
#define DIRECT_RING 1024u

typedef struct direct_slot {
    _Alignas(64) _Atomic uint64_t done; /* ticket + 1 once the ticket's batch is applied */
    uint64_t last;                      /* the ticket's last sequence (set before done) */
    _Atomic uint32_t sleep;             /* 1: the ticket's writer may sleep on this word */
} direct_slot_t;

struct direct_lane {
    /* Touched by every writer: the gate and the ticket counter. */
    _Alignas(64) atomic_int gate; /* > 0: closed by a leader or exclusive writer */
    atomic_int inflight;          /* direct writers past the gate */
    uint64_t next;                /* under wal_mu: the next ticket */
    /* The publisher's. */
    _Alignas(64) _Atomic uint64_t head; /* tickets below head are published */
    atomic_int busy;                    /* a writer is publishing */
    /* The waiting policy. */
    _Alignas(64) _Atomic uint64_t budget_ns;
    atomic_int spinners;
    int cores;                /* cores this process may use */
    _Atomic int64_t forced;   /* direct_set_spin; < 0: adaptive */
    _Alignas(64) _Atomic uint64_t waits, spun, slept, slow_yields;
    /* Sleeping waits for the gate (and, off Linux, for tickets). */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_int sleepers;
    direct_slot_t *ring;
};

/* The process's monotonic clock, not env->now_micros: an embedder's env
 * may supply any clock (a test env's stands still), and a spin bounded by
 * it might never end. */
static uint64_t mono_ns(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static void cpu_pause(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

/* Cores this process may run on. */
static int cores(void) {
#ifdef __linux__
    cpu_set_t s;
    if (sched_getaffinity(0, sizeof s, &s) == 0) return CPU_COUNT(&s);
#endif
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (int)n : 1;
}

/* Allocate the lane: gate open, no tickets, the adaptive budget at its maximum. */
int direct_open(tdb_t *db) {
    direct_lane_t *l = (direct_lane_t *)aligned_alloc(64, sizeof *l);
    if (!l) return tdb_err(TDB_ERR_NOMEM, "direct lane");
    memset(l, 0, sizeof *l);
    l->ring = (direct_slot_t *)aligned_alloc(64, DIRECT_RING * sizeof *l->ring);
    if (!l->ring) {
        free(l);
        return tdb_err(TDB_ERR_NOMEM, "direct lane ring");
    }
    memset(l->ring, 0, DIRECT_RING * sizeof *l->ring); /* done 0: ticket 0 waits for 1 */
    atomic_init(&l->budget_ns, DIRECT_SPIN_MAX_NS);
    atomic_init(&l->forced, -1);
    l->cores = cores();
    tdb_mutex_init_short(&l->mu);
    pthread_cond_init(&l->cv, NULL);
    db->direct = l;
    return TDB_OK;
}

/* Free the lane (no writer may be in it). */
void direct_close(tdb_t *db) {
    direct_lane_t *l = db->direct;
    if (!l) return;
    pthread_mutex_destroy(&l->mu);
    pthread_cond_destroy(&l->cv);
    free(l->ring);
    free(l);
    db->direct = NULL;
}

/* ---- the waiting policy ---- */

/* The policy: see direct.h. */
uint64_t direct_spin_learn(uint64_t budget_ns, uint64_t waited_ns) {
    if (waited_ns > DIRECT_SPIN_MAX_NS) return budget_ns / 2; /* spinning would not have paid */
    uint64_t want = 2 * waited_ns;
    if (want > DIRECT_SPIN_MAX_NS) want = DIRECT_SPIN_MAX_NS;
    return want > budget_ns ? want : budget_ns;
}

/* Test hook: force the policy (direct.h). */
void direct_set_spin(tdb_t *db, int64_t ns) { atomic_store(&db->direct->forced, ns < 0 ? -1 : ns); }

/* Counters of the lane's waits. */
void direct_get_stats(tdb_t *db, direct_stats_t *out) {
    direct_lane_t *l = db->direct;
    out->waits = atomic_load(&l->waits);
    out->spun = atomic_load(&l->spun);
    out->slept = atomic_load(&l->slept);
    out->slow_yields = atomic_load(&l->slow_yields);
    out->spin_budget_ns = atomic_load(&l->budget_ns);
    out->published = atomic_load(&l->head);
}

typedef bool (*wait_cond_fn)(tdb_t *db, uint64_t arg);

/* Wait until cond(db, arg) without sleeping, within the policy's budget
 * (from t0); true if it came true. Adaptive: spin for up to
 * DIRECT_SPIN_SHORT_NS (at most cores - 1 threads at once: the thread
 * waited for needs a core), then yield the core while the budget lasts,
 * and give up at the first slow yield (another thread needed the core:
 * more runnable threads than cores, so sleeping is cheaper). Forced: spin
 * for up to the forced time, no yield, no cap. */
static bool spin_until(tdb_t *db, wait_cond_fn cond, uint64_t arg, uint64_t t0) {
    direct_lane_t *l = db->direct;
    int64_t forced = atomic_load_explicit(&l->forced, memory_order_relaxed);
    uint64_t budget = forced >= 0 ? (uint64_t)forced : atomic_load_explicit(&l->budget_ns, memory_order_relaxed);
    if (budget == 0) return false;
    uint64_t spin = forced >= 0 || budget < DIRECT_SPIN_SHORT_NS ? budget : DIRECT_SPIN_SHORT_NS;
    bool capped = forced < 0;
    if (capped && atomic_fetch_add(&l->spinners, 1) >= l->cores - 1) spin = 0; /* cores busy spinning */
    for (unsigned i = 1; spin > 0; i++) {
        if (cond(db, arg)) break;
        cpu_pause();
        if (i % 8 == 0 && mono_ns() - t0 >= spin) spin = 0; /* read the clock now and then */
    }
    if (capped) atomic_fetch_sub(&l->spinners, 1);
    if (cond(db, arg)) return true;
    if (forced >= 0) return false;
    for (uint64_t t = mono_ns(); t - t0 < budget;) {
        sched_yield();
        uint64_t after = mono_ns();
        if (cond(db, arg)) return true;
        if (after - t > DIRECT_SLOW_YIELD_NS) {
            atomic_fetch_add_explicit(&l->slow_yields, 1, memory_order_relaxed);
            return false;
        }
        t = after;
    }
    return false;
}

/* Feed a finished wait's length to the adaptive budget. */
static void learn(direct_lane_t *l, uint64_t t0) {
    if (atomic_load_explicit(&l->forced, memory_order_relaxed) >= 0) return;
    uint64_t b = atomic_load_explicit(&l->budget_ns, memory_order_relaxed);
    atomic_store_explicit(&l->budget_ns, direct_spin_learn(b, mono_ns() - t0), memory_order_relaxed);
}

/* Wait for a gate condition: spin, then sleep on cv. Whoever makes it true
 * calls direct_wake afterwards. Waiter: count, then check (under mu);
 * waker: change, then read the count (all seq_cst): one sees the other.
 * Not learned from: a leader's work (an fsync, a memtable switch) says
 * nothing about whether writers' inserts are worth spinning for. */
static void wait_gate(tdb_t *db, wait_cond_fn cond) {
    direct_lane_t *l = db->direct;
    if (cond(db, 0)) return;
    atomic_fetch_add_explicit(&l->waits, 1, memory_order_relaxed);
    if (spin_until(db, cond, 0, mono_ns())) {
        atomic_fetch_add_explicit(&l->spun, 1, memory_order_relaxed);
        return;
    }
    atomic_fetch_add_explicit(&l->slept, 1, memory_order_relaxed);
    pthread_mutex_lock(&l->mu);
    atomic_fetch_add(&l->sleepers, 1);
    while (!cond(db, 0)) pthread_cond_wait(&l->cv, &l->mu);
    atomic_fetch_sub(&l->sleepers, 1);
    pthread_mutex_unlock(&l->mu);
}

/* Wake every gate sleeper (if any). */
void direct_wake(tdb_t *db) {
    direct_lane_t *l = db->direct;
    if (atomic_load(&l->sleepers) == 0) return;
    pthread_mutex_lock(&l->mu);
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}

/* Sleep while *w is 1 (spurious returns allowed) / wake its sleeper. */
#ifdef __linux__
static void park(direct_lane_t *l, _Atomic uint32_t *w) {
    (void)l;
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAIT_PRIVATE, 1u, NULL, NULL, 0);
}
static void unpark(direct_lane_t *l, _Atomic uint32_t *w) {
    (void)l;
    syscall(SYS_futex, (uint32_t *)w, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
}
#else
static void park(direct_lane_t *l, _Atomic uint32_t *w) {
    pthread_mutex_lock(&l->mu);
    atomic_fetch_add(&l->sleepers, 1);
    while (atomic_load(w) == 1) pthread_cond_wait(&l->cv, &l->mu);
    atomic_fetch_sub(&l->sleepers, 1);
    pthread_mutex_unlock(&l->mu);
}
static void unpark(direct_lane_t *l, _Atomic uint32_t *w) {
    (void)w;
    pthread_mutex_lock(&l->mu);
    pthread_cond_broadcast(&l->cv);
    pthread_mutex_unlock(&l->mu);
}
#endif

/* The write queue's members sleep on the same words (db_impl.h, writer_t).
 * After a release the member may return at once and its writer be gone:
 * the futex wake that follows then reaches whatever sleeps at that address
 * as a spurious wake-up, which every futex user tolerates (elsewhere unpark
 * never touches the word). */
uint32_t writer_park(tdb_t *db, writer_t *w) {
    uint32_t st;
    while ((st = atomic_load(&w->park)) == WRITER_PARKED) park(db->direct, &w->park);
    return st;
}

void writer_kick(tdb_t *db, writer_t *w) {
    uint32_t parked = WRITER_PARKED;
    if (atomic_compare_exchange_strong(&w->park, &parked, WRITER_RUNNING)) unpark(db->direct, &w->park);
    /* else it is running: it re-checks under mu before it parks again */
}

void writer_release(tdb_t *db, writer_t *w) {
    if (atomic_exchange(&w->park, WRITER_RELEASED) == WRITER_PARKED) unpark(db->direct, &w->park);
}

/* ---- the gate ---- */

/* Wait conditions of the gate. */
static bool none_in_flight(tdb_t *db, uint64_t unused) {
    (void)unused;
    return atomic_load(&db->direct->inflight) == 0;
}

static bool gate_open_or_lane_shut(tdb_t *db, uint64_t unused) {
    (void)unused;
    return atomic_load(&db->direct->gate) == 0 || !atomic_load(&db->direct_ok);
}

/* Count in, then check the gate (invariant 1 of direct.h). */
int direct_enter(tdb_t *db) {
    direct_lane_t *l = db->direct;
    for (;;) {
        atomic_fetch_add(&l->inflight, 1);
        if (atomic_load(&l->gate) == 0) return 1;
        /* A leader is at work. Queueing behind it would make this write a
         * leader in turn, and the other writers queue behind that one:
         * while the lane stays allowed, wait for the gate instead. */
        direct_leave(db);
        if (!atomic_load(&db->direct_ok)) return 0;
        wait_gate(db, gate_open_or_lane_shut);
    }
}

/* The last writer out wakes a closer waiting for the gate to drain. */
void direct_leave(tdb_t *db) {
    direct_lane_t *l = db->direct;
    if (atomic_fetch_sub(&l->inflight, 1) == 1 && atomic_load(&l->gate) > 0) direct_wake(db);
}

/* Count on the gate, then wait for the writers in flight to leave. */
void direct_gate_close(tdb_t *db) {
    atomic_fetch_add(&db->direct->gate, 1);
    wait_gate(db, none_in_flight);
}

/* The last opener wakes the writers waiting for the gate. */
void direct_gate_open(tdb_t *db) {
    if (atomic_fetch_sub(&db->direct->gate, 1) == 1) direct_wake(db); /* writers waiting for it */
}

/* ---- tickets and publication ---- */

/* Fewer than DIRECT_RING tickets unpublished (wal_mu held). */
bool direct_ticket_room(tdb_t *db) {
    direct_lane_t *l = db->direct;
    return l->next - atomic_load_explicit(&l->head, memory_order_acquire) < DIRECT_RING;
}

/* The next ticket, for a batch ending at `last` (wal_mu held). */
uint64_t direct_ticket_take(tdb_t *db, uint64_t last) {
    direct_lane_t *l = db->direct;
    uint64_t t = l->next++;
    direct_slot_t *s = &l->ring[t & (DIRECT_RING - 1)];
    /* The slot's previous ticket (t - DIRECT_RING) is published: its
     * publisher is done with the slot (head was stored last). */
    s->last = last;
    atomic_store_explicit(&s->sleep, 0, memory_order_relaxed);
    return t;
}

/* Publish the run of finished tickets from head on, unless another writer
 * is publishing: it then sees our mark when it looks again after letting
 * go (mark, then try; let go, then look: all seq_cst). */
static void publish_run(tdb_t *db) {
    direct_lane_t *l = db->direct;
    for (;;) {
        int idle = 0;
        if (!atomic_compare_exchange_strong(&l->busy, &idle, 1)) return;
        uint64_t h = atomic_load_explicit(&l->head, memory_order_relaxed), from = h, last = 0;
        direct_slot_t *s;
        while (atomic_load_explicit(&(s = &l->ring[h & (DIRECT_RING - 1)])->done, memory_order_acquire) == h + 1) {
            last = s->last;
            h++;
        }
        if (h != from) {
            atomic_store(&db->visible_seq, last);
            /* Waiter: sleep flag, then visible; publisher: visible, then
             * sleep flag (seq_cst): a writer either sees its range visible
             * or is woken here. */
            for (uint64_t q = from; q < h; q++) {
                s = &l->ring[q & (DIRECT_RING - 1)];
                if (atomic_load(&s->sleep) && atomic_exchange(&s->sleep, 0)) unpark(l, &s->sleep);
            }
            atomic_store_explicit(&l->head, h, memory_order_release); /* the slots may be reused */
        }
        atomic_store(&l->busy, 0);
        if (atomic_load(&l->ring[h & (DIRECT_RING - 1)].done) != h + 1) return;
    }
}

/* Is the write ending at `last` visible? */
static bool visible_reaches(tdb_t *db, uint64_t last) { return atomic_load(&db->visible_seq) >= last; }

/* Mark done, publish what is complete, wait until ours is visible. */
void direct_publish(tdb_t *db, uint64_t ticket, uint64_t last) {
    direct_lane_t *l = db->direct;
    direct_slot_t *s = &l->ring[ticket & (DIRECT_RING - 1)];
    atomic_store(&s->done, ticket + 1);
    publish_run(db);
    if (visible_reaches(db, last)) return;
    /* An earlier ticket is unfinished: wait until its writer publishes us.
     * The slot is ours until then (head stays at or below the ticket). */
    atomic_fetch_add_explicit(&l->waits, 1, memory_order_relaxed);
    uint64_t t0 = mono_ns();
    if (spin_until(db, visible_reaches, last, t0)) {
        atomic_fetch_add_explicit(&l->spun, 1, memory_order_relaxed);
        learn(l, t0);
        return;
    }
    atomic_fetch_add_explicit(&l->slept, 1, memory_order_relaxed);
    for (;;) {
        atomic_store(&s->sleep, 1);
        if (visible_reaches(db, last)) break;
        park(l, &s->sleep);
        if (visible_reaches(db, last)) break;
    }
    learn(l, t0);
}

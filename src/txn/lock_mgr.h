/*
 * txn/lock_mgr: pessimistic row locks (shared / exclusive) on (cf_id, key),
 * with FIFO wait queues, upgrades, deadlock detection on the wait-for
 * graph, timeouts, cancellation and savepoint undo. Keys need not exist.
 * Design notes: docs/design/locks.md.
 *
 * Model
 *  - A lock head exists per (cf_id, key) that has a holder or a waiter; it
 *    lives in one of LM_STRIPES stripes (chosen by the key's hash), each a
 *    hash table guarded by the stripe mutex. A head is freed as soon as it
 *    has neither holders nor waiters.
 *  - A head's holders are either any number of shared grants or exactly one
 *    exclusive grant. Each owner holds a head at most once (re-entrant
 *    requests change nothing, or upgrade shared -> exclusive).
 *  - Waiters form a FIFO queue per head. A new request that is not
 *    re-entrant queues whenever the queue is non-empty, even if it is
 *    compatible with the holders (so a waiting writer is not starved by a
 *    stream of readers). An upgrade (holder asking exclusive) goes to the
 *    front: nothing behind it could be granted before it anyway.
 *  - Hand-off: whoever changes a head (release, downgrade, a waiter
 *    leaving) grants the longest prefix of the queue that is compatible,
 *    moving those waiters to the holders and signalling them. So a queued
 *    waiter is always genuinely blocked: the queue's front is never
 *    grantable once the stripe mutex is released.
 *  - Each owner waits for at most one head at a time; its wait entry is
 *    embedded in the owner.
 *
 * Wait-for graph and deadlock detection
 *  - Edges: a waiter -> the waiter just ahead of it in its queue, or, for
 *    the queue front, -> every holder of the head except itself. (Everyone
 *    in a queue transitively waits for all holders; this reduced edge set
 *    has the same reachability as "all holders + all waiters ahead".)
 *  - The graph is exact, not a stale copy: a head with a non-empty queue
 *    ("contended") is mutated only while holding BOTH its stripe mutex and
 *    the global graph mutex, and the detector only reads heads that have
 *    waiters, under the graph mutex. Owner fields wait.head / wait.prev /
 *    visit are guarded by the graph mutex.
 *  - Only a requester about to enqueue adds edges out of itself; grants and
 *    departures only remove or re-point edges to nodes already reachable.
 *    So the graph is acyclic whenever the graph mutex is free, and the
 *    requester's DFS (from itself, under the graph mutex) finds exactly the
 *    cycles it would close: it is the one victim (TDB_ERR_DEADLOCK, nothing
 *    enqueued, its held locks untouched).
 *
 * Range locks (lock_acquire_range; docs/design/locks.md "Range locks")
 *  - A range head lives in the manager's range list, guarded by rs.mu,
 *    which plays the stripe mutex for every range head (never held with
 *    another stripe mutex). Its one holder is the range's owner; writers
 *    inside it queue as "pass" waiters, all woken when it is released or
 *    narrowed, so the graph, timeouts and cancellation work unchanged.
 *  - A writer takes its key lock, then checks the ranges; a range locker
 *    publishes its range, then reads every stripe: the later one sees the
 *    other (both stripe-mutex ordered), a mutual wait is a deadlock.
 *
 * Locks and lock order (never the reverse)
 *    stripe mutex or rs.mu (one at a time)  ->  graph mutex  ->  owner mutex
 *  - The graph mutex is taken only on the slow path: enqueue, and any change
 *    to a contended head. Uncontended acquire/release take one stripe mutex.
 *  - The owner mutex guards the owner's `granted` flag, `cancel` flag and is
 *    the mutex of its condition variable. A waiter sleeps holding nothing
 *    but its owner mutex. Granters set `granted` and signal under the
 *    owner mutex; lock_cancel_wait sets `cancel` and signals under it.
 *
 * Who wakes whom
 *  - The thread that makes a queued request grantable (release, downgrade,
 *    a front waiter timing out / being cancelled) grants it and signals that
 *    waiter's owner condition. lock_cancel_wait signals the owner it names.
 *    Timeouts wake themselves (CLOCK_MONOTONIC timed wait). A waiter that
 *    wakes un-granted removes itself from the queue under stripe + graph
 *    (and hands off to whoever is then grantable); a grant that raced with
 *    its timeout or cancel wins (TDB_OK).
 *
 * Threading contract
 *  - lock_mgr_* and lock_cancel_wait are thread-safe. An owner's other
 *    functions are called by one thread at a time (its transaction's).
 *  - lock_owner_destroy releases everything; lock_mgr_destroy requires that
 *    every owner has been destroyed.
 */
#ifndef TDB_TXN_LOCK_MGR_H
#define TDB_TXN_LOCK_MGR_H

#include <stddef.h>
#include <stdint.h>

#include "tidesdb/tidesdb.h"
#include "util/slice.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lock_mgr lock_mgr_t;
typedef struct lock_owner lock_owner_t; /* one per transaction */

/* Striped hash of lock heads; NULL on OOM. */
lock_mgr_t *lock_mgr_create(void);
/* Free the manager; every owner must have been destroyed first. */
void lock_mgr_destroy(lock_mgr_t *m);

/* A lock owner (one per transaction); NULL on OOM. */
lock_owner_t *lock_owner_create(lock_mgr_t *m, uint64_t txn_id);
/* Release everything the owner holds and free it. Must not be waiting. */
void lock_owner_destroy(lock_owner_t *o);
/* The owner's txn_id (as created, or as last set). */
uint64_t lock_owner_txn_id(const lock_owner_t *o);
/* A new txn_id for a reused owner (its transaction began again): only by
 * the owner's thread, while it holds and waits for nothing. */
void lock_owner_set_txn_id(lock_owner_t *o, uint64_t txn_id);
/* The embedder's pointer reported by the wait hook (any time, by the
 * owner's thread; read atomically by waiters on other threads). */
void lock_owner_set_user(lock_owner_t *o, void *user);

/* Wait hook (tidesdb.h, tdb_set_lock_wait_hook): called by a requester
 * after it queued and its deadlock check passed, before it sleeps, once per
 * owner ahead of it (holders other than itself, then queued waiters that
 * are not also holders, nearest first), with the head's stripe mutex held
 * and nothing else: the head cannot change during the calls, so every
 * reported owner is alive. fn and ctx are read under the graph mutex. */
void lock_mgr_set_wait_hook(lock_mgr_t *m, tdb_lock_wait_hook_fn fn, void *ctx);

/* Shared (exclusive = 0) or exclusive lock on (cf_id, key), also for keys
 * that do not exist. Re-entrant: asking again for a mode already covered
 * (shared or exclusive held, shared asked; exclusive held, exclusive asked)
 * returns TDB_OK at once and records nothing. A shared holder asking
 * exclusive upgrades (waits for the other sharers).
 * Waits up to timeout_us: 0 = try once, < 0 = no limit; TDB_ERR_TIMEOUT.
 * Before waiting, checks the wait-for graph: if waiting would close a
 * cycle, returns TDB_ERR_DEADLOCK at once (the requester is the victim; its
 * held locks stay). A pending or concurrent lock_cancel_wait makes a wait
 * return TDB_ERR_ABORTED. TDB_ERR_NOMEM. Waiters are served FIFO (upgrades
 * first). */
int lock_acquire(lock_owner_t *o, uint32_t cf_id, slice_t key, int exclusive, int64_t timeout_us);

/* Range lock on the keys k of cf_id with lo <= k and k < hi (k <= hi if
 * hi_inclusive; hi NULL: no upper bound), recorded like a key lock (held
 * until released, undone by lock_release_since). While it is held, another
 * owner's exclusive lock_acquire of a key inside it (a write, or a locking
 * read for update) waits after taking its key lock, until the range is
 * released: FIFO does not apply (all such writers pass together), deadlock
 * detection, timeout_us (for the range wait, counted apart from the key
 * wait) and lock_cancel_wait do. Range locks never conflict with each other
 * nor with shared key locks (InnoDB's gap locks behave so); `exclusive` is
 * the mode reported. Taking one first waits for every exclusive key lock
 * another owner already holds inside the range (by queueing a shared
 * request on that key, kept until release). Errors as lock_acquire; on an
 * error nothing stays held by this call. */
int lock_acquire_range(lock_owner_t *o, uint32_t cf_id, slice_t lo, const slice_t *hi, int hi_inclusive,
                       int exclusive, int64_t timeout_us, uint64_t *rid);

/* *rid (if rid) names the range lock for lock_narrow_range: the owner's
 * count of range locks so far. */
/* Narrow the owner's range lock rid (not held any more: nothing to do)
 * to its intersection with [lo, hi] (hi inclusive if hi_inclusive; NULL
 * bound: keep that bound). Writers waiting for it look again. For a scan
 * that locked up to its end bound and stopped early (LIMIT). Owner thread.
 * TDB_ERR_NOMEM. */
int lock_narrow_range(lock_owner_t *o, uint64_t rid, const slice_t *lo, const slice_t *hi, int hi_inclusive);

/* Acquisitions recorded so far (new locks and upgrades; re-entrant no-ops
 * are not recorded): a savepoint mark for lock_release_since. */
size_t lock_owner_count(const lock_owner_t *o);
/* Number of distinct locks the owner holds. */
size_t lock_owner_held(const lock_owner_t *o);

/* Undo acquisitions recorded after the count was `mark` (rollback to
 * savepoint): locks first taken after the mark are released; an upgrade
 * made after the mark is downgraded back to shared. Wakes waiters that
 * become grantable. mark >= count: nothing. Like savepoints, marks taken
 * after `mark` are invalidated by it. */
void lock_release_since(lock_owner_t *o, size_t mark);
/* Release every lock of the owner (count becomes 0). */
void lock_release_all(lock_owner_t *o);

/* From any thread: the owner's current wait, or if it is not waiting its
 * next wait, returns TDB_ERR_ABORTED (once). A wait that was granted before
 * the cancel took effect returns TDB_OK and leaves the cancel pending.
 * Acquisitions that need no wait do not consume it. */
void lock_cancel_wait(lock_owner_t *o);
/* Drop a pending cancel (the owner's transaction begins again). */
void lock_clear_cancel(lock_owner_t *o);

typedef struct lock_stats {
    uint64_t acquired;  /* lock_acquire calls that returned TDB_OK */
    uint64_t waits;     /* acquisitions that had to wait (enqueued) */
    uint64_t wait_us;   /* time spent in those waits, however they ended */
    uint64_t wait_max_us; /* the longest of them */
    uint64_t deadlocks; /* TDB_ERR_DEADLOCK returned */
    uint64_t timeouts;  /* TDB_ERR_TIMEOUT returned (incl. try-once) */
    uint64_t cancelled; /* TDB_ERR_ABORTED returned */
    uint64_t held;      /* (owner, lock) pairs held right now */
    uint64_t range_locks; /* lock_acquire_range calls that published a range */
    uint64_t range_waits; /* writers that waited for a range lock */
    uint64_t ranges;      /* range locks held right now */
} lock_stats_t;
/* Counters since create (held: current). Thread-safe. */
void lock_mgr_stats(lock_mgr_t *m, lock_stats_t *out);

/* One (waiter, holder) pair of a wait going on: the waiter is queued on
 * (cf_id, key) and the holder holds it. key is a private copy. */
typedef struct lock_wait_info {
    uint64_t waiter_txn_id, holder_txn_id;
    uint32_t cf_id;
    int waiter_excl, holder_excl;
    char *key;
    size_t klen;
    /* range: the wait is for a range lock [key, hi] (hi NULL: unbounded;
     * hi points into the key allocation); the waiter is a writer. */
    int range, hi_inclusive;
    const char *hi;
    size_t hilen;
} lock_wait_info_t;
/* A copy of every current wait as (waiter, holder) pairs, each stripe read
 * under its mutex (a queued waiter's head is only changed under it), so
 * each pair was true at the moment its stripe was read. *out is NULL when
 * there is none; free with lock_wait_info_free. TDB_ERR_NOMEM. */
int lock_mgr_list_waits(lock_mgr_t *m, lock_wait_info_t **out, size_t *n);
void lock_wait_info_free(lock_wait_info_t *w, size_t n);

#ifdef __cplusplus
}
#endif
#endif

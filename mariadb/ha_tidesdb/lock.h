/*
 * lock: exclusive row locks held until the end of a transaction.
 *
 * Until the library's transactions bring row locks, the engine serializes
 * writers of the same row itself: a writing statement locks the primary
 * key of every row it reads for writing (locking read), inserts and
 * updates lock the new primary key and the new values of unique indexes.
 * A lock is named by (column family, encoded key).
 *
 * Invariants
 *  1. A lock has at most one owner (a transaction id); it is released only
 *     by its owner, at commit or rollback (or by unlock_row() for a row
 *     the statement read but did not use).
 *  2. A transaction waits for at most one lock at a time; the wait-for
 *     edges (waiter -> owner) form the graph deadlock detection walks: a
 *     waiter that would close a cycle gets HA_ERR_LOCK_DEADLOCK at once.
 *  3. Waits end after tidesdb_lock_wait_timeout seconds
 *     (HA_ERR_LOCK_WAIT_TIMEOUT) or when the statement is killed.
 *
 * Locking: the table is split in stripes (mutex + condition variable each);
 * the wait-for graph has its own mutex, always taken after a stripe mutex.
 */
#ifndef TIDESQL_LOCK_H
#define TIDESQL_LOCK_H

#include "tdb_common.h"

#include <atomic>

namespace tidesql {

/* The lock name of a key in a column family. */
std::string lock_name(tdb_cf_t *cf, const std::string &key);

/* Acquire the lock for transaction owner. 0 on success (*acquired = true
 * if it was not held already), HA_ERR_LOCK_DEADLOCK, HA_ERR_LOCK_WAIT_TIMEOUT
 * or HA_ERR_ABORTED_BY_USER (killed). */
int lock_acquire(uint64_t owner, const std::string &name, THD *thd, ulong timeout_sec, bool *acquired);
/* Release one lock owned by owner. */
void lock_release(uint64_t owner, const std::string &name);

/* Counters for status variables. */
extern std::atomic<ulonglong> g_lock_waits, g_lock_deadlocks, g_lock_timeouts;

}  // namespace tidesql

#endif

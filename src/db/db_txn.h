/*
 * db/db_txn: what the transaction layer (src/txn, above db) may use of the
 * database, a narrow header: commit through the write queue with a
 * validation run by the write leader, the reads conflict checks need,
 * iterators with an overlay, and accessors for the few pieces of db state
 * a transaction reads (the visible sequence, transaction ids, the memory
 * budget, the lock manager slot, a family's id). txn never sees struct
 * tdb or struct tdb_cf (db/db_impl.h), nor takes the db's mutexes.
 *
 * The functions are defined by the files of src/db named at each group;
 * db/db_impl.h includes this header, so the db's own files use the same
 * declarations.
 */
#ifndef TDB_DB_DB_TXN_H
#define TDB_DB_DB_TXN_H

#include <stddef.h>
#include <stdint.h>

#include "db/batch.h"
#include "tidesdb/tidesdb.h"
#include "util/ikey.h"
#include "util/iter.h"
#include "util/slice.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- state (db/state.c) ---- */
/* The newest sequence readers may see (a read's default snapshot). */
uint64_t db_visible_seq(tdb_t *db);
/* A new transaction id, unique in this open of the database (from 1). */
uint64_t db_next_txn_id(tdb_t *db);
/* The resolved max_memory_usage, bytes. */
size_t db_memory_budget(tdb_t *db);
/* The lock manager of the database: created with create() on first use,
 * with the callbacks the db calls at close (free_fn) and for its
 * statistics (counts); later calls return the same object. NULL if
 * create() failed. Takes the db mutex. */
typedef void (*db_lock_counts_fn)(void *mgr, tdb_stats_t *out); /* fills out's lock_* fields */
void *db_lock_mgr(tdb_t *db, void *(*create)(void), void (*free_fn)(void *), db_lock_counts_fn counts);

/* ---- families (db/cf.c) ---- */
uint32_t db_cf_id(const tdb_cf_t *cf);
/* 1 once the family was dropped. */
int db_cf_dropped(const tdb_cf_t *cf);
tdb_cf_t *cf_by_id(tdb_t *db, uint32_t id); /* under mu (a validation) or during open */
/* Copy family id's name into buf (n bytes, cut to fit); takes the db mutex.
 * TDB_ERR_NOT_FOUND if no live family has that id. */
int db_cf_name_of(tdb_t *db, uint32_t id, char *buf, size_t n);
/* TDB_OK if cf is a live family of db, else an error. */
int db_check_cf(tdb_t *db, tdb_cf_t *cf);

/* ---- values (db/config.c) ---- */
int64_t db_now_unix(void);
/* For a value of type t: strip the TTL prefix; returns 0 if expired. */
int db_value_live(unsigned t, slice_t raw, int64_t now, slice_t *user_value);

/* ---- commit (db/write_group.c, db/write.c) ---- */
/* Keys written by earlier members of a write group (hashes of cf id + key),
 * so a validating writer sees conflicts with writes not yet applied. */
typedef struct group_keys {
    uint64_t *slots;
    size_t cap, n;
    uint64_t range_del_cfs; /* bit (cf_id % 64): a range delete was written */
} group_keys_t;
int group_keys_add(group_keys_t *g, uint32_t cf_id, slice_t key);
int group_keys_has(const group_keys_t *g, uint32_t cf_id, slice_t key);

/* A commit-time check run by the write leader after every earlier commit is
 * applied and before this batch gets its sequence numbers: TDB_OK or an
 * error (TDB_ERR_CONFLICT) that fails only this writer. */
typedef int (*writer_validate_fn)(void *ctx, tdb_t *db, const group_keys_t *earlier);

/* Called by the write leader, with the writer's ctx, once the batch is
 * applied and visible and before the WAL is synced for it: only in a
 * group that syncs under tdb_config_t.release_before_sync (db/write_group.c).
 * The writer's thread is parked meanwhile; the call must not block. */
typedef void (*writer_visible_fn)(void *ctx);

/* Commit a batch through the write queue with an optional validation fn,
 * a back-pressure bound (0 = the config's write_stall_timeout_ms, < 0 =
 * none: past it TDB_ERR_BUSY, nothing applied, fn not called) and an
 * optional visibility call (above). */
int db_write_bounded(tdb_t *db, tdb_batch_t *b, writer_validate_fn fn, writer_visible_fn visible, void *ctx,
                     int64_t stall_timeout_ms);

/* ---- two-phase commit (db/prepared.c, db/write_prepared.c) ---- */
/* Log b as the PREPARE record of xid (TDB_ERR_EXISTS if xid is taken)
 * through the write queue: fn validates it in the leader; synced if
 * `durable` or a family is TDB_SYNC_FULL. Not numbered, not applied. The
 * transaction stays attached: only db_commit_prepared / db_rollback_prepared
 * with attached = true resolve it until db_prepared_detach. */
int db_prepare(tdb_t *db, tdb_batch_t *b, slice_t xid, bool durable, writer_validate_fn fn, void *ctx,
               int64_t stall_timeout_ms);
/* Commit (a COMMIT marker; the entries numbered and applied) or roll back
 * (a ROLLBACK marker) the prepared transaction of xid. The marker is synced
 * if a family written is TDB_SYNC_FULL, unless no_sync (then it waits for
 * the next WAL sync; tdb_commit_options_t.no_sync). */
int db_commit_prepared(tdb_t *db, slice_t xid, bool attached, bool no_sync);
int db_rollback_prepared(tdb_t *db, slice_t xid, bool attached);
/* The handle of xid went away: it stays prepared, resolvable by xid. */
void db_prepared_detach(tdb_t *db, slice_t xid);
/* 1 if a prepared transaction (logged, not resolved) wrote (cf, key). */
int db_prepared_has_key(tdb_t *db, uint32_t cf_id, slice_t key);
/* 1 if any prepared transaction is unresolved. */
int db_prepared_any(tdb_t *db);

/* ---- conflict checks (db/read.c) ---- */
/* Newest committed entry of key in cf (any type, incl. deletions and range
 * tombstones covering key): 1 and its sequence, 0 if the key has no entry,
 * <0 on error. */
int db_latest_seq(tdb_t *db, tdb_cf_t *cf, slice_t key, uint64_t *seq);
/* 1 if key's newest committed entry (or a covering range tombstone) has a
 * sequence above `since`, 0 if not, <0 on error. Skips the table lookup
 * when every table is older than `since` (the common case for a fresh
 * transaction), so commit-time conflict checks stay cheap. */
int db_changed_since(tdb_t *db, tdb_cf_t *cf, slice_t key, uint64_t since);
/* 1 if any entry with user key in [lo, hi] (NULL = unbounded), or any range
 * tombstone overlapping it, has a sequence above `since`, 0 if none, <0 on
 * error. */
int db_range_changed(tdb_t *db, tdb_cf_t *cf, const slice_t *lo, const slice_t *hi, uint64_t since);

/* ---- iterators (db/db_iter.c) ---- */
/* The entries of an overlay (a transaction's own writes, internal keys with
 * sequence OVERLAY_SEQ) are always visible and shadow the database. */
#define OVERLAY_SEQ (SEQ_MAX - 1)
/* Iterator reading at `seq`, merged with `overlay` (may be NULL; ownership
 * taken). */
int db_iter_create(tdb_t *db, tdb_cf_t *cf, uint64_t seq, iter_t *overlay, tdb_iter_t **out);
/* The merged internal iterator under a user iterator. */
iter_t *db_iter_internal(tdb_iter_t *it);
/* Observe the user keys an iterator passes over (SERIALIZABLE range
 * tracking): fn(ctx, key) for seek targets and every key reached; fn(ctx,
 * NULL, dir) when iteration runs off an end (dir +1 forward, -1 backward). */
typedef void (*db_iter_observer_fn)(void *ctx, const slice_t *key, int dir);
void db_iter_set_observer(tdb_iter_t *it, db_iter_observer_fn fn, void *ctx);
/* Call fn(ctx) when the iterator is destroyed. */
void db_iter_set_destroy_hook(tdb_iter_t *it, void (*fn)(void *), void *ctx);
/* 1 if a range tombstone visible to the iterator with sequence above
 * `since` overlaps the user keys [lo, hi] (NULL = unbounded), else 0. */
int db_iter_range_dels_changed(tdb_iter_t *it, const slice_t *lo, const slice_t *hi, uint64_t since);

#ifdef __cplusplus
}
#endif
#endif

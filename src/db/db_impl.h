/*
 * db: the database object that ties the subsystems together: column
 * families, the write path (group commit into one shared WAL), memtable
 * switching and flushing, background compaction, point reads, iterators,
 * snapshots and statistics. Private to src/db (never included by tests).
 *
 * Invariants
 *  1. One WAL (the file numbered db->wal_number) is shared by all column
 *     families. A batch is one WAL record, so it is atomic across families,
 *     also after a crash.
 *  2. Sequence numbers are assigned in WAL order, under wal_mu, by the
 *     write leader (db/write_group.c) or a direct writer
 *     (db/write_direct.c). A write becomes visible
 *     (db->visible_seq) only after it and every write numbered before it
 *     are in the memtables; readers use visible_seq as their snapshot, so
 *     they never see a partially applied batch or a hole.
 *  2a. Direct writers (no FULL sync, no validation, no back-pressure)
 *     append and insert without the writer queue. They run only while the
 *     direct gate is open; a write leader and an exclusive writer close it
 *     and wait until none is in flight, so memtable switches, validation
 *     and the leader's serial memtable hint never race with one, and the
 *     leader sees every earlier write applied and visible. A direct
 *     write's range is published by whichever direct writer completes the
 *     run of applied batches up to it (db/direct.h), in sequence order.
 *  2b. release_before_sync (tdb_config_t): a group that needs an fsync is
 *     appended, applied and published first; the leader then calls each
 *     member's visibility function (a transaction releases its row locks)
 *     and syncs the WAL before it wakes the group or hands the queue on, so
 *     no writer returns before its write is durable and the next leader
 *     finds the log synced (a memtable switch still follows a synced WAL:
 *     invariant 3). A failed fsync there is sticky, also out of space: the
 *     group is already visible, so it cannot be cut off (invariant 7).
 *  3. Every memtable switch rotates the WAL, and the old WAL is fsynced
 *     before the new one is created. Hence any memtable that reaches an SST
 *     contains only data whose WAL is durable, and after a crash the state
 *     recovered with NONE/INTERVAL sync is a prefix of the acknowledged
 *     history (no holes across families).
 *  4. A family's log_number is the oldest WAL that may hold its unflushed
 *     data; WAL files older than every family's log_number are deleted only
 *     after the manifest recording those numbers is durable.
 *  5. Per family, immutable memtables are flushed oldest first, one at a
 *     time, so log_number only moves forward and level-1 stays newest-first.
 *  6. Installing a new version (flush, compaction, family create/drop) holds
 *     manifest_mu from building the new state until it is installed, so
 *     manifest writes and installs happen in the same order. A table is
 *     deleted only once a MANIFEST without it is durable (the old
 *     superversion, which holds it, goes after the manifest write); after a
 *     failed manifest write no table is deleted until reopen (keep_files).
 *     A flush or compaction installs its version, writes the manifest, and
 *     only then publishes the superversion; if the manifest write ran out
 *     of space before replacing the old MANIFEST (db_write_manifest_locked
 *     returns TDB_ERR_NO_SPACE), it puts the old version (and log_number)
 *     back, so memory never runs ahead of the durable MANIFEST.
 *  7. Errors: a failed fsync (WAL or manifest), a failed manifest write and
 *     any other write I/O error set the sticky bg_error (writes refused with
 *     TDB_ERR_READ_ONLY until reopen). Out of space (TDB_ERR_NO_SPACE) on a
 *     WAL append, a table write or fsync, a WAL creation, a WAL fsync, or a
 *     manifest write before its rename (invariant 6) is not sticky: the
 *     write fails with NO_SPACE and nothing of it is applied; the next write
 *     leader (or tdb_sync) first continues in a fresh WAL: the torn one is
 *     cut back to its last complete record and synced (wal.h), or, when a
 *     WAL fsync failed with acknowledged NONE/INTERVAL writes unsynced, a
 *     relog is written from every unflushed memtable of every family and
 *     replaces the failed WAL (db/switch.c); a failed flush or
 *     compaction discards its output, keeps its inputs (the memtable stays
 *     queued) and is retried after a backoff (10 ms doubling to 1 s, or at
 *     once by tdb_flush); writers that would have to wait for it get
 *     NO_SPACE instead of stalling.
 *
 * Locks (acquire in this order): manifest_mu -> mu -> a family's sv_mu,
 * wal_mu, the direct lane's mutex (a leaf: nothing is taken while holding
 * it).
 *  - mu: family list and per-family memtable queue, versions, the writer
 *    queue, background job state.
 *  - sv_mu (one per family): guards the family's superversion pointer
 *    swap; readers hold it only to take a reference. Per family, so reads
 *    of different families (a MariaDB table's indexes, other tables) do
 *    not pass one lock's cache line between cores.
 *  - wal_mu: every use of the WAL handle (leader append/sync, interval
 *    sync thread, tdb_sync, rotation).
 */
#ifndef TDB_DB_IMPL_H
#define TDB_DB_IMPL_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "cache/cache.h"
#include "db/batch.h"
#include "db/db_txn.h"
#include "db/filename.h"
#include "env/env.h"
#include "memtable/memtable.h"
#include "util/error.h"
#include "util/ikey.h"
#include "util/iter.h"
#include "util/slice.h"
#include "version/compaction.h"
#include "version/manifest.h"
#include "version/table_cache.h"
#include "version/version.h"
#include "wal/wal.h"

/* A memtable with the number of the WAL that was current when it was
 * created: none of its data lives in an older WAL. */
typedef struct mem_slot {
    memtable_t *mem;
    uint64_t log_number;
} mem_slot_t;

/* What a reader needs, referenced as a unit: the memtables and the version
 * of one family at one moment. Immutable; refcounted. */
typedef struct superversion {
    atomic_int refs;
    memtable_t *mem;
    int nimm;
    memtable_t **imm; /* newest first */
    version_t *version;
    uint64_t max_file_seq; /* newest sequence in any table of version */
} superversion_t;

struct tdb_cf {
    tdb_t *db;
    uint32_t id;
    char *name;
    tdb_cf_config_t cfg;
    atomic_bool dropped;
    /* Dead keys (deleted, expired, covered by a range tombstone) that
     * iterators stepped over since the family's last level-1 compaction
     * was picked: enough of them make level 1 due from one run
     * (docs/design/version.md, "Read-triggered level 1"). */
    atomic_uint_fast64_t dead_stepped;

    /* Under db->mu. */
    mem_slot_t mem;       /* active memtable */
    mem_slot_t *imm;      /* immutable queue, oldest first */
    int nimm, cap_imm;
    bool flushing;        /* the oldest imm is being written */
    int compacting;       /* compactions running (background and manual) */
    compaction_state_t *compactions; /* registry of those compactions */
    version_t *current;
    uint64_t log_number;  /* persisted: oldest WAL with unflushed data */

    /* Under sv_mu (swap) / refcount (use). */
    pthread_mutex_t sv_mu;
    superversion_t *sv;
};

typedef struct writer {
    tdb_batch_t *batch;
    writer_validate_fn validate;
    writer_visible_fn visible; /* release_before_sync: called once visible (db_txn.h) */
    void *vctx;
    bool sync;     /* a family it writes is TDB_SYNC_FULL */
    /* A prepare or the commit of a prepared transaction: its registry entry,
     * handed to db_prepared_logged by the leader once the record is in the
     * WAL (db/prepared.c). */
    struct prepared *prepared;
    bool interval; /* a family it writes is TDB_SYNC_INTERVAL */
    int rc;
    /* Back-pressure bound: now_micros after which the leader takes the
     * writer out of the queue with TDB_ERR_BUSY (0 = none; stall_expired
     * set). Under mu. */
    uint64_t stall_deadline;
    bool stall_expired;
    /* Parallel memtable insert: the leader asks a member to apply its own
     * batch (apply_now), the member reports apply_rc and decrements
     * *pending, waking `leader` at zero. All under mu. */
    bool apply_now;
    int apply_rc;
    int *pending;
    struct writer *leader;
    pthread_cond_t cv; /* the leader waits here for its members' inserts */
    /* A queued member sleeps on park (WRITER_PARKED) without holding mu;
     * writer_kick (head of the queue, apply_now: re-check under mu) and
     * writer_release (done: return without mu) end the sleep. */
    _Atomic uint32_t park;
    struct writer *next;
} writer_t;

enum { WRITER_RUNNING = 0, WRITER_PARKED = 1, WRITER_RELEASED = 2 };

/* db/direct.c, beside the lane's own sleeps. writer_park: mu not held,
 * w->park set to WRITER_PARKED under mu; returns the state it found once
 * it is not (WRITER_RUNNING: kicked; WRITER_RELEASED: done). */
uint32_t writer_park(tdb_t *db, writer_t *w);
/* Under mu: wake a parked queue member to re-check its state under mu. */
void writer_kick(tdb_t *db, writer_t *w);
/* Under mu: finish a queue member (its rc set). It returns without
 * taking mu, so a group's members do not queue on mu one by one behind
 * the leader; w must not be touched after this call. */
void writer_release(tdb_t *db, writer_t *w);

typedef struct direct_lane direct_lane_t; /* db/direct.c */

/* A write batch (db/batch.c owns its encoding; db/write.c builds one-entry
 * batches for the single writes in the caller's stack frame). */
struct tdb_batch {
    buf_t rep;
    tdb_cf_t **cfs; /* distinct families referenced */
    int ncfs, capcfs;
    uint64_t user_bytes;
    /* Two-phase commit (db/prepared.c): the WAL record is wal_marker (a
     * transaction record, batch.h) instead of the entries. wal_only: a
     * prepare, logged but neither numbered nor applied. */
    buf_t *wal_marker;
    bool wal_only;
};

/* A snapshot: the sequence it reads at, also listed in db->snapshots
 * (db/read.c creates and releases them). */
struct tdb_snapshot {
    uint64_t seq;
};

typedef struct db_counters {
    atomic_uint_fast64_t user_bytes, wal_bytes, flush_bytes, compact_read,
        compact_written, flushes, compactions, stall_micros, stall_max, stalls, delays, stall_timeouts, wal_syncs;
} db_counters_t;

struct tdb {
    char *path;
    env_t *env;
    tdb_config_t cfg;
    env_lock_t *lock;
    FILE *log;

    pthread_mutex_t manifest_mu;
    pthread_mutex_t mu;
    pthread_mutex_t wal_mu;
    pthread_cond_t bg_cv;   /* background work available / shutting down */
    pthread_cond_t done_cv; /* a background job finished (stalled writers, waiters) */

    /* Under mu. */
    tdb_cf_t **cfs; /* indexed by id; NULL for never-used ids; dropped stay */
    uint32_t ncf_slots;
    uint32_t next_cf_id;
    uint64_t next_file_number;
    writer_t *wq_head, *wq_tail;
    int bg_flush_running, bg_compact_running;
    int bg_paused;          /* tdb_pause_background count: no new jobs while > 0 */
    int settling;           /* tdb_wait_idle callers: level-1 batching is off while > 0 */
    uint64_t switch_seq;    /* last_seq when a memtable (any family) was last
                               switched: equal to last_seq while no write came
                               since (the idle trigger's "writes stopped") */
    bool shutting_down;
    int bg_error;           /* sticky: first background failure (TDB_OK if none) */
    /* Out of space (not sticky, see invariant 7). */
    bool wal_nospace;       /* the WAL's last append failed: next leader starts a new log */
    bool bg_nospace;        /* the last flush/compaction failed for lack of space */
    uint64_t nospace_events;   /* flushes and compactions failed for lack of space */
    uint64_t nospace_flushes;  /* ...of them flushes */
    uint64_t nospace_retry_at; /* now_micros before which background work waits */
    uint64_t nospace_backoff;  /* current wait, microseconds (0: none) */
    uint64_t *snapshots;    /* live snapshot sequences, ascending (multiset) */
    int nsnap, cap_snap;
    atomic_bool keep_files; /* open/close, or after a failed manifest write: obsolete tables are not deleted */

    /* WAL: written only by the write leader, under wal_mu (against the
     * interval-sync thread, tdb_sync and rotation). */
    wal_writer_t *wal;
    uint64_t wal_number;
    uint64_t wal_expected_seq; /* batch_wal_payload state of `wal` (0 when it is new) */
    atomic_bool wal_dirty; /* unsynced bytes (INTERVAL mode) */

    atomic_uint_fast64_t last_seq;    /* last assigned */
    atomic_uint_fast64_t visible_seq; /* last readable */

    /* Direct writers (invariant 2a; db/direct.h: the gate, tickets,
     * publication and waits). */
    struct direct_lane *direct;
    atomic_bool direct_ok;      /* the last leader found no back-pressure */
    int64_t direct_room;        /* under wal_mu: bytes direct writers may still add */

    lru_cache_t *block_cache;
    table_cache_t *table_cache;
    /* Row locks of pessimistic transactions: created on first use by the
     * txn layer (above db), freed at close through lock_mgr_free. */
    void *lock_mgr;
    void (*lock_mgr_free)(void *);
    /* Its counters for tdb_get_stats (the lock_* fields). */
    void (*lock_mgr_counts)(void *, tdb_stats_t *out);
    atomic_uint_fast64_t next_txn_id;
    /* Prepared transactions without an outcome (db/prepared.c). */
    struct prepared_set *prepared;
    size_t mem_budget;                 /* max_memory_usage, resolved */
    size_t memtable_budget;            /* share of mem_budget for memtables */

    pthread_t *threads;
    int nthreads;
    pthread_t sync_thread;
    bool sync_thread_started;
    uint64_t min_sync_interval_us;

    db_counters_t ctr;
};

/*
 * Functions, by file, in the order of src/db (docs/design/conventions.md;
 * checked by scripts/check_layers.sh): a file calls only functions of the
 * files listed before it, so the file-level call graph has no cycle.
 *
 *   config, filename, batch, direct, prepared  (leaves)
 *   <- state <- cf <- write_apply <- switch <- bg <- write_stall
 *   <- write_group <- write_direct <- write <- write_prepared <- manual <- cf_api
 *   <- db_iter <- read <- open <- checkpoint
 *
 * batch.h, filename.h and direct.h declare their files' functions;
 * db_txn.h those the transaction layer uses too.
 */

/* ---- db/config.c: settings, their validation, the info log, clock ---- */
int db_validate_config(const tdb_config_t *cfg);
int db_validate_cf_config(const tdb_cf_config_t *cfg);
void db_log(tdb_t *db, int level, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
compaction_opts_t db_compaction_opts(const tdb_cf_t *cf);
/* Tombstones level 1 must hold before reads can make it due. */
#define DB_L1_READ_MIN_DELETES 1024
bool db_l1_read_due(const tdb_cf_t *cf);
sst_options_t db_sst_options(const tdb_cf_t *cf);
/* The sync mode that governs writes to cf (unified mode overrides). */
int db_cf_sync_mode(const tdb_t *db, const tdb_cf_t *cf);
/* The active-memtable size at which cf switches (unified: the shared one). */
size_t db_write_buffer_limit(const tdb_t *db, const tdb_cf_t *cf);

/* ---- db/batch.c (beyond the encoding of db/batch.h) ---- */
/* Set b up for one entry over the caller's stack buffer (or one
 * allocation if the entry does not fit); release with batch_release_single. */
int batch_init_single(tdb_batch_t *b, char *stack, size_t stack_bytes, tdb_cf_t **cf1, size_t klen, size_t vlen);
void batch_release_single(tdb_batch_t *b, const char *stack);

/* ---- db/prepared.c: prepared transactions without an outcome ---- */
typedef struct prepared prepared_t;
int db_prepared_open(tdb_t *db);
void db_prepared_close(tdb_t *db);
/* Reserve xid for a prepare of b (TDB_ERR_EXISTS if taken): the entry
 * holds a copy of the WAL record, not yet listed, relogged or checked. */
int db_prepared_reserve(tdb_t *db, slice_t xid, tdb_batch_t *b, bool full_sync, prepared_t **out);
/* Drop a reservation whose prepare failed. */
void db_prepared_unreserve(tdb_t *db, prepared_t *p);
/* The write leader, after p's record reached the WAL: a prepare becomes
 * listed and its keys conflict; a commit marker ends the entry. */
void db_prepared_logged(tdb_t *db, prepared_t *p, bool prepare);
/* Replay of a prepare record: list it (replacing a relogged copy). */
int db_prepared_recovered(tdb_t *db, const batch_txn_rec_t *r, slice_t payload);
/* Replay of a commit or rollback marker: the entry (NULL if unknown). */
prepared_t *db_prepared_find(tdb_t *db, slice_t xid);
void db_prepared_remove(tdb_t *db, prepared_t *p);
/* The entries of p as a rep numbered seq (recovery of a commit marker). */
int db_prepared_rep(const prepared_t *p, uint64_t seq, buf_t *out);
uint32_t db_prepared_count_entries(const prepared_t *p);
/* Write every listed prepare record into the new WAL w and sync it (wal_mu
 * held, at rotation; or w not yet published): old WALs never hold the only
 * copy. */
int db_prepared_relog_locked(tdb_t *db, wal_writer_t *w);
/* Claim the listed entry of xid for a commit or rollback (TDB_ERR_NOT_FOUND,
 * or TDB_ERR_BUSY if being resolved or, for !attached callers, owned by a
 * live handle); db_prepared_end_resolve gives it back after a failure. */
int db_prepared_begin_resolve(tdb_t *db, slice_t xid, bool attached, prepared_t **out);
void db_prepared_end_resolve(tdb_t *db, prepared_t *p);
/* A family it writes syncs fully: its markers are synced too. */
bool db_prepared_full_sync(const prepared_t *p);
/* The xids of the listed entries, lenprefixed, into out; *n of them. */
int db_prepared_list(tdb_t *db, buf_t *out, int *n);

/* ---- db/state.c: the sticky error, wake-ups, file lifetimes ---- */
/* Enter the sticky error state and wake all waiters (mu held). */
void db_set_bg_error_locked(tdb_t *db, int rc);
/* Wait on cv (mu held) for at most us microseconds. */
void db_cond_wait_us(pthread_cond_t *cv, pthread_mutex_t *mu, uint64_t us);
void db_maybe_schedule(tdb_t *db); /* under mu: wake workers if work exists */
uint64_t db_new_file_number(void *ctx);
void db_file_obsolete(void *ctx, uint64_t number);
/* Delete WAL files no family needs (caller holds mu, after manifest write). */
void db_delete_obsolete_wals(tdb_t *db);
/* Delete every WAL file numbered below min (mu held). */
void db_delete_wals_below(tdb_t *db, uint64_t min);
/* Snapshot list copy (under mu) for table writers; caller frees. */
int db_snapshot_list(tdb_t *db, uint64_t **out, int *n);

/* ---- db/cf.c: family objects, superversions, the manifest of them all ---- */
int cf_new(tdb_t *db, uint32_t id, const char *name, const tdb_cf_config_t *cfg,
           version_t *v, uint64_t log_number, tdb_cf_t **out);
void cf_free(tdb_cf_t *cf);
/* Drop a dropped family's memtables and version (mu held). */
void cf_release_data(tdb_cf_t *cf);
int db_add_cf(tdb_t *db, uint32_t id, const char *name, const tdb_cf_config_t *cfg,
              version_t *v, uint64_t log_number, tdb_cf_t **out);
/* Replace the family's superversion from its current state (under mu). */
int cf_install_sv(tdb_cf_t *cf);
superversion_t *cf_get_sv(tdb_cf_t *cf);
void sv_unref(superversion_t *sv);
/* Build a manifest of every live family (under mu); versions referenced. */
int db_build_manifest(tdb_t *db, manifest_t *m);
/* Write the manifest of the current state (caller holds manifest_mu and mu). */
int db_write_manifest_locked(tdb_t *db);

/* ---- db/write_apply.c ---- */
/* Batches below this many entries go in batch order through a serial hint
 * (leader and recovery only); larger ones are sorted, and inserted by their
 * own writer thread in a group (db/write_group.c). */
#define SMALL_BATCH_ENTRIES 16
/* Apply one decoded batch to the memtables (recovery and write path). */
int db_apply_batch(tdb_t *db, slice_t rep, uint64_t min_log_for_cf_skip);
/* The same by a direct writer, concurrently with others (its thread's hint). */
int db_apply_batch_direct(tdb_t *db, slice_t rep);

/* ---- db/switch.c: memtable switch and WAL rotation ---- */
/* Rotate the WAL (sync old, open new) under mu by the write leader or open. */
int db_rotate_wal(tdb_t *db);
/* After a WAL append or fsync ran out of space: continue in a fresh log
 * (mu held, as leader or exclusive writer); a log whose fsync failed is
 * replaced by a relog of the memtables (db/switch.c). */
int db_resume_wal_after_nospace(tdb_t *db);
/* The current WAL's fsync ran out of space: it needs a relog (mu held). */
bool db_wal_failed_full_locked(tdb_t *db);
/* Move cf's active memtable to the immutable queue (under mu, as leader). */
int db_switch_memtable(tdb_t *db, tdb_cf_t *cf);
/* Append records to the WAL, fsync if `sync` (wal_mu held); *nospace: out
 * of space, nothing written (invariant 7). */
int db_wal_append_locked(tdb_t *db, const slice_t *payloads, int n, bool sync, bool dirty, bool *nospace);
/* fsync the WAL after a group already visible (invariant 2b; wal_mu
 * held): every error is the caller's sticky error, out of space too. */
int db_wal_sync_locked(tdb_t *db);

/* ---- db/bg.c: background work (flush, compaction, the WAL fsync thread) ---- */
/* Background fsync of the WAL for families in TDB_SYNC_INTERVAL mode. */
void *db_sync_thread(void *arg);
int db_start_background(tdb_t *db);
void db_stop_background(tdb_t *db);
/* Flush one memtable synchronously to level 1 (recovery); adds to edit. */
int db_write_level1(tdb_t *db, tdb_cf_t *cf, memtable_t *m, version_edit_t *edit);
/* Flush cf's oldest immutable memtable in this thread (mu held;
 * cf->flushing set by the caller): tdb_flush while work is paused. */
void db_flush_oldest(tdb_t *db, tdb_cf_t *cf);
/* Compact cf down to its last non-empty level in this thread (tdb_compact). */
int db_compact_cf(tdb_t *db, tdb_cf_t *cf);
/* Push the files meeting [*lo, *hi] (NULL: open end) down level by level
 * to the last level of cf (tdb_compact_range); waits for compactions that
 * hold an input. */
int db_compact_cf_range(tdb_t *db, tdb_cf_t *cf, const slice_t *lo, const slice_t *hi);

/* ---- db/write_stall.c: back-pressure ---- */
/* Memory of the memtables (mu held). */
typedef struct mem_state {
    uint64_t total;      /* every memtable, active and immutable */
    uint64_t active;     /* active memtables only */
    tdb_cf_t *largest;   /* largest non-empty active one that may switch */
    double max_pressure; /* highest pressure of any family */
} mem_state_t;
/* Make room for the group self..*last (mu held, as leader, gate closed):
 * switches, delays, stalls; *st: the memtables as it leaves them. */
int db_make_room(tdb_t *db, writer_t *self, writer_t **last, int *n, tdb_cf_t **cfs, int ncfs, mem_state_t *st);
/* May direct writes go ahead after db_make_room, and with how much room. */
void db_direct_refresh(tdb_t *db, const mem_state_t *st);

/* ---- db/write_group.c ---- */
/* Queue w, wait, and commit its group if it leads (mu held on entry, not
 * held on return). */
void db_group_write(tdb_t *db, writer_t *w);
void db_enter_exclusive(tdb_t *db, writer_t *w);
void db_exit_exclusive(tdb_t *db, writer_t *w);

/* ---- db/write_direct.c ---- */
/* Write b through the direct lane; *queued: it must take the queue instead. */
int db_write_direct(tdb_t *db, tdb_batch_t *b, tdb_cf_t **cfs, int ncfs, bool interval, bool *queued);

/* ---- db/write.c: db_write_bounded (db/db_txn.h) ---- */

/* ---- db/write_prepared.c: db_prepare, db_commit_prepared, db_rollback_prepared
 * (db/db_txn.h); tdb_recover_prepared, tdb_commit_prepared, tdb_rollback_prepared ---- */

/* ---- db/manual.c: tdb_flush, tdb_compact; db/cf_api.c: tdb_create_cf, ... ---- */

/* ---- db/db_iter.c, db/read.c: the iterator and conflict-check functions of db/db_txn.h ---- */

/* ---- db/open.c: open, recovery, close ---- */
int db_recover(tdb_t *db, bool *created);

/* ---- db/checkpoint.c: tdb_checkpoint (public only) ---- */

#endif

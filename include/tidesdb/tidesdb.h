/*
 * TidesDB: an embeddable, durable, ordered key-value store (LSM tree).
 *
 * This is the whole public API. It is self-contained: it includes only
 * standard headers, and every handle is opaque.
 *
 * Conventions
 *  - Every function that can fail returns an int: TDB_OK (0) or a negative
 *    TDB_ERR_* code. tdb_strerror() names a code; tdb_last_error() gives a
 *    human-readable detail of the last error raised on the calling thread
 *    (file names, offsets), valid until the next failing call on that thread.
 *  - Keys and values are byte strings (not NUL-terminated). Keys must be
 *    1..TDB_MAX_KEY_SIZE bytes; values 0..TDB_MAX_VALUE_SIZE bytes.
 *  - Memory returned to the caller (tdb_get values, tdb_list_cfs names) is
 *    released with tdb_free().
 *  - All handles are thread-safe except tdb_iter_t and tdb_batch_t, which
 *    belong to one thread at a time.
 */
#ifndef TIDESDB_H
#define TIDESDB_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* TDB_API marks the exported interface: the library is built with
 * -fvisibility=hidden, so libtidesdb.so exports exactly the functions
 * declared with it here and nothing of its internals. */
#ifndef TDB_API
#if defined(__GNUC__) || defined(__clang__)
#define TDB_API __attribute__((visibility("default")))
#else
#define TDB_API
#endif
#endif

#define TIDESDB_VERSION_MAJOR 0
#define TIDESDB_VERSION_MINOR 1
#define TIDESDB_VERSION_PATCH 0

#define TDB_MAX_KEY_SIZE   (64u * 1024u)          /* 64 KiB */
#define TDB_MAX_VALUE_SIZE (256u * 1024u * 1024u) /* 256 MiB */
#define TDB_MAX_CF_NAME    255                    /* bytes, without NUL */
#define TDB_MAX_LEVELS     8                      /* on-disk levels 1..7 */
/* Level numbers: TidesDB's level 1 (flushed tables, may overlap) is what
 * RocksDB and LevelDB call L0, level 2 their L1, and so on; "level 0" is the
 * queue of immutable memtables. docs/design/version.md, "Level names". */

/* ---------------------------------------------------------------------- */
/* Error codes: what a caller can act on.                                  */
/* ---------------------------------------------------------------------- */
enum {
    TDB_OK               = 0,
    TDB_ERR_NOT_FOUND    = -1,  /* key, column family or file absent       */
    TDB_ERR_IO           = -2,  /* the OS reported an I/O error            */
    TDB_ERR_CORRUPTION   = -3,  /* a checksum or format check failed       */
    TDB_ERR_BUSY         = -4,  /* back-pressure: retry later              */
    TDB_ERR_CONFLICT     = -5,  /* transaction conflict: retry the txn     */
    TDB_ERR_INVALID_ARG  = -6,  /* bad argument or misuse of the API       */
    TDB_ERR_LOCKED       = -7,  /* database is open in another process     */
    TDB_ERR_NOMEM        = -8,  /* out of memory                           */
    TDB_ERR_EXISTS       = -9,  /* already exists (column family, db)      */
    TDB_ERR_CLOSED       = -10, /* handle used after close/drop            */
    TDB_ERR_READ_ONLY    = -11, /* db in sticky error state after a failed */
                                /* sync; reads work, writes are refused    */
    TDB_ERR_NO_SPACE     = -12, /* disk full: writes refused until space   */
    TDB_ERR_DEADLOCK     = -13, /* lock wait would deadlock (txn victim)   */
    TDB_ERR_TIMEOUT      = -14, /* lock or stall wait timed out            */
    TDB_ERR_TOO_LARGE    = -15, /* key, value or transaction too large     */
    TDB_ERR_NOT_SUPPORTED= -16, /* option or operation not available       */
    TDB_ERR_ABORTED      = -17, /* wait cancelled by the caller            */
};

/* Write errors. A failed fsync of the WAL or MANIFEST, or any other write
 * I/O error, puts the database in a sticky error state: reads keep working,
 * every write (and flush, family change) fails with TDB_ERR_READ_ONLY until
 * it is closed and reopened; nothing is retried. Out of space is not sticky:
 * the write that meets it fails with TDB_ERR_NO_SPACE and is not applied;
 * flushes and compactions that meet it discard their output and retry with
 * a backoff (tdb_flush retries at once and returns TDB_ERR_NO_SPACE while it
 * fails); writes that would have to wait for them get TDB_ERR_NO_SPACE.
 * A WAL fsync that reports out of space is out of space too: when
 * acknowledged TDB_SYNC_NONE/INTERVAL writes were still unsynced, the log
 * is rewritten from the memtables into a new one before writes go on (and
 * tdb_sync returns TDB_ERR_NO_SPACE meanwhile). Once space is freed,
 * writes succeed again without reopening. Either way no acknowledged write
 * is lost (a power loss while the disk is full may still take the unsynced
 * suffix that NONE/INTERVAL allow). */

/* Static name of an error code ("not found", "corruption", ...). */
TDB_API const char *tdb_strerror(int code);
/* Detail of the last error raised on this thread ("" if none). */
TDB_API const char *tdb_last_error(void);

/* ---------------------------------------------------------------------- */
/* Configuration                                                           */
/* ---------------------------------------------------------------------- */
typedef enum {
    TDB_SYNC_NONE     = 0, /* WAL left in OS buffers: a crash may lose a
                              suffix of acknowledged writes (never a hole) */
    TDB_SYNC_INTERVAL = 1, /* a background thread fsyncs the WAL every
                              sync_interval_us: loses at most that window */
    TDB_SYNC_FULL     = 2, /* fsync before a write returns: nothing
                              acknowledged is lost                        */
} tdb_sync_mode_t;

typedef enum {
    TDB_COMPRESS_NONE   = 0,
    TDB_COMPRESS_SNAPPY = 1,
    TDB_COMPRESS_LZ4    = 2,
    TDB_COMPRESS_ZSTD   = 3,
} tdb_compression_t;

typedef enum {
    TDB_LOG_DEBUG = 0,
    TDB_LOG_INFO  = 1,
    TDB_LOG_WARN  = 2,
    TDB_LOG_ERROR = 3,
    TDB_LOG_FATAL = 4,
    TDB_LOG_NONE  = 99,
} tdb_log_level_t;

/* Per-column-family settings. tdb_cf_config_default() fills the defaults
 * written after each field. */
typedef struct tdb_cf_config {
    size_t   write_buffer_size;        /* memtable bytes before flush: 64 MiB */
    int      compression;              /* tdb_compression_t: TDB_COMPRESS_LZ4 */
    double   bloom_fpr;                /* bloom false-positive rate: 0.01;
                                          0 disables the filter */
    int      sync_mode;                /* tdb_sync_mode_t: TDB_SYNC_FULL */
    uint64_t sync_interval_us;         /* for TDB_SYNC_INTERVAL: 128000 */
    uint32_t block_size;               /* data block target bytes: 4096 */
    uint32_t value_threshold;          /* values >= this many bytes are stored
                                          apart from key blocks: 512 */
    int      l0_queue_stall_threshold; /* immutable memtables queued before
                                          writers wait: 10 */
    int      l1_file_count_trigger;    /* level-1 runs that start a
                                          compaction (a run: one flush's
                                          tables, several when its keys
                                          formed separate runs): 4 */
    int      level_size_ratio;         /* size ratio between levels: 10 */
    double   tombstone_density_trigger;/* tombstone share of a file that
                                          compacts it early: 0.7 */
    uint64_t tombstone_density_min_entries; /* ...if it has at least this
                                          many entries: 2048 */
} tdb_cf_config_t;

/* Database settings. tdb_config_default() fills the defaults. */
typedef struct tdb_config {
    int      create_if_missing;        /* 1 */
    int      error_if_exists;          /* 0 */
    size_t   block_cache_size;         /* bytes: 64 MiB (0 = no cache) */
    int      max_open_sstables;        /* open-table cache bound: 512 */
    int      flush_threads;            /* 2 */
    int      compaction_threads;       /* 2 */
    int      log_level;                /* tdb_log_level_t: TDB_LOG_INFO;
                                          messages go to <dir>/LOG */
    size_t   max_memory_usage;         /* bytes; 0 = half of what the process may use: physical RAM or its cgroup memory limit */
    int      unified_memtable;         /* 0: each family flushes at its own
                                          write_buffer_size and syncs per its
                                          sync_mode. 1: all families share one
                                          write buffer of the size below (they
                                          switch and flush together) and one
                                          sync mode. Either way one WAL holds
                                          every family, so a batch across
                                          families is atomic after a crash. */
    size_t   unified_memtable_write_buffer_size; /* 64 MiB */
    int      unified_memtable_sync_mode;         /* TDB_SYNC_FULL */
    int64_t  write_stall_timeout_ms;   /* default bound on how long one write
                                          (or commit) waits out
                                          back-pressure before it fails with
                                          TDB_ERR_BUSY; 0 = no bound (only
                                          the no-progress rule below): 0 */
    int      mmap_reads;               /* 1: a table block read once with
                                          pread is read again (after the
                                          block cache dropped it) through a
                                          read-only mapping of the file: no
                                          system call, no copy. Mapped pages
                                          are the OS page cache, but count
                                          in the process's RSS. A file whose
                                          mapped reads fault to the disk
                                          goes back to pread for a while
                                          (one request per block, not one
                                          per page). 0: pread only: 1 */
    int      l1_idle_file_trigger;     /* level-1 runs that start a
                                          family's compaction once writes
                                          stop (its memtables empty, no
                                          write to the database since its
                                          last memtable switch, or a
                                          tdb_wait_idle caller), if fewer
                                          than its l1_file_count_trigger:
                                          level-1 runs overlap, so each
                                          one is a sorted run every seek
                                          and scan merges. 0: the family's
                                          trigger applies idle too: 2 */
    int      release_before_sync;      /* 1: a commit group that syncs the
                                          WAL is applied and made visible
                                          first, the row locks of its
                                          transactions are released, and
                                          then the log is synced; each
                                          commit still returns only once
                                          it is durable (InnoDB's order: a
                                          lock waiter goes on during the
                                          fsync). Readers may then see a
                                          commit that a crash loses before
                                          it was acknowledged (a commit
                                          that depends on it is logged
                                          after it, so it is lost too),
                                          and a failed fsync is sticky for
                                          the database even when the disk
                                          is only full (the writes were
                                          already visible). 0: a commit is
                                          visible and releases its locks
                                          after its sync: 0 */
    tdb_cf_config_t default_cf;        /* settings of the "default" family */
} tdb_config_t;

TDB_API void tdb_config_default(tdb_config_t *cfg);
TDB_API void tdb_cf_config_default(tdb_cf_config_t *cfg);

/* ---------------------------------------------------------------------- */
/* Database and column families                                            */
/* ---------------------------------------------------------------------- */
typedef struct tdb tdb_t;
typedef struct tdb_cf tdb_cf_t;
typedef struct tdb_batch tdb_batch_t;
typedef struct tdb_iter tdb_iter_t;
typedef struct tdb_snapshot tdb_snapshot_t;

/* Open (creating if allowed) the database in directory `path`. cfg may be
 * NULL for defaults. Only one process may hold a database open:
 * TDB_ERR_LOCKED otherwise. Replays the write-ahead log after a crash. */
TDB_API int tdb_open(const char *path, const tdb_config_t *cfg, tdb_t **out);

/* Flush nothing, wait for background work to stop, release every
 * resource. Handles derived from db (cf, iterators, snapshots) must not be
 * used afterwards. Data already acknowledged stays durable per its mode;
 * unflushed memtables are recovered from the WAL on the next open. The
 * handle is released whatever it returns: TDB_ERR_NO_SPACE if the WAL
 * could not be synced because the disk is still full (writes acknowledged
 * since the last sync are then not durable; the next open replays what
 * the log kept), the sticky error if there was one. */
TDB_API int tdb_close(tdb_t *db);

/* The "default" column family always exists and cannot be dropped. */
#define TDB_DEFAULT_CF "default"

/* Create a column family (cfg NULL = defaults). TDB_ERR_EXISTS if present. */
TDB_API int tdb_create_cf(tdb_t *db, const char *name, const tdb_cf_config_t *cfg,
                          tdb_cf_t **out);
/* Drop a column family and delete its data. Its handle becomes invalid
 * (TDB_ERR_CLOSED on use) once the last iterator on it is destroyed. */
TDB_API int tdb_drop_cf(tdb_t *db, const char *name);
/* Look up a column family handle by name: TDB_ERR_NOT_FOUND if absent. */
TDB_API int tdb_get_cf(tdb_t *db, const char *name, tdb_cf_t **out);
/* Names of all column families; free each name and the array with
 * tdb_free(). */
TDB_API int tdb_list_cfs(tdb_t *db, char ***names, size_t *count);
/* Name and settings of a column family. */
TDB_API const char *tdb_cf_name(const tdb_cf_t *cf);
TDB_API int tdb_cf_get_config(const tdb_cf_t *cf, tdb_cf_config_t *out);

TDB_API void tdb_free(void *ptr);

/* ---------------------------------------------------------------------- */
/* Writes                                                                  */
/* ---------------------------------------------------------------------- */
/* A batch is applied atomically, across column families, in order: later
 * operations on the same key win. */
TDB_API int  tdb_batch_create(tdb_batch_t **out);
TDB_API void tdb_batch_destroy(tdb_batch_t *b);
TDB_API void tdb_batch_clear(tdb_batch_t *b);
/* ttl_seconds > 0: the key reads as absent once that many seconds pass. */
TDB_API int  tdb_batch_put(tdb_batch_t *b, tdb_cf_t *cf, const void *key, size_t klen,
                           const void *val, size_t vlen, int64_t ttl_seconds);
TDB_API int  tdb_batch_delete(tdb_batch_t *b, tdb_cf_t *cf, const void *key,
                              size_t klen);
/* Delete every key k with start <= k < end (bytewise; start must sort
 * before end, else TDB_ERR_INVALID_ARG; both 1..TDB_MAX_KEY_SIZE bytes).
 * Costs one entry whatever the range holds: gets and iterators (also of
 * transactions) stop seeing the keys at once, snapshots taken before keep
 * seeing them, and compaction reclaims the space later. Keys written after
 * it (later in the batch, or later batches) are not affected. */
TDB_API int  tdb_batch_delete_range(tdb_batch_t *b, tdb_cf_t *cf, const void *start,
                                    size_t slen, const void *end, size_t elen);
/* Delete a key that was written (put) exactly once since it was last
 * deleted, or never: reads treat it as a delete, and compaction drops it
 * together with that one put as soon as they meet, instead of keeping a
 * tombstone down to the last level. Meant for keys written once, such as
 * secondary-index entries. If the key was put more than once since its
 * last delete (or the put overwrote a TTL value, etc.) the result is
 * undefined: an older put may reappear. Never mix it with tdb_delete or
 * a second put of the same key before the single delete. */
TDB_API int  tdb_batch_single_delete(tdb_batch_t *b, tdb_cf_t *cf, const void *key,
                                     size_t klen);
TDB_API size_t tdb_batch_count(const tdb_batch_t *b);

/* Apply a batch. Durable when it returns per the strictest sync mode among
 * the batch's column families.
 * Back-pressure: when flushes and compactions fall behind (immutable
 * memtables at l0_queue_stall_threshold, level 1 far over its trigger, or
 * memtables over the memory budget) writes wait for them. A wait fails with
 * TDB_ERR_BUSY, and nothing of the write is applied, once it has lasted
 * the write's stall timeout (tdb_write_options_t, else the config's
 * write_stall_timeout_ms; counted from the call), or whenever 30 s pass
 * without any flush or compaction finishing. Retry later. */
TDB_API int tdb_write(tdb_t *db, tdb_batch_t *b);

typedef struct tdb_write_options {
    int64_t stall_timeout_ms; /* back-pressure wait bound: 0 = the config's
                                 write_stall_timeout_ms, < 0 = no bound */
} tdb_write_options_t;
TDB_API void tdb_write_options_default(tdb_write_options_t *o);
/* tdb_write with options (opts NULL = defaults). */
TDB_API int tdb_write_opt(tdb_t *db, tdb_batch_t *b, const tdb_write_options_t *opts);
TDB_API int tdb_put(tdb_t *db, tdb_cf_t *cf, const void *key, size_t klen,
                    const void *val, size_t vlen, int64_t ttl_seconds);
TDB_API int tdb_delete(tdb_t *db, tdb_cf_t *cf, const void *key, size_t klen);
/* Make every write acknowledged so far durable (fsync the WAL), whatever
 * the column families' sync modes: e.g. after DDL in NONE mode. Covers
 * every write, commit and COMMIT marker (tdb_commit_options_t.no_sync) whose
 * call returned before tdb_sync was called. */
TDB_API int tdb_sync(tdb_t *db);
/* One-operation batches of tdb_batch_delete_range / tdb_batch_single_delete. */
TDB_API int tdb_delete_range(tdb_t *db, tdb_cf_t *cf, const void *start, size_t slen,
                             const void *end, size_t elen);
TDB_API int tdb_single_delete(tdb_t *db, tdb_cf_t *cf, const void *key, size_t klen);

/* ---------------------------------------------------------------------- */
/* Reads                                                                   */
/* ---------------------------------------------------------------------- */
/* A snapshot pins a point in time: reads through it never see later
 * writes, and the data it can see is kept until it is released. */
TDB_API tdb_snapshot_t *tdb_snapshot_create(tdb_t *db);
TDB_API void tdb_snapshot_release(tdb_t *db, tdb_snapshot_t *snap);
TDB_API uint64_t tdb_snapshot_sequence(const tdb_snapshot_t *snap);

/* Point lookup (snap NULL = latest). On TDB_OK *val is a malloc'd copy
 * (release with tdb_free) of *vlen bytes; TDB_ERR_NOT_FOUND if absent,
 * deleted or expired. On any failure *val is NULL and *vlen 0. */
TDB_API int tdb_get(tdb_t *db, tdb_cf_t *cf, const tdb_snapshot_t *snap,
                    const void *key, size_t klen, void **val, size_t *vlen);

/* Approximate number of entries with key in [lo, hi) for query planning:
 * lo_len 0 = from the first key, hi NULL = to the last. Every stored
 * version and tombstone counts, so it can exceed the live keys. No scan:
 * the memtables' upper skip-list levels and the tables' in-memory block
 * indexes (files inside the range count whole; a range within two blocks
 * of a table is counted in them). Exact below 64 memtable entries;
 * otherwise typically within 2x. An empty or inverted range is 0. */
TDB_API int tdb_approximate_count(tdb_t *db, tdb_cf_t *cf, const void *lo, size_t lo_len,
                                  const void *hi, size_t hi_len, uint64_t *count);
/* The same with a bound the caller knows, such as one key per integer of a
 * unique key's range: the answer is at most max, and once the tables alone
 * reach it the memtables are not walked. */
TDB_API int tdb_approximate_count_max(tdb_t *db, tdb_cf_t *cf, const void *lo, size_t lo_len,
                                      const void *hi, size_t hi_len, uint64_t max, uint64_t *count);

/* Iterators read a consistent point-in-time view of one column family
 * (snap NULL = the moment of creation). */
TDB_API int  tdb_iter_create(tdb_t *db, tdb_cf_t *cf, const tdb_snapshot_t *snap,
                             tdb_iter_t **out);
TDB_API void tdb_iter_destroy(tdb_iter_t *it);
TDB_API void tdb_iter_seek_to_first(tdb_iter_t *it);
TDB_API void tdb_iter_seek_to_last(tdb_iter_t *it);
/* First key >= key. */
TDB_API void tdb_iter_seek(tdb_iter_t *it, const void *key, size_t klen);
/* Last key <= key. */
TDB_API void tdb_iter_seek_for_prev(tdb_iter_t *it, const void *key, size_t klen);
TDB_API void tdb_iter_next(tdb_iter_t *it);
TDB_API void tdb_iter_prev(tdb_iter_t *it);
TDB_API int  tdb_iter_valid(const tdb_iter_t *it);
/* Valid until the iterator moves or is destroyed. */
TDB_API const void *tdb_iter_key(const tdb_iter_t *it, size_t *klen);
TDB_API const void *tdb_iter_value(const tdb_iter_t *it, size_t *vlen);
/* TDB_OK, or the error that made the iterator invalid (e.g. corruption). */
TDB_API int  tdb_iter_status(const tdb_iter_t *it);

/* ---------------------------------------------------------------------- */
/* Transactions                                                            */
/* ---------------------------------------------------------------------- */
/* Multi-version transactions across column families. Writes are buffered
 * in the transaction and applied atomically at commit (one WAL record).
 * Isolation levels (see docs/design/txn.md for the anomaly table):
 *  - READ_UNCOMMITTED: every read sees the latest committed data (writes of
 *    other transactions are private until commit, so nothing uncommitted
 *    is ever visible: it behaves as READ_COMMITTED).
 *  - READ_COMMITTED: every read sees the latest committed data.
 *  - REPEATABLE_READ: reads see a snapshot taken at begin; no conflict
 *    check at commit (last writer wins, as InnoDB's non-locking reads).
 *  - SNAPSHOT: snapshot reads; first committer wins: commit fails with
 *    TDB_ERR_CONFLICT if a key this transaction wrote was committed by
 *    another transaction after the snapshot.
 *  - SERIALIZABLE: SNAPSHOT plus validation of everything read (keys and
 *    scanned ranges): commit fails with TDB_ERR_CONFLICT if any of it
 *    changed after the snapshot. Read-only transactions are validated too.
 * A transaction that failed to commit (conflict) is finished: reset or
 * free it and retry. Except back-pressure: a commit that returns
 * TDB_ERR_BUSY (its stall_timeout_ms or the no-progress rule, see
 * tdb_write) applied nothing and leaves the transaction active, with all
 * its writes, savepoints, snapshot and locks: call tdb_txn_commit again
 * (e.g. once background work catches up) or roll it back. With pessimistic = 1, writes and get_for_update take
 * row locks (exclusive/shared) held until commit or rollback; waits time
 * out (TDB_ERR_TIMEOUT), deadlocks abort the requester (TDB_ERR_DEADLOCK),
 * and tdb_txn_cancel_wait() wakes a waiter (TDB_ERR_ABORTED). */
typedef enum {
    TDB_ISO_READ_UNCOMMITTED = 0,
    TDB_ISO_READ_COMMITTED   = 1,
    TDB_ISO_REPEATABLE_READ  = 2,
    TDB_ISO_SNAPSHOT         = 3,
    TDB_ISO_SERIALIZABLE     = 4,
} tdb_isolation_t;

typedef struct tdb_txn_options {
    int     isolation;        /* tdb_isolation_t: TDB_ISO_SNAPSHOT */
    int     read_only;        /* 1: writes fail with TDB_ERR_INVALID_ARG */
    int     pessimistic;      /* 1: row locks (see above): 0 */
    int64_t lock_timeout_ms;  /* lock wait bound: 5000 */
    size_t  max_bytes;        /* buffered write bytes: 0 = 1/4 of the
                                 database's memory budget */
    int64_t stall_timeout_ms; /* back-pressure wait bound of each commit
                                 call (see tdb_write): 0 = the config's
                                 write_stall_timeout_ms, < 0 = no bound */
} tdb_txn_options_t;

typedef struct tdb_txn tdb_txn_t;

TDB_API void tdb_txn_options_default(tdb_txn_options_t *o);
/* Begin a transaction (opts NULL = defaults). */
TDB_API int  tdb_txn_begin(tdb_t *db, const tdb_txn_options_t *opts, tdb_txn_t **out);
TDB_API int  tdb_txn_put(tdb_txn_t *t, tdb_cf_t *cf, const void *key, size_t klen,
                         const void *val, size_t vlen, int64_t ttl_seconds);
TDB_API int  tdb_txn_delete(tdb_txn_t *t, tdb_cf_t *cf, const void *key, size_t klen);
/* Buffered single delete (see tdb_batch_single_delete for the contract);
 * conflict-checked like a delete. */
TDB_API int  tdb_txn_single_delete(tdb_txn_t *t, tdb_cf_t *cf, const void *key,
                                   size_t klen);
/* Read through the transaction: its own writes first, then the database
 * at the isolation level's snapshot. */
TDB_API int  tdb_txn_get(tdb_txn_t *t, tdb_cf_t *cf, const void *key, size_t klen,
                         void **val, size_t *vlen);
/* As tdb_txn_get, and lock the key (pessimistic: shared or exclusive row
 * lock; optimistic: the key joins the conflict check of SNAPSHOT). */
TDB_API int  tdb_txn_get_for_update(tdb_txn_t *t, tdb_cf_t *cf, const void *key,
                                    size_t klen, int exclusive, void **val,
                                    size_t *vlen);
/* Giving back the row locks of a locking read that used no row, as InnoDB
 * does at READ COMMITTED: the row was gone once its lock was granted (a
 * concurrent delete), or the caller's own condition rejects it. Take a
 * mark before the read; tdb_txn_unlock_since then releases the locks the
 * transaction took after it (a lock upgraded after it goes back to the
 * mode held before). Refused with TDB_ERR_INVALID_ARG, releasing nothing:
 * above TDB_ISO_READ_COMMITTED (there a read keeps its locks), after a
 * write or a savepoint made since the mark, or a mark from another
 * transaction or an earlier run of this one. Optimistic transactions hold
 * no locks: nothing to release. */
typedef struct tdb_lock_mark {
    size_t   locks;  /* lock records held at the mark */
    uint64_t writes; /* writes and savepoints before the mark */
    uint64_t run;    /* the transaction's run (tdb_txn_reset starts one) */
} tdb_lock_mark_t;
TDB_API tdb_lock_mark_t tdb_txn_lock_mark(const tdb_txn_t *t);
TDB_API int  tdb_txn_unlock_since(tdb_txn_t *t, const tdb_lock_mark_t *mark);
/* Pessimistic transactions only (else TDB_ERR_INVALID_ARG): lock the keys
 * k of cf with lo <= k < hi (k <= hi with TDB_RANGE_HI_INCLUSIVE; hi NULL:
 * no upper bound; lolen 0: from the first key) until commit or rollback
 * (or rolling back past the savepoint before it; a prepared transaction
 * keeps it). While held, another transaction's write of a key inside it
 * (and its get_for_update exclusive) waits, as for a row lock (same
 * timeout, deadlock detection, tdb_txn_cancel_wait, tdb_list_lock_waits).
 * Range locks never block each other nor shared row locks, like InnoDB's
 * gap locks; TDB_RANGE_EXCLUSIVE is the mode reported. The call first
 * waits for rows already write-locked inside the range by others (and
 * then holds a shared lock on them). *range_id (if not NULL) names the
 * lock for tdb_txn_narrow_range. Errors as tdb_txn_get_for_update. */
#define TDB_RANGE_EXCLUSIVE    1
#define TDB_RANGE_HI_INCLUSIVE 2
TDB_API int  tdb_txn_lock_range(tdb_txn_t *t, tdb_cf_t *cf, const void *lo, size_t lolen,
                                const void *hi, size_t hilen, int flags, uint64_t *range_id);
/* Narrow t's range lock range_id to its intersection with [lo, hi] (hi
 * inclusive with TDB_RANGE_HI_INCLUSIVE; lo NULL or hi NULL: that bound
 * unchanged; never widens): a scan that locked up to its end bound and
 * stopped early keeps only what it read. A lock no longer held (rolled
 * back to a savepoint): nothing to do. */
TDB_API int  tdb_txn_narrow_range(tdb_txn_t *t, uint64_t range_id, const void *lo, size_t lolen,
                                  const void *hi, size_t hilen, int flags);
/* Iterator over the transaction's view: its own writes merged with the
 * snapshot. Valid until the transaction ends. */
TDB_API int  tdb_txn_iter_create(tdb_txn_t *t, tdb_cf_t *cf, tdb_iter_t **out);
TDB_API int  tdb_txn_commit(tdb_txn_t *t);
/* Options of tdb_txn_commit_opt. */
typedef struct tdb_commit_options {
    int no_sync; /* prepared t only (else TDB_ERR_INVALID_ARG): its COMMIT
                    marker is written to the WAL but not fsynced, whatever
                    the families' sync modes. Gives up: until the next WAL
                    sync (tdb_sync, any synced write or prepare, a WAL
                    rotation) a power loss or OS crash may lose the marker;
                    the transaction is then PREPARED again after the next
                    open (tdb_recover_prepared lists it, resolve it by xid),
                    never partly applied. A crash of the process alone loses
                    nothing. For a coordinator whose own synced log decides
                    the outcome (MariaDB's binary log): it calls tdb_sync
                    before forgetting the outcomes logged so far. */
} tdb_commit_options_t;
TDB_API void tdb_commit_options_default(tdb_commit_options_t *o);
/* tdb_txn_commit with options (opts NULL = defaults). */
TDB_API int  tdb_txn_commit_opt(tdb_txn_t *t, const tdb_commit_options_t *opts);
TDB_API int  tdb_txn_rollback(tdb_txn_t *t);
/* Named savepoints nest; rolling back to one undoes later writes and
 * releases locks taken after it; releasing forgets it. */
TDB_API int  tdb_txn_savepoint(tdb_txn_t *t, const char *name);
TDB_API int  tdb_txn_rollback_to_savepoint(tdb_txn_t *t, const char *name);
TDB_API int  tdb_txn_release_savepoint(tdb_txn_t *t, const char *name);
/* Begin again with the same handle after commit or rollback. */
TDB_API int  tdb_txn_reset(tdb_txn_t *t, const tdb_txn_options_t *opts);
/* Roll back if active and free. */
TDB_API void tdb_txn_free(tdb_txn_t *t);
/* Change the lock wait bound of t's later lock requests (ms >= 0; 0 = do
 * not wait: a held lock fails the request with TDB_ERR_TIMEOUT at once).
 * For a per-statement bound such as SQL's NOWAIT, WAIT n or SKIP LOCKED.
 * TDB_ERR_INVALID_ARG if ms < 0. */
TDB_API int  tdb_txn_set_lock_timeout(tdb_txn_t *t, int64_t ms);
/* Wake a lock wait of t from another thread (it returns TDB_ERR_ABORTED);
 * if t is not waiting, its next wait returns so at once. A cancel still
 * pending when t begins again (tdb_txn_reset) is dropped: it was meant for
 * the run that ended. */
TDB_API void tdb_txn_cancel_wait(tdb_txn_t *t);
/* The transaction's id: unique among the transactions of the database
 * since it was opened (a new one after each begin or reset). */
TDB_API uint64_t tdb_txn_id(const tdb_txn_t *t);
/* One row-lock or range-lock wait going on: a waiter queued on (cf_name,
 * key) and one transaction holding that lock (a waiter blocked by several holders is
 * reported once per holder). Valid only during the callback. */
typedef struct tdb_lock_wait {
    uint64_t    waiter_txn_id;    /* tdb_txn_id of the waiting transaction */
    uint64_t    holder_txn_id;    /* ...of a transaction holding the lock */
    const char *cf_name;
    const void *key;
    size_t      klen;
    int         waiter_exclusive; /* mode asked (1 = exclusive) */
    int         holder_exclusive; /* mode held */
    /* is_range: the holder holds a range lock from key (inclusive) to hi
     * (NULL: unbounded; inclusive if hi_inclusive) and the waiter is
     * writing a key inside it. */
    int         is_range;
    const void *hi;
    size_t      hilen;
    int         hi_inclusive;
} tdb_lock_wait_t;
typedef int (*tdb_lock_wait_fn)(void *ctx, const tdb_lock_wait_t *w);
/* Call fn for each current (waiter, holder) pair of the pessimistic row
 * locks, from a copy taken first (fn runs with no library lock held and
 * may call the library); non-zero from fn stops. Returns the number of
 * pairs reported (>= 0) or an error. */
TDB_API int tdb_list_lock_waits(tdb_t *db, tdb_lock_wait_fn fn, void *ctx);
/* Being told, synchronously, that a pessimistic transaction is about to
 * wait for a row lock, and behind whom (for an embedder that orders
 * transactions itself: MariaDB's parallel replication kills a holder that
 * must commit after the waiter, see docs/design/locks.md "Wait hook").
 * blocker_holds: 1 = the blocker holds the lock, 0 = it is queued ahead
 * of the waiter (it will hold the lock first). The user pointers are what
 * tdb_txn_set_user gave each transaction (NULL if nothing). */
typedef struct tdb_lock_block {
    uint64_t waiter_txn_id;
    uint64_t blocker_txn_id;
    void    *waiter_user;
    void    *blocker_user;
    int      blocker_holds;
} tdb_lock_block_t;
typedef void (*tdb_lock_wait_hook_fn)(void *ctx, const tdb_lock_block_t *b);
/* Install (fn != NULL) or remove the database's lock-wait hook. Before a
 * request sleeps (after its deadlock check passed) fn is called once per
 * transaction ahead of it: every other holder of the lock, then every
 * waiter queued ahead, nearest first. It runs on the waiting thread with
 * that lock's internal stripe mutex held, so no blocker can release the
 * lock (or end) during the call and its user pointer stays valid; fn must
 * therefore be quick, must call no tdb_* function other than
 * tdb_txn_cancel_wait, and must not wait for anything a thread inside the
 * library may hold. A call already running may finish after the hook was
 * replaced. Requests that need no wait never call it. */
TDB_API int tdb_set_lock_wait_hook(tdb_t *db, tdb_lock_wait_hook_fn fn, void *ctx);
/* An opaque pointer of the embedder's, reported as waiter_user or
 * blocker_user by the lock-wait hook; kept across tdb_txn_reset. Set it
 * from the transaction's own thread, while it does not wait. */
TDB_API void  tdb_txn_set_user(tdb_txn_t *t, void *user);
TDB_API void *tdb_txn_user(const tdb_txn_t *t);
/* Sequence number of the transaction's snapshot. */
TDB_API uint64_t tdb_txn_snapshot_sequence(const tdb_txn_t *t);

/* Two-phase commit (XA; docs/design/txn.md, "Two-phase commit").
 * tdb_txn_prepare validates t as its commit would (TDB_ERR_CONFLICT: t is
 * finished, as after a failed commit) and logs its writes in the WAL as a
 * PREPARED record named by xid (1..1024 opaque bytes, unique among the
 * unresolved prepared transactions: TDB_ERR_EXISTS otherwise). The record
 * is synced if `durable` is non-zero or a family written is TDB_SYNC_FULL
 * (else per the sync mode, like a commit). A prepared transaction can no
 * longer fail a conflict check: nothing it wrote is visible yet, its keys
 * stay locked (its row locks if pessimistic; for every transaction, a
 * conflicting transactional write, locking read or commit-time check of
 * another transaction fails with TDB_ERR_CONFLICT; plain tdb_put is not
 * checked), and only tdb_txn_commit / tdb_txn_commit_opt (a small COMMIT
 * marker; the writes become visible with new sequence numbers) and
 * tdb_txn_rollback (a ROLLBACK marker) are accepted; other calls return TDB_ERR_INVALID_ARG.
 * A commit that fails (I/O, out of space, a dropped family) leaves t
 * prepared: retry or roll back. TDB_ERR_BUSY from
 * back-pressure leaves t active (retry). Freeing a prepared t, closing the
 * database or a crash leaves the transaction prepared: after the next open
 * tdb_recover_prepared lists it and tdb_commit_prepared /
 * tdb_rollback_prepared resolve it by xid. */
TDB_API int tdb_txn_prepare(tdb_txn_t *t, const void *xid, size_t xid_len, int durable);
/* Called with each prepared transaction's xid; non-zero stops the listing. */
typedef int (*tdb_prepared_fn)(void *ctx, const void *xid, size_t xid_len);
/* List the unresolved prepared transactions (recovered ones, and those of
 * live handles); returns how many there are (>= 0) or an error. */
TDB_API int tdb_recover_prepared(tdb_t *db, tdb_prepared_fn fn, void *ctx);
/* Commit / roll back the prepared transaction xid: TDB_ERR_NOT_FOUND if
 * none, TDB_ERR_BUSY while a live handle owns it (resolve it through the
 * handle) or another call is resolving it. Durable per the sync mode of
 * the families it wrote. */
TDB_API int tdb_commit_prepared(tdb_t *db, const void *xid, size_t xid_len);
TDB_API int tdb_rollback_prepared(tdb_t *db, const void *xid, size_t xid_len);

/* ---------------------------------------------------------------------- */
/* Maintenance and statistics                                              */
/* ---------------------------------------------------------------------- */
/* Flush the memtables of cf (NULL = all families) to disk and wait. */
TDB_API int tdb_flush(tdb_t *db, tdb_cf_t *cf);
/* Compact cf (NULL = all) fully down its levels and wait. */
TDB_API int tdb_compact(tdb_t *db, tdb_cf_t *cf);
/* Flush cf, then push the table files holding keys in [lo, hi] (inclusive;
 * lo NULL: from the first key, hi NULL: to the last) down the levels to
 * cf's last level, merging them with what they overlap there, and wait.
 * Files outside the range stay where they are (a file that straddles a
 * bound moves whole). TDB_ERR_INVALID_ARG if lo > hi. */
TDB_API int tdb_compact_range(tdb_t *db, tdb_cf_t *cf, const void *lo, size_t lolen, const void *hi,
                              size_t hilen);
/* Wait until no flush or compaction is queued or running and the tree has
 * its idle shape (level-1 runs below l1_idle_file_trigger or, if that is 0
 * or larger, below l1_file_count_trigger). Returns TDB_ERR_BUSY at once while
 * background work is paused. */
TDB_API int tdb_wait_idle(tdb_t *db);
/* Pause background work (RocksDB's PauseBackgroundWork): waits for running
 * flushes and compactions to finish and starts no new ones until a matching
 * tdb_continue_background. Calls nest (a count). Meanwhile writes fill the
 * memtables and then meet back-pressure (TDB_ERR_BUSY after their stall
 * timeout); tdb_flush and tdb_compact still work, in the calling thread;
 * tdb_close works. Meant for tests and maintenance windows. */
TDB_API int tdb_pause_background(tdb_t *db);
/* Undo one pause; at zero, background work resumes. TDB_ERR_INVALID_ARG if
 * not paused. */
TDB_API int tdb_continue_background(tdb_t *db);

/* Checkpoint (online backup): write a consistent copy of the open database
 * into the directory `dir`, which must not exist or be empty, while writes,
 * flushes and compactions go on. The copy is the database as of one
 * sequence number, stored in *seq (seq may be NULL): every write numbered
 * up to it, in every column family, and none after (the sequence is that of
 * tdb_get_stats' last_sequence; tdb_open of the copy reports it too).
 * Open the copy with tdb_open like any database; from then on it and the
 * source are independent. Tables are hard links where the filesystem
 * allows (same filesystem) and copies otherwise; the write-ahead log is
 * copied up to that sequence, so writes not yet flushed are in the copy
 * whatever the sync mode; every file is synced. The copy is built in
 * "<dir>.checkpoint-tmp" and renamed to `dir` only when complete, so a
 * checkpoint interrupted by a crash or kill leaves no `dir`, and the next
 * checkpoint to `dir` removes the leftover. Writers wait only while the
 * state is captured (like a memtable switch). Errors leave nothing behind
 * and never affect the database:
 *  - TDB_ERR_EXISTS: dir exists and is not an empty directory;
 *  - TDB_ERR_LOCKED: another checkpoint into dir is running;
 *  - TDB_ERR_READ_ONLY: dir is on a read-only filesystem;
 *  - TDB_ERR_NO_SPACE: out of space (the partial copy is removed);
 *  - TDB_ERR_NOT_FOUND: dir's parent directory does not exist;
 *  - TDB_ERR_IO: any other failure the OS reports. */
TDB_API int tdb_checkpoint(tdb_t *db, const char *dir, uint64_t *seq);

typedef struct tdb_level_stats {
    uint64_t files;
    uint64_t bytes;
} tdb_level_stats_t;

typedef struct tdb_stats {
    /* Shape of the tree (one family, or summed over all for cf == NULL).
     * levels[0] is unused: level 1 holds freshly flushed files. */
    tdb_level_stats_t levels[TDB_MAX_LEVELS];
    uint64_t memtable_bytes;        /* active + immutable memtables */
    uint64_t immutable_memtables;   /* queued for flush */
    uint64_t flushes_pending;       /* ...of them not being flushed yet */
    uint64_t compactions_pending;   /* levels over their compaction trigger
                                       (level-1 file count, deeper levels'
                                       size targets) */
    uint64_t num_entries_estimate;  /* entries in memtables and files */
    /* Database-wide counters since open. */
    uint64_t block_cache_hits;
    uint64_t block_cache_misses;
    uint64_t block_cache_bytes;     /* bytes held by the block cache */
    uint64_t user_bytes_written;    /* key+value bytes accepted by writes */
    uint64_t wal_bytes_written;
    uint64_t flush_bytes_written;
    uint64_t compaction_bytes_read;
    uint64_t compaction_bytes_written;
    uint64_t flushes;
    uint64_t compactions;
    uint64_t stall_micros;          /* time writers spent delayed or stopped */
    uint64_t stall_max_micros;      /* longest single stop */
    uint64_t stalls;                /* times writers stopped (backlog full) */
    uint64_t slowdowns;             /* graduated delays applied */
    uint64_t stall_timeouts;        /* writes failed with TDB_ERR_BUSY
                                       after their stall timeout */
    uint64_t lock_waits;            /* row-lock requests that had to wait */
    uint64_t lock_deadlocks;        /* row-lock requests refused: deadlock */
    uint64_t lock_timeouts;         /* row-lock waits that timed out */
    uint64_t lock_wait_micros;      /* time spent in row-lock waits (every
                                       wait, granted or not) */
    uint64_t lock_wait_max_micros;  /* the longest single wait */
    int      background_paused;     /* tdb_pause_background count */
    uint64_t memory_budget;         /* max_memory_usage, resolved */
    uint64_t last_sequence;
    uint64_t wal_syncs;             /* fsyncs of the WAL since open (synced
                                       writes, tdb_sync, the interval thread,
                                       rotations) */
} tdb_stats_t;

/* cf NULL = whole database. Write amplification is
 * (wal + flush + compaction bytes written) / user bytes written. */
TDB_API int tdb_get_stats(tdb_t *db, tdb_cf_t *cf, tdb_stats_t *out);

#ifdef __cplusplus
}
#endif
#endif /* TIDESDB_H */

/*
 * testing/env_fault: a fault-injecting env_t wrapping another env (normally
 * env_posix()). Used by tests, the stress tool and the crash loop; never by
 * the engine itself. The model follows LevelDB's fault-injection env and
 * SQLite's crash/IO-error VFS (docs/design/reliability.md).
 *
 * Two kinds of faults:
 *
 *  1. Simulated power loss (fault_env_power_loss, or automatically at the
 *     n-th mutating call with fault_env_crash_after). At that instant:
 *      - every file written through this env loses the bytes appended after
 *        its last successful sync() (FAULT_LOSS_ALL), or keeps only a random
 *        prefix of them (FAULT_LOSS_TORN: a torn, partially persisted write);
 *      - every directory entry change (file create, link, rename, remove,
 *        mkdir)
 *        made since the last successful sync_dir() of its directory is
 *        undone: created files and directories are deleted, renames are
 *        reverted (the replaced target reappears with its old content),
 *        removed files reappear. FAULT_LOSS_TORN instead keeps a random
 *        prefix of the unsynced entry changes in the order they were made
 *        (a journaling filesystem commits metadata in order) and undoes the
 *        rest;
 *      - the env goes "down": every later call fails with TDB_ERR_IO
 *        (exists() answers 0) except close(), unlock_file() and
 *        now_micros(), so the process can release a database handle as if
 *        it had died. fault_env_revive() brings the env back; from then on
 *        everything on disk counts as durable.
 *     A sync() that failed (injected) makes nothing after the file's last
 *     good sync durable ever again, even if a later sync() "succeeds"
 *     (Linux may drop the dirty pages of a failed fsync and report success
 *     next time: the data is gone).
 *
 *  2. Injected errors (fault_env_add_rule): per operation kind, for calls
 *     whose path contains a substring, either the n-th matching call (and
 *     optionally the next count-1 ones) or each call with a probability,
 *     fails with a chosen code (TDB_ERR_IO, TDB_ERR_NO_SPACE, ...) without
 *     doing anything, except an append rule with `partial` set, which first
 *     writes a random prefix of the data (a short write before the error,
 *     as a real EIO/ENOSPC can leave). A space budget (fault_env_set_space)
 *     makes appends fail with TDB_ERR_NO_SPACE (writing what still fits)
 *     until more space is given.
 *
 * Invariants
 *  - All bookkeeping is guarded by one rwlock: every call that changes the
 *    filesystem holds it exclusively across the wrapped call, reads hold it
 *    shared, so a power loss is atomic with respect to every operation
 *    (each completes wholly before it, or fails after it).
 *  - Files the env did not create since it was created, revived or last
 *    marked durable are assumed fully durable.
 *  - A removed file is kept, until its directory is synced, as a hidden
 *    "<dir>/.fault-trash-<n>" file (so it can reappear); list_dir() never
 *    shows those names.
 *  - Durability of a directory entry is tracked per parent directory of the
 *    entry (for renames: of the destination); paths are compared after
 *    collapsing repeated '/' and dropping a trailing '/'.
 *  - Thread-safe: any number of threads may use the env and its files.
 */
#ifndef TDB_TESTING_ENV_FAULT_H
#define TDB_TESTING_ENV_FAULT_H

#include <stdint.h>

#include "env/env.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum fault_op {
    FAULT_APPEND = 0,  /* append() on a writable file                    */
    FAULT_SYNC,        /* sync() of a file                               */
    FAULT_READ,        /* pread() of a file                              */
    FAULT_RENAME,      /* rename()                                       */
    FAULT_SYNC_DIR,    /* sync_dir()                                     */
    FAULT_CREATE,      /* open_writable()                                */
    FAULT_OPEN,        /* open_readable()                                */
    FAULT_REMOVE,      /* remove()                                       */
    FAULT_LINK,        /* link(): e.g. TDB_ERR_NOT_SUPPORTED as EXDEV    */
    FAULT_MKDIR,       /* mkdir(): e.g. TDB_ERR_READ_ONLY as EROFS       */
    FAULT_NUM_OPS
} fault_op_t;

typedef enum fault_loss_mode {
    FAULT_LOSS_ALL = 0, /* drop every unsynced byte and directory change */
    FAULT_LOSS_TORN = 1 /* keep a random prefix of them                  */
} fault_loss_mode_t;

typedef struct fault_rule {
    fault_op_t op;
    int code;                  /* returned by the failing call, e.g. TDB_ERR_IO */
    const char *path_contains; /* only calls on matching paths (NULL: all); copied */
    uint64_t nth;              /* >0: fail the nth matching call (1-based)...      */
    uint64_t count;            /* ...and the count-1 following ones (0 means 1;    */
                               /*    UINT64_MAX: every one from the nth on)        */
    double probability;        /* nth == 0: each matching call fails with this p   */
    int partial;               /* append: write a random prefix before failing     */
} fault_rule_t;

typedef struct fault_stats {
    uint64_t calls[FAULT_NUM_OPS];    /* calls seen per kind                */
    uint64_t injected[FAULT_NUM_OPS]; /* errors injected per kind           */
    uint64_t injected_total;          /* sum of injected[]                  */
    uint64_t mutations;               /* calls that change the filesystem   */
    uint64_t power_losses;
    uint64_t bytes_dropped;           /* unsynced bytes cut by power losses */
    uint64_t entries_reverted;        /* directory changes undone           */
} fault_stats_t;

typedef struct fault_env fault_env_t;

/* Wrap `target` (which must outlive the fault env). seed drives every
 * random choice (probabilities, partial writes, torn losses). */
int fault_env_create(env_t *target, uint64_t seed, fault_env_t **out);
/* Free the env (no database may still use it); pending trash is deleted. */
void fault_env_destroy(fault_env_t *fe);
/* The env_t to hand to tdb_open_env() or any subsystem. */
env_t *fault_env_env(fault_env_t *fe);

/* Add an error rule (at most 32). TDB_ERR_INVALID_ARG if malformed. */
int fault_env_add_rule(fault_env_t *fe, const fault_rule_t *rule);
/* Remove every rule (counters are kept). */
void fault_env_clear_rules(fault_env_t *fe);
/* Bytes appends may still write before failing with TDB_ERR_NO_SPACE
 * (UINT64_MAX: unlimited, the initial state). A failing append writes the
 * part that fits. */
void fault_env_set_space(fault_env_t *fe, uint64_t bytes);

/* Call fn(arg, path) at the start of every file sync(), before the env
 * looks at its rules, outside its lock: a test can hold a sync there (set
 * it before the env is used; NULL removes it). */
typedef void (*fault_sync_hook_fn)(void *arg, const char *path);
void fault_env_set_sync_hook(fault_env_t *fe, fault_sync_hook_fn fn, void *arg);

/* Power loss mode (FAULT_LOSS_ALL initially). */
void fault_env_set_loss_mode(fault_env_t *fe, fault_loss_mode_t mode);
/* Simulate power loss now (see above); the env stays down until revived.
 * Returns the first error of the underlying env while undoing, if any. */
int fault_env_power_loss(fault_env_t *fe);
/* Simulate power loss when the n-th mutating call (counted from now,
 * 1-based) starts; that call fails with TDB_ERR_IO. n == 0 disarms. */
void fault_env_crash_after(fault_env_t *fe, uint64_t n);
/* 1 once a power loss happened and until fault_env_revive(). */
int fault_env_is_down(fault_env_t *fe);
/* Bring the env back after a power loss (the "reboot"). */
void fault_env_revive(fault_env_t *fe);
/* Declare everything on disk durable now (forget unsynced state). */
void fault_env_mark_durable(fault_env_t *fe);

/* Counters since creation. */
void fault_env_stats(fault_env_t *fe, fault_stats_t *out);
/* Short name of an operation kind ("append", "sync", ...). */
const char *fault_op_name(fault_op_t op);

#ifdef __cplusplus
}
#endif
#endif

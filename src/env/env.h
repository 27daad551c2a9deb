/*
 * env: every byte the engine reads or writes on disk goes through an env_t,
 * so tests can replace the filesystem (fault injection, simulated power
 * loss). env_posix() is the real one.
 *
 * Invariants
 *  - All functions return TDB_OK or a TDB_ERR_* code with a detail message
 *    naming the path (tdb_err). ENOSPC maps to TDB_ERR_NO_SPACE, other OS
 *    errors to TDB_ERR_IO, a missing file to TDB_ERR_NOT_FOUND.
 *  - A writable file is append-only. Data is durable only after sync();
 *    a newly created or renamed file's directory entry is durable only after
 *    sync_dir() of its directory.
 *  - Readable files are safe for concurrent pread from many threads, and
 *    for reads of their mapping (map_readable) once it is set up.
 *  - Writable files are used by one thread at a time.
 */
#ifndef TDB_ENV_ENV_H
#define TDB_ENV_ENV_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct env env_t;
typedef struct env_file env_file_t;
typedef struct env_lock env_lock_t;

/* Base of every file handle; implementations embed it first. */
struct env_file {
    env_t *env;
};

struct env {
    /* Create (truncating) a file for appending. */
    int (*open_writable)(env_t *e, const char *path, env_file_t **out);
    /* Like open_writable, for a log of many small appends that must each
     * reach the OS at once (survive a crash of the process) and be
     * durable after sync(). May be NULL: env_open_log falls back to
     * open_writable. After a crash the file may end in zero bytes past
     * the last append (preallocated space); readers must accept that. */
    int (*open_log)(env_t *e, const char *path, env_file_t **out);
    /* Open an existing file for random reads. */
    int (*open_readable)(env_t *e, const char *path, env_file_t **out);
    int (*append)(env_file_t *f, const void *data, size_t n);
    /* Read up to n bytes at off; *nread < n only at end of file. */
    int (*pread)(env_file_t *f, uint64_t off, void *buf, size_t n, size_t *nread);
    /* Map the first n bytes of a readable file read-only, so reads of them
     * cost no system call and no copy; the mapping lives until close().
     * May be NULL (files are then only pread). A mapped page the OS cannot
     * read (media error, file shrunk by someone else) raises SIGBUS
     * instead of an error, so callers read through a mapping only bytes
     * they already read once with pread. */
    int (*map_readable)(env_file_t *f, uint64_t n, const char **out);
    /* Make appended data durable (fdatasync). */
    int (*sync)(env_file_t *f);
    /* Size of an open file (bytes appended so far for writable files). */
    int (*size)(env_file_t *f, uint64_t *out);
    /* Close; the handle is freed even on error. */
    int (*close)(env_file_t *f);

    int (*file_size)(env_t *e, const char *path, uint64_t *out);
    int (*exists)(env_t *e, const char *path); /* 1 or 0 */
    int (*truncate)(env_t *e, const char *path, uint64_t size);
    int (*rename)(env_t *e, const char *from, const char *to);
    int (*remove)(env_t *e, const char *path);
    int (*mkdir)(env_t *e, const char *path); /* TDB_OK if it exists */
    int (*rmdir)(env_t *e, const char *path);
    /* Entry names (not paths), excluding "." and "..": free with
     * env_free_list(). */
    int (*list_dir)(env_t *e, const char *path, char ***names, size_t *count);
    int (*sync_dir)(env_t *e, const char *path);
    /* Exclusive advisory lock held until unlock: TDB_ERR_LOCKED if another
     * holder (another process, or another open in this process) has it. */
    int (*lock_file)(env_t *e, const char *path, env_lock_t **out);
    int (*unlock_file)(env_t *e, env_lock_t *lock);
    /* Microseconds on a monotonic clock. */
    uint64_t (*now_micros)(env_t *e);
    /* Give the existing file `from` a second name `to` (a hard link; `to`
     * must not exist): TDB_ERR_NOT_SUPPORTED where the filesystem cannot
     * (`to` on another filesystem: EXDEV, or no hard links), and the caller
     * copies instead. May be NULL: no hard links. */
    int (*link)(env_t *e, const char *from, const char *to);
};

/* The process-wide POSIX environment. */
env_t *env_posix(void);

static inline int env_open_log(env_t *e, const char *path, env_file_t **out) {
    return e->open_log ? e->open_log(e, path, out) : e->open_writable(e, path, out);
}
static inline int env_append(env_file_t *f, const void *d, size_t n) { return f->env->append(f, d, n); }
static inline int env_pread(env_file_t *f, uint64_t off, void *b, size_t n, size_t *nr) { return f->env->pread(f, off, b, n, nr); }
static inline int env_sync(env_file_t *f) { return f->env->sync(f); }
static inline int env_fsize(env_file_t *f, uint64_t *o) { return f->env->size(f, o); }
static inline int env_close(env_file_t *f) { return f ? f->env->close(f) : 0; }

/* Read exactly n bytes at off: TDB_ERR_CORRUPTION (naming `what`) if the
 * file is shorter. */
int env_read_exact(env_file_t *f, uint64_t off, void *buf, size_t n, const char *what);
/* Write a whole file atomically: write tmp, sync, rename, sync dir. */
int env_write_file_atomic(env_t *e, const char *dir, const char *name, const void *data, size_t n);
/* The same, setting *renamed to 1 once the rename replaced <dir>/<name>
 * (so a failure with *renamed == 0 left the old file as it was, and the
 * temp file is removed). */
int env_write_file_replace(env_t *e, const char *dir, const char *name, const void *data, size_t n, int *renamed);
/* Read a whole file into a malloc'd buffer. */
int env_read_file(env_t *e, const char *path, char **data, size_t *n);
void env_free_list(char **names, size_t count);

#ifdef __cplusplus
}
#endif
#endif

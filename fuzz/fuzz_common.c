/* fuzz_common: the in-memory env and small helpers (fuzz_common.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "util/error.h"

typedef struct memenv {
    env_t env;
    const char *data;
    size_t size;
} memenv_t;

typedef struct memfile {
    env_file_t base;
} memfile_t;

static memenv_t g_mem;

/* Any path opens the one file. */
static int m_open_readable(env_t *e, const char *path, env_file_t **out) {
    (void)path;
    memfile_t *f = (memfile_t *)calloc(1, sizeof *f);
    if (!f) return tdb_err(TDB_ERR_NOMEM, "memenv");
    f->base.env = e;
    *out = &f->base;
    return TDB_OK;
}

/* Writing is not supported. */
static int m_open_writable(env_t *e, const char *path, env_file_t **out) {
    (void)e;
    *out = NULL;
    return tdb_err(TDB_ERR_NOT_SUPPORTED, "memenv: cannot create %s", path);
}

/* The in-memory env is read-only. */
static int m_append(env_file_t *f, const void *d, size_t n) {
    (void)f, (void)d, (void)n;
    return tdb_err(TDB_ERR_NOT_SUPPORTED, "memenv: read-only");
}

/* Bounded copy out of the input. */
static int m_pread(env_file_t *f, uint64_t off, void *buf, size_t n, size_t *nread) {
    (void)f;
    *nread = 0;
    if (off >= g_mem.size) return TDB_OK;
    size_t avail = g_mem.size - (size_t)off;
    size_t k = n < avail ? n : avail;
    memcpy(buf, g_mem.data + off, k);
    *nread = k;
    return TDB_OK;
}

/* Nothing to sync. */
static int m_sync(env_file_t *f) {
    (void)f;
    return TDB_OK;
}

/* Size of the one file. */
static int m_size(env_file_t *f, uint64_t *out) {
    (void)f;
    *out = g_mem.size;
    return TDB_OK;
}

/* Free the handle. */
static int m_close(env_file_t *f) {
    free(f);
    return TDB_OK;
}

/* Size of the one file, whatever the path. */
static int m_file_size(env_t *e, const char *path, uint64_t *out) {
    (void)e, (void)path;
    *out = g_mem.size;
    return TDB_OK;
}

/* Every path exists. */
static int m_exists(env_t *e, const char *path) {
    (void)e, (void)path;
    return 1;
}

/* Directory operations and locks are not supported. */
static int m_path_op(env_t *e, const char *path) {
    (void)e;
    return tdb_err(TDB_ERR_NOT_SUPPORTED, "memenv: %s", path);
}
/* Not supported. */
static int m_truncate(env_t *e, const char *path, uint64_t size) {
    (void)size;
    return m_path_op(e, path);
}
/* Not supported. */
static int m_rename(env_t *e, const char *from, const char *to) {
    (void)to;
    return m_path_op(e, from);
}
/* Not supported. */
static int m_list_dir(env_t *e, const char *path, char ***names, size_t *count) {
    *names = NULL;
    *count = 0;
    return m_path_op(e, path);
}
/* Not supported. */
static int m_lock_file(env_t *e, const char *path, env_lock_t **out) {
    *out = NULL;
    return m_path_op(e, path);
}
/* Nothing to unlock. */
static int m_unlock_file(env_t *e, env_lock_t *l) {
    (void)e, (void)l;
    return TDB_OK;
}
/* A fixed clock. */
static uint64_t m_now(env_t *e) {
    (void)e;
    return 0;
}

/* Point the env at data (filling the method table on first use). */
env_t *memenv_set(const void *data, size_t size) {
    if (!g_mem.env.pread) {
        g_mem.env.open_writable = m_open_writable;
        g_mem.env.open_readable = m_open_readable;
        g_mem.env.append = m_append;
        g_mem.env.pread = m_pread;
        g_mem.env.sync = m_sync;
        g_mem.env.size = m_size;
        g_mem.env.close = m_close;
        g_mem.env.file_size = m_file_size;
        g_mem.env.exists = m_exists;
        g_mem.env.truncate = m_truncate;
        g_mem.env.rename = m_rename;
        g_mem.env.remove = m_path_op;
        g_mem.env.mkdir = m_path_op;
        g_mem.env.rmdir = m_path_op;
        g_mem.env.list_dir = m_list_dir;
        g_mem.env.sync_dir = m_path_op;
        g_mem.env.lock_file = m_lock_file;
        g_mem.env.unlock_file = m_unlock_file;
        g_mem.env.now_micros = m_now;
    }
    g_mem.data = (const char *)data;
    g_mem.size = size;
    return &g_mem.env;
}

/* Report a broken property and abort (libFuzzer saves the input). */
void fuzz_fail(const char *what) {
    fprintf(stderr, "fuzz property violated: %s\n", what);
    abort();
}

/* Fold every byte (so ASan sees each access). */
uint64_t fuzz_touch(const void *p, size_t n) {
    const unsigned char *b = (const unsigned char *)p;
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++) s = s * 31 + b[i];
    return s;
}

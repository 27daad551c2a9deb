/*
 * env/env_util: helpers built only on the env_t interface, so they work the
 * same over the POSIX env and over test envs (fault injection).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "env/env.h"
#include "util/error.h"

/* Read exactly n bytes at off; a short file is corruption. */
int env_read_exact(env_file_t *f, uint64_t off, void *buf, size_t n, const char *what) {
    size_t got = 0;
    TDB_RET(env_pread(f, off, buf, n, &got));
    if (got < n)
        return tdb_err(TDB_ERR_CORRUPTION, "%s: short read at offset %llu: wanted %zu bytes, file has %zu",
                       what ? what : "file", (unsigned long long)off, n, got);
    return TDB_OK;
}

/* malloc'd "dir/name" + suffix (suffix may be ""). */
static char *join_path(const char *dir, const char *name, const char *suffix) {
    size_t dl = strlen(dir), nl = strlen(name), sl = strlen(suffix);
    int slash = dl > 0 && dir[dl - 1] != '/';
    char *p = (char *)malloc(dl + (size_t)slash + nl + sl + 1);
    if (!p) return NULL;
    memcpy(p, dir, dl);
    if (slash) p[dl] = '/';
    memcpy(p + dl + slash, name, nl);
    memcpy(p + dl + slash + nl, suffix, sl + 1);
    return p;
}

/* Write dir/name atomically: dir/name.tmp is written, synced and renamed
 * over dir/name, then dir is synced. A failure before the rename leaves
 * dir/name untouched. */
int env_write_file_atomic(env_t *e, const char *dir, const char *name, const void *data, size_t n) {
    return env_write_file_replace(e, dir, name, data, n, NULL);
}

/* env_write_file_atomic, telling whether the rename happened: *renamed
 * (if not NULL) is 1 once <dir>/<name> is the new file, even if the
 * directory sync after it failed; 0 if the old file is untouched. */
int env_write_file_replace(env_t *e, const char *dir, const char *name, const void *data, size_t n, int *renamed) {
    int rc = TDB_OK;
    env_file_t *f = NULL;
    char *tmp = join_path(dir, name, ".tmp");
    char *dst = join_path(dir, name, "");
    if (renamed) *renamed = 0;
    if (!tmp || !dst) RAISE(TDB_ERR_NOMEM, "atomic write of %s/%s: out of memory", dir, name);
    TRY(e->open_writable(e, tmp, &f));
    TRY(env_append(f, data, n));
    TRY(env_sync(f));
    rc = env_close(f);
    f = NULL;
    if (rc != TDB_OK) goto err;
    TRY(e->rename(e, tmp, dst));
    if (renamed) *renamed = 1;
    TRY(e->sync_dir(e, dir));
    free(tmp);
    free(dst);
    return TDB_OK;
err:
    if (f) env_close(f);
    if (tmp && e->exists(e, tmp)) {
        /* Keep the original failure's detail: remove() may overwrite it. */
        char detail[512];
        snprintf(detail, sizeof detail, "%s", tdb_last_error());
        e->remove(e, tmp);
        tdb_err(rc, "%s", detail);
    }
    free(tmp);
    free(dst);
    return rc;
}

/* Read a whole file into a malloc'd buffer (NUL-terminated for convenience;
 * the terminator is not counted in *n). */
int env_read_file(env_t *e, const char *path, char **data, size_t *n) {
    int rc = TDB_OK;
    env_file_t *f = NULL;
    char *p = NULL;
    uint64_t size = 0;
    *data = NULL;
    *n = 0;
    TRY(e->open_readable(e, path, &f));
    TRY(env_fsize(f, &size));
    if (size >= (uint64_t)SIZE_MAX) RAISE(TDB_ERR_NOMEM, "read %s: %llu bytes do not fit in memory", path, (unsigned long long)size);
    p = (char *)malloc((size_t)size + 1);
    if (!p) RAISE(TDB_ERR_NOMEM, "read %s: cannot allocate %llu bytes", path, (unsigned long long)size);
    TRY(env_read_exact(f, 0, p, (size_t)size, path));
    p[size] = '\0';
    rc = env_close(f);
    f = NULL;
    if (rc != TDB_OK) goto err;
    *data = p;
    *n = (size_t)size;
    return TDB_OK;
err:
    if (f) env_close(f);
    free(p);
    return rc;
}

/* Free a list returned by list_dir. */
void env_free_list(char **names, size_t count) {
    if (!names) return;
    for (size_t i = 0; i < count; i++) free(names[i]);
    free(names);
}

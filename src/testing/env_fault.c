/*
 * env/env_fault: fault injection and simulated power loss over another env.
 * Model and invariants: env/env_fault.h.
 *
 * Bookkeeping
 *  - files[]: every file created through this env since the last durable
 *    point, by path: bytes appended (size), durable prefix (synced), and
 *    whether a sync failed (then synced never advances again).
 *  - ops[]: directory entry changes not yet made durable by sync_dir(), in
 *    the order they happened. A removed or replaced file lives on as a trash
 *    file until its directory is synced (then the trash is deleted) or a
 *    power loss undoes the change (then it is renamed back).
 *  - Locks: `lock` (rwlock) guards files[], ops[], down/crash_at/space and
 *    the filesystem itself; `mu` guards rules, the random state and the
 *    counters touched from readers. Order: lock -> mu.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testing/env_fault.h"
#include "util/error.h"

#define MAX_RULES 32
#define TRASH_PREFIX ".fault-trash-"

typedef struct ffile {
    char *path;
    uint64_t size;   /* bytes appended */
    uint64_t synced; /* durable prefix */
    int sync_failed; /* a sync failed: synced is frozen */
} ffile_t;

enum { DOP_CREATE, DOP_MKDIR, DOP_RENAME, DOP_REMOVE };

typedef struct dirop {
    int kind;
    char *dir;   /* directory whose sync_dir makes the change durable */
    char *path;  /* created / removed path, or rename destination */
    char *from;  /* rename source */
    char *trash; /* replaced (rename) or removed file, or NULL */
} dirop_t;

typedef struct rule {
    fault_rule_t r;
    char *pat;
    uint64_t seen;
} rule_t;

struct fault_env {
    env_t env; /* first member: an env_t * of this env is a fault_env_t * */
    env_t *t;  /* the wrapped env */
    pthread_rwlock_t lock;
    pthread_mutex_t mu;
    uint64_t rng;
    int down;
    int loss_mode;
    uint64_t crash_at; /* mutation number that triggers power loss, 0 = off */
    uint64_t space;    /* bytes appends may still write */
    uint64_t trash_seq;
    ffile_t *files;
    size_t nfiles, capfiles;
    dirop_t *ops;
    size_t nops, capops;
    rule_t rules[MAX_RULES];
    int nrules;
    fault_stats_t st;
    fault_sync_hook_fn sync_hook; /* set before use (env_fault.h) */
    void *sync_hook_arg;
};

typedef struct ffh {
    env_file_t base;
    env_file_t *inner;
    char *path; /* normalized */
} ffh_t;

static const char *const g_op_names[FAULT_NUM_OPS] = {"append", "sync",   "read",   "rename", "sync_dir",
                                                      "create", "open",   "remove", "link",   "mkdir"};

void fault_env_set_sync_hook(fault_env_t *fe, fault_sync_hook_fn fn, void *arg) {
    fe->sync_hook = fn;
    fe->sync_hook_arg = arg;
}

/* Short name of an operation kind. */
const char *fault_op_name(fault_op_t op) {
    return (unsigned)op < FAULT_NUM_OPS ? g_op_names[op] : "?";
}

/* The fault env behind an env_t pointer. */
static fault_env_t *FE(env_t *e) { return (fault_env_t *)e; }

/* xorshift64* step (caller holds mu or the exclusive lock). */
static uint64_t rnd(fault_env_t *fe) {
    uint64_t x = fe->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    fe->rng = x;
    return x * 0x2545F4914F6CDD1Dull;
}

/* malloc'd copy of path with repeated '/' collapsed and no trailing '/'. */
static char *norm_path(const char *p) {
    size_t n = strlen(p);
    char *o = (char *)malloc(n + 1);
    if (!o) return NULL;
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (p[i] == '/' && j > 0 && o[j - 1] == '/') continue;
        o[j++] = p[i];
    }
    while (j > 1 && o[j - 1] == '/') j--;
    o[j] = '\0';
    return o;
}

/* malloc'd parent directory of a normalized path ("." if none). */
static char *parent_of(const char *p) {
    const char *s = strrchr(p, '/');
    if (!s) return strdup(".");
    if (s == p) return strdup("/");
    size_t n = (size_t)(s - p);
    char *d = (char *)malloc(n + 1);
    if (!d) return NULL;
    memcpy(d, p, n);
    d[n] = '\0';
    return d;
}

/* Is `p` inside directory `dir` (both normalized)? */
static int path_under(const char *p, const char *dir) {
    size_t n = strlen(dir);
    return strncmp(p, dir, n) == 0 && p[n] == '/';
}

/* The tracked file at path, or NULL (exclusive lock held). */
static ffile_t *file_find(fault_env_t *fe, const char *path) {
    for (size_t i = 0; i < fe->nfiles; i++)
        if (strcmp(fe->files[i].path, path) == 0) return &fe->files[i];
    return NULL;
}

/* Forget the tracked file at path, if any. */
static void file_forget(fault_env_t *fe, const char *path) {
    ffile_t *f = file_find(fe, path);
    if (!f) return;
    free(f->path);
    *f = fe->files[--fe->nfiles];
}

/* Start tracking a fresh (empty) file at path, replacing any entry. */
static int file_track_new(fault_env_t *fe, const char *path) {
    file_forget(fe, path);
    if (fe->nfiles == fe->capfiles) {
        size_t n = fe->capfiles ? fe->capfiles * 2 : 32;
        ffile_t *v = (ffile_t *)realloc(fe->files, n * sizeof *v);
        if (!v) return tdb_err(TDB_ERR_NOMEM, "fault env: out of memory");
        fe->files = v;
        fe->capfiles = n;
    }
    ffile_t *f = &fe->files[fe->nfiles];
    memset(f, 0, sizeof *f);
    if (!(f->path = strdup(path))) return tdb_err(TDB_ERR_NOMEM, "fault env: out of memory");
    fe->nfiles++;
    return TDB_OK;
}

/* The tracked entry of `from` now describes `to` (dropping to's own). */
static void file_move(fault_env_t *fe, const char *from, const char *to) {
    ffile_t *f = file_find(fe, from);
    if (!f) {
        file_forget(fe, to);
        return;
    }
    char *np = strdup(to);
    if (!np) return; /* keep the old name: at worst the file counts as durable */
    file_forget(fe, to);
    f = file_find(fe, from); /* file_forget may have moved entries */
    free(f->path);
    f->path = np;
}

/* Record a directory change (exclusive lock held). Takes ownership of the
 * strings, also on failure. */
static int dirop_add(fault_env_t *fe, int kind, char *dir, char *path, char *from, char *trash) {
    if (fe->nops == fe->capops) {
        size_t n = fe->capops ? fe->capops * 2 : 32;
        dirop_t *v = (dirop_t *)realloc(fe->ops, n * sizeof *v);
        if (!v) {
            free(dir);
            free(path);
            free(from);
            free(trash);
            return tdb_err(TDB_ERR_NOMEM, "fault env: out of memory");
        }
        fe->ops = v;
        fe->capops = n;
    }
    dirop_t *o = &fe->ops[fe->nops++];
    o->kind = kind;
    o->dir = dir;
    o->path = path;
    o->from = from;
    o->trash = trash;
    return TDB_OK;
}

/* Free the strings of a directory change. */
static void dirop_free(dirop_t *o) {
    free(o->dir);
    free(o->path);
    free(o->from);
    free(o->trash);
}

/* The change is durable: its trash (old content) can really go. */
static void dirop_commit(fault_env_t *fe, dirop_t *o) {
    if (o->trash) {
        fe->t->remove(fe->t, o->trash);
        file_forget(fe, o->trash);
    }
    dirop_free(o);
}

/* malloc'd fresh trash path in directory dir. */
static char *trash_name(fault_env_t *fe, const char *dir) {
    size_t n = strlen(dir) + sizeof TRASH_PREFIX + 24;
    char *p = (char *)malloc(n);
    if (p) snprintf(p, n, "%s/%s%llu", dir, TRASH_PREFIX, (unsigned long long)++fe->trash_seq);
    return p;
}

/* Delete path and, if it is a directory, everything below it. */
static void remove_tree(fault_env_t *fe, const char *path) {
    char **names = NULL;
    size_t n = 0;
    if (fe->t->list_dir(fe->t, path, &names, &n) == TDB_OK) {
        for (size_t i = 0; i < n; i++) {
            size_t l = strlen(path) + strlen(names[i]) + 2;
            char *c = (char *)malloc(l);
            if (!c) continue;
            snprintf(c, l, "%s/%s", path, names[i]);
            remove_tree(fe, c);
            free(c);
        }
        env_free_list(names, n);
        fe->t->rmdir(fe->t, path);
    } else {
        fe->t->remove(fe->t, path);
    }
}

/* Undo one directory change (power loss). */
static void dirop_revert(fault_env_t *fe, dirop_t *o) {
    env_t *t = fe->t;
    switch (o->kind) {
    case DOP_CREATE:
        if (t->exists(t, o->path)) t->remove(t, o->path);
        file_forget(fe, o->path);
        break;
    case DOP_MKDIR:
        remove_tree(fe, o->path);
        for (size_t i = 0; i < fe->nfiles;) {
            if (path_under(fe->files[i].path, o->path)) file_forget(fe, fe->files[i].path);
            else i++;
        }
        break;
    case DOP_RENAME:
        if (t->rename(t, o->path, o->from) == TDB_OK) file_move(fe, o->path, o->from);
        if (o->trash && t->rename(t, o->trash, o->path) == TDB_OK) file_move(fe, o->trash, o->path);
        break;
    case DOP_REMOVE:
        if (o->trash && t->rename(t, o->trash, o->path) == TDB_OK) file_move(fe, o->trash, o->path);
        break;
    }
    fe->st.entries_reverted++;
    dirop_free(o);
}

/* Power loss with the exclusive lock held: undo unsynced directory changes,
 * cut unsynced data, go down. */
static int power_loss_locked(fault_env_t *fe) {
    int rc = TDB_OK;
    fe->down = 1;
    fe->crash_at = 0;
    fe->st.power_losses++;
    size_t keep = fe->loss_mode == FAULT_LOSS_TORN ? (size_t)(rnd(fe) % (fe->nops + 1)) : 0;
    for (size_t i = fe->nops; i > keep; i--) dirop_revert(fe, &fe->ops[i - 1]);
    for (size_t i = 0; i < keep; i++) dirop_commit(fe, &fe->ops[i]);
    fe->nops = 0;
    for (size_t i = 0; i < fe->nfiles; i++) {
        ffile_t *f = &fe->files[i];
        uint64_t cur = 0;
        if (!fe->t->exists(fe->t, f->path) || fe->t->file_size(fe->t, f->path, &cur) != TDB_OK) continue;
        uint64_t len = f->synced;
        if (fe->loss_mode == FAULT_LOSS_TORN && f->size > f->synced) len += rnd(fe) % (f->size - f->synced + 1);
        if (len < cur) {
            TDB_TRET(fe->t->truncate(fe->t, f->path, len));
            fe->st.bytes_dropped += cur - len;
        }
    }
    for (size_t i = 0; i < fe->nfiles; i++) free(fe->files[i].path);
    fe->nfiles = 0;
    return rc;
}

/* Should this call fail? Returns the code to inject (0: no) and whether an
 * append writes a partial prefix first. */
static int inject(fault_env_t *fe, fault_op_t op, const char *path, int *partial) {
    int code = 0;
    pthread_mutex_lock(&fe->mu);
    for (int i = 0; i < fe->nrules; i++) {
        rule_t *r = &fe->rules[i];
        if (r->r.op != op || (r->pat && !strstr(path, r->pat))) continue;
        r->seen++;
        int fire;
        if (r->r.nth) {
            uint64_t cnt = r->r.count ? r->r.count : 1;
            fire = r->seen >= r->r.nth && r->seen - r->r.nth < cnt;
        } else {
            fire = r->r.probability > 0 && (double)(rnd(fe) >> 11) * 0x1.0p-53 < r->r.probability;
        }
        if (fire && !code) {
            code = r->r.code;
            if (partial) *partial = r->r.partial;
        }
    }
    if (code) {
        fe->st.injected[op]++;
        fe->st.injected_total++;
    }
    pthread_mutex_unlock(&fe->mu);
    return code;
}

/* Count a filesystem-changing call (exclusive lock held); fail it if the env
 * is down or this is the call armed to lose power. op < 0: uncounted kind. */
static int mutation_begin(fault_env_t *fe, int op, const char *what, const char *path) {
    if (op >= 0) fe->st.calls[op]++;
    fe->st.mutations++;
    if (fe->down) return tdb_err(TDB_ERR_IO, "fault env: %s %s after simulated power loss", what, path);
    if (fe->crash_at && fe->st.mutations >= fe->crash_at) {
        power_loss_locked(fe);
        return tdb_err(TDB_ERR_IO, "fault env: simulated power loss during %s %s", what, path);
    }
    return TDB_OK;
}

/* Count a read-only call (shared lock held); fail it if down. */
static int read_begin(fault_env_t *fe, int op, const char *what, const char *path) {
    if (op >= 0) {
        pthread_mutex_lock(&fe->mu);
        fe->st.calls[op]++;
        pthread_mutex_unlock(&fe->mu);
    }
    if (fe->down) return tdb_err(TDB_ERR_IO, "fault env: %s %s after simulated power loss", what, path);
    return TDB_OK;
}

/* Raise an injected error. */
static int injected_err(int code, fault_op_t op, const char *path) {
    return tdb_err(code, "fault env: injected %s error on %s (%s)", fault_op_name(op), path, tdb_strerror(code));
}

/* Wrap an inner handle. */
static int wrap(fault_env_t *fe, env_file_t *inner, const char *npath, env_file_t **out) {
    ffh_t *h = (ffh_t *)calloc(1, sizeof *h);
    if (!h || !(h->path = strdup(npath))) {
        free(h);
        env_close(inner);
        return tdb_err(TDB_ERR_NOMEM, "fault env: out of memory");
    }
    h->base.env = &fe->env;
    h->inner = inner;
    *out = &h->base;
    return TDB_OK;
}

/* Create (truncating) a file for appending (`log`: through the target's
 * open_log when it has one); tracked from size 0. */
static int fe_open_for_append(env_t *e, const char *path, int log, env_file_t **out) {
    fault_env_t *fe = FE(e);
    int rc = TDB_OK;
    env_file_t *inner = NULL;
    *out = NULL;
    char *np = norm_path(path);
    if (!np) return tdb_err(TDB_ERR_NOMEM, "fault env: out of memory");
    pthread_rwlock_wrlock(&fe->lock);
    TRY(mutation_begin(fe, FAULT_CREATE, "create", np));
    int code = inject(fe, FAULT_CREATE, np, NULL);
    if (code) RAISE(code, "fault env: injected create error on %s (%s)", np, tdb_strerror(code));
    int existed = fe->t->exists(fe->t, np);
    TRY(log ? env_open_log(fe->t, np, &inner) : fe->t->open_writable(fe->t, np, &inner));
    TRY(file_track_new(fe, np));
    if (!existed) {
        char *dir = parent_of(np), *p = strdup(np);
        if (!dir || !p) {
            free(dir);
            free(p);
            RAISE(TDB_ERR_NOMEM, "fault env: out of memory");
        }
        TRY(dirop_add(fe, DOP_CREATE, dir, p, NULL, NULL));
    }
    rc = wrap(fe, inner, np, out);
    inner = NULL;
err:
    if (inner) env_close(inner);
    pthread_rwlock_unlock(&fe->lock);
    free(np);
    return rc;
}

static int fe_open_writable(env_t *e, const char *path, env_file_t **out) {
    return fe_open_for_append(e, path, 0, out);
}

static int fe_open_log(env_t *e, const char *path, env_file_t **out) { return fe_open_for_append(e, path, 1, out); }

/* Open an existing file for reading. */
static int fe_open_readable(env_t *e, const char *path, env_file_t **out) {
    fault_env_t *fe = FE(e);
    int rc = TDB_OK;
    env_file_t *inner = NULL;
    *out = NULL;
    char *np = norm_path(path);
    if (!np) return tdb_err(TDB_ERR_NOMEM, "fault env: out of memory");
    pthread_rwlock_rdlock(&fe->lock);
    TRY(read_begin(fe, FAULT_OPEN, "open", np));
    int code = inject(fe, FAULT_OPEN, np, NULL);
    if (code) RAISE(code, "fault env: injected open error on %s (%s)", np, tdb_strerror(code));
    TRY(fe->t->open_readable(fe->t, np, &inner));
    rc = wrap(fe, inner, np, out);
err:
    pthread_rwlock_unlock(&fe->lock);
    free(np);
    return rc;
}

/* Append, subject to rules and the space budget. */
static int fe_append(env_file_t *fb, const void *data, size_t n) {
    ffh_t *h = (ffh_t *)fb;
    fault_env_t *fe = FE(fb->env);
    int rc = TDB_OK, partial = 0;
    pthread_rwlock_wrlock(&fe->lock);
    TRY(mutation_begin(fe, FAULT_APPEND, "append", h->path));
    int code = inject(fe, FAULT_APPEND, h->path, &partial);
    size_t wn = n;
    if (code) {
        wn = partial && n > 0 ? (size_t)(rnd(fe) % n) : 0;
    } else if (fe->space != UINT64_MAX && n > fe->space) {
        code = TDB_ERR_NO_SPACE;
        wn = (size_t)fe->space;
        pthread_mutex_lock(&fe->mu);
        fe->st.injected[FAULT_APPEND]++;
        fe->st.injected_total++;
        pthread_mutex_unlock(&fe->mu);
    }
    if (wn > 0) rc = env_append(h->inner, data, wn);
    if (fe->space != UINT64_MAX) fe->space = fe->space > wn ? fe->space - wn : 0;
    ffile_t *f = file_find(fe, h->path);
    uint64_t sz = 0;
    if (f && env_fsize(h->inner, &sz) == TDB_OK) f->size = sz;
    if (code) rc = injected_err(code, FAULT_APPEND, h->path);
err:
    pthread_rwlock_unlock(&fe->lock);
    return rc;
}

/* pread, subject to rules. */
static int fe_pread(env_file_t *fb, uint64_t off, void *buf, size_t n, size_t *nread) {
    ffh_t *h = (ffh_t *)fb;
    fault_env_t *fe = FE(fb->env);
    int rc = TDB_OK;
    *nread = 0;
    pthread_rwlock_rdlock(&fe->lock);
    TRY(read_begin(fe, FAULT_READ, "read", h->path));
    int code = inject(fe, FAULT_READ, h->path, NULL);
    if (code) RAISE(code, "fault env: injected read error on %s at offset %llu (%s)", h->path,
                    (unsigned long long)off, tdb_strerror(code));
    rc = env_pread(h->inner, off, buf, n, nread);
err:
    pthread_rwlock_unlock(&fe->lock);
    return rc;
}

/* sync: advances the durable prefix unless a sync ever failed. */
static int fe_sync(env_file_t *fb) {
    ffh_t *h = (ffh_t *)fb;
    fault_env_t *fe = FE(fb->env);
    int rc = TDB_OK;
    if (fe->sync_hook) fe->sync_hook(fe->sync_hook_arg, h->path);
    pthread_rwlock_wrlock(&fe->lock);
    TRY(mutation_begin(fe, FAULT_SYNC, "sync", h->path));
    ffile_t *f = file_find(fe, h->path);
    int code = inject(fe, FAULT_SYNC, h->path, NULL);
    if (code) {
        if (f) f->sync_failed = 1;
        RAISE(code, "fault env: injected sync error on %s (%s)", h->path, tdb_strerror(code));
    }
    TRY(env_sync(h->inner));
    if (f && !f->sync_failed) f->synced = f->size;
err:
    pthread_rwlock_unlock(&fe->lock);
    return rc;
}

/* Size of the open file. */
static int fe_size(env_file_t *fb, uint64_t *out) {
    ffh_t *h = (ffh_t *)fb;
    return env_fsize(h->inner, out);
}

/* Close the inner handle (also when down) and free the wrapper. */
static int fe_close(env_file_t *fb) {
    ffh_t *h = (ffh_t *)fb;
    fault_env_t *fe = FE(fb->env);
    pthread_rwlock_rdlock(&fe->lock);
    int rc = env_close(h->inner);
    int down = fe->down;
    pthread_rwlock_unlock(&fe->lock);
    free(h->path);
    free(h);
    return down ? TDB_OK : rc;
}

/* Size of the file at path. */
static int fe_file_size(env_t *e, const char *path, uint64_t *out) {
    fault_env_t *fe = FE(e);
    pthread_rwlock_rdlock(&fe->lock);
    int rc = read_begin(fe, -1, "stat", path);
    if (rc == TDB_OK) rc = fe->t->file_size(fe->t, path, out);
    pthread_rwlock_unlock(&fe->lock);
    return rc;
}

/* 1 if path exists (0 while down). */
static int fe_exists(env_t *e, const char *path) {
    fault_env_t *fe = FE(e);
    pthread_rwlock_rdlock(&fe->lock);
    int r = fe->down ? 0 : fe->t->exists(fe->t, path);
    pthread_rwlock_unlock(&fe->lock);
    return r;
}

/* Truncation counts as immediately durable (the engine truncates only a
 * WAL torn by an out-of-space append, and syncs it right after). */
static int fe_truncate(env_t *e, const char *path, uint64_t size) {
    fault_env_t *fe = FE(e);
    int rc = TDB_OK;
    char *np = norm_path(path);
    if (!np) return tdb_err(TDB_ERR_NOMEM, "fault env: out of memory");
    pthread_rwlock_wrlock(&fe->lock);
    TRY(mutation_begin(fe, -1, "truncate", np));
    TRY(fe->t->truncate(fe->t, np, size));
    ffile_t *f = file_find(fe, np);
    if (f) {
        if (f->size > size) f->size = size;
        if (f->synced > size) f->synced = size;
    }
err:
    pthread_rwlock_unlock(&fe->lock);
    free(np);
    return rc;
}

/* rename, keeping a replaced target as trash so a power loss can revert. */
static int fe_rename(env_t *e, const char *from, const char *to) {
    fault_env_t *fe = FE(e);
    int rc = TDB_OK;
    char *nf = norm_path(from), *nt = norm_path(to), *dir = NULL, *trash = NULL;
    if (!nf || !nt) RAISE(TDB_ERR_NOMEM, "fault env: out of memory");
    pthread_rwlock_wrlock(&fe->lock);
    rc = mutation_begin(fe, FAULT_RENAME, "rename", nf);
    int code = rc == TDB_OK ? inject(fe, FAULT_RENAME, nt, NULL) : 0;
    if (rc == TDB_OK && code) rc = tdb_err(code, "fault env: injected rename error on %s -> %s (%s)", nf, nt, tdb_strerror(code));
    if (rc == TDB_OK && !(dir = parent_of(nt))) rc = tdb_err(TDB_ERR_NOMEM, "fault env: out of memory");
    if (rc == TDB_OK && fe->t->exists(fe->t, nf) && fe->t->exists(fe->t, nt)) {
        if (!(trash = trash_name(fe, dir))) rc = tdb_err(TDB_ERR_NOMEM, "fault env: out of memory");
        else if ((rc = fe->t->rename(fe->t, nt, trash)) == TDB_OK) file_move(fe, nt, trash);
    }
    if (rc == TDB_OK) {
        rc = fe->t->rename(fe->t, nf, nt);
        if (rc != TDB_OK && trash) {
            char saved[512];
            snprintf(saved, sizeof saved, "%s", tdb_last_error());
            if (fe->t->rename(fe->t, trash, nt) == TDB_OK) file_move(fe, trash, nt);
            tdb_err(rc, "%s", saved);
        }
    }
    if (rc == TDB_OK) {
        file_move(fe, nf, nt);
        rc = dirop_add(fe, DOP_RENAME, dir, nt, nf, trash);
        dir = nt = nf = trash = NULL;
    }
    pthread_rwlock_unlock(&fe->lock);
err:
    free(nf);
    free(nt);
    free(dir);
    free(trash);
    return rc;
}

/* remove: the file becomes trash until its directory is synced. */
static int fe_remove(env_t *e, const char *path) {
    fault_env_t *fe = FE(e);
    int rc = TDB_OK;
    char *np = norm_path(path), *dir = NULL, *trash = NULL;
    if (!np) return tdb_err(TDB_ERR_NOMEM, "fault env: out of memory");
    pthread_rwlock_wrlock(&fe->lock);
    TRY(mutation_begin(fe, FAULT_REMOVE, "remove", np));
    int code = inject(fe, FAULT_REMOVE, np, NULL);
    if (code) RAISE(code, "fault env: injected remove error on %s (%s)", np, tdb_strerror(code));
    if (!fe->t->exists(fe->t, np)) {
        rc = fe->t->remove(fe->t, np); /* the env's own not-found error */
        goto err;
    }
    if (!(dir = parent_of(np)) || !(trash = trash_name(fe, dir))) RAISE(TDB_ERR_NOMEM, "fault env: out of memory");
    TRY(fe->t->rename(fe->t, np, trash));
    file_move(fe, np, trash);
    rc = dirop_add(fe, DOP_REMOVE, dir, np, NULL, trash);
    dir = np = trash = NULL;
err:
    pthread_rwlock_unlock(&fe->lock);
    free(np);
    free(dir);
    free(trash);
    return rc;
}

/* mkdir: a new directory is an unsynced entry of its parent. */
static int fe_mkdir(env_t *e, const char *path) {
    fault_env_t *fe = FE(e);
    int rc = TDB_OK;
    char *np = norm_path(path);
    if (!np) return tdb_err(TDB_ERR_NOMEM, "fault env: out of memory");
    pthread_rwlock_wrlock(&fe->lock);
    TRY(mutation_begin(fe, FAULT_MKDIR, "mkdir", np));
    int code = inject(fe, FAULT_MKDIR, np, NULL);
    if (code) RAISE(code, "fault env: injected mkdir error on %s (%s)", np, tdb_strerror(code));
    int existed = fe->t->exists(fe->t, np);
    TRY(fe->t->mkdir(fe->t, np));
    if (!existed) {
        char *dir = parent_of(np);
        if (!dir) RAISE(TDB_ERR_NOMEM, "fault env: out of memory");
        rc = dirop_add(fe, DOP_MKDIR, dir, np, NULL, NULL);
        np = NULL;
    }
err:
    pthread_rwlock_unlock(&fe->lock);
    free(np);
    return rc;
}

/* link: the new name is an unsynced entry of its directory (a power loss
 * removes it); the file's bytes are the source's, as durable as they are.
 * A target without link() reports NOT_SUPPORTED, as EXDEV would. */
static int fe_link(env_t *e, const char *from, const char *to) {
    fault_env_t *fe = FE(e);
    int rc = TDB_OK;
    char *nf = norm_path(from), *nt = norm_path(to), *dir = NULL;
    if (!nf || !nt) RAISE(TDB_ERR_NOMEM, "fault env: out of memory");
    pthread_rwlock_wrlock(&fe->lock);
    rc = mutation_begin(fe, FAULT_LINK, "link", nt);
    int code = rc == TDB_OK ? inject(fe, FAULT_LINK, nt, NULL) : 0;
    if (rc == TDB_OK && code) rc = tdb_err(code, "fault env: injected link error on %s -> %s (%s)", nf, nt, tdb_strerror(code));
    if (rc == TDB_OK && !fe->t->link) rc = tdb_err(TDB_ERR_NOT_SUPPORTED, "link %s -> %s: no hard links", nf, nt);
    if (rc == TDB_OK) rc = fe->t->link(fe->t, nf, nt);
    if (rc == TDB_OK && !(dir = parent_of(nt))) rc = tdb_err(TDB_ERR_NOMEM, "fault env: out of memory");
    if (rc == TDB_OK) {
        rc = dirop_add(fe, DOP_CREATE, dir, nt, NULL, NULL);
        dir = nt = NULL;
    }
    pthread_rwlock_unlock(&fe->lock);
err:
    free(nf);
    free(nt);
    free(dir);
    return rc;
}

/* rmdir (pass-through; the engine does not remove directories). */
static int fe_rmdir(env_t *e, const char *path) {
    fault_env_t *fe = FE(e);
    pthread_rwlock_wrlock(&fe->lock);
    int rc = mutation_begin(fe, -1, "rmdir", path);
    if (rc == TDB_OK) rc = fe->t->rmdir(fe->t, path);
    pthread_rwlock_unlock(&fe->lock);
    return rc;
}

/* list_dir without the trash files. */
static int fe_list_dir(env_t *e, const char *path, char ***names, size_t *count) {
    fault_env_t *fe = FE(e);
    *names = NULL;
    *count = 0;
    pthread_rwlock_rdlock(&fe->lock);
    int rc = read_begin(fe, -1, "list", path);
    if (rc == TDB_OK) rc = fe->t->list_dir(fe->t, path, names, count);
    pthread_rwlock_unlock(&fe->lock);
    if (rc != TDB_OK) return rc;
    size_t j = 0;
    for (size_t i = 0; i < *count; i++) {
        if (strncmp((*names)[i], TRASH_PREFIX, sizeof TRASH_PREFIX - 1) == 0) free((*names)[i]);
        else (*names)[j++] = (*names)[i];
    }
    *count = j;
    return TDB_OK;
}

/* sync_dir: every pending change of entries in this directory is durable. */
static int fe_sync_dir(env_t *e, const char *path) {
    fault_env_t *fe = FE(e);
    int rc = TDB_OK;
    char *np = norm_path(path);
    if (!np) return tdb_err(TDB_ERR_NOMEM, "fault env: out of memory");
    pthread_rwlock_wrlock(&fe->lock);
    TRY(mutation_begin(fe, FAULT_SYNC_DIR, "sync_dir", np));
    int code = inject(fe, FAULT_SYNC_DIR, np, NULL);
    if (code) RAISE(code, "fault env: injected sync_dir error on %s (%s)", np, tdb_strerror(code));
    TRY(fe->t->sync_dir(fe->t, np));
    size_t j = 0;
    for (size_t i = 0; i < fe->nops; i++) {
        if (strcmp(fe->ops[i].dir, np) == 0) dirop_commit(fe, &fe->ops[i]);
        else fe->ops[j++] = fe->ops[i];
    }
    fe->nops = j;
err:
    pthread_rwlock_unlock(&fe->lock);
    free(np);
    return rc;
}

/* Lock pass-through (refused while down). */
static int fe_lock_file(env_t *e, const char *path, env_lock_t **out) {
    fault_env_t *fe = FE(e);
    pthread_rwlock_rdlock(&fe->lock);
    int rc = read_begin(fe, -1, "lock", path);
    if (rc == TDB_OK) rc = fe->t->lock_file(fe->t, path, out);
    pthread_rwlock_unlock(&fe->lock);
    return rc;
}

/* Unlock pass-through (always, so a "dead" database can be released). */
static int fe_unlock_file(env_t *e, env_lock_t *l) { return FE(e)->t->unlock_file(FE(e)->t, l); }

/* Clock pass-through. */
static uint64_t fe_now_micros(env_t *e) { return FE(e)->t->now_micros(FE(e)->t); }

/* Wrap target in a new fault env (no rules, unlimited space, up). */
int fault_env_create(env_t *target, uint64_t seed, fault_env_t **out) {
    if (!target || !out) return tdb_err(TDB_ERR_INVALID_ARG, "fault_env_create: NULL argument");
    fault_env_t *fe = (fault_env_t *)calloc(1, sizeof *fe);
    if (!fe) return tdb_err(TDB_ERR_NOMEM, "fault env: out of memory");
    fe->env.open_writable = fe_open_writable;
    fe->env.open_log = fe_open_log;
    fe->env.open_readable = fe_open_readable;
    fe->env.append = fe_append;
    fe->env.pread = fe_pread;
    fe->env.sync = fe_sync;
    fe->env.size = fe_size;
    fe->env.close = fe_close;
    fe->env.file_size = fe_file_size;
    fe->env.exists = fe_exists;
    fe->env.truncate = fe_truncate;
    fe->env.rename = fe_rename;
    fe->env.remove = fe_remove;
    fe->env.mkdir = fe_mkdir;
    fe->env.rmdir = fe_rmdir;
    fe->env.list_dir = fe_list_dir;
    fe->env.sync_dir = fe_sync_dir;
    fe->env.lock_file = fe_lock_file;
    fe->env.unlock_file = fe_unlock_file;
    fe->env.now_micros = fe_now_micros;
    fe->env.link = fe_link;
    fe->t = target;
    fe->rng = seed * 0x9E3779B97F4A7C15ull + 0x2545F4914F6CDD1Dull;
    if (!fe->rng) fe->rng = 1;
    fe->space = UINT64_MAX;
    pthread_rwlock_init(&fe->lock, NULL);
    pthread_mutex_init(&fe->mu, NULL);
    *out = fe;
    return TDB_OK;
}

/* Forget all unsynced state, committing pending changes (exclusive lock). */
static void mark_durable_locked(fault_env_t *fe) {
    for (size_t i = 0; i < fe->nops; i++) dirop_commit(fe, &fe->ops[i]);
    fe->nops = 0;
    for (size_t i = 0; i < fe->nfiles; i++) free(fe->files[i].path);
    fe->nfiles = 0;
}

/* Commit pending directory changes (drop trash) and free the env. */
void fault_env_destroy(fault_env_t *fe) {
    if (!fe) return;
    pthread_rwlock_wrlock(&fe->lock);
    mark_durable_locked(fe);
    pthread_rwlock_unlock(&fe->lock);
    for (int i = 0; i < fe->nrules; i++) free(fe->rules[i].pat);
    free(fe->files);
    free(fe->ops);
    pthread_rwlock_destroy(&fe->lock);
    pthread_mutex_destroy(&fe->mu);
    free(fe);
}

env_t *fault_env_env(fault_env_t *fe) { return &fe->env; }

/* Add an error rule (copied). */
int fault_env_add_rule(fault_env_t *fe, const fault_rule_t *r) {
    if (!fe || !r || (unsigned)r->op >= FAULT_NUM_OPS || r->code >= 0 || (!r->nth && !(r->probability > 0)))
        return tdb_err(TDB_ERR_INVALID_ARG, "fault rule: bad op, code or trigger");
    pthread_mutex_lock(&fe->mu);
    int rc = TDB_OK;
    if (fe->nrules == MAX_RULES) {
        rc = tdb_err(TDB_ERR_INVALID_ARG, "fault env: more than %d rules", MAX_RULES);
    } else {
        rule_t *x = &fe->rules[fe->nrules];
        memset(x, 0, sizeof *x);
        x->r = *r;
        x->r.path_contains = NULL;
        if (r->path_contains && !(x->pat = strdup(r->path_contains))) rc = tdb_err(TDB_ERR_NOMEM, "fault env: out of memory");
        else fe->nrules++;
    }
    pthread_mutex_unlock(&fe->mu);
    return rc;
}

/* Drop every rule; counters stay. */
void fault_env_clear_rules(fault_env_t *fe) {
    pthread_mutex_lock(&fe->mu);
    for (int i = 0; i < fe->nrules; i++) free(fe->rules[i].pat);
    fe->nrules = 0;
    pthread_mutex_unlock(&fe->mu);
}

/* Set the bytes appends may still write. */
void fault_env_set_space(fault_env_t *fe, uint64_t bytes) {
    pthread_rwlock_wrlock(&fe->lock);
    fe->space = bytes;
    pthread_rwlock_unlock(&fe->lock);
}

/* Choose how much unsynced state a power loss drops. */
void fault_env_set_loss_mode(fault_env_t *fe, fault_loss_mode_t mode) {
    pthread_rwlock_wrlock(&fe->lock);
    fe->loss_mode = mode;
    pthread_rwlock_unlock(&fe->lock);
}

/* Simulate a power loss now; the env stays down. */
int fault_env_power_loss(fault_env_t *fe) {
    pthread_rwlock_wrlock(&fe->lock);
    int rc = power_loss_locked(fe);
    pthread_rwlock_unlock(&fe->lock);
    return rc;
}

/* Arm a power loss at the n-th mutating call from now (0 disarms). */
void fault_env_crash_after(fault_env_t *fe, uint64_t n) {
    pthread_rwlock_wrlock(&fe->lock);
    fe->crash_at = n ? fe->st.mutations + n : 0;
    pthread_rwlock_unlock(&fe->lock);
}

/* 1 while the env is down after a power loss. */
int fault_env_is_down(fault_env_t *fe) {
    pthread_rwlock_rdlock(&fe->lock);
    int d = fe->down;
    pthread_rwlock_unlock(&fe->lock);
    return d;
}

/* The reboot: everything on disk is durable, calls work again. */
void fault_env_revive(fault_env_t *fe) {
    pthread_rwlock_wrlock(&fe->lock);
    mark_durable_locked(fe);
    fe->down = 0;
    fe->crash_at = 0;
    pthread_rwlock_unlock(&fe->lock);
}

/* Treat everything on disk as durable from now on. */
void fault_env_mark_durable(fault_env_t *fe) {
    pthread_rwlock_wrlock(&fe->lock);
    mark_durable_locked(fe);
    pthread_rwlock_unlock(&fe->lock);
}

/* Copy the counters. */
void fault_env_stats(fault_env_t *fe, fault_stats_t *out) {
    pthread_rwlock_rdlock(&fe->lock);
    pthread_mutex_lock(&fe->mu);
    *out = fe->st;
    pthread_mutex_unlock(&fe->mu);
    pthread_rwlock_unlock(&fe->lock);
}

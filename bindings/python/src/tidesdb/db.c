/*
 * db.c: the DB object: open with keyword options, close, point reads and
 * writes, family management, maintenance, statistics.
 * Invariants: _tdbpy.h (close waits for calls in flight, then releases
 * every child before tdb_close).
 */
#include "_tdbpy.h"

#include <string.h>
#include <time.h>

/* ---------------------------------------------------------------------- */
/* Call bracketing and argument resolution                                 */
/* ---------------------------------------------------------------------- */

/* Count a call that will run without the GIL; ClosedError if closed. */
int tdbpy_enter(DBObject *db)
{
    if (!db->db || db->closing) {
        tdbpy_raise_msg(TDB_ERR_CLOSED, "database is closed");
        return -1;
    }
    if (TDBPY_FORKED(db)) {
        tdbpy_raise_msg(TDB_ERR_INVALID_ARG,
                        "database was opened before fork(): open it again in this process");
        return -1;
    }
    db->active++;
    return 0;
}

/* End a call counted by tdbpy_enter (GIL held again). */
void tdbpy_leave(DBObject *db)
{
    db->active--;
}

/* Run fn(arg), a release of a native handle already detached from its
 * object (so no other thread can reach it), without the GIL while the db is
 * open: destroying the last reference to an old version may delete files.
 * Counted as a call in flight so that close() waits for it. While close()
 * runs (it releases the children itself) it runs with the GIL; in a fork()ed
 * child it does not run at all (invariant 5). */
void tdbpy_release_call(DBObject *db, void (*fn)(void *), void *arg)
{
    if (TDBPY_FORKED(db))
        return; /* the parent's handle: leave it alone */
    if (!db->db || db->closing) {
        fn(arg);
        return;
    }
    db->active++;
    Py_BEGIN_ALLOW_THREADS
    fn(arg);
    Py_END_ALLOW_THREADS
    db->active--;
}

/* InvalidArgumentError for an object used by two threads at once. */
int tdbpy_busy_error(const char *what)
{
    char msg[128];
    snprintf(msg, sizeof msg, "%s is in use by another thread", what);
    tdbpy_raise_msg(TDB_ERR_INVALID_ARG, msg);
    return -1;
}

/* None -> the default family; a ColumnFamily of this db -> its handle. */
int tdbpy_resolve_cf(DBObject *db, PyObject *o, tdb_cf_t **out)
{
    if (!o || o == Py_None) {
        *out = db->default_cf;
        return 0;
    }
    if (!PyObject_TypeCheck(o, &CF_Type)) {
        PyErr_Format(PyExc_TypeError, "cf must be a tidesdb.ColumnFamily or None, not %.100s",
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    CFObject *cf = (CFObject *)o;
    if (cf->db != db) {
        tdbpy_raise_msg(TDB_ERR_INVALID_ARG, "column family belongs to another database");
        return -1;
    }
    *out = cf->cf;
    return 0;
}

/* None -> no snapshot; a live Snapshot of this db -> its handle. */
int tdbpy_resolve_snapshot(DBObject *db, PyObject *o, tdb_snapshot_t **out)
{
    *out = NULL;
    if (!o || o == Py_None)
        return 0;
    if (!PyObject_TypeCheck(o, &Snapshot_Type)) {
        PyErr_Format(PyExc_TypeError, "snapshot must be a tidesdb.Snapshot or None, not %.100s",
                     Py_TYPE(o)->tp_name);
        return -1;
    }
    SnapshotObject *s = (SnapshotObject *)o;
    if (s->base.db != db) {
        tdbpy_raise_msg(TDB_ERR_INVALID_ARG, "snapshot belongs to another database");
        return -1;
    }
    if (!s->snap) {
        tdbpy_raise_msg(TDB_ERR_CLOSED, "snapshot was released");
        return -1;
    }
    *out = s->snap;
    return 0;
}

/* ---------------------------------------------------------------------- */
/* DB                                                                      */
/* ---------------------------------------------------------------------- */

/* DB(path, **options): open (creating by default) the database. */
static int DB_init(DBObject *self, PyObject *args, PyObject *kw)
{
    PyObject *path_obj;
    if (self->db || self->path) {
        PyErr_SetString(PyExc_TypeError, "DB.__init__ called twice");
        return -1;
    }
    if (!PyArg_ParseTuple(args, "O&:DB", PyUnicode_FSConverter, &path_obj))
        return -1;
    tdb_config_t cfg;
    tdb_config_default(&cfg);
    if (tdbpy_parse_options(kw, &cfg, &cfg.default_cf) < 0) {
        Py_DECREF(path_obj);
        return -1;
    }
    tdb_t *db = NULL;
    tdb_cf_t *cf = NULL;
    int rc;
    const char *path = PyBytes_AS_STRING(path_obj);
    Py_BEGIN_ALLOW_THREADS
    rc = tdb_open(path, &cfg, &db);
    if (rc == TDB_OK && (rc = tdb_get_cf(db, TDB_DEFAULT_CF, &cf)) != TDB_OK) {
        tdb_close(db);
        db = NULL;
    }
    Py_END_ALLOW_THREADS
    if (rc != TDB_OK) {
        Py_DECREF(path_obj);
        tdbpy_raise(rc);
        return -1;
    }
    self->db = db;
    self->default_cf = cf;
    self->fork_gen = tdbpy_fork_gen;
    self->path = PyUnicode_DecodeFSDefault(path);
    Py_DECREF(path_obj);
    return self->path ? 0 : -1;
}

/* Allocate an unopened DB object. */
static PyObject *DB_new(PyTypeObject *type, PyObject *args, PyObject *kw)
{
    DBObject *self = (DBObject *)type->tp_alloc(type, 0);
    if (self)
        tdbpy_link_init(&self->children);
    return (PyObject *)self;
}

/* Close: refuse new calls, wait for running ones, release children, close. */
static int db_close_impl(DBObject *self)
{
    if (self->db && TDBPY_FORKED(self)) {
        /* A fork()ed child's copy: the threads counted in `active` (and any
         * close in progress) are the parent's. Forget the handles. */
        for (tdbpy_link *l = self->children.next; l != &self->children;) {
            tdbpy_link *next = l->next;
            ChildObject *c = TDBPY_CHILD(l);
            c->release(c); /* skips the library in a child */
            l = next;
        }
        self->db = NULL;
        self->default_cf = NULL;
        self->closing = 0;
        self->active = 0;
        return 0;
    }
    if (self->closing) {
        /* Another thread is closing it: return once it is closed. */
        while (self->db) {
            Py_BEGIN_ALLOW_THREADS
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
            Py_END_ALLOW_THREADS
        }
        return 0;
    }
    if (!self->db)
        return 0;
    self->closing = 1;
    /* Wake transactions waiting for a row lock (they raise AbortedError)
     * rather than wait out their lock timeout here. */
    for (tdbpy_link *l = self->children.next; l != &self->children; l = l->next) {
        ChildObject *c = TDBPY_CHILD(l);
        if (c->is_txn && ((TxnObject *)c)->busy && ((TxnObject *)c)->txn)
            tdb_txn_cancel_wait(((TxnObject *)c)->txn);
    }
    while (self->active > 0) {
        Py_BEGIN_ALLOW_THREADS
        struct timespec ts = {0, 1000000};
        nanosleep(&ts, NULL);
        Py_END_ALLOW_THREADS
    }
    /* Transactions first: each destroys its iterators before tdb_txn_free. */
    for (int pass = 0; pass < 2; pass++) {
        tdbpy_link *l = self->children.next;
        while (l != &self->children) {
            tdbpy_link *next = l->next;
            ChildObject *c = TDBPY_CHILD(l);
            if (c->is_txn == (pass == 0))
                c->release(c);
            l = next;
        }
    }
    tdb_t *db = self->db;
    int rc = TDB_OK;
    if (!TDBPY_FORKED(self)) {
        Py_BEGIN_ALLOW_THREADS
        rc = tdb_close(db);
        Py_END_ALLOW_THREADS
    }
    self->db = NULL;
    self->default_cf = NULL;
    self->closing = 0;
    return tdbpy_check(rc);
}

static PyObject *DB_close(DBObject *self, PyObject *unused)
{
    if (db_close_impl(self) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static void DB_dealloc(DBObject *self)
{
    if (self->weakrefs)
        PyObject_ClearWeakRefs((PyObject *)self);
    if (self->db) {
        PyObject *t, *v, *tb;
        PyErr_Fetch(&t, &v, &tb);
        if (db_close_impl(self) < 0)
            PyErr_WriteUnraisable((PyObject *)self);
        PyErr_Restore(t, v, tb);
    }
    Py_XDECREF(self->path);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *DB_enter(DBObject *self, PyObject *unused)
{
    if (!self->db)
        return tdbpy_raise_msg(TDB_ERR_CLOSED, "database is closed");
    Py_INCREF(self);
    return (PyObject *)self;
}

static PyObject *DB_exit(DBObject *self, PyObject *args)
{
    if (db_close_impl(self) < 0)
        return NULL;
    Py_RETURN_FALSE;
}

/* put(key, value, cf=None, ttl=0) */
static PyObject *DB_put(DBObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwn)
{
    static const char *const names[] = {"key", "value", "cf", "ttl"};
    PyObject *a[4];
    if (tdbpy_parse("put", args, nargs, kwn, names, 4, 2, a) < 0)
        return NULL;
    int64_t ttl = 0;
    tdb_cf_t *cf;
    if ((a[3] && tdbpy_int64(a[3], "ttl", &ttl) < 0) || tdbpy_enter(self) < 0)
        return NULL;
    Py_buffer k, v;
    int rc = -1;
    if (tdbpy_resolve_cf(self, a[2], &cf) < 0 || tdbpy_key_value(a[0], a[1], &k, &v) < 0)
        goto out;
    Py_BEGIN_ALLOW_THREADS
    rc = tdb_put(self->db, cf, k.buf, (size_t)k.len, v.buf, (size_t)v.len, ttl);
    Py_END_ALLOW_THREADS
    tdbpy_release_kv(&k, &v);
    if (rc != TDB_OK)
        tdbpy_raise(rc);
out:
    tdbpy_leave(self);
    if (rc != TDB_OK)
        return NULL;
    Py_RETURN_NONE;
}

/* Shared body of get and __getitem__: value bytes, Py_None if absent
 * (when missing_none), or NULL with an exception. */
PyObject *tdbpy_db_get(DBObject *self, PyObject *key, PyObject *cfo, PyObject *snapo,
                        int missing_none)
{
    tdb_cf_t *cf;
    tdb_snapshot_t *snap;
    if (tdbpy_enter(self) < 0)
        return NULL;
    PyObject *res = NULL;
    Py_buffer k;
    if (tdbpy_resolve_cf(self, cfo, &cf) < 0 || tdbpy_resolve_snapshot(self, snapo, &snap) < 0 ||
        tdbpy_buffer(key, &k, "key") < 0)
        goto out;
    void *val = NULL;
    size_t vlen = 0;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tdb_get(self->db, cf, snap, k.buf, (size_t)k.len, &val, &vlen);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&k);
    if (rc == TDB_OK) {
        res = PyBytes_FromStringAndSize(val, (Py_ssize_t)vlen);
        tdb_free(val);
    } else if (rc == TDB_ERR_NOT_FOUND && missing_none) {
        res = Py_NewRef(Py_None);
    } else if (rc == TDB_ERR_NOT_FOUND) {
        PyErr_SetObject(PyExc_KeyError, key);
    } else {
        tdbpy_raise(rc);
    }
out:
    tdbpy_leave(self);
    return res;
}

/* get(key, cf=None, snapshot=None) -> bytes or None */
static PyObject *DB_get(DBObject *self, PyObject *const *args, Py_ssize_t nargs, PyObject *kwn)
{
    static const char *const names[] = {"key", "cf", "snapshot"};
    PyObject *a[3];
    if (tdbpy_parse("get", args, nargs, kwn, names, 3, 1, a) < 0)
        return NULL;
    return tdbpy_db_get(self, a[0], a[1], a[2], 1);
}

/* Shared body of delete / single_delete. */
static PyObject *db_delete(DBObject *self, PyObject *key, PyObject *cfo, int single)
{
    tdb_cf_t *cf;
    if (tdbpy_enter(self) < 0)
        return NULL;
    Py_buffer k;
    int rc = -1;
    if (tdbpy_resolve_cf(self, cfo, &cf) < 0 || tdbpy_buffer(key, &k, "key") < 0)
        goto out;
    Py_BEGIN_ALLOW_THREADS
    rc = single ? tdb_single_delete(self->db, cf, k.buf, (size_t)k.len)
                : tdb_delete(self->db, cf, k.buf, (size_t)k.len);
    Py_END_ALLOW_THREADS
    PyBuffer_Release(&k);
    if (rc != TDB_OK)
        tdbpy_raise(rc);
out:
    tdbpy_leave(self);
    if (rc != TDB_OK)
        return NULL;
    Py_RETURN_NONE;
}

/* delete(key, cf=None) */
static PyObject *DB_delete(DBObject *self, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwn)
{
    static const char *const names[] = {"key", "cf"};
    PyObject *a[2];
    if (tdbpy_parse("delete", args, nargs, kwn, names, 2, 1, a) < 0)
        return NULL;
    return db_delete(self, a[0], a[1], 0);
}

/* single_delete(key, cf=None) */
static PyObject *DB_single_delete(DBObject *self, PyObject *const *args, Py_ssize_t nargs,
                                  PyObject *kwn)
{
    static const char *const names[] = {"key", "cf"};
    PyObject *a[2];
    if (tdbpy_parse("single_delete", args, nargs, kwn, names, 2, 1, a) < 0)
        return NULL;
    return db_delete(self, a[0], a[1], 1);
}

/* delete_range(start, end, cf=None): delete start <= k < end. */
static PyObject *DB_delete_range(DBObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"start", "end", "cf", NULL};
    Py_buffer s, e;
    PyObject *cfo = NULL;
    tdb_cf_t *cf;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*y*|O:delete_range", kwlist, &s, &e, &cfo))
        return NULL;
    int rc = -1;
    if (tdbpy_enter(self) == 0) {
        if (tdbpy_resolve_cf(self, cfo, &cf) == 0) {
            Py_BEGIN_ALLOW_THREADS
            rc = tdb_delete_range(self->db, cf, s.buf, (size_t)s.len, e.buf, (size_t)e.len);
            Py_END_ALLOW_THREADS
            if (rc != TDB_OK)
                tdbpy_raise(rc);
        }
        tdbpy_leave(self);
    }
    PyBuffer_Release(&s);
    PyBuffer_Release(&e);
    if (rc != TDB_OK)
        return NULL;
    Py_RETURN_NONE;
}

/* write(batch, stall_timeout_ms=0): apply a WriteBatch atomically. */
static PyObject *DB_write(DBObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"batch", "stall_timeout_ms", NULL};
    BatchObject *b;
    long long stall = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O!|L:write", kwlist, &Batch_Type, &b, &stall))
        return NULL;
    if (b->db != self)
        return tdbpy_raise_msg(TDB_ERR_INVALID_ARG, "batch belongs to another database");
    if (b->busy)
        return tdbpy_busy_error("batch"), NULL;
    if (tdbpy_enter(self) < 0)
        return NULL;
    tdb_write_options_t o;
    tdb_write_options_default(&o);
    o.stall_timeout_ms = stall;
    int rc;
    b->busy = 1;
    Py_BEGIN_ALLOW_THREADS
    rc = tdb_write_opt(self->db, b->b, &o);
    Py_END_ALLOW_THREADS
    b->busy = 0;
    tdbpy_leave(self);
    if (tdbpy_check(rc) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* Run op(db, cf) without the GIL for sync/flush/compact/wait_idle/pause. */
static PyObject *db_simple(DBObject *self, PyObject *cfo, int which)
{
    tdb_cf_t *cf = NULL;
    if (tdbpy_enter(self) < 0)
        return NULL;
    if (cfo && cfo != Py_None && tdbpy_resolve_cf(self, cfo, &cf) < 0) {
        tdbpy_leave(self);
        return NULL;
    }
    int rc;
    Py_BEGIN_ALLOW_THREADS
    switch (which) {
    case 0: rc = tdb_sync(self->db); break;
    case 1: rc = tdb_flush(self->db, cf); break;
    case 2: rc = tdb_compact(self->db, cf); break;
    case 3: rc = tdb_wait_idle(self->db); break;
    case 4: rc = tdb_pause_background(self->db); break;
    default: rc = tdb_continue_background(self->db); break;
    }
    Py_END_ALLOW_THREADS
    tdbpy_leave(self);
    if (tdbpy_check(rc) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *DB_sync(DBObject *self, PyObject *u) { return db_simple(self, NULL, 0); }
static PyObject *DB_wait_idle(DBObject *self, PyObject *u) { return db_simple(self, NULL, 3); }
static PyObject *DB_pause(DBObject *self, PyObject *u) { return db_simple(self, NULL, 4); }
static PyObject *DB_continue(DBObject *self, PyObject *u) { return db_simple(self, NULL, 5); }

static PyObject *DB_flush(DBObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"cf", NULL};
    PyObject *cfo = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:flush", kwlist, &cfo))
        return NULL;
    return db_simple(self, cfo, 1);
}

static PyObject *DB_compact(DBObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"cf", NULL};
    PyObject *cfo = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:compact", kwlist, &cfo))
        return NULL;
    return db_simple(self, cfo, 2);
}

/* checkpoint(dir) -> sequence number of the copy. */
static PyObject *DB_checkpoint(DBObject *self, PyObject *args)
{
    PyObject *dir;
    if (!PyArg_ParseTuple(args, "O&:checkpoint", PyUnicode_FSConverter, &dir))
        return NULL;
    uint64_t seq = 0;
    int rc = -1;
    if (tdbpy_enter(self) == 0) {
        Py_BEGIN_ALLOW_THREADS
        rc = tdb_checkpoint(self->db, PyBytes_AS_STRING(dir), &seq);
        Py_END_ALLOW_THREADS
        tdbpy_leave(self);
        if (rc != TDB_OK)
            tdbpy_raise(rc);
    }
    Py_DECREF(dir);
    return rc == TDB_OK ? PyLong_FromUnsignedLongLong(seq) : NULL;
}

/* approximate_count(start=None, stop=None, cf=None) -> int */
static PyObject *DB_approximate_count(DBObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"start", "stop", "cf", NULL};
    Py_buffer s = {0}, e = {0};
    PyObject *cfo = NULL;
    tdb_cf_t *cf;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|z*z*O:approximate_count", kwlist, &s, &e, &cfo))
        return NULL;
    uint64_t n = 0;
    int rc = -1;
    if (tdbpy_enter(self) == 0) {
        if (tdbpy_resolve_cf(self, cfo, &cf) == 0) {
            Py_BEGIN_ALLOW_THREADS
            rc = tdb_approximate_count(self->db, cf, s.buf, s.buf ? (size_t)s.len : 0, e.buf,
                                       e.buf ? (size_t)e.len : 0, &n);
            Py_END_ALLOW_THREADS
            if (rc != TDB_OK)
                tdbpy_raise(rc);
        }
        tdbpy_leave(self);
    }
    if (s.obj)
        PyBuffer_Release(&s);
    if (e.obj)
        PyBuffer_Release(&e);
    return rc == TDB_OK ? PyLong_FromUnsignedLongLong(n) : NULL;
}

/* Add name -> unsigned value to d; -1 on failure. */
static int put_u64(PyObject *d, const char *name, unsigned long long v)
{
    PyObject *o = PyLong_FromUnsignedLongLong(v);
    int r = o ? PyDict_SetItemString(d, name, o) : -1;
    Py_XDECREF(o);
    return r;
}

/* stats(cf=None) -> dict of the tdb_stats_t fields; "levels" is a list of
 * (files, bytes) for levels 1.. */
static PyObject *DB_stats(DBObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"cf", NULL};
    PyObject *cfo = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:stats", kwlist, &cfo))
        return NULL;
    tdb_cf_t *cf = NULL;
    if (tdbpy_enter(self) < 0)
        return NULL;
    if (cfo && cfo != Py_None && tdbpy_resolve_cf(self, cfo, &cf) < 0) {
        tdbpy_leave(self);
        return NULL;
    }
    tdb_stats_t st;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tdb_get_stats(self->db, cf, &st);
    Py_END_ALLOW_THREADS
    tdbpy_leave(self);
    if (tdbpy_check(rc) < 0)
        return NULL;
    PyObject *d = PyDict_New();
    PyObject *levels = PyList_New(0);
    if (!d || !levels)
        goto fail;
    for (int i = 1; i < TDB_MAX_LEVELS; i++) {
        PyObject *t = Py_BuildValue("(KK)", (unsigned long long)st.levels[i].files,
                                    (unsigned long long)st.levels[i].bytes);
        if (!t || PyList_Append(levels, t) < 0) {
            Py_XDECREF(t);
            goto fail;
        }
        Py_DECREF(t);
    }
    if (PyDict_SetItemString(d, "levels", levels) < 0)
        goto fail;
    Py_CLEAR(levels);
#define S(f) if (put_u64(d, #f, (unsigned long long)st.f) < 0) goto fail
    S(memtable_bytes); S(immutable_memtables); S(flushes_pending); S(compactions_pending);
    S(num_entries_estimate); S(block_cache_hits); S(block_cache_misses);
    S(block_cache_bytes); S(user_bytes_written); S(wal_bytes_written);
    S(flush_bytes_written); S(compaction_bytes_read); S(compaction_bytes_written);
    S(flushes); S(compactions); S(stall_micros); S(stall_max_micros); S(stalls);
    S(slowdowns); S(stall_timeouts); S(lock_waits); S(lock_deadlocks); S(lock_timeouts);
    S(lock_wait_micros); S(lock_wait_max_micros);
    S(background_paused); S(memory_budget); S(last_sequence);
#undef S
    return d;
fail:
    Py_XDECREF(levels);
    Py_XDECREF(d);
    return NULL;
}

/* create_column_family(name, **options) -> ColumnFamily */
static PyObject *DB_create_cf(DBObject *self, PyObject *args, PyObject *kw)
{
    const char *name;
    if (!PyArg_ParseTuple(args, "s:create_column_family", &name))
        return NULL;
    tdb_cf_config_t cfg;
    if (tdbpy_parse_cf_options(kw, &cfg) < 0 || tdbpy_enter(self) < 0)
        return NULL;
    tdb_cf_t *cf = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tdb_create_cf(self->db, name, &cfg, &cf);
    Py_END_ALLOW_THREADS
    tdbpy_leave(self);
    if (tdbpy_check(rc) < 0)
        return NULL;
    return tdbpy_cf_object(self, cf);
}

/* get_column_family(name) -> ColumnFamily (NotFoundError if absent) */
static PyObject *DB_get_cf(DBObject *self, PyObject *args)
{
    const char *name;
    if (!PyArg_ParseTuple(args, "s:get_column_family", &name) || tdbpy_enter(self) < 0)
        return NULL;
    tdb_cf_t *cf = NULL;
    int rc = tdb_get_cf(self->db, name, &cf);
    tdbpy_leave(self);
    if (tdbpy_check(rc) < 0)
        return NULL;
    return tdbpy_cf_object(self, cf);
}

/* drop_column_family(name) */
static PyObject *DB_drop_cf(DBObject *self, PyObject *args)
{
    const char *name;
    if (!PyArg_ParseTuple(args, "s:drop_column_family", &name) || tdbpy_enter(self) < 0)
        return NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tdb_drop_cf(self->db, name);
    Py_END_ALLOW_THREADS
    tdbpy_leave(self);
    if (tdbpy_check(rc) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* list_column_families() -> list of names */
static PyObject *DB_list_cfs(DBObject *self, PyObject *u)
{
    if (tdbpy_enter(self) < 0)
        return NULL;
    char **names = NULL;
    size_t n = 0;
    int rc = tdb_list_cfs(self->db, &names, &n);
    tdbpy_leave(self);
    if (tdbpy_check(rc) < 0)
        return NULL;
    PyObject *l = PyList_New(0);
    for (size_t i = 0; i < n; i++) {
        PyObject *s = l ? PyUnicode_FromString(names[i]) : NULL;
        if (!s || PyList_Append(l, s) < 0)
            Py_CLEAR(l);
        Py_XDECREF(s);
        tdb_free(names[i]);
    }
    tdb_free(names);
    return l;
}

/* snapshot() -> Snapshot */
static PyObject *DB_snapshot(DBObject *self, PyObject *u)
{
    if (tdbpy_enter(self) < 0)
        return NULL;
    tdb_snapshot_t *snap;
    Py_BEGIN_ALLOW_THREADS
    snap = tdb_snapshot_create(self->db);
    Py_END_ALLOW_THREADS
    tdbpy_leave(self);
    if (!snap)
        return tdbpy_raise(TDB_ERR_NOMEM);
    SnapshotObject *s = PyObject_New(SnapshotObject, &Snapshot_Type);
    if (!s) {
        tdb_snapshot_release(self->db, snap);
        return NULL;
    }
    s->snap = snap;
    s->seq = tdb_snapshot_sequence(snap);
    s->base.db = (DBObject *)Py_NewRef(self);
    s->base.release = tdbpy_snapshot_release;
    s->base.is_txn = 0;
    tdbpy_link_init(&s->base.link);
    tdbpy_link_add(&self->children, &s->base.link);
    return (PyObject *)s;
}

/* iterator(cf=None, snapshot=None, start=None, stop=None, reverse=False, prefix=None) */
static PyObject *DB_iterator(DBObject *self, PyObject *args, PyObject *kw)
{
    return tdbpy_iter_new(self, NULL, args, kw);
}

/* __iter__: a forward iterator over the default family yielding (key, value). */
static PyObject *DB_iter(DBObject *self)
{
    PyObject *args = PyTuple_New(0);
    if (!args)
        return NULL;
    PyObject *r = tdbpy_iter_new(self, NULL, args, NULL);
    Py_DECREF(args);
    return r;
}

static PyObject *DB_getitem(DBObject *self, PyObject *key)
{
    return tdbpy_db_get(self, key, NULL, NULL, 0);
}

static int DB_setitem(DBObject *self, PyObject *key, PyObject *value)
{
    PyObject *args[2] = {key, value};
    PyObject *r = value ? DB_put(self, args, 2, NULL) : db_delete(self, key, NULL, 0);
    if (!r)
        return -1;
    Py_DECREF(r);
    return 0;
}

static int DB_contains(DBObject *self, PyObject *key)
{
    PyObject *r = tdbpy_db_get(self, key, NULL, NULL, 1);
    if (!r)
        return -1;
    int present = r != Py_None;
    Py_DECREF(r);
    return present;
}

static PyObject *DB_get_closed(DBObject *self, void *c)
{
    return PyBool_FromLong(self->db == NULL);
}

static PyObject *DB_get_path(DBObject *self, void *c)
{
    return Py_NewRef(self->path ? self->path : Py_None);
}

static PyObject *DB_batch(DBObject *self, PyObject *u)
{
    return tdbpy_batch_new(self);
}

static PyObject *DB_transaction(DBObject *self, PyObject *args, PyObject *kw)
{
    return tdbpy_txn_new(self, args, kw);
}

static PyMethodDef DB_methods[] = {
    {"close", (PyCFunction)DB_close, METH_NOARGS,
     "close(): release every iterator, snapshot and transaction, then close."},
    {"__enter__", (PyCFunction)DB_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)DB_exit, METH_VARARGS, NULL},
    {"put", (PyCFunction)(void (*)(void))DB_put, METH_FASTCALL | METH_KEYWORDS,
     "put(key, value, cf=None, ttl=0): write one key (ttl seconds > 0 expires it)."},
    {"get", (PyCFunction)(void (*)(void))DB_get, METH_FASTCALL | METH_KEYWORDS,
     "get(key, cf=None, snapshot=None) -> bytes, or None if absent."},
    {"delete", (PyCFunction)(void (*)(void))DB_delete, METH_FASTCALL | METH_KEYWORDS,
     "delete(key, cf=None)"},
    {"single_delete", (PyCFunction)(void (*)(void))DB_single_delete,
     METH_FASTCALL | METH_KEYWORDS, "single_delete(key, cf=None): see tdb_single_delete."},
    {"delete_range", (PyCFunction)(void (*)(void))DB_delete_range, METH_VARARGS | METH_KEYWORDS,
     "delete_range(start, end, cf=None): delete every key start <= k < end."},
    {"write", (PyCFunction)(void (*)(void))DB_write, METH_VARARGS | METH_KEYWORDS,
     "write(batch, stall_timeout_ms=0): apply a WriteBatch atomically."},
    {"batch", (PyCFunction)DB_batch, METH_NOARGS,
     "batch() -> WriteBatch (as a context manager, written on a clean exit)."},
    {"transaction", (PyCFunction)(void (*)(void))DB_transaction, METH_VARARGS | METH_KEYWORDS,
     "transaction(isolation=SNAPSHOT, read_only=False, pessimistic=False, "
     "lock_timeout_ms=5000, max_bytes=0, stall_timeout_ms=0) -> Transaction"},
    {"iterator", (PyCFunction)(void (*)(void))DB_iterator, METH_VARARGS | METH_KEYWORDS,
     "iterator(cf=None, snapshot=None, start=None, stop=None, reverse=False, prefix=None)"
     " -> Iterator of (key, value) with start <= key < stop."},
    {"snapshot", (PyCFunction)DB_snapshot, METH_NOARGS, "snapshot() -> Snapshot"},
    {"sync", (PyCFunction)DB_sync, METH_NOARGS, "sync(): fsync the WAL."},
    {"flush", (PyCFunction)(void (*)(void))DB_flush, METH_VARARGS | METH_KEYWORDS,
     "flush(cf=None): flush memtables and wait."},
    {"compact", (PyCFunction)(void (*)(void))DB_compact, METH_VARARGS | METH_KEYWORDS,
     "compact(cf=None): compact fully and wait."},
    {"wait_idle", (PyCFunction)DB_wait_idle, METH_NOARGS, "wait_idle()"},
    {"pause_background", (PyCFunction)DB_pause, METH_NOARGS, "pause_background()"},
    {"continue_background", (PyCFunction)DB_continue, METH_NOARGS, "continue_background()"},
    {"checkpoint", (PyCFunction)DB_checkpoint, METH_VARARGS,
     "checkpoint(dir) -> int: consistent copy of the database; returns its sequence."},
    {"approximate_count", (PyCFunction)(void (*)(void))DB_approximate_count,
     METH_VARARGS | METH_KEYWORDS, "approximate_count(start=None, stop=None, cf=None) -> int"},
    {"stats", (PyCFunction)(void (*)(void))DB_stats, METH_VARARGS | METH_KEYWORDS,
     "stats(cf=None) -> dict"},
    {"create_column_family", (PyCFunction)(void (*)(void))DB_create_cf,
     METH_VARARGS | METH_KEYWORDS, "create_column_family(name, **options) -> ColumnFamily"},
    {"get_column_family", (PyCFunction)DB_get_cf, METH_VARARGS,
     "get_column_family(name) -> ColumnFamily"},
    {"drop_column_family", (PyCFunction)DB_drop_cf, METH_VARARGS, "drop_column_family(name)"},
    {"list_column_families", (PyCFunction)DB_list_cfs, METH_NOARGS,
     "list_column_families() -> list of str"},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef DB_getset[] = {
    {"closed", (getter)DB_get_closed, NULL, "True once closed", NULL},
    {"path", (getter)DB_get_path, NULL, "directory of the database", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

static PyMappingMethods DB_as_mapping = {
    .mp_subscript = (binaryfunc)DB_getitem,
    .mp_ass_subscript = (objobjargproc)DB_setitem,
};
static PySequenceMethods DB_as_sequence = {.sq_contains = (objobjproc)DB_contains};

PyTypeObject DB_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tidesdb.DB",
    .tp_basicsize = sizeof(DBObject),
    .tp_dealloc = (destructor)DB_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "DB(path, **options): an open TidesDB database. Options are the fields of "
              "tdb_config_t and of the default family's tdb_cf_config_t.",
    .tp_methods = DB_methods,
    .tp_getset = DB_getset,
    .tp_init = (initproc)DB_init,
    .tp_new = DB_new,
    .tp_iter = (getiterfunc)DB_iter,
    .tp_as_mapping = &DB_as_mapping,
    .tp_as_sequence = &DB_as_sequence,
    .tp_weaklistoffset = offsetof(DBObject, weakrefs),
};


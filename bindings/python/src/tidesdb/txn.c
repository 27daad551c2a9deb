/*
 * txn.c: Transaction, a tdb_txn_t with its isolation level. As a context
 * manager it commits on a clean exit and rolls back on an exception. Its
 * iterators live in txn->iters and are destroyed when it commits, rolls
 * back or is released (the library's iterators are valid only until the
 * transaction ends). Invariants: _tdbpy.h.
 */
#include "_tdbpy.h"

/* Destroy every iterator of the transaction (GIL held). */
static void txn_release_iters(TxnObject *self)
{
    while (self->iters.next != &self->iters) {
        ChildObject *c = TDBPY_CHILD(self->iters.next);
        c->release(c); /* unlinks it */
    }
}

/* tdb_txn_free for tdbpy_release_call. */
static void free_txn(void *t)
{
    tdb_txn_free(t);
}

/* Release the native transaction (rolled back if active) and unlink it;
 * the handle is detached first, then freed without the GIL. */
static void txn_release(ChildObject *c)
{
    TxnObject *self = (TxnObject *)c;
    txn_release_iters(self);
    tdb_txn_t *t = self->txn;
    self->txn = NULL;
    self->finished = 1;
    tdbpy_link_del(&self->base.link);
    if (t)
        tdbpy_release_call(self->base.db, free_txn, t);
}

/* DB.transaction(isolation=SNAPSHOT, read_only=False, pessimistic=False,
 * lock_timeout_ms=5000, max_bytes=0, stall_timeout_ms=0) */
PyObject *tdbpy_txn_new(DBObject *db, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"isolation",  "read_only",        "pessimistic", "lock_timeout_ms",
                             "max_bytes", "stall_timeout_ms", NULL};
    tdb_txn_options_t o;
    tdb_txn_options_default(&o);
    long long lock_timeout = o.lock_timeout_ms, stall = o.stall_timeout_ms;
    Py_ssize_t max_bytes = (Py_ssize_t)o.max_bytes;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|ipiLnL:transaction", kwlist, &o.isolation,
                                     &o.read_only, &o.pessimistic, &lock_timeout, &max_bytes,
                                     &stall))
        return NULL;
    if (max_bytes < 0)
        return tdbpy_raise_msg(TDB_ERR_INVALID_ARG, "max_bytes must be >= 0");
    o.lock_timeout_ms = lock_timeout;
    o.stall_timeout_ms = stall;
    o.max_bytes = (size_t)max_bytes;
    if (tdbpy_enter(db) < 0)
        return NULL;
    tdb_txn_t *t = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = tdb_txn_begin(db->db, &o, &t);
    Py_END_ALLOW_THREADS
    tdbpy_leave(db);
    if (tdbpy_check(rc) < 0)
        return NULL;
    TxnObject *self = PyObject_New(TxnObject, &Txn_Type);
    if (!self) {
        tdb_txn_free(t);
        return NULL;
    }
    self->base.db = (DBObject *)Py_NewRef(db);
    self->base.release = txn_release;
    self->base.is_txn = 1;
    tdbpy_link_init(&self->base.link);
    tdbpy_link_add(&db->children, &self->base.link);
    tdbpy_link_init(&self->iters);
    self->txn = t;
    self->finished = 0;
    self->busy = 0;
    return (PyObject *)self;
}

/* Check the transaction may be used now and count the call in the db. */
static int txn_begin_call(TxnObject *self)
{
    if (self->busy)
        return tdbpy_busy_error("transaction");
    if (!self->txn) {
        tdbpy_raise_msg(TDB_ERR_CLOSED, "transaction was released (database closed)");
        return -1;
    }
    if (tdbpy_enter(self->base.db) < 0)
        return -1;
    self->busy = 1;
    return 0;
}

/* Undo txn_begin_call. */
static void txn_end_call(TxnObject *self)
{
    self->busy = 0;
    tdbpy_leave(self->base.db);
}

/* put(key, value, cf=None, ttl=0) */
static PyObject *Txn_put(TxnObject *self, PyObject *const *args, Py_ssize_t nargs,
                         PyObject *kwn)
{
    static const char *const names[] = {"key", "value", "cf", "ttl"};
    PyObject *a[4];
    int64_t ttl = 0;
    tdb_cf_t *cf;
    if (tdbpy_parse("put", args, nargs, kwn, names, 4, 2, a) < 0 ||
        (a[3] && tdbpy_int64(a[3], "ttl", &ttl) < 0) ||
        tdbpy_resolve_cf(self->base.db, a[2], &cf) < 0)
        return NULL;
    Py_buffer k, v;
    if (tdbpy_key_value(a[0], a[1], &k, &v) < 0)
        return NULL;
    int rc = -1;
    if (txn_begin_call(self) == 0) {
        tdb_txn_t *t = self->txn;
        Py_BEGIN_ALLOW_THREADS
        rc = tdb_txn_put(t, cf, k.buf, (size_t)k.len, v.buf, (size_t)v.len, ttl);
        Py_END_ALLOW_THREADS
        txn_end_call(self);
        if (rc != TDB_OK)
            tdbpy_raise(rc);
    }
    tdbpy_release_kv(&k, &v);
    if (rc != TDB_OK)
        return NULL;
    Py_RETURN_NONE;
}

/* Shared body of get / get_for_update (mode 0 get, 1 shared, 2 exclusive)
 * and delete / single_delete (mode 3, 4). */
static PyObject *txn_key_op(TxnObject *self, PyObject *key, PyObject *cfo, int mode)
{
    tdb_cf_t *cf;
    if (tdbpy_resolve_cf(self->base.db, cfo, &cf) < 0)
        return NULL;
    Py_buffer k;
    if (tdbpy_buffer(key, &k, "key") < 0)
        return NULL;
    if (txn_begin_call(self) < 0) {
        PyBuffer_Release(&k);
        return NULL;
    }
    tdb_txn_t *t = self->txn;
    void *val = NULL;
    size_t vlen = 0;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    switch (mode) {
    case 0: rc = tdb_txn_get(t, cf, k.buf, (size_t)k.len, &val, &vlen); break;
    case 1:
    case 2:
        rc = tdb_txn_get_for_update(t, cf, k.buf, (size_t)k.len, mode == 2, &val, &vlen);
        break;
    case 3: rc = tdb_txn_delete(t, cf, k.buf, (size_t)k.len); break;
    default: rc = tdb_txn_single_delete(t, cf, k.buf, (size_t)k.len); break;
    }
    Py_END_ALLOW_THREADS
    txn_end_call(self);
    PyBuffer_Release(&k);
    if (rc == TDB_ERR_NOT_FOUND && mode <= 2)
        Py_RETURN_NONE;
    if (tdbpy_check(rc) < 0)
        return NULL;
    if (mode >= 3)
        Py_RETURN_NONE;
    PyObject *r = PyBytes_FromStringAndSize(val ? val : "", (Py_ssize_t)vlen);
    tdb_free(val);
    return r;
}

/* get(key, cf=None) -> bytes or None: own writes first, then the snapshot. */
static PyObject *Txn_get(TxnObject *self, PyObject *const *args, Py_ssize_t nargs,
                         PyObject *kwn)
{
    static const char *const names[] = {"key", "cf"};
    PyObject *a[2];
    if (tdbpy_parse("get", args, nargs, kwn, names, 2, 1, a) < 0)
        return NULL;
    return txn_key_op(self, a[0], a[1], 0);
}

/* get_for_update(key, cf=None, exclusive=True) -> bytes or None */
static PyObject *Txn_get_for_update(TxnObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"key", "cf", "exclusive", NULL};
    PyObject *key, *cfo = NULL;
    int exclusive = 1;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|Op:get_for_update", kwlist, &key, &cfo,
                                     &exclusive))
        return NULL;
    return txn_key_op(self, key, cfo, exclusive ? 2 : 1);
}

/* delete(key, cf=None) */
static PyObject *Txn_delete(TxnObject *self, PyObject *const *args, Py_ssize_t nargs,
                            PyObject *kwn)
{
    static const char *const names[] = {"key", "cf"};
    PyObject *a[2];
    if (tdbpy_parse("delete", args, nargs, kwn, names, 2, 1, a) < 0)
        return NULL;
    return txn_key_op(self, a[0], a[1], 3);
}

/* single_delete(key, cf=None) */
static PyObject *Txn_single_delete(TxnObject *self, PyObject *const *args, Py_ssize_t nargs,
                                   PyObject *kwn)
{
    static const char *const names[] = {"key", "cf"};
    PyObject *a[2];
    if (tdbpy_parse("single_delete", args, nargs, kwn, names, 2, 1, a) < 0)
        return NULL;
    return txn_key_op(self, a[0], a[1], 4);
}

/* Commit (commit != 0) or roll back. The transaction's iterators are
 * released first (they read its write buffer), even if the commit then
 * meets back-pressure (BusyError: the transaction stays active). */
static PyObject *txn_finish(TxnObject *self, int commit)
{
    if (txn_begin_call(self) < 0)
        return NULL;
    txn_release_iters(self);
    tdb_txn_t *t = self->txn;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = commit ? tdb_txn_commit(t) : tdb_txn_rollback(t);
    Py_END_ALLOW_THREADS
    txn_end_call(self);
    if (!(commit && rc == TDB_ERR_BUSY))
        self->finished = 1;
    if (tdbpy_check(rc) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *Txn_commit(TxnObject *self, PyObject *u)
{
    return txn_finish(self, 1);
}

static PyObject *Txn_rollback(TxnObject *self, PyObject *u)
{
    return txn_finish(self, 0);
}

/* Savepoint calls: 0 set, 1 roll back to, 2 release. */
static PyObject *txn_savepoint(TxnObject *self, PyObject *args, int which)
{
    const char *name;
    if (!PyArg_ParseTuple(args, "s", &name) || txn_begin_call(self) < 0)
        return NULL;
    tdb_txn_t *t = self->txn;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = which == 0   ? tdb_txn_savepoint(t, name)
         : which == 1 ? tdb_txn_rollback_to_savepoint(t, name)
                      : tdb_txn_release_savepoint(t, name);
    Py_END_ALLOW_THREADS
    txn_end_call(self);
    if (tdbpy_check(rc) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *Txn_savepoint(TxnObject *self, PyObject *args)
{
    return txn_savepoint(self, args, 0);
}

static PyObject *Txn_rollback_to(TxnObject *self, PyObject *args)
{
    return txn_savepoint(self, args, 1);
}

static PyObject *Txn_release_sp(TxnObject *self, PyObject *args)
{
    return txn_savepoint(self, args, 2);
}

/* iterator(cf=None, start=None, stop=None, reverse=False, prefix=None) */
static PyObject *Txn_iterator(TxnObject *self, PyObject *args, PyObject *kw)
{
    if (!self->txn)
        return tdbpy_raise_msg(TDB_ERR_CLOSED, "transaction was released (database closed)");
    return tdbpy_iter_new(self->base.db, self, args, kw);
}

/* cancel_wait(): wake this transaction's row-lock wait from another thread
 * (the waiting call raises AbortedError). The one call allowed while the
 * transaction is busy in another thread: the library makes it thread-safe. */
static PyObject *Txn_cancel_wait(TxnObject *self, PyObject *u)
{
    DBObject *db = self->base.db;
    if (!self->txn || !db->db)
        return tdbpy_raise_msg(TDB_ERR_CLOSED, "transaction was released (database closed)");
    if (TDBPY_FORKED(db))
        return tdbpy_raise_msg(TDB_ERR_INVALID_ARG,
                               "database was opened before fork(): open it again in this process");
    tdb_txn_cancel_wait(self->txn);
    Py_RETURN_NONE;
}

static PyObject *Txn_enter(TxnObject *self, PyObject *u)
{
    if (!self->txn || self->finished)
        return tdbpy_raise_msg(TDB_ERR_INVALID_ARG, "transaction is finished");
    return Py_NewRef(self);
}

/* __exit__: commit on a clean exit, roll back on an exception; nothing if
 * the body already committed or rolled back. */
static PyObject *Txn_exit(TxnObject *self, PyObject *args)
{
    PyObject *et = PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0) : Py_None;
    if (self->finished || !self->txn)
        Py_RETURN_FALSE;
    PyObject *r = txn_finish(self, et == Py_None);
    if (!r)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_FALSE;
}

static void Txn_dealloc(TxnObject *self)
{
    txn_release(&self->base);
    Py_XDECREF(self->base.db);
    PyObject_Free(self);
}

static PyObject *Txn_get_finished(TxnObject *self, void *c)
{
    return PyBool_FromLong(self->finished || !self->txn);
}

static PyObject *Txn_get_seq(TxnObject *self, void *c)
{
    if (!self->txn)
        return tdbpy_raise_msg(TDB_ERR_CLOSED, "transaction was released");
    return PyLong_FromUnsignedLongLong(tdb_txn_snapshot_sequence(self->txn));
}

static PyMethodDef Txn_methods[] = {
    {"put", (PyCFunction)(void (*)(void))Txn_put, METH_FASTCALL | METH_KEYWORDS,
     "put(key, value, cf=None, ttl=0)"},
    {"get", (PyCFunction)(void (*)(void))Txn_get, METH_FASTCALL | METH_KEYWORDS,
     "get(key, cf=None) -> bytes or None"},
    {"get_for_update", (PyCFunction)(void (*)(void))Txn_get_for_update,
     METH_VARARGS | METH_KEYWORDS, "get_for_update(key, cf=None, exclusive=True)"},
    {"delete", (PyCFunction)(void (*)(void))Txn_delete, METH_FASTCALL | METH_KEYWORDS,
     "delete(key, cf=None)"},
    {"single_delete", (PyCFunction)(void (*)(void))Txn_single_delete,
     METH_FASTCALL | METH_KEYWORDS, "single_delete(key, cf=None)"},
    {"iterator", (PyCFunction)(void (*)(void))Txn_iterator, METH_VARARGS | METH_KEYWORDS,
     "iterator(cf=None, start=None, stop=None, reverse=False, prefix=None)"},
    {"commit", (PyCFunction)Txn_commit, METH_NOARGS, "commit(); ConflictError on conflict."},
    {"rollback", (PyCFunction)Txn_rollback, METH_NOARGS, "rollback()"},
    {"savepoint", (PyCFunction)Txn_savepoint, METH_VARARGS, "savepoint(name)"},
    {"rollback_to_savepoint", (PyCFunction)Txn_rollback_to, METH_VARARGS,
     "rollback_to_savepoint(name)"},
    {"release_savepoint", (PyCFunction)Txn_release_sp, METH_VARARGS, "release_savepoint(name)"},
    {"cancel_wait", (PyCFunction)Txn_cancel_wait, METH_NOARGS,
     "cancel_wait(): from another thread, make a row-lock wait raise AbortedError."},
    {"__enter__", (PyCFunction)Txn_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)Txn_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PyGetSetDef Txn_getset[] = {
    {"finished", (getter)Txn_get_finished, NULL, "committed, rolled back or released", NULL},
    {"snapshot_sequence", (getter)Txn_get_seq, NULL, "sequence of the snapshot", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject Txn_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tidesdb.Transaction",
    .tp_basicsize = sizeof(TxnObject),
    .tp_dealloc = (destructor)Txn_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A transaction (DB.transaction()); as a context manager it commits on a clean "
              "exit and rolls back on an exception.",
    .tp_methods = Txn_methods,
    .tp_getset = Txn_getset,
};

/*
 * iter.c: Iterator, a Python iterator of (key, value) over a range
 * start <= key < stop of one column family, forward or reverse, of the
 * database (latest or a snapshot) or of a transaction's view.
 *
 * States: UNPOSITIONED (the first __next__ positions at the range's first
 * key in the iteration direction), CURRENT (positioned by a seek, the key
 * under the cursor is yielded next), YIELDED (the next __next__ steps
 * first), DONE (ran off the range; a seek repositions it).
 * Each move runs without the GIL and checks the bounds there; the key and
 * value are copied into bytes before anything else can move the cursor.
 * Invariants: _tdbpy.h (one thread at a time: `busy`).
 */
#include "_tdbpy.h"

#include <string.h>

/* Bytewise compare, shorter first on a common prefix (the library order). */
static int key_cmp(const void *a, size_t al, const void *b, size_t bl)
{
    int c = memcmp(a, b, al < bl ? al : bl);
    return c ? c : (al < bl ? -1 : al > bl);
}

/* Bounds copied out of the Python objects for use without the GIL. */
typedef struct {
    const char *start, *stop;
    size_t slen, elen;
} bounds_t;

/* The cursor's bounds. */
static bounds_t bounds_of(IterObject *self)
{
    bounds_t b = {NULL, NULL, 0, 0};
    if (self->start) {
        b.start = PyBytes_AS_STRING(self->start);
        b.slen = (size_t)PyBytes_GET_SIZE(self->start);
    }
    if (self->stop) {
        b.stop = PyBytes_AS_STRING(self->stop);
        b.elen = (size_t)PyBytes_GET_SIZE(self->stop);
    }
    return b;
}

/* Last key < stop (exclusive bound), or the last key without a bound. */
static void seek_below(tdb_iter_t *it, const bounds_t *b)
{
    if (!b->stop) {
        tdb_iter_seek_to_last(it);
        return;
    }
    tdb_iter_seek_for_prev(it, b->stop, b->elen);
    size_t kl;
    const void *k;
    if (tdb_iter_valid(it) && (k = tdb_iter_key(it, &kl)) && key_cmp(k, kl, b->stop, b->elen) >= 0)
        tdb_iter_prev(it);
}

/* First key >= start, or the first key without a bound. */
static void seek_from(tdb_iter_t *it, const bounds_t *b)
{
    if (b->start)
        tdb_iter_seek(it, b->start, b->slen);
    else
        tdb_iter_seek_to_first(it);
}

/* 1 if the cursor is on a key inside the bounds. */
static int in_range(tdb_iter_t *it, const bounds_t *b)
{
    if (!tdb_iter_valid(it))
        return 0;
    size_t kl;
    const void *k = tdb_iter_key(it, &kl);
    if (b->start && key_cmp(k, kl, b->start, b->slen) < 0)
        return 0;
    if (b->stop && key_cmp(k, kl, b->stop, b->elen) >= 0)
        return 0;
    return 1;
}

/* tdb_iter_destroy for tdbpy_release_call. */
static void destroy_iter(void *it)
{
    tdb_iter_destroy(it);
}

/* Release the native iterator and unlink it (GIL held on entry; the
 * handle is detached first, then destroyed without the GIL). */
void tdbpy_iter_release(ChildObject *c)
{
    IterObject *self = (IterObject *)c;
    tdb_iter_t *it = self->it;
    self->it = NULL;
    self->state = ITER_DONE;
    tdbpy_link_del(&self->base.link);
    if (it)
        tdbpy_release_call(self->base.db, destroy_iter, it);
}

/* Check the iterator may move now; marks it (and its txn) busy. */
static int iter_begin(IterObject *self)
{
    if (self->busy || (self->txn && self->txn->busy))
        return tdbpy_busy_error("iterator");
    if (!self->it) {
        tdbpy_raise_msg(TDB_ERR_CLOSED,
                        self->txn ? "iterator is closed (its transaction ended)"
                                  : "iterator is closed");
        return -1;
    }
    if (tdbpy_enter(self->base.db) < 0)
        return -1;
    self->busy = 1;
    if (self->txn)
        self->txn->busy = 1;
    return 0;
}

/* Undo iter_begin. */
static void iter_end(IterObject *self)
{
    self->busy = 0;
    if (self->txn)
        self->txn->busy = 0;
    tdbpy_leave(self->base.db);
}

/* Copy bytes into a new bytes object; a buffer to optionally convert. */
static PyObject *mkbytes(const void *p, size_t n)
{
    return PyBytes_FromStringAndSize(p ? p : "", (Py_ssize_t)n);
}

static PyObject *Iter_next(IterObject *self)
{
    if (self->state == ITER_DONE && self->it)
        return NULL;
    if (iter_begin(self) < 0)
        return NULL;
    tdb_iter_t *it = self->it;
    bounds_t b = bounds_of(self);
    int state = self->state, rev = self->reverse, ok, status;
    const void *k = NULL, *v = NULL;
    size_t kl = 0, vl = 0;
    Py_BEGIN_ALLOW_THREADS
    if (state == ITER_UNPOSITIONED) {
        if (rev)
            seek_below(it, &b);
        else
            seek_from(it, &b);
    } else if (state == ITER_YIELDED) {
        if (rev)
            tdb_iter_prev(it);
        else
            tdb_iter_next(it);
    }
    ok = in_range(it, &b);
    status = ok ? TDB_OK : tdb_iter_status(it);
    if (ok) {
        k = tdb_iter_key(it, &kl);
        v = tdb_iter_value(it, &vl);
    }
    Py_END_ALLOW_THREADS
    PyObject *res = NULL;
    if (ok) {
        PyObject *key = mkbytes(k, kl), *val = key ? mkbytes(v, vl) : NULL;
        if (key && val)
            res = PyTuple_Pack(2, key, val);
        Py_XDECREF(key);
        Py_XDECREF(val);
        self->state = ITER_YIELDED;
    } else {
        self->state = ITER_DONE;
        if (status != TDB_OK)
            tdbpy_raise(status);
    }
    iter_end(self);
    return res; /* NULL without an exception: StopIteration */
}

/* Position with `how` (0 seek(key), 1 first in range, 2 last in range). */
static PyObject *iter_position(IterObject *self, int how, PyObject *key)
{
    Py_buffer kb = {0};
    if (key && tdbpy_buffer(key, &kb, "key") < 0)
        return NULL;
    if (iter_begin(self) < 0) {
        if (key)
            PyBuffer_Release(&kb);
        return NULL;
    }
    tdb_iter_t *it = self->it;
    bounds_t b = bounds_of(self);
    int rev = self->reverse;
    Py_BEGIN_ALLOW_THREADS
    if (how == 1) {
        seek_from(it, &b);
    } else if (how == 2) {
        seek_below(it, &b);
    } else if (!rev) {
        if (b.start && key_cmp(kb.buf, (size_t)kb.len, b.start, b.slen) < 0)
            seek_from(it, &b);
        else
            tdb_iter_seek(it, kb.buf, (size_t)kb.len);
    } else {
        if (b.stop && key_cmp(kb.buf, (size_t)kb.len, b.stop, b.elen) >= 0)
            seek_below(it, &b);
        else
            tdb_iter_seek_for_prev(it, kb.buf, (size_t)kb.len);
    }
    Py_END_ALLOW_THREADS
    self->state = ITER_CURRENT;
    iter_end(self);
    if (key)
        PyBuffer_Release(&kb);
    Py_RETURN_NONE;
}

/* seek(key): forward, the first key >= key; reverse, the last key <= key
 * (both clamped to the range); iteration continues from there. */
static PyObject *Iter_seek(IterObject *self, PyObject *key)
{
    return iter_position(self, 0, key);
}

static PyObject *Iter_seek_to_first(IterObject *self, PyObject *u)
{
    return iter_position(self, 1, NULL);
}

static PyObject *Iter_seek_to_last(IterObject *self, PyObject *u)
{
    return iter_position(self, 2, NULL);
}

static PyObject *Iter_close(IterObject *self, PyObject *u)
{
    if (self->busy)
        return tdbpy_busy_error("iterator"), NULL;
    tdbpy_iter_release(&self->base);
    Py_RETURN_NONE;
}

static PyObject *Iter_enter(IterObject *self, PyObject *u)
{
    return Py_NewRef(self);
}

static PyObject *Iter_exit(IterObject *self, PyObject *args)
{
    PyObject *r = Iter_close(self, NULL);
    if (!r)
        return NULL;
    Py_DECREF(r);
    Py_RETURN_FALSE;
}

static void Iter_dealloc(IterObject *self)
{
    tdbpy_iter_release(&self->base);
    Py_XDECREF(self->cf);
    Py_XDECREF(self->snapshot);
    Py_XDECREF(self->start);
    Py_XDECREF(self->stop);
    Py_XDECREF(self->txn);
    Py_XDECREF(self->base.db);
    PyObject_Free(self);
}

/* Bound as bytes (a copy, kept for the iterator's life), or NULL for None. */
static int bound_bytes(PyObject *o, const char *what, PyObject **out)
{
    *out = NULL;
    if (!o || o == Py_None)
        return 0;
    Py_buffer v;
    if (tdbpy_buffer(o, &v, what) < 0)
        return -1;
    *out = PyBytes_FromStringAndSize(v.buf, v.len);
    PyBuffer_Release(&v);
    return *out ? 0 : -1;
}

/* The smallest key greater than every key with this prefix, or NULL when
 * there is none (the prefix is all 0xff bytes). */
static PyObject *prefix_end(PyObject *prefix)
{
    Py_ssize_t n = PyBytes_GET_SIZE(prefix);
    const unsigned char *p = (const unsigned char *)PyBytes_AS_STRING(prefix);
    while (n > 0 && p[n - 1] == 0xff)
        n--;
    if (n == 0)
        return NULL;
    PyObject *e = PyBytes_FromStringAndSize((const char *)p, n);
    if (e)
        ((unsigned char *)PyBytes_AS_STRING(e))[n - 1]++;
    return e;
}

/* DB.iterator / Transaction.iterator / Snapshot.iterator. */
PyObject *tdbpy_iter_new(DBObject *db, TxnObject *txn, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"cf", "snapshot", "start", "stop", "reverse", "prefix", NULL};
    PyObject *cfo = NULL, *snapo = NULL, *starto = NULL, *stopo = NULL, *prefixo = NULL;
    int reverse = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|OOOOpO:iterator", kwlist, &cfo, &snapo, &starto,
                                     &stopo, &reverse, &prefixo))
        return NULL;
    if (txn && snapo && snapo != Py_None)
        return tdbpy_raise_msg(TDB_ERR_INVALID_ARG,
                               "a transaction iterator reads the transaction's snapshot");
    if (prefixo && prefixo != Py_None &&
        ((starto && starto != Py_None) || (stopo && stopo != Py_None)))
        return tdbpy_raise_msg(TDB_ERR_INVALID_ARG, "give prefix or start/stop, not both");
    tdb_cf_t *cf;
    tdb_snapshot_t *snap;
    PyObject *start = NULL, *stop = NULL;
    if (tdbpy_resolve_cf(db, cfo, &cf) < 0 || tdbpy_resolve_snapshot(db, snapo, &snap) < 0)
        return NULL;
    if (prefixo && prefixo != Py_None) {
        if (bound_bytes(prefixo, "prefix", &start) < 0)
            return NULL;
        stop = prefix_end(start);
        if (!stop && PyErr_Occurred()) {
            Py_DECREF(start);
            return NULL;
        }
    } else if (bound_bytes(starto, "start", &start) < 0 || bound_bytes(stopo, "stop", &stop) < 0) {
        Py_XDECREF(start);
        return NULL;
    }
    IterObject *self = NULL;
    if (txn) {
        if (txn->busy) {
            tdbpy_busy_error("transaction");
            goto fail;
        }
        if (!txn->txn || txn->finished) {
            tdbpy_raise_msg(TDB_ERR_INVALID_ARG, "transaction is finished");
            goto fail;
        }
    }
    if (tdbpy_enter(db) < 0)
        goto fail;
    tdb_iter_t *it = NULL;
    int rc;
    Py_BEGIN_ALLOW_THREADS
    rc = txn ? tdb_txn_iter_create(txn->txn, cf, &it) : tdb_iter_create(db->db, cf, snap, &it);
    Py_END_ALLOW_THREADS
    tdbpy_leave(db);
    if (tdbpy_check(rc) < 0)
        goto fail;
    self = PyObject_New(IterObject, &Iter_Type);
    if (!self) {
        tdb_iter_destroy(it);
        goto fail;
    }
    self->base.db = (DBObject *)Py_NewRef(db);
    self->base.release = tdbpy_iter_release;
    self->base.is_txn = 0;
    tdbpy_link_init(&self->base.link);
    tdbpy_link_add(txn ? &txn->iters : &db->children, &self->base.link);
    self->txn = txn ? (TxnObject *)Py_NewRef(txn) : NULL;
    self->it = it;
    self->cf = cfo ? Py_NewRef(cfo) : NULL;
    self->snapshot = snapo ? Py_NewRef(snapo) : NULL;
    self->start = start;
    self->stop = stop;
    self->reverse = reverse;
    self->state = ITER_UNPOSITIONED;
    self->busy = 0;
    return (PyObject *)self;
fail:
    Py_XDECREF(start);
    Py_XDECREF(stop);
    return NULL;
}

static PyMethodDef Iter_methods[] = {
    {"seek", (PyCFunction)Iter_seek, METH_O,
     "seek(key): forward, continue from the first key >= key; reverse, from the last "
     "key <= key (clamped to the range)."},
    {"seek_to_first", (PyCFunction)Iter_seek_to_first, METH_NOARGS,
     "seek_to_first(): continue from the lowest key of the range."},
    {"seek_to_last", (PyCFunction)Iter_seek_to_last, METH_NOARGS,
     "seek_to_last(): continue from the highest key of the range."},
    {"close", (PyCFunction)Iter_close, METH_NOARGS, "close(): release the iterator now."},
    {"__enter__", (PyCFunction)Iter_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)Iter_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

PyTypeObject Iter_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tidesdb.Iterator",
    .tp_basicsize = sizeof(IterObject),
    .tp_dealloc = (destructor)Iter_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Iterator of (key, value) in key order (or reverse) over start <= key < stop.",
    .tp_iter = PyObject_SelfIter,
    .tp_iternext = (iternextfunc)Iter_next,
    .tp_methods = Iter_methods,
};

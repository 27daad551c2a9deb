/*
 * batch.c: WriteBatch, a tdb_batch_t bound to one DB. Adding to a batch is
 * memory only (done with the GIL held); DB.write or the context manager's
 * clean exit applies it atomically. Invariants: _tdbpy.h (a batch is used
 * by one thread at a time: `busy` while DB.write runs without the GIL).
 */
#include "_tdbpy.h"

/* DB.batch(): a new empty batch of db. */
PyObject *tdbpy_batch_new(DBObject *db)
{
    if (!db->db)
        return tdbpy_raise_msg(TDB_ERR_CLOSED, "database is closed");
    tdb_batch_t *b = NULL;
    if (tdbpy_check(tdb_batch_create(&b)) < 0)
        return NULL;
    BatchObject *o = PyObject_New(BatchObject, &Batch_Type);
    if (!o) {
        tdb_batch_destroy(b);
        return NULL;
    }
    o->db = (DBObject *)Py_NewRef(db);
    o->b = b;
    o->busy = 0;
    return (PyObject *)o;
}

static void Batch_dealloc(BatchObject *self)
{
    if (self->b)
        tdb_batch_destroy(self->b);
    Py_XDECREF(self->db);
    PyObject_Free(self);
}

/* Common checks before adding to the batch: not busy, db open. */
static int batch_ready(BatchObject *self)
{
    if (self->busy)
        return tdbpy_busy_error("batch");
    if (!self->db->db || self->db->closing) {
        tdbpy_raise_msg(TDB_ERR_CLOSED, "database is closed");
        return -1;
    }
    return 0;
}

/* put(key, value, cf=None, ttl=0) */
static PyObject *Batch_put(BatchObject *self, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwn)
{
    static const char *const names[] = {"key", "value", "cf", "ttl"};
    PyObject *a[4];
    int64_t ttl = 0;
    tdb_cf_t *cf;
    if (tdbpy_parse("put", args, nargs, kwn, names, 4, 2, a) < 0 ||
        (a[3] && tdbpy_int64(a[3], "ttl", &ttl) < 0) || batch_ready(self) < 0 ||
        tdbpy_resolve_cf(self->db, a[2], &cf) < 0)
        return NULL;
    Py_buffer k, v;
    if (tdbpy_key_value(a[0], a[1], &k, &v) < 0)
        return NULL;
    int rc = tdb_batch_put(self->b, cf, k.buf, (size_t)k.len, v.buf, (size_t)v.len, ttl);
    tdbpy_release_kv(&k, &v);
    if (tdbpy_check(rc) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* Shared body of delete and single_delete. */
static PyObject *batch_del(BatchObject *self, PyObject *const *args, Py_ssize_t nargs,
                           PyObject *kwn, int single)
{
    static const char *const names[] = {"key", "cf"};
    PyObject *a[2];
    tdb_cf_t *cf;
    if (tdbpy_parse(single ? "single_delete" : "delete", args, nargs, kwn, names, 2, 1, a) < 0 ||
        batch_ready(self) < 0 || tdbpy_resolve_cf(self->db, a[1], &cf) < 0)
        return NULL;
    Py_buffer k;
    if (tdbpy_buffer(a[0], &k, "key") < 0)
        return NULL;
    int rc = single ? tdb_batch_single_delete(self->b, cf, k.buf, (size_t)k.len)
                    : tdb_batch_delete(self->b, cf, k.buf, (size_t)k.len);
    PyBuffer_Release(&k);
    if (tdbpy_check(rc) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* delete(key, cf=None) */
static PyObject *Batch_delete(BatchObject *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwn)
{
    return batch_del(self, args, nargs, kwn, 0);
}

/* single_delete(key, cf=None) */
static PyObject *Batch_single_delete(BatchObject *self, PyObject *const *args,
                                     Py_ssize_t nargs, PyObject *kwn)
{
    return batch_del(self, args, nargs, kwn, 1);
}

/* delete_range(start, end, cf=None) */
static PyObject *Batch_delete_range(BatchObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"start", "end", "cf", NULL};
    Py_buffer s, e;
    PyObject *cfo = NULL;
    tdb_cf_t *cf;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*y*|O:delete_range", kwlist, &s, &e, &cfo))
        return NULL;
    int rc = -1;
    if (batch_ready(self) == 0 && tdbpy_resolve_cf(self->db, cfo, &cf) == 0) {
        rc = tdb_batch_delete_range(self->b, cf, s.buf, (size_t)s.len, e.buf, (size_t)e.len);
        if (rc != TDB_OK)
            tdbpy_raise(rc);
    }
    PyBuffer_Release(&s);
    PyBuffer_Release(&e);
    if (rc != TDB_OK)
        return NULL;
    Py_RETURN_NONE;
}

/* clear(): empty the batch for reuse. */
static PyObject *Batch_clear(BatchObject *self, PyObject *u)
{
    if (self->busy)
        return tdbpy_busy_error("batch"), NULL;
    tdb_batch_clear(self->b);
    Py_RETURN_NONE;
}

/* write(stall_timeout_ms=0): DB.write(self). */
static PyObject *Batch_write(BatchObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"stall_timeout_ms", NULL};
    PyObject *stall = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "|O:write", kwlist, &stall))
        return NULL;
    return PyObject_CallMethod((PyObject *)self->db, "write", stall ? "OO" : "O", self, stall);
}

static Py_ssize_t Batch_len(BatchObject *self)
{
    return (Py_ssize_t)tdb_batch_count(self->b);
}

static PyObject *Batch_enter(BatchObject *self, PyObject *u)
{
    return Py_NewRef(self);
}

/* __exit__: write on a clean exit, discard on an exception. */
static PyObject *Batch_exit(BatchObject *self, PyObject *args)
{
    PyObject *et = PyTuple_GET_SIZE(args) > 0 ? PyTuple_GET_ITEM(args, 0) : Py_None;
    if (et == Py_None) {
        PyObject *r = PyObject_CallMethod((PyObject *)self->db, "write", "O", self);
        if (!r)
            return NULL;
        Py_DECREF(r);
    }
    if (!self->busy)
        tdb_batch_clear(self->b);
    Py_RETURN_FALSE;
}

static PyMethodDef Batch_methods[] = {
    {"put", (PyCFunction)(void (*)(void))Batch_put, METH_FASTCALL | METH_KEYWORDS,
     "put(key, value, cf=None, ttl=0)"},
    {"delete", (PyCFunction)(void (*)(void))Batch_delete, METH_FASTCALL | METH_KEYWORDS,
     "delete(key, cf=None)"},
    {"single_delete", (PyCFunction)(void (*)(void))Batch_single_delete,
     METH_FASTCALL | METH_KEYWORDS, "single_delete(key, cf=None)"},
    {"delete_range", (PyCFunction)(void (*)(void))Batch_delete_range,
     METH_VARARGS | METH_KEYWORDS, "delete_range(start, end, cf=None)"},
    {"clear", (PyCFunction)Batch_clear, METH_NOARGS, "clear()"},
    {"write", (PyCFunction)(void (*)(void))Batch_write, METH_VARARGS | METH_KEYWORDS,
     "write(stall_timeout_ms=0): apply atomically to the batch's database."},
    {"__enter__", (PyCFunction)Batch_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)Batch_exit, METH_VARARGS, NULL},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods Batch_as_sequence = {.sq_length = (lenfunc)Batch_len};

PyTypeObject Batch_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tidesdb.WriteBatch",
    .tp_basicsize = sizeof(BatchObject),
    .tp_dealloc = (destructor)Batch_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "An atomic group of writes (DB.batch()); as a context manager it is "
              "written on a clean exit and discarded on an exception.",
    .tp_methods = Batch_methods,
    .tp_as_sequence = &Batch_as_sequence,
};

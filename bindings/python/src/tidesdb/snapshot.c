/*
 * snapshot.c: Snapshot objects (DB.snapshot()): a pinned point in time,
 * released explicitly, by the context manager, or when the DB closes.
 * Invariants: _tdbpy.h.
 */
#include "_tdbpy.h"

/* ---------------------------------------------------------------------- */
/* Snapshot                                                                */
/* ---------------------------------------------------------------------- */

/* Release the snapshot's handle and unlink it (GIL held). */
void tdbpy_snapshot_release(ChildObject *c)
{
    SnapshotObject *s = (SnapshotObject *)c;
    if (s->snap && s->base.db->db && !TDBPY_FORKED(s->base.db))
        tdb_snapshot_release(s->base.db->db, s->snap);
    s->snap = NULL;
    tdbpy_link_del(&s->base.link);
}

static void Snapshot_dealloc(SnapshotObject *self)
{
    tdbpy_snapshot_release(&self->base);
    Py_XDECREF(self->base.db);
    PyObject_Free(self);
}

static PyObject *Snapshot_release(SnapshotObject *self, PyObject *u)
{
    tdbpy_snapshot_release(&self->base);
    Py_RETURN_NONE;
}

static PyObject *Snapshot_enter(SnapshotObject *self, PyObject *u)
{
    if (!self->snap)
        return tdbpy_raise_msg(TDB_ERR_CLOSED, "snapshot was released");
    return Py_NewRef(self);
}

static PyObject *Snapshot_exit(SnapshotObject *self, PyObject *args)
{
    tdbpy_snapshot_release(&self->base);
    Py_RETURN_FALSE;
}

/* get(key, cf=None): DB.get through this snapshot. */
static PyObject *Snapshot_get(SnapshotObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = {"key", "cf", NULL};
    PyObject *key, *cfo = NULL;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "O|O:get", kwlist, &key, &cfo))
        return NULL;
    if (!self->snap)
        return tdbpy_raise_msg(TDB_ERR_CLOSED, "snapshot was released");
    return tdbpy_db_get(self->base.db, key, cfo, (PyObject *)self, 1);
}

/* iterator(cf=None, start=None, stop=None, reverse=False, prefix=None) */
static PyObject *Snapshot_iterator(SnapshotObject *self, PyObject *args, PyObject *kw)
{
    if (!self->snap)
        return tdbpy_raise_msg(TDB_ERR_CLOSED, "snapshot was released");
    PyObject *kw2 = kw ? PyDict_Copy(kw) : PyDict_New();
    if (!kw2 || PyDict_SetItemString(kw2, "snapshot", (PyObject *)self) < 0) {
        Py_XDECREF(kw2);
        return NULL;
    }
    PyObject *r = tdbpy_iter_new(self->base.db, NULL, args, kw2);
    Py_DECREF(kw2);
    return r;
}

static PyObject *Snapshot_get_sequence(SnapshotObject *self, void *c)
{
    return PyLong_FromUnsignedLongLong(self->seq);
}

static PyMethodDef Snapshot_methods[] = {
    {"release", (PyCFunction)Snapshot_release, METH_NOARGS, "release(): unpin (idempotent)."},
    {"__enter__", (PyCFunction)Snapshot_enter, METH_NOARGS, NULL},
    {"__exit__", (PyCFunction)Snapshot_exit, METH_VARARGS, NULL},
    {"get", (PyCFunction)(void (*)(void))Snapshot_get, METH_VARARGS | METH_KEYWORDS,
     "get(key, cf=None) -> bytes or None, as of the snapshot."},
    {"iterator", (PyCFunction)(void (*)(void))Snapshot_iterator, METH_VARARGS | METH_KEYWORDS,
     "iterator(cf=None, start=None, stop=None, reverse=False, prefix=None)"},
    {NULL, NULL, 0, NULL},
};
static PyGetSetDef Snapshot_getset[] = {
    {"sequence", (getter)Snapshot_get_sequence, NULL, "sequence number pinned", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject Snapshot_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tidesdb.Snapshot",
    .tp_basicsize = sizeof(SnapshotObject),
    .tp_dealloc = (destructor)Snapshot_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A point-in-time view (DB.snapshot()); a context manager that releases it.",
    .tp_methods = Snapshot_methods,
    .tp_getset = Snapshot_getset,
};

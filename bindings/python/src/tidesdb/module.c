/*
 * module.c: the tidesdb._tidesdb extension module: the exception classes
 * (one per TDB_ERR_* code, all under TidesDBError, each instance carrying
 * .code and .detail), the argument helpers shared by the other files, and
 * module initialization. Invariants of the binding: _tdbpy.h.
 */
#include "_tdbpy.h"

#include <pthread.h>
#include <string.h>

PyObject *TidesDBError;
unsigned long tdbpy_fork_gen;

/* pthread_atfork child handler: every DB opened before is the parent's. */
static void after_fork_child(void)
{
    tdbpy_fork_gen++;
}

/* One exception class per library error code. */
static struct {
    int code;
    const char *name;  /* class name in the tidesdb module */
    PyObject **extra;  /* a builtin also used as a base, or NULL */
    PyObject *cls;
} err_classes[] = {
    {TDB_ERR_NOT_FOUND, "NotFoundError", NULL, NULL},
    {TDB_ERR_IO, "IoError", NULL, NULL},
    {TDB_ERR_CORRUPTION, "CorruptionError", NULL, NULL},
    {TDB_ERR_BUSY, "BusyError", NULL, NULL},
    {TDB_ERR_CONFLICT, "ConflictError", NULL, NULL},
    {TDB_ERR_INVALID_ARG, "InvalidArgumentError", &PyExc_ValueError, NULL},
    {TDB_ERR_LOCKED, "LockedError", NULL, NULL},
    {TDB_ERR_NOMEM, "NoMemoryError", NULL, NULL},
    {TDB_ERR_EXISTS, "ExistsError", NULL, NULL},
    {TDB_ERR_CLOSED, "ClosedError", NULL, NULL},
    {TDB_ERR_READ_ONLY, "ReadOnlyError", NULL, NULL},
    {TDB_ERR_NO_SPACE, "NoSpaceError", NULL, NULL},
    {TDB_ERR_DEADLOCK, "DeadlockError", NULL, NULL},
    {TDB_ERR_TIMEOUT, "TimedOutError", NULL, NULL},
    {TDB_ERR_TOO_LARGE, "TooLargeError", NULL, NULL},
    {TDB_ERR_NOT_SUPPORTED, "NotSupportedError", NULL, NULL},
    {TDB_ERR_ABORTED, "AbortedError", NULL, NULL},
};
#define N_ERR_CLASSES (sizeof err_classes / sizeof err_classes[0])

/* Raise the exception of code rc with message msg (detail attached). */
static PyObject *raise_with(int rc, const char *msg, const char *detail)
{
    PyObject *cls = TidesDBError;
    for (size_t i = 0; i < N_ERR_CLASSES; i++)
        if (err_classes[i].code == rc)
            cls = err_classes[i].cls;
    PyObject *exc = PyObject_CallFunction(cls, "s", msg);
    if (!exc)
        return NULL;
    PyObject *code = PyLong_FromLong(rc);
    PyObject *det = PyUnicode_DecodeUTF8(detail, (Py_ssize_t)strlen(detail), "replace");
    if (!code || !det || PyObject_SetAttrString(exc, "code", code) < 0 ||
        PyObject_SetAttrString(exc, "detail", det) < 0) {
        Py_XDECREF(code);
        Py_XDECREF(det);
        Py_DECREF(exc);
        return NULL;
    }
    Py_DECREF(code);
    Py_DECREF(det);
    PyErr_SetObject(cls, exc);
    Py_DECREF(exc);
    return NULL;
}

/* Raise the exception of a failed library call; reads tdb_last_error() of
 * this thread, so call it on the thread that made the call (always true:
 * releasing the GIL does not change threads). */
PyObject *tdbpy_raise(int rc)
{
    const char *detail = tdb_last_error();
    char msg[768];
    if (detail && *detail)
        snprintf(msg, sizeof msg, "%s: %s", tdb_strerror(rc), detail);
    else
        snprintf(msg, sizeof msg, "%s", tdb_strerror(rc));
    return raise_with(rc, msg, detail ? detail : "");
}

/* Raise the exception of code rc with a binding-side message. */
PyObject *tdbpy_raise_msg(int rc, const char *msg)
{
    return raise_with(rc, msg, msg);
}

/* 0 if rc is TDB_OK, else raise its exception and return -1. */
int tdbpy_check(int rc)
{
    if (rc == TDB_OK)
        return 0;
    tdbpy_raise(rc);
    return -1;
}

/* Export a contiguous byte buffer of o (bytes, bytearray, memoryview...). */
int tdbpy_buffer(PyObject *o, Py_buffer *view, const char *what)
{
    if (PyObject_GetBuffer(o, view, PyBUF_SIMPLE) == 0)
        return 0;
    if (PyErr_ExceptionMatches(PyExc_TypeError) || PyErr_ExceptionMatches(PyExc_BufferError)) {
        PyErr_Clear();
        PyErr_Format(PyExc_TypeError, "%s must be a contiguous bytes-like object, not %.100s",
                     what, Py_TYPE(o)->tp_name);
    }
    return -1;
}

int tdbpy_key_value(PyObject *key, PyObject *value, Py_buffer *k, Py_buffer *v)
{
    if (tdbpy_buffer(key, k, "key") < 0)
        return -1;
    if (tdbpy_buffer(value, v, "value") < 0) {
        PyBuffer_Release(k);
        return -1;
    }
    return 0;
}

void tdbpy_release_kv(Py_buffer *k, Py_buffer *v)
{
    PyBuffer_Release(k);
    PyBuffer_Release(v);
}

/* Match vectorcall arguments to parameter names: out[i] is a borrowed
 * reference or NULL when not given. */
int tdbpy_parse(const char *fname, PyObject *const *args, Py_ssize_t nargs,
                PyObject *kwnames, const char *const *names, int nnames, int nrequired,
                PyObject **out)
{
    if (nargs > nnames) {
        PyErr_Format(PyExc_TypeError, "%s() takes at most %d arguments (%zd given)", fname,
                     nnames, nargs);
        return -1;
    }
    for (int i = 0; i < nnames; i++)
        out[i] = i < nargs ? args[i] : NULL;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *kn = PyTuple_GET_ITEM(kwnames, k);
        int i = 0;
        while (i < nnames && PyUnicode_CompareWithASCIIString(kn, names[i]) != 0)
            i++;
        if (i == nnames) {
            PyErr_Format(PyExc_TypeError, "%s() got an unexpected keyword argument '%U'",
                         fname, kn);
            return -1;
        }
        if (out[i]) {
            PyErr_Format(PyExc_TypeError, "%s() got multiple values for argument '%s'", fname,
                         names[i]);
            return -1;
        }
        out[i] = args[nargs + k];
    }
    for (int i = 0; i < nrequired; i++)
        if (!out[i]) {
            PyErr_Format(PyExc_TypeError, "%s() missing required argument '%s'", fname,
                         names[i]);
            return -1;
        }
    return 0;
}

/* A Python int as int64_t, with a TypeError naming `what` otherwise. */
int tdbpy_int64(PyObject *o, const char *what, int64_t *out)
{
    if (!PyLong_Check(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be an int, not %.100s", what, Py_TYPE(o)->tp_name);
        return -1;
    }
    long long v = PyLong_AsLongLong(o);
    if (v == -1 && PyErr_Occurred())
        return -1;
    *out = (int64_t)v;
    return 0;
}

/* An empty list, or an unlinked node (linked to itself). */
void tdbpy_link_init(tdbpy_link *l)
{
    l->prev = l->next = l;
}

/* Append l to the list head. */
void tdbpy_link_add(tdbpy_link *head, tdbpy_link *l)
{
    l->prev = head->prev;
    l->next = head;
    head->prev->next = l;
    head->prev = l;
}

/* Unlink l (no-op if unlinked). */
void tdbpy_link_del(tdbpy_link *l)
{
    l->prev->next = l->next;
    l->next->prev = l->prev;
    l->prev = l->next = l;
}

/* tidesdb.strerror(code): the library's name of an error code. */
static PyObject *mod_strerror(PyObject *self, PyObject *arg)
{
    long code = PyLong_AsLong(arg);
    if (code == -1 && PyErr_Occurred())
        return NULL;
    return PyUnicode_FromString(tdb_strerror((int)code));
}

static PyMethodDef module_methods[] = {
    {"strerror", mod_strerror, METH_O, "strerror(code) -> str: the name of a TDB error code."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "tidesdb._tidesdb",
    "C extension of the tidesdb package (use the tidesdb package itself).", -1,
    module_methods,
};

/* Add an int constant. */
static int add_int(PyObject *m, const char *name, long v)
{
    return PyModule_AddIntConstant(m, name, v);
}

PyMODINIT_FUNC PyInit__tidesdb(void)
{
    PyObject *m = PyModule_Create(&module_def);
    if (!m)
        return NULL;
    if (pthread_atfork(NULL, NULL, after_fork_child) != 0) {
        PyErr_SetString(PyExc_RuntimeError, "pthread_atfork failed");
        goto fail;
    }
    PyTypeObject *types[] = {&DB_Type, &CF_Type, &Snapshot_Type, &Batch_Type, &Iter_Type,
                             &Txn_Type};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        if (PyType_Ready(types[i]) < 0)
            goto fail;
        const char *dot = strrchr(types[i]->tp_name, '.');
        Py_INCREF(types[i]);
        if (PyModule_AddObject(m, dot + 1, (PyObject *)types[i]) < 0) {
            Py_DECREF(types[i]);
            goto fail;
        }
    }
    TidesDBError = PyErr_NewExceptionWithDoc(
        "tidesdb.TidesDBError",
        "Base of every TidesDB error; .code is the TDB_ERR_* code (negative int), "
        ".detail the library's detail text.",
        NULL, NULL);
    if (!TidesDBError)
        goto fail;
    /* Class attributes so that code/detail exist even on a bare instance. */
    PyObject_SetAttrString(TidesDBError, "code", Py_None);
    PyObject_SetAttrString(TidesDBError, "detail", Py_None);
    Py_INCREF(TidesDBError);
    if (PyModule_AddObject(m, "TidesDBError", TidesDBError) < 0)
        goto fail;
    PyObject *by_code = PyDict_New();
    if (!by_code || PyModule_AddObject(m, "errors_by_code", by_code) < 0)
        goto fail;
    for (size_t i = 0; i < N_ERR_CLASSES; i++) {
        char qual[96];
        snprintf(qual, sizeof qual, "tidesdb.%s", err_classes[i].name);
        PyObject *bases = err_classes[i].extra
                              ? PyTuple_Pack(2, TidesDBError, *err_classes[i].extra)
                              : PyTuple_Pack(1, TidesDBError);
        if (!bases)
            goto fail;
        PyObject *cls = PyErr_NewException(qual, bases, NULL);
        Py_DECREF(bases);
        if (!cls)
            goto fail;
        err_classes[i].cls = cls;
        PyObject *code = PyLong_FromLong(err_classes[i].code);
        if (!code || PyObject_SetAttrString(cls, "code", code) < 0 ||
            PyDict_SetItem(by_code, code, cls) < 0) {
            Py_XDECREF(code);
            goto fail;
        }
        Py_DECREF(code);
        Py_INCREF(cls);
        if (PyModule_AddObject(m, err_classes[i].name, cls) < 0)
            goto fail;
    }
    if (add_int(m, "MAX_KEY_SIZE", TDB_MAX_KEY_SIZE) || add_int(m, "MAX_VALUE_SIZE", TDB_MAX_VALUE_SIZE) ||
        add_int(m, "LIBRARY_VERSION_MAJOR", TIDESDB_VERSION_MAJOR) ||
        add_int(m, "LIBRARY_VERSION_MINOR", TIDESDB_VERSION_MINOR) ||
        add_int(m, "LIBRARY_VERSION_PATCH", TIDESDB_VERSION_PATCH))
        goto fail;
    return m;
fail:
    Py_DECREF(m);
    return NULL;
}

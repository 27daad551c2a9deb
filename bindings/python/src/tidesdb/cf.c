/*
 * cf.c: ColumnFamily objects and the option tables that map keyword
 * arguments onto tdb_config_t / tdb_cf_config_t. Invariants: _tdbpy.h.
 */
#include "_tdbpy.h"

#include <string.h>

/* ---------------------------------------------------------------------- */
/* Options                                                                 */
/* ---------------------------------------------------------------------- */
enum { OPT_INT, OPT_SIZE, OPT_U32, OPT_U64, OPT_I64, OPT_DOUBLE };
typedef struct {
    const char *name;
    size_t off;
    int type;
} opt_t;

#define DBO(f, t) {#f, offsetof(tdb_config_t, f), t}
#define CFO(f, t) {#f, offsetof(tdb_cf_config_t, f), t}
static const opt_t db_opts[] = {
    DBO(create_if_missing, OPT_INT), DBO(error_if_exists, OPT_INT),
    DBO(block_cache_size, OPT_SIZE), DBO(max_open_sstables, OPT_INT),
    DBO(flush_threads, OPT_INT), DBO(compaction_threads, OPT_INT), DBO(log_level, OPT_INT),
    DBO(max_memory_usage, OPT_SIZE), DBO(unified_memtable, OPT_INT),
    DBO(unified_memtable_write_buffer_size, OPT_SIZE), DBO(unified_memtable_sync_mode, OPT_INT),
    DBO(write_stall_timeout_ms, OPT_I64), DBO(mmap_reads, OPT_INT),
    DBO(l1_idle_file_trigger, OPT_INT), DBO(release_before_sync, OPT_INT),
};
static const opt_t cf_opts[] = {
    CFO(write_buffer_size, OPT_SIZE), CFO(compression, OPT_INT), CFO(bloom_fpr, OPT_DOUBLE),
    CFO(sync_mode, OPT_INT), CFO(sync_interval_us, OPT_U64), CFO(block_size, OPT_U32),
    CFO(value_threshold, OPT_U32), CFO(l0_queue_stall_threshold, OPT_INT),
    CFO(l1_file_count_trigger, OPT_INT), CFO(level_size_ratio, OPT_INT),
    CFO(tombstone_density_trigger, OPT_DOUBLE), CFO(tombstone_density_min_entries, OPT_U64),
};
#define NOPTS(a) (sizeof a / sizeof a[0])

/* Store v into the field of opt at base. 0, or -1 with an exception. */
static int set_opt(const opt_t *o, void *base, PyObject *v)
{
    char *p = (char *)base + o->off;
    if (o->type == OPT_DOUBLE) {
        double d = PyFloat_AsDouble(v);
        if (d == -1.0 && PyErr_Occurred())
            return -1;
        *(double *)p = d;
        return 0;
    }
    if (PyBool_Check(v) || PyLong_Check(v)) {
        if (o->type == OPT_INT || o->type == OPT_I64) {
            long long x = PyLong_AsLongLong(v);
            if (x == -1 && PyErr_Occurred())
                return -1;
            if (o->type == OPT_INT) {
                if (x < INT32_MIN || x > INT32_MAX) {
                    PyErr_Format(PyExc_OverflowError, "option %s out of range", o->name);
                    return -1;
                }
                *(int *)p = (int)x;
            } else {
                *(int64_t *)p = (int64_t)x;
            }
            return 0;
        }
        unsigned long long x = PyLong_AsUnsignedLongLong(v);
        if (x == (unsigned long long)-1 && PyErr_Occurred())
            return -1;
        if (o->type == OPT_U32) {
            if (x > UINT32_MAX) {
                PyErr_Format(PyExc_OverflowError, "option %s out of range", o->name);
                return -1;
            }
            *(uint32_t *)p = (uint32_t)x;
        } else if (o->type == OPT_SIZE) {
            *(size_t *)p = (size_t)x;
        } else {
            *(uint64_t *)p = (uint64_t)x;
        }
        return 0;
    }
    PyErr_Format(PyExc_TypeError, "option %s must be an int, not %.100s", o->name,
                 Py_TYPE(v)->tp_name);
    return -1;
}

/* Apply keyword options to the db and/or default-family settings. */
int tdbpy_parse_options(PyObject *kw, tdb_config_t *cfg, tdb_cf_config_t *cf)
{
    if (!kw)
        return 0;
    PyObject *key, *val;
    Py_ssize_t pos = 0;
    while (PyDict_Next(kw, &pos, &key, &val)) {
        const char *name = PyUnicode_AsUTF8(key);
        if (!name)
            return -1;
        const opt_t *found = NULL;
        void *base = NULL;
        for (size_t i = 0; cfg && !found && i < NOPTS(db_opts); i++)
            if (strcmp(db_opts[i].name, name) == 0)
                found = &db_opts[i], base = cfg;
        for (size_t i = 0; !found && i < NOPTS(cf_opts); i++)
            if (strcmp(cf_opts[i].name, name) == 0)
                found = &cf_opts[i], base = cf;
        if (!found) {
            PyErr_Format(PyExc_TypeError, "unknown option '%s'", name);
            return -1;
        }
        if (set_opt(found, base, val) < 0)
            return -1;
    }
    return 0;
}

/* Column-family keyword options over the defaults. */
int tdbpy_parse_cf_options(PyObject *kw, tdb_cf_config_t *cfg)
{
    tdb_cf_config_default(cfg);
    return tdbpy_parse_options(kw, NULL, cfg);
}

/* A family's settings as a dict. */
PyObject *tdbpy_cf_config_dict(const tdb_cf_config_t *cfg)
{
    PyObject *d = PyDict_New();
    for (size_t i = 0; d && i < NOPTS(cf_opts); i++) {
        const char *p = (const char *)cfg + cf_opts[i].off;
        PyObject *v = NULL;
        switch (cf_opts[i].type) {
        case OPT_INT: v = PyLong_FromLong(*(const int *)p); break;
        case OPT_SIZE: v = PyLong_FromSize_t(*(const size_t *)p); break;
        case OPT_U32: v = PyLong_FromUnsignedLong(*(const uint32_t *)p); break;
        case OPT_U64: v = PyLong_FromUnsignedLongLong(*(const uint64_t *)p); break;
        case OPT_I64: v = PyLong_FromLongLong(*(const int64_t *)p); break;
        default: v = PyFloat_FromDouble(*(const double *)p); break;
        }
        if (!v || PyDict_SetItemString(d, cf_opts[i].name, v) < 0) {
            Py_XDECREF(v);
            Py_CLEAR(d);
            break;
        }
        Py_DECREF(v);
    }
    return d;
}

/* New ColumnFamily object for handle cf. */
PyObject *tdbpy_cf_object(DBObject *db, tdb_cf_t *cf)
{
    CFObject *o = PyObject_New(CFObject, &CF_Type);
    if (!o)
        return NULL;
    o->db = (DBObject *)Py_NewRef(db);
    o->cf = cf;
    o->name = PyUnicode_FromString(tdb_cf_name(cf));
    if (!o->name) {
        Py_DECREF(o);
        return NULL;
    }
    return (PyObject *)o;
}

/* ---------------------------------------------------------------------- */
/* ColumnFamily                                                            */
/* ---------------------------------------------------------------------- */
static void CF_dealloc(CFObject *self)
{
    Py_XDECREF(self->name);
    Py_XDECREF(self->db);
    PyObject_Free(self);
}

static PyObject *CF_repr(CFObject *self)
{
    return PyUnicode_FromFormat("<tidesdb.ColumnFamily %R>", self->name);
}

/* config() -> dict of the family's settings */
static PyObject *CF_config(CFObject *self, PyObject *u)
{
    if (tdbpy_enter(self->db) < 0)
        return NULL;
    tdb_cf_config_t cfg;
    int rc = tdb_cf_get_config(self->cf, &cfg);
    tdbpy_leave(self->db);
    if (tdbpy_check(rc) < 0)
        return NULL;
    return tdbpy_cf_config_dict(&cfg);
}

static PyObject *CF_get_name(CFObject *self, void *c)
{
    return Py_NewRef(self->name);
}

static PyMethodDef CF_methods[] = {
    {"config", (PyCFunction)CF_config, METH_NOARGS, "config() -> dict of settings"},
    {NULL, NULL, 0, NULL},
};
static PyGetSetDef CF_getset[] = {
    {"name", (getter)CF_get_name, NULL, "family name", NULL},
    {NULL, NULL, NULL, NULL, NULL},
};

PyTypeObject CF_Type = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "tidesdb.ColumnFamily",
    .tp_basicsize = sizeof(CFObject),
    .tp_dealloc = (destructor)CF_dealloc,
    .tp_repr = (reprfunc)CF_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A column family handle (DB.create_column_family / get_column_family).",
    .tp_methods = CF_methods,
    .tp_getset = CF_getset,
};


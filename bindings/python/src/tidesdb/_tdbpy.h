/*
 * _tdbpy.h: shared declarations of the tidesdb C extension (the Python
 * binding of include/tidesdb/tidesdb.h). Files: module.c (errors, argument
 * helpers, module init), db.c (DB), cf.c (ColumnFamily, options),
 * snapshot.c (Snapshot), batch.c (WriteBatch), iter.c (Iterator), txn.c
 * (Transaction).
 *
 * Invariants
 *  1. Every native handle (tdb_t, tdb_cf_t, tdb_iter_t, tdb_snapshot_t,
 *     tdb_txn_t) is used only while its DB object is open. A call that runs
 *     without the GIL is bracketed by tdbpy_enter / tdbpy_leave, which count
 *     it in db->active. DB.close() marks the DB closing (new calls raise
 *     ClosedError), cancels the row-lock waits of its busy transactions,
 *     waits with the GIL released until db->active is 0, then
 *     releases every child handle (transactions first, which destroy their
 *     own iterators, then the rest) and only then calls tdb_close.
 *  2. db->active, the child lists and every object field are read and
 *     written only with the GIL held (so they need no other lock).
 *  3. Iterators, batches and transactions are single-threaded in the
 *     library. Each object has a `busy` flag, set under the GIL for the
 *     length of a GIL-released call on it; a second thread that uses it
 *     meanwhile gets InvalidArgumentError instead of a data race.
 *  4. Children hold a strong reference to their DB (and a transaction's
 *     iterators to the transaction); the child lists are weak: a child
 *     unlinks itself when it is released or deallocated.
 *  5. After fork() the child must not touch the parent's handles (the
 *     library's threads do not exist there): a DB records the fork
 *     generation it was opened in; in a child every call raises
 *     InvalidArgumentError, and close/release drop the handles without
 *     calling the library (their memory is left to the process's exit).
 *  6. Keys and values come in through the buffer protocol (no copy) and
 *     the buffer stays exported for the whole call, GIL released or not;
 *     results are returned as new bytes objects.
 */
#ifndef TDBPY_H
#define TDBPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>

#include <tidesdb/tidesdb.h>

/* A weak, circular doubly linked list of child handles. */
typedef struct tdbpy_link {
    struct tdbpy_link *prev, *next;
} tdbpy_link;

struct ChildObject;
typedef void (*tdbpy_release_fn)(struct ChildObject *child);

typedef struct DBObject {
    PyObject_HEAD
    tdb_t *db;            /* NULL once closed */
    tdb_cf_t *default_cf;
    int closing;          /* close() started: refuse new calls */
    long active;          /* calls running without the GIL */
    tdbpy_link children;  /* iterators (of the db), snapshots, transactions */
    PyObject *path;
    PyObject *weakrefs;
    unsigned long fork_gen; /* tdbpy_fork_gen when opened */
} DBObject;

/* Header shared by the objects a DB must release before tdb_close. */
typedef struct ChildObject {
    PyObject_HEAD
    tdbpy_link link;           /* in the owner's list, or self-linked */
    DBObject *db;              /* strong reference */
    tdbpy_release_fn release;  /* free the native handle, unlink */
    int is_txn;                /* released in the first pass of close */
} ChildObject;

typedef struct {
    PyObject_HEAD
    DBObject *db;      /* strong reference */
    tdb_cf_t *cf;
    PyObject *name;    /* str */
} CFObject;

typedef struct {
    ChildObject base;
    tdb_snapshot_t *snap; /* NULL once released */
    uint64_t seq;
} SnapshotObject;

typedef struct {
    PyObject_HEAD
    DBObject *db;      /* strong reference */
    tdb_batch_t *b;
    int busy;
} BatchObject;

struct TxnObject;

typedef struct {
    ChildObject base;
    struct TxnObject *txn;  /* strong reference, or NULL for a db iterator */
    tdb_iter_t *it;         /* NULL once released */
    PyObject *cf;           /* keeps the family object alive */
    PyObject *snapshot;     /* keeps the snapshot object alive */
    PyObject *start;        /* bytes or NULL: lower bound, inclusive */
    PyObject *stop;         /* bytes or NULL: upper bound, exclusive */
    int reverse;
    int state;              /* ITER_* below */
    int busy;
} IterObject;

enum { ITER_UNPOSITIONED = 0, ITER_CURRENT = 1, ITER_YIELDED = 2, ITER_DONE = 3 };

typedef struct TxnObject {
    ChildObject base;
    tdb_txn_t *txn;         /* NULL once released */
    tdbpy_link iters;       /* this transaction's live iterators */
    int finished;           /* committed or rolled back */
    int busy;
} TxnObject;

extern PyTypeObject DB_Type, CF_Type, Snapshot_Type, Batch_Type, Iter_Type, Txn_Type;
extern PyObject *TidesDBError;

/* module.c */
extern unsigned long tdbpy_fork_gen; /* incremented in a fork()ed child */
#define TDBPY_FORKED(db) ((db)->fork_gen != tdbpy_fork_gen)
PyObject *tdbpy_raise(int rc);
PyObject *tdbpy_raise_msg(int rc, const char *msg);
int tdbpy_check(int rc); /* 0 if TDB_OK, else raises and returns -1 */
int tdbpy_buffer(PyObject *o, Py_buffer *view, const char *what);
/* Both buffers of a put (key, value), or neither: 0, or -1 with an
 * exception set and nothing held. tdbpy_release_kv releases them. */
int tdbpy_key_value(PyObject *key, PyObject *value, Py_buffer *k, Py_buffer *v);
void tdbpy_release_kv(Py_buffer *k, Py_buffer *v);
int tdbpy_parse(const char *fname, PyObject *const *args, Py_ssize_t nargs,
                PyObject *kwnames, const char *const *names, int nnames, int nrequired,
                PyObject **out);
int tdbpy_int64(PyObject *o, const char *what, int64_t *out);
void tdbpy_link_init(tdbpy_link *l);
void tdbpy_link_add(tdbpy_link *head, tdbpy_link *l);
void tdbpy_link_del(tdbpy_link *l);
#define TDBPY_CHILD(l) ((ChildObject *)((char *)(l) - offsetof(ChildObject, link)))

/* db.c */
PyObject *tdbpy_db_get(DBObject *self, PyObject *key, PyObject *cfo, PyObject *snapo,
                       int missing_none);
int tdbpy_enter(DBObject *db);
void tdbpy_leave(DBObject *db);
void tdbpy_release_call(DBObject *db, void (*fn)(void *), void *arg);
int tdbpy_resolve_cf(DBObject *db, PyObject *o, tdb_cf_t **out);
int tdbpy_resolve_snapshot(DBObject *db, PyObject *o, tdb_snapshot_t **out);
/* cf.c */
int tdbpy_parse_options(PyObject *kw, tdb_config_t *cfg, tdb_cf_config_t *cf);
int tdbpy_parse_cf_options(PyObject *kw, tdb_cf_config_t *cfg);
PyObject *tdbpy_cf_object(DBObject *db, tdb_cf_t *cf);
PyObject *tdbpy_cf_config_dict(const tdb_cf_config_t *cfg);
int tdbpy_busy_error(const char *what);
/* snapshot.c */
void tdbpy_snapshot_release(ChildObject *child);

/* batch.c, txn.c */
PyObject *tdbpy_batch_new(DBObject *db);
PyObject *tdbpy_txn_new(DBObject *db, PyObject *args, PyObject *kw);

/* iter.c */
PyObject *tdbpy_iter_new(DBObject *db, struct TxnObject *txn, PyObject *args,
                         PyObject *kwds);
void tdbpy_iter_release(ChildObject *child);

#endif /* TDBPY_H */

/*
 * cli_fixture: the databases the tidesdb tool's tests inspect, made and
 * checked with the library itself (tests/cli/cli_test.sh).
 *
 *   cli_fixture make DIR    a database: family "default" with fruit keys
 *                           (apple .. cherry), k000..k099 and one binary key
 *                           (bytes 00 ff -> 01 02), family "users" (alice,
 *                           bob); the first half flushed to a table, the
 *                           rest left in the WAL
 *   cli_fixture hold DIR    open DIR, create DIR.held, sleep until killed
 *                           (at most 120 s)
 *   cli_fixture check DIR   open DIR, print "keys=N apple=V users=M"
 *   cli_fixture prepare DIR two-phase commit records in DIR's WAL: xid "xa1"
 *                           prepared (key "pending") and left unresolved,
 *                           xid "xa2" prepared and committed (key "done")
 *   cli_fixture kinds DIR   a new database with every entry type, flushed
 *                           to a table and then written again to the WAL:
 *                           put, put with a TTL ("ttl"), a 2000-byte value
 *                           stored apart ("big"), delete ("gone"), single
 *                           delete ("once"), range delete [r1, r5)
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tidesdb/tidesdb.h"

/* Print the library's error and exit 1. */
static int die(const char *what, int rc) {
    fprintf(stderr, "cli_fixture: %s: %s: %s\n", what, tdb_strerror(rc), tdb_last_error());
    return 1;
}

#define CHECK(what, expr)                  \
    do {                                   \
        int rc_ = (expr);                  \
        if (rc_ != TDB_OK) return die(what, rc_); \
    } while (0)

/* Write a text key and value. */
static int put(tdb_t *db, tdb_cf_t *cf, const char *k, const char *v) {
    return tdb_put(db, cf, k, strlen(k), v, strlen(v), 0);
}

/* Build the fixture database in dir. */
static int make(const char *dir) {
    static const char *fruit[][2] = {{"apple", "red"},       {"apricot", "orange"}, {"banana", "yellow"},
                                     {"blueberry", "blue"},  {"cherry", "dark red"}};
    tdb_t *db;
    tdb_cf_t *def, *users;
    CHECK("open", tdb_open(dir, NULL, &db));
    CHECK("default", tdb_get_cf(db, TDB_DEFAULT_CF, &def));
    CHECK("create users", tdb_create_cf(db, "users", NULL, &users));
    for (int i = 0; i < 5; i++) CHECK("put", put(db, def, fruit[i][0], fruit[i][1]));
    char k[16], v[16];
    for (int i = 0; i < 50; i++) {
        snprintf(k, sizeof k, "k%03d", i);
        snprintf(v, sizeof v, "v%03d", i);
        CHECK("put", put(db, def, k, v));
    }
    CHECK("put", put(db, users, "alice", "1"));
    CHECK("flush", tdb_flush(db, NULL));
    for (int i = 50; i < 100; i++) {
        snprintf(k, sizeof k, "k%03d", i);
        snprintf(v, sizeof v, "v%03d", i);
        CHECK("put", put(db, def, k, v));
    }
    CHECK("put", tdb_put(db, def, "\x00\xff", 2, "\x01\x02", 2, 0));
    CHECK("put", put(db, users, "bob", "2"));
    CHECK("sync", tdb_sync(db));
    return tdb_close(db) == TDB_OK ? 0 : die("close", TDB_ERR_IO);
}

/* Hold dir open until killed. */
static int hold(const char *dir) {
    tdb_t *db;
    CHECK("open", tdb_open(dir, NULL, &db));
    char marker[4096];
    snprintf(marker, sizeof marker, "%s.held", dir);
    FILE *f = fopen(marker, "w");
    if (!f) return 1;
    fclose(f);
    for (int i = 0; i < 1200; i++) usleep(100000);
    tdb_close(db);
    return 0;
}

/* Open dir and print what it holds. */
static int check(const char *dir) {
    tdb_t *db;
    tdb_cf_t *def, *users;
    tdb_iter_t *it;
    tdb_config_t cfg;
    tdb_config_default(&cfg);
    cfg.create_if_missing = 0;
    CHECK("open", tdb_open(dir, &cfg, &db));
    CHECK("default", tdb_get_cf(db, TDB_DEFAULT_CF, &def));
    long n = 0, m = 0;
    CHECK("iter", tdb_iter_create(db, def, NULL, &it));
    for (tdb_iter_seek_to_first(it); tdb_iter_valid(it); tdb_iter_next(it)) n++;
    tdb_iter_destroy(it);
    if (tdb_get_cf(db, "users", &users) == TDB_OK) {
        CHECK("iter", tdb_iter_create(db, users, NULL, &it));
        for (tdb_iter_seek_to_first(it); tdb_iter_valid(it); tdb_iter_next(it)) m++;
        tdb_iter_destroy(it);
    }
    void *v = NULL;
    size_t vn = 0;
    int rc = tdb_get(db, def, NULL, "apple", 5, &v, &vn);
    printf("keys=%ld apple=%.*s users=%ld\n", n, rc == TDB_OK ? (int)vn : 1, rc == TDB_OK ? (char *)v : "-", m);
    tdb_free(v);
    return tdb_close(db) == TDB_OK ? 0 : 1;
}

/* Leave one prepared transaction and one committed through prepare. */
static int prepare(const char *dir) {
    tdb_t *db;
    tdb_cf_t *def;
    tdb_txn_t *t;
    CHECK("open", tdb_open(dir, NULL, &db));
    CHECK("default", tdb_get_cf(db, TDB_DEFAULT_CF, &def));
    CHECK("begin", tdb_txn_begin(db, NULL, &t));
    CHECK("txn put", tdb_txn_put(t, def, "pending", 7, "x", 1, 0));
    CHECK("prepare", tdb_txn_prepare(t, "xa1", 3, 1));
    tdb_txn_free(t); /* stays prepared */
    CHECK("begin", tdb_txn_begin(db, NULL, &t));
    CHECK("txn put", tdb_txn_put(t, def, "done", 4, "y", 1, 0));
    CHECK("prepare", tdb_txn_prepare(t, "xa2", 3, 1));
    CHECK("commit", tdb_txn_commit(t));
    tdb_txn_free(t);
    return tdb_close(db) == TDB_OK ? 0 : die("close", TDB_ERR_IO);
}

/* Write one of each entry type into the default family. */
static int write_kinds(tdb_t *db, tdb_cf_t *def) {
    char big[2000];
    memset(big, 'x', sizeof big);
    CHECK("put", put(db, def, "plain", "p"));
    CHECK("put ttl", tdb_put(db, def, "ttl", 3, "t", 1, 3600));
    CHECK("put big", tdb_put(db, def, "big", 3, big, sizeof big, 0));
    CHECK("delete", tdb_delete(db, def, "gone", 4));
    CHECK("single delete", tdb_single_delete(db, def, "once", 4));
    CHECK("delete range", tdb_delete_range(db, def, "r1", 2, "r5", 2));
    return 0;
}

/* A database with every entry type in a table and in the WAL. */
static int kinds(const char *dir) {
    tdb_t *db;
    tdb_cf_t *def;
    CHECK("open", tdb_open(dir, NULL, &db));
    CHECK("default", tdb_get_cf(db, TDB_DEFAULT_CF, &def));
    if (write_kinds(db, def) != 0) return 1;
    CHECK("flush", tdb_flush(db, NULL));
    if (write_kinds(db, def) != 0) return 1;
    CHECK("sync", tdb_sync(db));
    return tdb_close(db) == TDB_OK ? 0 : die("close", TDB_ERR_IO);
}

/* Dispatch on the mode. */
int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: cli_fixture make|hold|check|prepare|kinds DIR\n");
        return 2;
    }
    if (!strcmp(argv[1], "make")) return make(argv[2]);
    if (!strcmp(argv[1], "hold")) return hold(argv[2]);
    if (!strcmp(argv[1], "check")) return check(argv[2]);
    if (!strcmp(argv[1], "prepare")) return prepare(argv[2]);
    if (!strcmp(argv[1], "kinds")) return kinds(argv[2]);
    fprintf(stderr, "cli_fixture: unknown mode %s\n", argv[1]);
    return 2;
}

#include <stdio.h>
#include <tidesdb/tidesdb.h>

int main(int argc, char **argv)
{
    const char *path = argc > 1 ? argv[1] : "/tmp/tidesdb_hello";
    tdb_t *db;
    tdb_cf_t *cf;
    int rc = tdb_open(path, NULL, &db); /* NULL config: the defaults */
    if (rc != TDB_OK) {
        fprintf(stderr, "open: %s (%s)\n", tdb_strerror(rc), tdb_last_error());
        return 1;
    }
    tdb_get_cf(db, TDB_DEFAULT_CF, &cf); /* or tdb_create_cf(db, "users", NULL, &cf) */
    tdb_put(db, cf, "alice", 5, "admin", 5, 0); /* last argument: TTL seconds, 0 = none */
    tdb_put(db, cf, "bob", 3, "dev", 3, 0);

    void *val;
    size_t vlen;
    if (tdb_get(db, cf, NULL, "alice", 5, &val, &vlen) == TDB_OK) {
        printf("alice = %.*s\n", (int)vlen, (char *)val);
        tdb_free(val);
    }

    tdb_iter_t *it;
    tdb_iter_create(db, cf, NULL, &it); /* NULL snapshot: the latest state */
    for (tdb_iter_seek_to_first(it); tdb_iter_valid(it); tdb_iter_next(it)) {
        size_t kl, vl;
        const char *k = tdb_iter_key(it, &kl), *v = tdb_iter_value(it, &vl);
        printf("%.*s -> %.*s\n", (int)kl, k, (int)vl, v);
    }
    tdb_iter_destroy(it);
    return tdb_close(db) == TDB_OK ? 0 : 1;
}

/*
 * cli_admin: compact, checkpoint, cf list|create|drop and repair, each one
 * library call (tdb_compact or tdb_compact_range, tdb_checkpoint,
 * tdb_list_cfs / tdb_create_cf / tdb_drop_cf). repair says the library has
 * none.
 */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli.h"

/* Seconds on the monotonic clock. */
static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Compact [lo, hi] (either NULL: open) of cf, or of every family if cf is
 * NULL (tdb_compact_range). */
static int compact_range(tdb_t *db, tdb_cf_t *cf, const cli_bytes_t *lo, const cli_bytes_t *hi) {
    const void *l = lo->data, *h = hi->data;
    if (cf) return tdb_compact_range(db, cf, l, lo->size, h, hi->size);
    char **names = NULL;
    size_t n = 0;
    int rc = tdb_list_cfs(db, &names, &n);
    for (size_t i = 0; i < n; i++) {
        tdb_cf_t *c = NULL;
        if (rc == TDB_OK) rc = tdb_get_cf(db, names[i], &c);
        if (rc == TDB_OK) rc = tdb_compact_range(db, c, l, lo->size, h, hi->size);
        tdb_free(names[i]);
    }
    tdb_free(names);
    return rc;
}

/* Key order: bytewise, a shorter prefix first. */
static int bytes_cmp(const cli_bytes_t *a, const cli_bytes_t *b) {
    size_t m = a->size < b->size ? a->size : b->size;
    int c = m ? memcmp(a->data, b->data, m) : 0;
    if (c) return c;
    return (a->size > b->size) - (a->size < b->size);
}

/* The inclusive bounds of --from/--to/--prefix (NULL data: open): lo is the
 * larger of --from and --prefix, hi the smaller of --to and the first key
 * after every key with the prefix. */
static int compact_bounds(const cli_opts_t *o, cli_bytes_t *lo, cli_bytes_t *hi) {
    cli_bytes_t p = {0}, pend = {0};
    int rc = CLI_OK;
    if (o->from) rc = cli_decode(o->from, o->key_fmt, "--from", lo);
    if (rc == CLI_OK && o->to) rc = cli_decode(o->to, o->key_fmt, "--to", hi);
    if (rc == CLI_OK && o->prefix) rc = cli_decode(o->prefix, o->key_fmt, "--prefix", &p);
    if (rc == CLI_OK && p.data && p.size) {
        size_t n = p.size;
        while (n > 0 && (unsigned char)p.data[n - 1] == 0xff) n--;
        if (n > 0) { /* else every key from the prefix on */
            if (!(pend.data = (char *)malloc(n))) rc = cli_fail(CLI_ERR, "out of memory");
            else {
                memcpy(pend.data, p.data, n);
                pend.data[n - 1]++;
                pend.size = n;
            }
        }
        if (rc == CLI_OK && (!lo->data || bytes_cmp(lo, &p) < 0)) {
            free(lo->data);
            *lo = p;
            p.data = NULL;
        }
        if (rc == CLI_OK && pend.data && (!hi->data || bytes_cmp(&pend, hi) < 0)) {
            free(hi->data);
            *hi = pend;
            pend.data = NULL;
        }
    }
    free(p.data);
    free(pend.data);
    if (rc == CLI_OK && lo->data && hi->data && bytes_cmp(lo, hi) > 0)
        rc = cli_fail(CLI_USAGE, "compact: the range is empty (--from is after --to)");
    return rc;
}

/* tidesdb compact [--cf NAME] [--from K] [--to K] [--prefix P]. */
int cli_compact(const cli_opts_t *o) {
    cli_bytes_t lo = {0}, hi = {0};
    const int ranged = o->from || o->to || o->prefix;
    if (ranged) {
        int brc = compact_bounds(o, &lo, &hi);
        if (brc != CLI_OK) {
            free(lo.data);
            free(hi.data);
            return brc;
        }
    }
    tdb_t *db = NULL;
    tdb_cf_t *cf = NULL;
    tdb_stats_t before, after;
    int rc = cli_open(o, 0, &db);
    if (rc == CLI_OK && o->cf) rc = cli_cf(db, o, &cf);
    if (rc == CLI_OK && (rc = tdb_get_stats(db, cf, &before)) != TDB_OK) rc = cli_fail_tdb(rc, "stats");
    double t0 = now_s();
    if (rc == CLI_OK && (rc = ranged ? compact_range(db, cf, &lo, &hi) : tdb_compact(db, cf)) != TDB_OK)
        rc = cli_fail_tdb(rc, "compact");
    free(lo.data);
    free(hi.data);
    double secs = now_s() - t0;
    if (rc == CLI_OK && (rc = tdb_get_stats(db, cf, &after)) != TDB_OK) rc = cli_fail_tdb(rc, "stats");
    if (rc == CLI_OK) {
        uint64_t fb = 0, bb = 0, fa = 0, ba = 0;
        for (int l = 1; l < TDB_MAX_LEVELS; l++) {
            fb += before.levels[l].files;
            bb += before.levels[l].bytes;
            fa += after.levels[l].files;
            ba += after.levels[l].bytes;
        }
        const char *what = cf ? tdb_cf_name(cf) : "all families";
        if (o->json) {
            fputs("{\"compacted\": ", stdout);
            cli_json_str(stdout, what);
            printf(", \"seconds\": %.3f, \"files_before\": %llu, \"bytes_before\": %llu, \"files_after\": %llu, "
                   "\"bytes_after\": %llu}\n",
                   secs, (unsigned long long)fb, (unsigned long long)bb, (unsigned long long)fa,
                   (unsigned long long)ba);
        } else {
            printf("compacted %s in %.3f s: %llu files, %llu bytes -> %llu files, %llu bytes\n", what, secs,
                   (unsigned long long)fb, (unsigned long long)bb, (unsigned long long)fa, (unsigned long long)ba);
        }
    }
    return cli_close(db, rc);
}

/* tidesdb checkpoint DEST. */
int cli_checkpoint(const cli_opts_t *o) {
    tdb_t *db = NULL;
    uint64_t seq = 0;
    const char *dest = o->args[0];
    int rc = cli_open(o, 0, &db);
    if (rc == CLI_OK && (rc = tdb_checkpoint(db, dest, &seq)) != TDB_OK) rc = cli_fail_tdb(rc, dest);
    if (rc == CLI_OK) {
        if (o->json) {
            fputs("{\"checkpoint\": ", stdout);
            cli_json_str(stdout, dest);
            printf(", \"sequence\": %llu}\n", (unsigned long long)seq);
        } else {
            printf("checkpoint %s at sequence %llu\n", dest, (unsigned long long)seq);
        }
    }
    return cli_close(db, rc);
}

/* tidesdb cf list. */
static int cf_list(const cli_opts_t *o, tdb_t *db) {
    char **names = NULL;
    size_t n = 0;
    int rc = tdb_list_cfs(db, &names, &n);
    if (rc != TDB_OK) return cli_fail_tdb(rc, "list families");
    if (o->json) fputs("{\"families\": [", stdout);
    for (size_t i = 0; i < n; i++) {
        if (o->json) {
            if (i) fputs(", ", stdout);
            cli_json_str(stdout, names[i]);
        } else {
            puts(names[i]);
        }
        tdb_free(names[i]);
    }
    if (o->json) fputs("]}\n", stdout);
    tdb_free(names);
    return CLI_OK;
}

/* tidesdb cf list|create NAME|drop NAME. */
int cli_cf_cmd(const cli_opts_t *o) {
    const char *verb = o->args[0];
    int is_list = !strcmp(verb, "list"), is_create = !strcmp(verb, "create"), is_drop = !strcmp(verb, "drop");
    if (!is_list && !is_create && !is_drop)
        return cli_fail(CLI_USAGE, "cf: unknown action '%s' (list, create NAME or drop NAME)", verb);
    if (is_list != (o->nargs == 1))
        return cli_fail(CLI_USAGE, is_list ? "cf list takes no argument" : "cf %s needs a family NAME", verb);
    tdb_t *db = NULL;
    int rc = cli_open(o, is_list ? CLI_OPEN_READ : 0, &db);
    if (rc != CLI_OK) return rc;
    if (is_list) return cli_close(db, cf_list(o, db));
    const char *name = o->args[1];
    int r = is_create ? tdb_create_cf(db, name, NULL, NULL) : tdb_drop_cf(db, name);
    if (r == TDB_ERR_EXISTS) rc = cli_fail(CLI_ERR, "column family '%s' exists already", name);
    else if (r == TDB_ERR_NOT_FOUND) rc = cli_fail(CLI_ERR, "no column family '%s'", name);
    else if (r != TDB_OK) rc = cli_fail_tdb(r, name);
    else if (o->json) printf("{\"ok\": true, \"op\": \"%s\"}\n", is_create ? "create" : "drop");
    else printf("%s column family '%s'\n", is_create ? "created" : "dropped", name);
    return cli_close(db, rc);
}

/* tidesdb repair: there is none to call. */
int cli_repair(const cli_opts_t *o) {
    (void)o;
    return cli_fail(CLI_ERR, "repair: not supported: the library has no repair function. Run `tidesdb verify "
                             "--db DIR` to name damaged files, and restore from a checkpoint.");
}

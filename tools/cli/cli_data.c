/*
 * cli_data: scan, get, put and delete through the public API. A scan reads
 * one consistent view (the iterator's snapshot) of the family: keys in
 * [--from, --to) that start with --prefix, either direction, at most
 * --limit of them.
 */
#include <stdlib.h>
#include <string.h>

#include "cli.h"

/* Bytewise comparison, a shorter prefix first (the library's key order). */
static int bytes_cmp(const void *a, size_t an, const void *b, size_t bn) {
    int r = memcmp(a, b, an < bn ? an : bn);
    return r ? r : (an < bn ? -1 : an > bn);
}

/* 1 if key starts with p. */
static int has_prefix(const char *key, size_t kn, const cli_bytes_t *p) {
    return kn >= p->size && memcmp(key, p->data, p->size) == 0;
}

/* The bounds of a scan, decoded. hi is exclusive; a NULL data means none. */
typedef struct scan_bounds {
    cli_bytes_t from, to, prefix, prefix_end;
} scan_bounds_t;

/* Free the decoded bounds. */
static void bounds_free(scan_bounds_t *b) {
    free(b->from.data);
    free(b->to.data);
    free(b->prefix.data);
    free(b->prefix_end.data);
}

/* Decode --from/--to/--prefix; prefix_end is the first key after every key
 * with the prefix (none if the prefix is all 0xff bytes). */
static int bounds_decode(const cli_opts_t *o, scan_bounds_t *b) {
    memset(b, 0, sizeof *b);
    int rc = CLI_OK;
    if (o->from && (rc = cli_decode(o->from, o->key_fmt, "--from", &b->from)) != CLI_OK) return rc;
    if (o->to && (rc = cli_decode(o->to, o->key_fmt, "--to", &b->to)) != CLI_OK) return rc;
    if (o->prefix && (rc = cli_decode(o->prefix, o->key_fmt, "--prefix", &b->prefix)) != CLI_OK) return rc;
    if (b->prefix.data && b->prefix.size) {
        size_t n = b->prefix.size;
        while (n > 0 && (unsigned char)b->prefix.data[n - 1] == 0xff) n--;
        if (n > 0) {
            b->prefix_end.data = (char *)malloc(n);
            if (!b->prefix_end.data) return cli_fail(CLI_ERR, "out of memory");
            memcpy(b->prefix_end.data, b->prefix.data, n);
            b->prefix_end.data[n - 1]++;
            b->prefix_end.size = n;
        }
    }
    return CLI_OK;
}

/* The tighter of two lower (want_max) or upper bounds; NULL data = none. */
static const cli_bytes_t *tighter(const cli_bytes_t *a, const cli_bytes_t *b, int want_max) {
    if (!a->data) return b;
    if (!b->data) return a;
    int c = bytes_cmp(a->data, a->size, b->data, b->size);
    return (want_max ? c >= 0 : c <= 0) ? a : b;
}

/* Print one entry of a scan or get. */
static void print_entry(const cli_opts_t *o, int first, const void *k, size_t kn, const void *v, size_t vn) {
    if (o->json) {
        fputs(first ? "\n  {\"key\": " : ",\n  {\"key\": ", stdout);
        cli_encode_json(stdout, k, kn, o->key_fmt);
        if (!o->keys_only) {
            fputs(", \"value\": ", stdout);
            cli_encode_json(stdout, v, vn, o->val_fmt);
        }
        fputc('}', stdout);
    } else {
        cli_encode(stdout, k, kn, o->key_fmt);
        if (!o->keys_only) {
            fputc('\t', stdout);
            cli_encode(stdout, v, vn, o->val_fmt);
        }
        fputc('\n', stdout);
    }
}

/* Walk the iterator over the bounds, printing entries; returns the count
 * or a negative library error. */
static long long scan_walk(const cli_opts_t *o, tdb_iter_t *it, const scan_bounds_t *b) {
    const cli_bytes_t *lo = tighter(&b->from, &b->prefix, 1);
    const cli_bytes_t *hi = tighter(&b->to, &b->prefix_end, 0);
    long long n = 0;
    if (o->limit == 0) return 0;
    if (!o->reverse) {
        if (lo->data) tdb_iter_seek(it, lo->data, lo->size);
        else tdb_iter_seek_to_first(it);
    } else {
        if (hi->data) tdb_iter_seek_for_prev(it, hi->data, hi->size);
        else tdb_iter_seek_to_last(it);
    }
    for (; tdb_iter_valid(it); o->reverse ? tdb_iter_prev(it) : tdb_iter_next(it)) {
        size_t kn, vn = 0;
        const char *k = (const char *)tdb_iter_key(it, &kn);
        if (hi->data && bytes_cmp(k, kn, hi->data, hi->size) >= 0) {
            if (!o->reverse) break;
            continue; /* seek_for_prev stops at hi itself: exclusive */
        }
        if (lo->data && bytes_cmp(k, kn, lo->data, lo->size) < 0) {
            if (o->reverse) break;
            continue;
        }
        if (b->prefix.data && !has_prefix(k, kn, &b->prefix)) continue; /* outside [lo, hi): not reached */
        const void *v = o->keys_only ? NULL : tdb_iter_value(it, &vn);
        print_entry(o, n == 0, k, kn, v, vn);
        if (++n == o->limit) break;
    }
    int st = tdb_iter_status(it);
    return st != TDB_OK ? st : n;
}

/* tidesdb scan. */
int cli_scan(const cli_opts_t *o) {
    scan_bounds_t b;
    tdb_t *db = NULL;
    tdb_cf_t *cf;
    tdb_iter_t *it = NULL;
    int rc = bounds_decode(o, &b);
    if (rc == CLI_OK) rc = cli_open(o, CLI_OPEN_READ, &db);
    if (rc == CLI_OK) rc = cli_cf(db, o, &cf);
    if (rc == CLI_OK && (rc = tdb_iter_create(db, cf, NULL, &it)) != TDB_OK) rc = cli_fail_tdb(rc, "iterator");
    if (rc == CLI_OK) {
        if (o->json) {
            fputs("{\"cf\": ", stdout);
            cli_json_str(stdout, tdb_cf_name(cf));
            fputs(", \"entries\": [", stdout);
        }
        long long n = scan_walk(o, it, &b);
        if (o->json) printf("%s], \"count\": %lld}\n", n > 0 ? "\n" : "", n < 0 ? 0 : n);
        fflush(stdout);
        if (n < 0) rc = cli_fail_tdb((int)n, "scan");
        else if (!o->json) fprintf(stderr, "%lld entries\n", n);
    }
    if (it) tdb_iter_destroy(it);
    bounds_free(&b);
    return cli_close(db, rc);
}

/* tidesdb get KEY. */
int cli_get(const cli_opts_t *o) {
    cli_bytes_t key = {0};
    tdb_t *db = NULL;
    tdb_cf_t *cf;
    void *v = NULL;
    size_t vn = 0;
    int rc = cli_decode(o->args[0], o->key_fmt, "key", &key);
    if (rc == CLI_OK) rc = cli_open(o, CLI_OPEN_READ, &db);
    if (rc == CLI_OK) rc = cli_cf(db, o, &cf);
    if (rc == CLI_OK) {
        int g = tdb_get(db, cf, NULL, key.data, key.size, &v, &vn);
        if (g == TDB_OK || g == TDB_ERR_NOT_FOUND) {
            if (o->json) {
                fputs("{\"key\": ", stdout);
                cli_encode_json(stdout, key.data, key.size, o->key_fmt);
                if (g == TDB_OK) {
                    fputs(", \"found\": true, \"value\": ", stdout);
                    cli_encode_json(stdout, v, vn, o->val_fmt);
                } else {
                    fputs(", \"found\": false", stdout);
                }
                fputs("}\n", stdout);
            } else if (g == TDB_OK) {
                cli_encode(stdout, v, vn, o->val_fmt);
                fputc('\n', stdout);
            } else {
                fputs("tidesdb: key not found\n", stderr);
            }
            rc = g == TDB_OK ? CLI_OK : CLI_FOUND_NOTHING;
        } else {
            rc = cli_fail_tdb(g, "get");
        }
    }
    tdb_free(v);
    free(key.data);
    return cli_close(db, rc);
}

/* put (value non-NULL) or delete one key, then sync if asked. */
static int write_one(const cli_opts_t *o, const char *value_text) {
    cli_bytes_t key = {0}, val = {0};
    tdb_t *db = NULL;
    tdb_cf_t *cf;
    int rc = cli_decode(o->args[0], o->key_fmt, "key", &key);
    if (rc == CLI_OK && value_text) rc = cli_decode(value_text, o->val_fmt, "value", &val);
    if (rc == CLI_OK) rc = cli_open(o, o->create ? CLI_OPEN_CREATE : 0, &db);
    if (rc == CLI_OK) rc = cli_cf(db, o, &cf);
    if (rc == CLI_OK) {
        int w = value_text ? tdb_put(db, cf, key.data, key.size, val.data, val.size, 0)
                           : tdb_delete(db, cf, key.data, key.size);
        if (w == TDB_OK && o->sync) w = tdb_sync(db);
        if (w != TDB_OK) rc = cli_fail_tdb(w, value_text ? "put" : "delete");
        else if (o->json) printf("{\"ok\": true, \"op\": \"%s\"}\n", value_text ? "put" : "delete");
    }
    free(key.data);
    free(val.data);
    return cli_close(db, rc);
}

/* tidesdb put KEY VALUE. */
int cli_put(const cli_opts_t *o) { return write_one(o, o->args[1]); }

/* tidesdb delete KEY. */
int cli_delete(const cli_opts_t *o) { return write_one(o, NULL); }
